"""Progress for a long step a user waits on: what it is, how long it usually takes, and how long it has taken."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import TextIO


def duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


class Ticker:
    """``with Ticker(out, "installing vLLM", usually="about 3 minutes"):`` prints the step when it begins, a line
    every ``every_s`` seconds while it runs (plain lines, so they read the same in a terminal and in a log), and
    how long it took when it ends."""

    def __init__(self, out: TextIO, what: str, *, usually: str, every_s: float = 15.0) -> None:
        self._out = out
        self._what = what
        self._usually = usually
        self._every_s = every_s
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    def say(self, line: str) -> None:
        print(f"ecgw: {line}", file=self._out, flush=True)

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self._t0

    def __enter__(self) -> Ticker:
        self._t0 = time.monotonic()
        self.say(f"{self._what} (usually {self._usually})")
        self._thread = threading.Thread(target=self._tick, name="ecgw-progress", daemon=True)
        self._thread.start()
        return self

    def _tick(self) -> None:
        while not self._done.wait(self._every_s):
            self.say(f"{self._what}: {duration(self.elapsed_s)} so far (usually {self._usually})")

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        outcome = "done" if kind is None else "stopped"
        self.say(f"{self._what}: {outcome} after {duration(self.elapsed_s)}")
