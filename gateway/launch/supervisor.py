"""One child process the gateway owns: started in its own process group, restarted when it dies, stopped (the
whole group) when the gateway stops."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger("ecgw.launch")

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child (before exec, or a forked worker): the kernel sends SIGTERM if the gateway dies without stopping it (SIGKILL)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the gateway's own stop() still ends it
        pass


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Supervisor:
    """Runs ``command`` with its output in ``log_path``. ``watch()`` restarts it whenever it exits on its own,
    waiting longer after each start that did not last (``min_uptime_s``), up to ``max_backoff_s``."""

    def __init__(self, command: Sequence[str], *, name: str, log_path: Path, env: dict[str, str] | None = None,
                 min_uptime_s: float = 120.0, max_backoff_s: float = 60.0,
                 on_restart: Callable[[int], None] | None = None) -> None:
        self._command = list(command)
        self.name = name
        self.log_path = log_path
        self._env = env
        self._min_uptime_s = min_uptime_s
        self._max_backoff_s = max_backoff_s
        self._on_restart = on_restart
        self._process: subprocess.Popen[bytes] | None = None
        self._started_at = 0.0
        self._stopping = threading.Event()
        self._lock = threading.RLock()  # stop() may run in a signal handler while start() holds it
        self._watcher: threading.Thread | None = None
        self.restarts = 0

    @property
    def thread_name(self) -> str:
        """Its watcher's: a thread that takes no lock a forked worker needs (``gateway.launch.prefork``)."""
        return f"ecgw-{self.name}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def exit_code(self) -> int | None:
        return self._process.poll() if self._process is not None else None

    def start(self) -> int:
        with self._lock:
            if self._stopping.is_set():
                raise RuntimeError(f"{self.name} is stopping")
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "ab") as out:
                self._process = subprocess.Popen(
                    self._command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=self._env,
                    start_new_session=True, preexec_fn=die_with_parent)
            self._started_at = time.monotonic()
            return self._process.pid

    def watch(self, poll_s: float = 1.0) -> None:
        """Restart the child whenever it exits on its own, until ``stop()``."""
        self._watcher = threading.Thread(target=self._watch, args=(poll_s,), name=self.thread_name, daemon=True)
        self._watcher.start()

    def _watch(self, poll_s: float) -> None:
        backoff = 1.0
        while not self._stopping.wait(poll_s):
            code = self.exit_code()
            if code is None:
                continue
            lasted = time.monotonic() - self._started_at
            backoff = 1.0 if lasted >= self._min_uptime_s else min(backoff * 2, self._max_backoff_s)
            log.warning("%s (pid %s) exited with code %s after %.0f s; restarting in %.0f s. Its log (%s) ends:\n%s",
                        self.name, self.pid, code, lasted, backoff, self.log_path, tail(self.log_path))
            self._reap_group()
            if self._stopping.wait(backoff):
                return
            try:
                pid = self.start()
            except (OSError, RuntimeError):
                log.exception("restarting %s failed", self.name)
                continue
            self.restarts += 1
            log.warning("%s restarted (pid %s)", self.name, pid)
            if self._on_restart is not None:
                self._on_restart(pid)

    def _reap_group(self, grace_s: float = 10.0) -> None:
        """TERM the child's whole process group (vLLM runs its engine in a child of its own), KILL what stays."""
        process = self._process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.2)
            try:
                os.killpg(process.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)

    def stop(self) -> None:
        """Stop watching and end the child's process group; safe to call twice and from a signal handler."""
        self._stopping.set()
        with self._lock:
            self._reap_group()
        watcher = self._watcher
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout=5)
