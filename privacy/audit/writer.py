"""``AuditWriter``: audit rows off the request path, with the metering writer's durability.

One background thread builds records (hashes, JSON) and writes them in order. A write the database refuses is kept
and retried with doubling delays (up to ``retry_max_s``) for as long as the outage lasts — nothing is dropped;
those rows are the evidence behind every exposure report. ``close()`` keeps retrying for ``shutdown_timeout_s``,
then spills what is left to a JSON-lines file (mode 0600) that ``start()`` writes first. Reads (reports) run on the
same thread after the writes queued before them; during an outage they run anyway and fail rather than wait.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from privacy.audit.store import AuditStore

log = logging.getLogger("ecgw.privacy")

Record = dict[str, Any]
_STOP = object()


class _Read:
    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()


class AuditWriter:
    def __init__(self, store: AuditStore, *, spill_path: Path | None = None, retry_initial_s: float = 0.25,
                 retry_max_s: float = 30.0, shutdown_timeout_s: float = 30.0, max_pending: int = 100_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self._spill_path = spill_path
        self._initial = retry_initial_s
        self._max = retry_max_s
        self._shutdown_timeout = shutdown_timeout_s
        self._max_pending = max_pending  # a long outage: beyond this, records go to the spill file, not memory
        self._clock = clock
        self._queue: queue.Queue[Any] = queue.Queue()
        self._pending: deque[Record] = deque()  # built, not yet written (thread-owned)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._failing = False
        self._spilled = False  # this run moved records to the spill file; they go first once the database is back
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
        return len(self._pending) + self._queue.qsize()

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="ecgw-privacy-audit", daemon=True)
                self._thread.start()

    # lifecycle ---------------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Claim a spill file left by an earlier shutdown (one worker wins the rename) and write it first."""
        path = self._spill_path
        if path is None or not path.exists():
            return
        claimed = path.with_name(f"{path.name}.{os.getpid()}.replay")
        try:
            os.replace(path, claimed)
        except FileNotFoundError:  # another worker claimed it
            return
        records = [json.loads(line) for line in claimed.read_text(encoding="utf-8").splitlines() if line.strip()]
        log.warning("writing %d audit records saved at the last shutdown in %s", len(records), path)

        def replay() -> None:
            self._pending.extendleft(reversed(records))
            claimed.unlink(missing_ok=True)
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
        elif self._pending:
            self._drain_at_shutdown()

    # the writer thread -------------------------------------------------------------------------------------------
    def _run(self) -> None:
        delay = self._initial
        while True:
            try:
                job = self._queue.get(timeout=delay if self._pending else None)
            except queue.Empty:  # time to retry the pending records
                delay = self._write_pending(delay)
                continue
            try:
                if job is _STOP:
                    self._drain_at_shutdown()
                    return
                if isinstance(job, _Read):
                    self._write_pending(delay)
                    try:
                        job.future.set_result(job.fn())
                    except Exception as exc:  # handed to the caller; a read is never retried
                        job.future.set_exception(exc)
                    continue
                try:
                    record = job()
                except Exception:  # a bug in building must not stop the writer
                    log.exception("could not build an audit record")
                    record = None
                if record is not None:
                    self._pending.append(record)
                delay = self._write_pending(delay)
                if len(self._pending) > self._max_pending and self._spill_path is not None:
                    self._spill()
            finally:
                self._queue.task_done()

    def _write_pending(self, delay: float) -> float:
        """Write what is pending, in order; the next retry delay (reset after success, doubled after failure)."""
        if self._spilled:
            if not self.store.reachable():
                return min(delay * 2, self._max)
            self._reclaim_spill()
        while self._pending:
            try:
                self.store.apply(self._pending[0])
            except Exception as exc:
                if not self._failing:
                    self._failing = True
                    log.error("privacy audit database unavailable (%s); keeping %d records and retrying",
                              type(exc).__name__, len(self._pending))
                return min(delay * 2, self._max)
            self._pending.popleft()
            self.written += 1
        if self._failing:
            self._failing = False
            log.warning("privacy audit database is back; pending records written")
        return self._initial

    def _drain_at_shutdown(self) -> None:
        deadline = self._clock() + self._shutdown_timeout
        delay = self._initial
        while self._pending:
            delay = self._write_pending(delay)
            if not self._pending or self._clock() + delay > deadline:
                break
            time.sleep(delay)
        if self._pending:
            self._spill()

    def _spill(self) -> None:
        records = list(self._pending)
        if self._spill_path is None:
            log.error("privacy audit database unreachable at shutdown; %d audit records lost (set "
                      "privacy.audit_spill_path to keep them)", len(records))
            return
        self._spill_path.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode()
        fd = os.open(self._spill_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:  # one append per spill: workers sharing the file never interleave within a line
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        self._pending.clear()
        self._spilled = True
        log.error("privacy audit database unreachable; %d audit records saved to %s, written when it is back or "
                  "at the next start", len(records), self._spill_path)

    def _reclaim_spill(self) -> None:
        """The spill file's records back in front of what is pending, in their order."""
        self._spilled = False
        assert self._spill_path is not None
        claimed = self._spill_path.with_name(f"{self._spill_path.name}.{os.getpid()}.replay")
        try:
            os.replace(self._spill_path, claimed)
        except FileNotFoundError:
            return
        records = [json.loads(line) for line in claimed.read_text(encoding="utf-8").splitlines() if line.strip()]
        self._pending.extendleft(reversed(records))
        claimed.unlink(missing_ok=True)
