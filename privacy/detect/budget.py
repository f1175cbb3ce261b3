"""What detecting one request may cost (``privacy.scan_budget``): the new text it brings (bytes) and the CPU time
its detection and last check spend. Past either the step does not leave (``ScanOverBudget``): detection never runs
unbounded, however a request is shaped."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from accounting.errors import EcgwError

MAX_BYTES = "privacy.scan_budget.max_bytes"
MAX_CPU_S = "privacy.scan_budget.max_cpu_s"


class ScanOverBudget(EcgwError):
    """A request's detection went past its budget; ``setting`` names the limit it met."""

    def __init__(self, setting: str, reason: str) -> None:
        super().__init__(f"{reason} ({setting})")
        self.setting = setting
        self.reason = reason


def check_bytes(size: int, limit: int) -> None:
    """Before any work: the new text one request brings to detection."""
    if size > limit:
        raise ScanOverBudget(MAX_BYTES, f"this request brings {size} bytes of new text to the privacy scan; the "
                                        f"budget is {limit}")


class ScanMeter:
    """The CPU time one request's detection spends, on whichever thread runs it (``time.thread_time`` over each
    stretch in ``running``; another request's work on another thread does not count), checked between pieces of
    work (``check``: between texts, layers, batches of NER segments, parts of the body)."""

    def __init__(self, max_cpu_s: float) -> None:
        self._limit = max_cpu_s
        self._spent = 0.0
        self._since: float | None = None

    @contextmanager
    def running(self) -> Iterator[ScanMeter]:
        """A stretch of the request's detection on the calling thread."""
        self._since = time.thread_time()
        try:
            yield self
        finally:
            self._spent += time.thread_time() - self._since
            self._since = None

    @property
    def spent(self) -> float:
        return self._spent + (time.thread_time() - self._since if self._since is not None else 0.0)

    def check(self) -> None:
        spent = self.spent
        if spent > self._limit:
            raise ScanOverBudget(MAX_CPU_S, f"the privacy scan of this request spent {spent:.1f} s of CPU; the budget "
                                            f"is {self._limit:g} s")


class Checkpoint(Protocol):
    def check(self) -> None:
        """Raise ``ScanOverBudget`` once the request's scan has spent its budget."""
        ...


class _Unmetered:
    """No budget (detection outside a request: warm-up, a tool's own scan): ``check`` never stops anything."""

    def check(self) -> None:
        return None


UNMETERED: Checkpoint = _Unmetered()
