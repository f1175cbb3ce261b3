#!/usr/bin/env bash
# The real Codex CLI for the test suite (its native binary comes as an optional npm dependency), with its Node
# (scripts/npm.sh), cached outside the repo.
#   scripts/codex.sh install    Codex (~30 s, ~150 MB), once
#   scripts/codex.sh env        print `export ECGW_TEST_CODEX=… ECGW_TEST_NODE_BIN=…` (installs first)
#   scripts/codex.sh run ARGS   run codex with that Node first on PATH (CODEX_HOME: a fresh temporary directory)
set -euo pipefail
. "$(dirname "$0")/npm.sh"

CODEX_VERSION=0.169.0
CODEX_DIR=$CACHE/codex-$CODEX_VERSION
CODEX=$CODEX_DIR/node_modules/.bin/codex

install() {
  install_package "$CODEX_DIR" "@openai/codex@$CODEX_VERSION" "Codex $CODEX_VERSION" \
    env CODEX_HOME="$(mktemp -d)" "$CODEX" --version
}

case "${1:-}" in
  install) install ;;
  env) install; echo "export ECGW_TEST_CODEX=$CODEX ECGW_TEST_NODE_BIN=$NODE_BIN" ;;
  run) shift; install; home=$(mktemp -d); trap 'rm -rf "$home"' EXIT
       PATH="$NODE_BIN:$PATH" CODEX_HOME=$home "$CODEX" "$@" ;;
  *) echo "usage: $0 install|env|run ARGS" >&2; exit 2 ;;
esac
