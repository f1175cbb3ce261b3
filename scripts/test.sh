#!/usr/bin/env bash
# The whole test suite, with the real services it needs started here and stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

port_free() { "$VENV_PY" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
VENV_PY=.venv/bin/python

PG_DIR=""
cleanup() {
  scripts/llama.sh stop || true
  if [ -n "$PG_DIR" ]; then scripts/postgres.sh stop "$PG_DIR" || true; fi
}
trap cleanup EXIT

LLAMA_PORT=$(port_free)
scripts/llama.sh start "$LLAMA_PORT"
export ECGW_TEST_LLAMA_URL="http://127.0.0.1:$LLAMA_PORT/v1"

# A throw-away PostgreSQL for the metering store tests (tests marked `postgres`).
PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ecgw-pg.XXXXXX")
ECGW_TEST_POSTGRES_URL=$(scripts/postgres.sh start "$(port_free)" "$PG_DIR")
export ECGW_TEST_POSTGRES_URL

.venv/bin/python -m pytest -q "$@"
