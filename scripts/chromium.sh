#!/usr/bin/env bash
# Debian's headless Chromium for the dashboard's browser test (tests/observability/test_dashboard_browser.py).
#   scripts/chromium.sh install   install Debian's chromium if /usr/bin/chromium is missing (root; idempotent)
#   scripts/chromium.sh env       print `export ECGW_TEST_CHROMIUM=...` when it is installed (exit 1 otherwise)
# Playwright drives it through executable_path; `playwright install` (which downloads browsers) is never run.
set -euo pipefail

BIN=${ECGW_CHROMIUM_BIN:-/usr/bin/chromium}

install() {
  if [ -x "$BIN" ]; then return 0; fi
  if [ "$(id -u)" != 0 ]; then
    echo "chromium not found at $BIN; install Debian's chromium package (needs root)" >&2
    return 1
  fi
  echo "installing Chromium from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core >/dev/null
  [ -x "$BIN" ]
}

env() {
  if [ ! -x "$BIN" ]; then return 1; fi
  echo "export ECGW_TEST_CHROMIUM=$BIN"
}

case "${1:-}" in
  install) install ;;
  env) env ;;
  *) echo "usage: $0 install|env" >&2; exit 2 ;;
esac
