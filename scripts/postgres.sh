#!/usr/bin/env bash
# A throw-away PostgreSQL server for the test suite, on a loopback port, with its own data directory.
#   scripts/postgres.sh install          install Debian's postgresql if its server binaries are missing (root)
#   scripts/postgres.sh start PORT DIR   initdb DIR, start on 127.0.0.1:PORT, wait until ready, print its URL
#   scripts/postgres.sh stop DIR         stop the server started on DIR and delete DIR
#   scripts/postgres.sh down DIR         stop the server started on DIR, keeping its data (an outage)
#   scripts/postgres.sh up PORT DIR      start DIR's server again on PORT (after down), wait until ready
# PostgreSQL refuses to run as root; as root the server runs as the "postgres" user (created by the package).
set -euo pipefail

bindir() {
  if [ -n "${PG_BINDIR:-}" ] && [ -x "$PG_BINDIR/initdb" ]; then echo "$PG_BINDIR"; return 0; fi
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$found" ] && [ -x "$found/initdb" ]; then echo "$found"; return 0; fi
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return 0; fi
  return 1
}

install() {
  if bindir >/dev/null; then return 0; fi
  if [ "$(id -u)" != 0 ]; then
    echo "PostgreSQL server binaries not found; install Debian's postgresql package (needs root)" >&2
    return 1
  fi
  echo "installing PostgreSQL from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends postgresql >/dev/null
  bindir >/dev/null
}

as_owner() {  # run a command as the data directory's owner
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local port=$1 dir=$2 bin
  install
  bin=$(bindir)
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$dir"
  fi
  chmod 700 "$dir"
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --no-sync >/dev/null
  up "$port" "$dir"
}

up() {
  local port=$1 dir=$2 bin
  bin=$(bindir)
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200" \
    start >/dev/null
  echo "postgresql://postgres@127.0.0.1:$port/postgres"
}

down() {
  local dir=$1 bin
  bin=$(bindir)
  as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
}

stop() {
  local dir=$1 bin
  bin=$(bindir) || return 0
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  install) install ;;
  start) start "${2:?port}" "${3:?data directory}" ;;
  stop) stop "${2:?data directory}" ;;
  down) down "${2:?data directory}" ;;
  up) up "${2:?port}" "${3:?data directory}" ;;
  *) echo "usage: $0 install | start PORT DIR | stop DIR | down DIR | up PORT DIR" >&2; exit 2 ;;
esac
