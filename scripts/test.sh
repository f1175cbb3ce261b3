#!/usr/bin/env bash
# The whole test suite, with the real services it needs started here and stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

port_free() { "$VENV_PY" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
VENV_PY=.venv/bin/python

PG_DIR=""
REDIS_DIR=""
LLAMA_PORT=""
VLLM_PORT=""
VLLM_STARTER=""
VLLM_LOG=""
cleanup() {
  if [ -n "$LLAMA_PORT" ]; then scripts/llama.sh stop "$LLAMA_PORT" || true; fi
  if [ -n "$PG_DIR" ]; then scripts/postgres.sh stop "$PG_DIR" || true; fi
  if [ -n "$REDIS_DIR" ]; then scripts/redis.sh stop "$REDIS_DIR" || true; fi
  if [ -n "$VLLM_STARTER" ]; then kill -- "-$VLLM_STARTER" 2>/dev/null || true; fi
  if [ -n "$VLLM_PORT" ]; then scripts/vllm.sh stop "$VLLM_PORT" || true; fi
  if [ -n "$VLLM_LOG" ]; then rm -f "$VLLM_LOG" "$VLLM_LOG.failed"; fi
}
trap cleanup EXIT

LLAMA_PORT=$(port_free)
scripts/llama.sh start "$LLAMA_PORT"
export ECGW_TEST_LLAMA_URL="http://127.0.0.1:$LLAMA_PORT/v1"

# A throw-away PostgreSQL for the metering store tests (tests marked `postgres`).
PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ecgw-pg.XXXXXX")
ECGW_TEST_POSTGRES_URL=$(scripts/postgres.sh start "$(port_free)" "$PG_DIR")
export ECGW_TEST_POSTGRES_URL

# A throw-away Redis for the shared session store and the several-replica tests (tests/gateway/test_replicas.py).
REDIS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ecgw-redis.XXXXXX")
ECGW_TEST_REDIS_URL=$(scripts/redis.sh start "$(port_free)" "$REDIS_DIR")
export ECGW_TEST_REDIS_URL

# The real vLLM edge for tests/real (installed once into ~/.cache/ecgw): it needs about a minute to start, so it
# starts in the background while the rest of the suite runs; tests/real/helpers.py waits for it.
VLLM_PORT=$(port_free)
VLLM_LOG=$(mktemp "${TMPDIR:-/tmp}/ecgw-vllm.XXXXXX")
setsid bash -c 'scripts/vllm.sh start "$1" >"$2" 2>&1 || touch "$2.failed"' _ "$VLLM_PORT" "$VLLM_LOG" &
VLLM_STARTER=$!
export ECGW_TEST_VLLM_URL="http://127.0.0.1:$VLLM_PORT/v1" ECGW_TEST_VLLM_LOG="$VLLM_LOG"

# The real agent clients and their one Node (scripts/npm.sh; installed once into ~/.cache/ecgw): each exports its
# ECGW_TEST_<CLIENT> and ECGW_TEST_NODE_BIN.
for client in openclaw codex claude-code; do
  if CLIENT_ENV=$(scripts/$client.sh env); then eval "$CLIENT_ENV"; else echo "$client is not available" >&2; fi
done

# Debian's headless Chromium for the dashboard's browser test (installed once; Playwright drives it, never downloads).
if scripts/chromium.sh install && CHROMIUM_ENV=$(scripts/chromium.sh env); then eval "$CHROMIUM_ENV"; else echo "Chromium is not available" >&2; fi

.venv/bin/python -m pytest -q "$@"
