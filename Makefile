# The two commands a newcomer needs: `make serve` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
CONFIG ?= config.yaml
STAMP  := $(VENV)/.installed

.PHONY: serve test install lint typecheck clean bench

$(STAMP): pyproject.toml
	@echo "installing edgecloud-gateway and its dependencies into $(VENV) (3-5 minutes the first time)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## create .venv and install the project (once; again when pyproject.toml changes)

serve: $(STAMP) ## serve http://127.0.0.1:4000/v1 (config.yaml; CONFIG=FILE for another), launching a local edge model if none answers
	$(VENV)/bin/ecgw serve --config $(CONFIG)

# Starts the real small model (and PostgreSQL) the suite needs, runs every test, stops them.
test: $(STAMP) ## run the whole test suite with the real services it needs
	scripts/test.sh

lint: $(STAMP) ## ruff
	$(VENV)/bin/ruff check gateway router privacy accounting eval tests

typecheck: $(STAMP) ## mypy --strict
	$(VENV)/bin/mypy

clean: ## remove .venv and the tool caches (not ~/.cache/ecgw)
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# Gateway overhead against a direct call and LiteLLM's proxy; appends to benchmarks/RESULTS.md.
bench: $(STAMP) ## gateway overhead vs a direct call and LiteLLM's proxy
	$(PY) -m benchmarks.run

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z]+):.*## (.*)/  make \1\t\2/' | expand -t 18
