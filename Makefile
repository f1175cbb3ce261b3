# The two commands a newcomer needs: `make serve` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
CONFIG ?= config.yaml
STAMP  := $(VENV)/.installed

.PHONY: serve test install lint typecheck clean bench

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

serve: $(STAMP)
	$(VENV)/bin/ecgw serve --config $(CONFIG)

# Starts the real small model (and PostgreSQL) the suite needs, runs every test, stops them.
test: $(STAMP)
	scripts/test.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check gateway router privacy accounting eval tests benchmarks
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# Gateway overhead against a direct call and LiteLLM's proxy; appends to benchmarks/RESULTS.md.
bench: $(STAMP)
	$(PY) -m benchmarks.run
