# The two commands a newcomer needs: `make serve` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
CONFIG ?= config.yaml
STAMP  := $(VENV)/.installed
LOCK   := requirements.lock

.PHONY: serve test install lint typecheck clean bench lock

# Every dependency comes from the lock file, pinned with its hashes (a package republished or tampered with fails
# the install); the project itself is installed on top, without resolving anything again.
$(STAMP): pyproject.toml $(LOCK)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --require-hashes -r $(LOCK)
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

# Re-resolve pyproject.toml's dependencies (with the dev extra) into the lock file; review the diff before
# committing it.
lock:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q uv
	$(VENV)/bin/uv pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.11 \
		--no-header --quiet -o $(LOCK)

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
