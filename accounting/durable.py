"""The one durable-writer core: records kept, in order, until a store has taken them — never dropped by an outage.

``DurableBuffer`` holds the records not yet written and writes them through a function its user gives (a batch at a
time, or all in one transaction). A write the store refuses keeps every record; the user retries after the delay
``Backoff`` gives (doubling up to a maximum, reset by a success; with a deadline at shutdown). What cannot be
written — at shutdown, or past a bound during a long outage — is spilled to a ``SpillFile``: JSON lines, mode 0600,
one append per spill (workers sharing the file never interleave within a line), fsync-ed. A spill is claimed back
by renaming it (one worker wins) and its records go in front of what is pending, in their order: at the next start,
or as soon as the store answers again.

The core does no I/O scheduling of its own, so one core serves both users, as httpx's ``BaseClient`` serves
``Client`` and ``AsyncClient``: the metering writer (``accounting.writer``, an asyncio task writing from a thread)
and the audit writer (``privacy.audit.writer``, a thread of its own).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Record = dict[str, Any]


class Backoff:
    """Retry delays: ``initial``, doubled after each failure up to ``maximum``; ``None`` once the next wait would
    end past ``deadline_s`` from now (shutdown: retry this long, then spill)."""

    def __init__(self, initial: float, maximum: float, *, deadline_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.initial = initial
        self.maximum = maximum
        self.delay = initial
        self._clock = clock
        self._deadline = clock() + deadline_s if deadline_s is not None else None

    def failed(self) -> float | None:
        """The delay to wait before the next try (None: past the deadline, stop trying)."""
        delay = self.delay
        if self._deadline is not None and self._clock() + delay > self._deadline:
            return None
        self.delay = min(self.delay * 2, self.maximum)
        return delay

    def reset(self) -> None:
        self.delay = self.initial


@dataclass
class Claim:
    """A spill file taken by this process (renamed, so no other worker replays it too) and the records it held."""

    records: list[Record]
    path: Path

    def done(self) -> None:
        """Its records are written (or held by a writer that will spill them again): the claimed file goes."""
        self.path.unlink(missing_ok=True)


class SpillFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def exists(self) -> bool:
        return self.path.exists()

    def append(self, records: Iterable[Mapping[str, Any]]) -> int:
        """Append ``records`` in one write (0600, fsync-ed); how many."""
        data = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode()
        if not data:
            return 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:  # one append per spill: workers sharing the file never interleave within a line
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        return data.count(b"\n")

    def claim(self) -> Claim | None:
        """The spill file's records, the file renamed to this process's name first (None: no file, or another
        worker claimed it)."""
        claimed = self.path.with_name(f"{self.path.name}.{os.getpid()}.replay")
        try:
            os.replace(self.path, claimed)
        except FileNotFoundError:
            return None
        lines = claimed.read_text(encoding="utf-8").splitlines()
        return Claim([json.loads(line) for line in lines if line.strip()], claimed)

    def give_back(self, claim: Claim) -> None:
        """A claim that could not be written goes back to the spill file (appended: another worker may have
        spilled since), for the next start."""
        self.append(claim.records)
        claim.done()


class DurableBuffer:
    """Records not yet written, in order. ``name``: the store as log lines name it; ``explain``: what a refused
    write says (the store's own wording of the failure)."""

    def __init__(self, name: str, *, spill: SpillFile | None, log: logging.Logger,
                 explain: Callable[[BaseException], str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.spill_file = spill
        self.pending: deque[Record] = deque()
        self._log = log
        self._explain = explain or (lambda exc: f"{name} unavailable ({type(exc).__name__})")
        self._clock = clock
        self._failing_since: float | None = None
        self._spilled = False  # this run moved records to the spill file: they go first once the store is back

    def __len__(self) -> int:
        return len(self.pending)

    def add(self, records: Iterable[Record]) -> None:
        self.pending.extend(records)

    def write(self, write: Callable[[list[Record]], None], *, batch: int | None = None,
              reachable: Callable[[], bool] | None = None) -> bool:
        """Write what is pending through ``write``, in order: ``batch`` records a call (each batch kept once
        written), or all in one call — made even with nothing pending, so a user may write more in the same
        transaction. Records this run spilled are claimed back first, once ``reachable()`` says the store answers.
        False (every unwritten record kept) if the store refused."""
        try:
            if self._spilled:
                if reachable is not None and not reachable():
                    raise ConnectionError(f"{self.name} does not answer")
                self._reclaim()
            if batch is None:
                taken = list(self.pending)
                write(taken)
                for _ in taken:
                    self.pending.popleft()
            else:
                while self.pending:
                    taken = [self.pending[i] for i in range(min(batch, len(self.pending)))]
                    write(taken)
                    for _ in taken:
                        self.pending.popleft()
        except Exception as exc:
            if self._failing_since is None:
                self._failing_since = self._clock()
                self._log.error("%s; keeping %d records and retrying", self._explain(exc), len(self.pending))
            return False
        if self._failing_since is not None:
            self._log.warning("%s is back after %.1f s; the records kept are written", self.name,
                              self._clock() - self._failing_since)
            self._failing_since = None
        return True

    def spill(self, lost_hint: str) -> int:
        """Every pending record to the spill file (then this run claims it back once the store answers), or their
        loss logged when there is none (``lost_hint``: the setting that would have kept them). How many."""
        records = list(self.pending)
        if not records:
            return 0
        if self.spill_file is None:
            self._log.error("%s unreachable; %d records lost (set %s to keep them)", self.name, len(records),
                            lost_hint)
            return 0
        self.spill_file.append(records)
        self.pending.clear()
        self._spilled = True
        self._log.error("%s unreachable; %d records saved to %s, written when it is back or at the next start",
                        self.name, len(records), self.spill_file.path)
        return len(records)

    def claim(self) -> Claim | None:
        """A spill file an earlier run left, claimed (one worker wins the rename): the caller writes its records, or
        puts them first (``put_first``), then calls its ``done()``; or ``give_back`` when they cannot be written."""
        if self.spill_file is None or not self.spill_file.exists():
            return None
        return self.spill_file.claim()

    def give_back(self, claim: Claim) -> None:
        assert self.spill_file is not None
        self.spill_file.give_back(claim)

    def put_first(self, records: list[Record]) -> None:
        """``records`` in front of what is pending, in their order."""
        self.pending.extendleft(reversed(records))

    def _reclaim(self) -> None:
        self._spilled = False
        claim = self.spill_file.claim() if self.spill_file is not None else None
        if claim is not None:
            self.put_first(claim.records)
            claim.done()
