# The two commands a newcomer needs: `make serve` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
CONFIG ?= config.yaml
STAMP  := $(VENV)/.installed
LOCK   := requirements.lock

.PHONY: serve test install lint typecheck clean bench lock config

# Every dependency comes from the lock file, pinned with its hashes (a package republished or tampered with fails
# the install); the project itself is installed on top, without resolving anything again.
$(STAMP): pyproject.toml $(LOCK)
	@echo "installing edgecloud-gateway and its dependencies into $(VENV) (3-5 minutes the first time)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --require-hashes -r $(LOCK)
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

# Re-resolve pyproject.toml's dependencies (with the dev extra) into the lock file; review the diff before
# committing it.
lock: ## re-resolve pyproject.toml into requirements.lock (pinned, with hashes)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q uv
	$(VENV)/bin/uv pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.11 \
		--no-header --quiet -o $(LOCK)

install: $(STAMP) ## create .venv and install the project from requirements.lock (again when it changes)

serve: $(STAMP) ## serve http://127.0.0.1:4000/v1 (config.yaml; CONFIG=FILE for another), launching a local edge model if none answers
	$(VENV)/bin/ecgw serve --config $(CONFIG)

# Lint and typecheck first (so what holds today cannot lapse), then starts the real small model (and PostgreSQL)
# the suite needs, runs every test, stops them.
test: $(STAMP) lint typecheck ## lint, typecheck, then the whole test suite with the real services it needs
	scripts/test.sh

lint: $(STAMP) ## ruff and the import contracts (import-linter)
	$(VENV)/bin/ruff check gateway router privacy accounting eval tests benchmarks
	$(VENV)/bin/lint-imports

# mypy's incremental cache lives beside the other installs in ~/.cache/ecgw (not in the clone), so a fresh clone on
# a machine that has checked the project before takes ~1 s instead of ~45 s; a module whose source changed is
# checked again whatever the cache holds (mypy compares hashes).
typecheck: $(STAMP) ## mypy --strict
	MYPY_CACHE_DIR=$${MYPY_CACHE_DIR:-$${ECGW_CACHE:-$$HOME/.cache/ecgw}/mypy} $(VENV)/bin/mypy

# config.yaml and docs/configuration.md are generated from the settings models' descriptions and reload classes (a
# test fails when they differ): run this after changing a settings field, or after a rebase that brought new ones.
config: $(STAMP) ## write config.yaml and docs/configuration.md again from the settings models
	$(PY) -m gateway.config.reference

clean: ## remove .venv and the tool caches (not ~/.cache/ecgw)
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# Gateway overhead against a direct call and LiteLLM's proxy, the edge pool (affinity vs round-robin, a replica
# killed), faults under load (an edge replica, PostgreSQL, the primary cloud); each appends to benchmarks/RESULTS.md.
bench: $(STAMP) ## gateway overhead vs a direct call and LiteLLM's proxy; the edge pool's affinity and failover; faults under load; receipts; the data-class check; what the real-prompt detectors and the scan meter add; a small request during a heavy scan; memory per worker, over a soak and per open stream
	$(PY) -m benchmarks.run
	$(PY) -m benchmarks.fleet
	$(PY) -m benchmarks.faults
	$(PY) -m benchmarks.targets
	$(PY) -m benchmarks.receipts
	$(PY) -m benchmarks.guard
	$(PY) -m benchmarks.classes
	$(PY) -m benchmarks.detectors
	$(PY) -m benchmarks.victim
	$(PY) -m benchmarks.memory --record

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z]+):.*## (.*)/  make \1\t\2/' | expand -t 18
