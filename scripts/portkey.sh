#!/usr/bin/env bash
# Portkey's open-source AI gateway (Node), a `make bench` contender beside LiteLLM's proxy, with its Node
# (scripts/npm.sh), cached outside the repo.
#   scripts/portkey.sh install    Node (~10 s) and @portkey-ai/gateway (~30 s), once
#   scripts/portkey.sh env        print `export ECGW_PORTKEY_SERVER=… ECGW_PORTKEY_NODE=…` (installs first)
set -euo pipefail
. "$(dirname "$0")/npm.sh"

PORTKEY_VERSION=1.15.2
PORTKEY_DIR=$CACHE/portkey-gateway-$PORTKEY_VERSION
PORTKEY_SERVER=$PORTKEY_DIR/node_modules/@portkey-ai/gateway/build/start-server.js

# @hono/node-server after 1.14.2 hands Portkey immutable response headers, and every streamed chat completion fails
# with "TypeError: immutable" in its updateHeaders (Portkey-AI/gateway#1389, open): pin the last one that works.
HONO_NODE_SERVER_VERSION=1.14.2

install() {
  install_package "$PORTKEY_DIR" "@portkey-ai/gateway@$PORTKEY_VERSION @hono/node-server@$HONO_NODE_SERVER_VERSION" "Portkey's gateway $PORTKEY_VERSION (about 30 s)" \
    test -f "$PORTKEY_SERVER"
}

case "${1:-}" in
  install) install ;;
  env) install; echo "export ECGW_PORTKEY_SERVER=$PORTKEY_SERVER ECGW_PORTKEY_NODE=$NODE_BIN/node" ;;
  *) echo "usage: $0 install|env" >&2; exit 2 ;;
esac
