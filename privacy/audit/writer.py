"""``AuditWriter``: audit rows off the request path, on the metering writer's durable core (``accounting.durable``).

One background thread builds records (hashes, JSON) and writes them in order: what queued up while it wrote the
last ones, or within ``_LINGER_S`` of the first, goes in one transaction (up to ``_BATCH`` records, one lock of the
chain, its entries in one insert), so a busy gateway's records cost the thread — and the GIL the request path
shares with it — a fraction of a transaction each. A write the database refuses is kept and retried with doubling
delays (up to ``retry_max_s``) for as long as the outage lasts — nothing is dropped; those rows are the evidence
behind every exposure report. Past
``max_pending`` records wait in the spill file, not in memory, and come back first once the database answers.
``close()`` keeps retrying for ``shutdown_timeout_s``, then spills what is left (mode 0600); ``start()`` claims a
spill an earlier run left and writes it first. Reads (reports) run on the same thread after the writes queued
before them; during an outage they run anyway and fail rather than wait.

Built records go to the process's journal (``accounting.durable.Journal``, beside the spill file) before the
database is tried, so a process killed with -9 loses none the journal took: ``start()`` claims the journal of a
process that no longer runs and writes its unwritten records first. ``durable()`` builds and journals, on the
caller's thread, whatever is queued and not yet journaled: a receipt is handed out only after it
(``privacy.audit.receipts``), so a client never holds a receipt whose record a crash of the process can take. Building
and journaling never wait for the database: they hold their own lock, not the writer's transaction.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accounting.durable import Backoff, Claim, DurableBuffer, Journal, Mark, Record, SpillFile
from privacy.audit.store import AuditStore

log = logging.getLogger("ecgw.privacy")

__all__ = ["AuditWriter", "Record"]

_STOP = object()
_BATCH = 32  # records a transaction at most: what queued up while the last one was written goes in together
_LINGER_S = 0.002  # how long the first record of a batch waits for more: a busy gateway's come in batches, not alone


class _Read:
    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()


@dataclass
class _Replay:
    """Records an earlier run left (its spill file, or its journal), claimed: written before what is pending."""

    claim: Claim


Build = Callable[[], Record | None]
Job = Build | _Read | _Replay | object  # object: _STOP
Staged = Record | None | _Read | _Replay | object  # a build's record (None: nothing to write), in submission order


class AuditWriter:
    def __init__(self, store: AuditStore, *, spill_path: Path | None = None, retry_initial_s: float = 0.25,
                 retry_max_s: float = 5.0, shutdown_timeout_s: float = 30.0, max_pending: int = 100_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self._initial = retry_initial_s
        self._max = retry_max_s
        self._shutdown_timeout = shutdown_timeout_s
        self._max_pending = max_pending  # a long outage: beyond this, records go to the spill file, not memory
        self._clock = clock
        self._buffer = DurableBuffer("privacy audit database", spill=SpillFile(spill_path) if spill_path else None,
                                     log=log, clock=clock)  # built, not yet written (thread-owned)
        self._journal = (Journal(spill_path.with_name(f"{spill_path.name}.journal"), log=log)
                         if spill_path is not None else None)
        self._lock = threading.Lock()  # the queues and the counts below
        self._work = threading.Condition(self._lock)  # the writer thread waits for jobs on it
        self._done = threading.Condition(self._lock)  # flush() waits for the writer thread on it
        self._inbox: deque[Job] = deque()  # submitted, not yet built
        self._staged: deque[Staged] = deque()  # built and journaled, for the writer thread, in order
        self._stage_lock = threading.Lock()  # taking from the inbox through handing to the writer: one at a time
        self._journal_warned = -float("inf")  # when a journal that cannot be written was last logged
        self._submitted = 0
        self._handled = 0
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()
        self.written = 0

    # the request path ------------------------------------------------------------------------------------------
    def submit(self, build: Build) -> None:
        """``build`` runs on the writer thread (or in ``durable``) and returns the record to write (None:
        nothing)."""
        self._put(build)

    def read(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        job = _Read(fn)
        self._put(job)
        return job.future

    def durable(self) -> None:
        """Every record submitted so far is in the journal (built here if the writer thread has not built it
        yet) when this returns: a crash of the process cannot take it. Without a journal (no spill path), a
        no-op."""
        if self._journal is not None:
            self._stage()

    @property
    def pending(self) -> int:
        with self._lock:
            queued = len(self._inbox) + len(self._staged)
        return len(self._buffer) + queued

    @property
    def journal(self) -> Journal | None:
        return self._journal

    def _put(self, job: Job) -> None:
        self._ensure_thread()
        with self._lock:
            self._inbox.append(job)
            self._submitted += 1
            self._work.notify()

    def _ensure_thread(self) -> None:
        with self._thread_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="ecgw-privacy-audit", daemon=True)
                self._thread.start()

    # lifecycle ---------------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Claim a spill file left by an earlier shutdown (one worker wins the rename) and the journals of
        processes that no longer run, and write their records first."""
        claim = self._buffer.claim()
        if claim is not None:
            log.warning("writing %d audit records saved at the last shutdown in %s", len(claim.records),
                        self._buffer.spill_file.path if self._buffer.spill_file else "-")
            self._replay(claim)
        for orphan in self._journal.orphans() if self._journal is not None else ():
            log.warning("writing %d audit records journaled by a process that stopped before writing them, from %s",
                        len(orphan.records), orphan.path)
            self._replay(orphan)

    def flush(self) -> None:
        """Wait until every job queued so far has been handled (written, or kept for retry during an outage)."""
        with self._lock:
            target = self._submitted
            while self._handled < target and self._thread is not None and self._thread.is_alive():
                self._done.wait(timeout=0.5)

    def close(self) -> None:
        with self._thread_lock:
            thread = self._thread
            self._thread = None
        if thread is not None and thread.is_alive():
            with self._lock:
                self._inbox.append(_STOP)
                self._submitted += 1
                self._work.notify()
            thread.join(timeout=self._shutdown_timeout + 10)
        elif self._buffer.pending:
            self._drain_at_shutdown()
        if self._journal is not None and not self._buffer.pending and not self._staged:
            self._journal.close()  # everything is written or spilled

    def _replay(self, claim: Claim) -> None:
        """``claim``'s records into this process's journal, then to the writer thread ahead of what comes after."""
        self._ensure_thread()
        with self._stage_lock:
            if self._journal is not None:
                self._journal.append(claim.records)
            with self._lock:
                self._staged.append(_Replay(claim))
                self._submitted += 1
                self._work.notify()

    # building and journaling: the writer thread, or a caller of durable() --------------------------------------
    def _stage(self) -> None:
        """Build what is in the inbox, journal the records (one write) and hand them to the writer thread, in
        order."""
        with self._stage_lock:
            with self._lock:
                jobs = list(self._inbox)
                self._inbox.clear()
            if not jobs:
                return
            staged: list[Staged] = []
            for job in jobs:
                if job is _STOP or isinstance(job, _Read | _Replay):
                    staged.append(job)
                else:
                    staged.append(_build(job))  # type: ignore[arg-type]
            records = [item for item in staged if isinstance(item, dict)]
            if records and self._journal is not None:
                try:
                    self._journal.append(records)
                except OSError as exc:  # a full disk: the records are still written, only not crash-proof
                    now = time.monotonic()
                    if now - self._journal_warned > 60:
                        self._journal_warned = now
                        log.error("could not journal %d audit records (%s); they are written, but a crash before "
                                  "then would lose them", len(records), exc)
            with self._lock:
                self._staged.extend(staged)
                self._work.notify()

    def _take(self) -> tuple[list[Staged], Mark | None]:
        """What is staged, and the journal's mark: every record journaled before it is among these or pending."""
        with self._stage_lock, self._lock:
            items = list(self._staged)
            self._staged.clear()
            return items, self._journal.mark() if self._journal is not None else None

    def _idle_mark(self) -> Mark | None:
        """The journal's mark when nothing is staged (every record journaled is pending), else None."""
        with self._stage_lock, self._lock:
            return self._journal.mark() if self._journal is not None and not self._staged else None

    # the writer thread -------------------------------------------------------------------------------------------
    def _run(self) -> None:
        backoff = Backoff(self._initial, self._max, clock=self._clock)
        wait = self._initial
        while True:
            with self._lock:
                if not self._inbox and not self._staged:
                    self._work.wait(timeout=wait if self._buffer.pending else None)
                idle = not self._inbox and not self._staged
                if not idle:
                    self._linger()
            if idle:  # time to retry the pending records
                wait = self._write_pending(backoff, self._idle_mark())
                continue
            self._stage()
            items, mark = self._take()
            try:
                for item in items:
                    if item is _STOP:
                        self._drain_at_shutdown()
                        return
                    if isinstance(item, _Read):
                        self._read(item, backoff)
                    elif isinstance(item, _Replay):
                        self._buffer.add(item.claim.records)
                        item.claim.done()  # they are in this process's journal now
                    elif isinstance(item, dict):
                        self._buffer.add([item])
                wait = self._write_pending(backoff, mark)
                if len(self._buffer) > self._max_pending and self._buffer.spill_file is not None:
                    self._buffer.spill("privacy.audit_spill_path")
            finally:
                with self._lock:
                    self._handled += len(items)
                    self._done.notify_all()

    def _linger(self) -> None:
        """(Holding the lock.) Wait up to ``_LINGER_S`` for more records, up to ``_BATCH`` or a read or the stop
        queued: the writer waits without the GIL; a record lands in the database that much later, never later
        than a read queued after it."""
        until = time.monotonic() + _LINGER_S
        while len(self._inbox) + len(self._staged) < _BATCH and all(callable(job) for job in self._inbox):
            remaining = until - time.monotonic()
            if remaining <= 0:
                return
            self._work.wait(remaining)

    def _read(self, job: _Read, backoff: Backoff) -> None:
        self._write_pending(backoff, None)
        try:
            job.future.set_result(job.fn())
        except Exception as exc:  # handed to the caller; a read is never retried
            job.future.set_exception(exc)

    def _write_pending(self, backoff: Backoff, mark: Mark | None) -> float:
        """Write what is pending, in order, up to ``_BATCH`` records a transaction; the wait before the next try
        (reset after success, doubled after failure). Once nothing is pending, the journal learns that what it
        held before ``mark`` is written."""
        if self._buffer.write(self._apply, batch=_BATCH, reachable=self.store.reachable):
            backoff.reset()
            if mark is not None and self._journal is not None and not self._buffer.pending:
                self._journal.written(mark)
            return backoff.delay
        return backoff.failed() or backoff.maximum

    def _apply(self, records: list[Record]) -> None:
        self.store.apply_many(records)
        self.written += len(records)

    def _drain_at_shutdown(self) -> None:
        self._stage()  # what came after the stop was queued (nothing, normally)
        items, _ = self._take()
        self._buffer.add([item for item in items if isinstance(item, dict)])
        backoff = Backoff(self._initial, self._max, deadline_s=self._shutdown_timeout, clock=self._clock)
        while self._buffer.pending:
            if self._buffer.write(self._apply, batch=_BATCH, reachable=self.store.reachable):
                break
            delay = backoff.failed()
            if delay is None:
                break
            time.sleep(delay)
        self._buffer.spill("privacy.audit_spill_path")


def _build(build: Build) -> Record | None:
    try:
        return build()
    except Exception:  # a bug in building must not stop the writer
        log.exception("could not build an audit record")
        return None
