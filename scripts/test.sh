#!/usr/bin/env bash
# The whole test suite, with the real services it needs started here and stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

port_free() { "$VENV_PY" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
VENV_PY=.venv/bin/python

cleanup() { scripts/llama.sh stop || true; }
trap cleanup EXIT

LLAMA_PORT=$(port_free)
scripts/llama.sh start "$LLAMA_PORT"
export ECGW_TEST_LLAMA_URL="http://127.0.0.1:$LLAMA_PORT/v1"

.venv/bin/python -m pytest -q "$@"
