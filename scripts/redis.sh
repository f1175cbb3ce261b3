#!/usr/bin/env bash
# A throw-away Redis server for the test suite and the benchmark, on a loopback port, with its own directory.
#   scripts/redis.sh install          install Debian's redis-server if it is missing (root)
#   scripts/redis.sh start PORT DIR [ARGS]  start on 127.0.0.1:PORT (no persistence unless ARGS, e.g.
#                                     --appendonly yes, say otherwise), wait until ready, print its URL
#   scripts/redis.sh stop DIR         stop the server started on DIR and delete DIR
set -euo pipefail

install() {
  if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" != 0 ]; then
    echo "redis-server not found; install Debian's redis-server package (needs root)" >&2
    return 1
  fi
  echo "installing Redis from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends redis-server redis-tools >/dev/null
  command -v redis-server >/dev/null
}

start() {
  local port=$1 dir=$2
  shift 2
  install
  mkdir -p "$dir"
  # No RDB/AOF: session state in tests is throw-away. Production keeps Redis' own persistence settings.
  redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --save "" --appendonly no \
    --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" "$@" >/dev/null
  for _ in $(seq 1 100); do
    if redis-cli -p "$port" ping 2>/dev/null | grep -q PONG; then
      echo "$port" >"$dir/port"
      echo "redis://127.0.0.1:$port/0"
      return 0
    fi
    sleep 0.1
  done
  echo "redis-server on port $port did not answer; see $dir/redis.log" >&2
  return 1
}

stop() {
  local dir=$1
  if [ -f "$dir/redis.pid" ]; then
    local pid
    pid=$(cat "$dir/redis.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  install) install ;;
  start) start "${2:?port}" "${3:?directory}" "${@:4}" ;;
  stop) stop "${2:?directory}" ;;
  *) echo "usage: $0 install | start PORT DIR | stop DIR" >&2; exit 2 ;;
esac
