"""The one durable-writer core: records kept, in order, until a store has taken them — never dropped by an outage.

``DurableBuffer`` holds the records not yet written and writes them through a function its user gives (a batch at a
time, or all in one transaction). A write the store refuses keeps every record; the user retries after the delay
``Backoff`` gives (doubling up to a maximum, reset by a success; with a deadline at shutdown). What cannot be
written — at shutdown, or past a bound during a long outage — is spilled to a ``SpillFile``: JSON lines, mode 0600,
one append per spill (workers sharing the file never interleave within a line), fsync-ed. A spill is claimed back
by renaming it (one worker wins) and its records go in front of what is pending, in their order: at the next start,
or as soon as the store answers again.

A ``Journal`` keeps what a process has taken but its store may not hold yet where a crash of the process cannot take
it: one append-only file per process (``<base>.<pid>``), each append one ``write`` handed to the OS before the caller
goes on (no fsync: a process killed with -9 loses nothing it appended; a machine that loses power loses what the OS
had not flushed yet, ``vm.dirty_expire_centisecs``, 30 s by default). A writer marks the journal before it writes
what is pending and tells it once that is stored: the file is emptied when nothing came since, else a line records
how far it is written, and a file grown past ``compact_bytes`` is rewritten with its unwritten tail only. The file is
locked (``flock``) while its process runs: at the next start, a journal no running process holds is claimed and
its unwritten records are written first.

The core does no I/O scheduling of its own, so one core serves both users, as httpx's ``BaseClient`` serves
``Client`` and ``AsyncClient``: the metering writer (``accounting.writer``, an asyncio task writing from a thread)
and the audit writer (``privacy.audit.writer``, a thread of its own).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

Record = dict[str, Any]


class Serialised:
    """A part of a record made JSON once and carried by many (the audit's finding set of a system prompt, in every call
    of its session): the journal writes ``json`` as it is, the spill file writes ``plain()``'s value. Read back, it
    is that plain value. A base class, not a protocol: the journal's check of each such part is one ``isinstance``
    of a class (a runtime protocol's took ~40 µs, more than encoding the part)."""

    __slots__ = ("json",)

    def __init__(self, json: bytes) -> None:
        self.json = json

    def plain(self) -> Any:
        raise NotImplementedError


def _fragment(value: Any) -> Any:
    """orjson's ``default``: a ``Serialised`` part's bytes, as they are."""
    if isinstance(value, Serialised):
        return orjson.Fragment(value.json)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _plain(value: Any) -> Any:
    """json's ``default``: a ``Serialised`` part's plain value."""
    if isinstance(value, Serialised):
        return value.plain()
    raise TypeError(f"{type(value).__name__} is not JSON")


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
    lock: int | None = None  # a claimed journal's descriptor, holding its lock until the file is gone

    def done(self) -> None:
        """Its records are written (or held by a writer that will spill them again): the claimed file goes."""
        self.path.unlink(missing_ok=True)
        self.release()

    def release(self) -> None:
        """The claimed journal left for the next start (its records could not be written)."""
        if self.lock is not None:
            os.close(self.lock)
            self.lock = None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class SpillFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def exists(self) -> bool:
        return self.path.exists()

    def append(self, records: Iterable[Mapping[str, Any]]) -> int:
        """Append ``records`` in one write (0600, fsync-ed); how many."""
        data = "".join(json.dumps(record, ensure_ascii=False, default=_plain) + "\n" for record in records).encode()
        if not data:
            return 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:  # one append per spill: workers sharing the file never interleave within a line
            _write_all(fd, data)
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


Mark = tuple[int, int]  # (the journal file's generation, its size): what was appended before the mark
_WRITTEN = "_journal_written"  # a journal line saying every record before this offset is stored


class Journal:
    """The records a process has taken and not yet stored, in one append-only file of its own (see the module's
    docstring). Thread-safe: the request path appends while a writer marks and reports what it stored."""

    def __init__(self, base: Path, *, log: logging.Logger, compact_bytes: int = 64 << 20) -> None:
        self.base = base
        self._log = log
        self._compact_bytes = compact_bytes
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._path = base.with_name(f"{base.name}.{os.getpid()}")
        self._size = 0
        self._generation = 0
        self.appended = 0  # records appended since the start, for tests and figures

    @property
    def path(self) -> Path:
        return self._path

    def append(self, records: Iterable[Mapping[str, Any]]) -> None:
        """``records`` in one write, handed to the OS before this returns."""
        data = b"".join(orjson.dumps(record, default=_fragment) + b"\n" for record in records)
        if not data:
            return
        with self._lock:
            fd = self._fd if self._fd is not None else self._open()
            _write_all(fd, data)
            self._size += len(data)
            self.appended += data.count(b"\n")

    def mark(self) -> Mark:
        """Where the journal ends now: give it to ``written`` once every record appended before is stored."""
        with self._lock:
            return self._generation, self._size

    def written(self, mark: Mark) -> None:
        """Every record appended before ``mark`` is stored (or in a spill file): emptied if nothing came since,
        else the fact recorded (and the file rewritten with its tail once it is past ``compact_bytes``)."""
        with self._lock:
            generation, offset = mark
            if self._fd is None or generation != self._generation or offset == 0:
                return
            try:
                if offset == self._size:
                    os.ftruncate(self._fd, 0)
                    self._size, self._generation = 0, self._generation + 1
                elif self._size > self._compact_bytes:
                    self._compact(offset)
                else:
                    line = orjson.dumps({_WRITTEN: offset}) + b"\n"
                    _write_all(self._fd, line)
                    self._size += len(line)
            except OSError as exc:  # the records are stored: a replay would only skip them by their ids
                self._log.warning("could not record in the journal %s that its records are stored (%s)",
                                  self._path, exc)

    def close(self) -> None:
        """At a clean shutdown, once everything is stored or spilled: the file goes."""
        with self._lock:
            if self._fd is not None:
                self._path.unlink(missing_ok=True)
                os.close(self._fd)
                self._fd = None

    def orphans(self) -> list[Claim]:
        """The journals of processes that no longer run (no one holds their lock), claimed: their unwritten records,
        oldest file first. The caller stores them (or appends them to its own journal) and then calls ``done``."""
        claims = []
        for path in sorted(self.base.parent.glob(f"{self.base.name}.*"), key=_mtime):
            if path == self._path:
                continue
            claim = _claim(path, self._log)
            if claim is not None:
                claims.append(claim)
        return claims

    def _open(self) -> int:
        # this process's: a journal built before ``ecgw serve`` forked its workers is opened in each of them
        self._path = self.base.with_name(f"{self.base.name}.{os.getpid()}")
        self._path.parent.mkdir(parents=True, exist_ok=True)
        if self._path.exists():  # an earlier process with this id (a container's restart): its file is an orphan
            os.replace(self._path, self._path.with_name(f"{self._path.name}.{uuid.uuid4().hex[:8]}"))
        fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._fd = fd
        return fd

    def _compact(self, offset: int) -> None:
        assert self._fd is not None
        with self._path.open("rb") as current:
            current.seek(offset)
            tail = current.read()
        tmp = self.base.with_name(f"{self.base.name}-compacting.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        _write_all(fd, tail)
        os.replace(tmp, self._path)
        os.close(self._fd)
        self._fd, self._size, self._generation = fd, len(tail), self._generation + 1


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _claim(path: Path, log: logging.Logger) -> Claim | None:
    """``path``'s unwritten records if no running process holds it (its lock taken, and the file still the one
    opened: another claimer may have removed it meanwhile); None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_ino != path.stat().st_ino:
            raise FileNotFoundError(path)
        with os.fdopen(os.dup(fd), "rb") as file:
            data = file.read()
    except (BlockingIOError, FileNotFoundError):  # its process runs, or another worker took it
        os.close(fd)
        return None
    records: list[tuple[int, Record]] = []
    written, offset = 0, 0
    for line in data.splitlines(keepends=True):
        start, offset = offset, offset + len(line)
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:  # a write the machine's crash cut short
            log.warning("skipping a damaged line in the journal %s", path)
            continue
        if isinstance(record, dict) and _WRITTEN in record:
            written = max(written, int(record[_WRITTEN]))
        else:
            records.append((start, record))
    return Claim([record for start, record in records if start >= written], path, fd)


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
