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
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from accounting.durable import Backoff, DurableBuffer, Record, SpillFile
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
        self._queue: queue.Queue[Any] = queue.Queue()
        self._buffer = DurableBuffer("privacy audit database", spill=SpillFile(spill_path) if spill_path else None,
                                     log=log, clock=clock)  # built, not yet written (thread-owned)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.written = 0

    # the request path ------------------------------------------------------------------------------------------
    def submit(self, build: Callable[[], Record | None]) -> None:
        """``build`` runs on the writer thread and returns the record to write (None: nothing)."""
        self._ensure_thread()
        self._queue.put(build)

    def read(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        self._ensure_thread()
        job = _Read(fn)
        self._queue.put(job)
        return job.future

    @property
    def pending(self) -> int:
        return len(self._buffer) + self._queue.qsize()

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="ecgw-privacy-audit", daemon=True)
                self._thread.start()

    # lifecycle ---------------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Claim a spill file left by an earlier shutdown (one worker wins the rename) and write it first."""
        claim = self._buffer.claim()
        if claim is None:
            return
        log.warning("writing %d audit records saved at the last shutdown in %s", len(claim.records),
                    self._buffer.spill_file.path if self._buffer.spill_file else "-")

        def replay() -> None:
            self._buffer.put_first(claim.records)
            claim.done()
            return None

        self.submit(replay)

    def flush(self) -> None:
        """Wait until every job queued so far has been handled (written, or kept for retry during an outage)."""
        if self._thread is not None and self._thread.is_alive():
            self._queue.join()

    def close(self) -> None:
        with self._lock:
            thread = self._thread
            self._thread = None
        if thread is not None and thread.is_alive():
            self._queue.put(_STOP)
            thread.join(timeout=self._shutdown_timeout + 10)
        elif self._buffer.pending:
            self._drain_at_shutdown()

    # the writer thread -------------------------------------------------------------------------------------------
    def _run(self) -> None:
        backoff = Backoff(self._initial, self._max, clock=self._clock)
        wait = self._initial
        held: object = None  # a read or the stop, taken from the queue while gathering a batch: handled next
        while True:
            if held is not None:
                job, held = held, None
            else:
                try:
                    job = self._queue.get(timeout=wait if self._buffer.pending else None)
                except queue.Empty:  # time to retry the pending records
                    wait = self._write_pending(backoff)
                    continue
            if job is _STOP:
                try:
                    self._drain_at_shutdown()
                finally:
                    self._queue.task_done()
                return
            if isinstance(job, _Read):
                try:
                    self._read(job, backoff)
                finally:
                    self._queue.task_done()
                continue
            builds, held = self._gather(job)
            try:
                wait = self._write_built(builds, backoff)
            finally:
                for _ in builds:
                    self._queue.task_done()

    def _read(self, job: _Read, backoff: Backoff) -> None:
        self._write_pending(backoff)
        try:
            job.future.set_result(job.fn())
        except Exception as exc:  # handed to the caller; a read is never retried
            job.future.set_exception(exc)

    def _gather(self, first: Any) -> tuple[list[Callable[[], Record | None]], object]:
        """``first`` and the records queued behind it or within ``_LINGER_S``, up to ``_BATCH`` and to the next read
        or the stop (returned second, to be handled next; None when there is none). The writer waits without the
        GIL; a record lands in the database that much later, never later than a read queued after it."""
        builds = [first]
        until = time.monotonic() + _LINGER_S
        while len(builds) < _BATCH:
            try:
                job = self._queue.get(timeout=max(until - time.monotonic(), 0.0))
            except queue.Empty:
                break
            if job is _STOP or isinstance(job, _Read):
                return builds, job
            builds.append(job)
        return builds, None

    def _write_built(self, builds: list[Callable[[], Record | None]], backoff: Backoff) -> float:
        """Build the records and write them after what is pending (``_BATCH`` a transaction); the wait before the
        next try."""
        for build in builds:
            try:
                record = build()
            except Exception:  # a bug in building must not stop the writer
                log.exception("could not build an audit record")
                record = None
            if record is not None:
                self._buffer.add([record])
        wait = self._write_pending(backoff)
        if len(self._buffer) > self._max_pending and self._buffer.spill_file is not None:
            self._buffer.spill("privacy.audit_spill_path")
        return wait

    def _write_pending(self, backoff: Backoff) -> float:
        """Write what is pending, in order, up to ``_BATCH`` records a transaction; the wait before the next try
        (reset after success, doubled after failure)."""
        if self._buffer.write(self._apply, batch=_BATCH, reachable=self.store.reachable):
            backoff.reset()
            return backoff.delay
        return backoff.failed() or backoff.maximum

    def _apply(self, records: list[Record]) -> None:
        self.store.apply_many(records)
        self.written += len(records)

    def _drain_at_shutdown(self) -> None:
        backoff = Backoff(self._initial, self._max, deadline_s=self._shutdown_timeout, clock=self._clock)
        while self._buffer.pending:
            if self._buffer.write(self._apply, batch=_BATCH, reachable=self.store.reachable):
                break
            delay = backoff.failed()
            if delay is None:
                break
            time.sleep(delay)
        self._buffer.spill("privacy.audit_spill_path")
