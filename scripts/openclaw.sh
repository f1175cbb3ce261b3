#!/usr/bin/env bash
# The real OpenClaw agent for the test suite, with its Node (scripts/npm.sh), cached outside the repo.
#   scripts/openclaw.sh install    Node (~10 s, 189 MB) and OpenClaw (~1 min, ~650 MB), once
#   scripts/openclaw.sh env        print `export ECGW_TEST_OPENCLAW=… ECGW_TEST_NODE_BIN=…` (installs first)
#   scripts/openclaw.sh run ARGS   run openclaw with that Node first on PATH (HOME: a fresh temporary directory)
set -euo pipefail
. "$(dirname "$0")/npm.sh"

OPENCLAW_VERSION=2026.9.6
OPENCLAW_DIR=$CACHE/openclaw-$OPENCLAW_VERSION
OPENCLAW=$OPENCLAW_DIR/node_modules/.bin/openclaw

install() {
  install_package "$OPENCLAW_DIR" "openclaw@$OPENCLAW_VERSION" "OpenClaw $OPENCLAW_VERSION (about a minute)" \
    env HOME="$(mktemp -d)" "$OPENCLAW" --version
}

case "${1:-}" in
  install) install ;;
  env) install; echo "export ECGW_TEST_OPENCLAW=$OPENCLAW ECGW_TEST_NODE_BIN=$NODE_BIN" ;;
  run) shift; install; home=$(mktemp -d); trap 'rm -rf "$home"' EXIT
       PATH="$NODE_BIN:$PATH" HOME=$home "$OPENCLAW" "$@" ;;
  *) echo "usage: $0 install|env|run ARGS" >&2; exit 2 ;;
esac
