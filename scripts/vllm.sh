#!/usr/bin/env bash
# The real vLLM for the test suite and for `make serve` without an edge: the script ships inside the package
# (gateway/launch/vllm.sh), so an installed gateway launches the same one; this is its name in a checkout.
exec bash "$(cd "$(dirname "$0")" && pwd)/../gateway/launch/vllm.sh" "$@"
