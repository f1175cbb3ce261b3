#!/usr/bin/env bash
# The real Codex CLI for the test suite, from the npm registry (its native binary comes as an optional dependency),
# cached outside the repo under $ECGW_CACHE (default ~/.cache/ecgw), keyed by version; Node comes from
# scripts/openclaw.sh's cache (same pinned Node).
#   scripts/codex.sh install    Codex (~30 s, ~150 MB), once
#   scripts/codex.sh env        print `export ECGW_TEST_CODEX=…` (installs first)
#   scripts/codex.sh run ARGS   run codex with that Node first on PATH (CODEX_HOME: a fresh temporary directory)
set -euo pipefail

CODEX_VERSION=0.169.0
CACHE=${ECGW_CACHE:-$HOME/.cache/ecgw}
HERE=$(cd "$(dirname "$0")" && pwd)
CODEX_DIR=$CACHE/codex-$CODEX_VERSION
CODEX=$CODEX_DIR/node_modules/.bin/codex

node_bin() {
  # the Node OpenClaw's script installs (and caches); its `env` line names ECGW_TEST_NODE_BIN
  "$HERE/openclaw.sh" env | tr ' ' '\n' | sed -n 's/^ECGW_TEST_NODE_BIN=//p'
}

install() {
  command -v npm >/dev/null || { echo "npm is needed to fetch Codex (apt-get install npm)" >&2; return 1; }
  NODE_BIN=$(node_bin)
  if [ ! -f "$CODEX_DIR/.installed" ]; then
    echo "installing Codex $CODEX_VERSION into $CODEX_DIR (once)" >&2
    rm -rf "$CODEX_DIR" && mkdir -p "$CODEX_DIR"
    echo '{"private": true}' >"$CODEX_DIR/package.json"
    (cd "$CODEX_DIR" && PATH="$NODE_BIN:$PATH" npm install --no-audit --no-fund --loglevel=error "@openai/codex@$CODEX_VERSION" >&2)
    PATH="$NODE_BIN:$PATH" CODEX_HOME=$(mktemp -d) "$CODEX" --version >/dev/null
    touch "$CODEX_DIR/.installed"
  fi
}

case "${1:-}" in
  install) install ;;
  env) install; echo "export ECGW_TEST_CODEX=$CODEX ECGW_TEST_NODE_BIN=$(node_bin)" ;;
  run) shift; install; home=$(mktemp -d); trap 'rm -rf "$home"' EXIT
       PATH="$(node_bin):$PATH" CODEX_HOME=$home "$CODEX" "$@" ;;
  *) echo "usage: $0 install|env|run ARGS" >&2; exit 2 ;;
esac
