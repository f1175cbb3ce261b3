#!/usr/bin/env bash
# The real Claude Code CLI for the test suite, with its Node (scripts/npm.sh), cached outside the repo.
#   scripts/claude-code.sh install    Node (once) and Claude Code (~20 s, once)
#   scripts/claude-code.sh env        print `export ECGW_TEST_CLAUDE=… ECGW_TEST_NODE_BIN=…` (installs first)
set -euo pipefail
. "$(dirname "$0")/npm.sh"

CLAUDE_CODE_VERSION=2.1.328
CLAUDE_DIR=$CACHE/claude-code-$CLAUDE_CODE_VERSION
CLAUDE=$CLAUDE_DIR/node_modules/.bin/claude

install() {
  install_package "$CLAUDE_DIR" "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "Claude Code $CLAUDE_CODE_VERSION" \
    env HOME="$(mktemp -d)" DISABLE_AUTOUPDATER=1 "$CLAUDE" --version
}

case "${1:-}" in
  install) install ;;
  env) install; echo "export ECGW_TEST_CLAUDE=$CLAUDE ECGW_TEST_NODE_BIN=$NODE_BIN" ;;
  *) echo "usage: $0 install|env" >&2; exit 2 ;;
esac
