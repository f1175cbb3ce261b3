"""``StoreMeter``: the meter the gateway injects. ``record()`` only enqueues; a background task builds rows (usage,
price, FLOPs) in a thread and writes them in batches. A database outage keeps rows in a bounded buffer (counted in
/metrics) and retries with back-off; ``aclose()`` flushes everything, and what still cannot be written at shutdown
is spilled to a JSON-lines file (mode 0600) that the next start claims and writes first: the buffer, back-off,
spill and replay are the durable core (``accounting.durable``) the audit writer stands on too.

With a spill path, every call and every request mark is also appended to the process's journal
(``accounting.durable.Journal``, beside the spill file) as ``record()`` and ``settle()`` take it, before the client's
request returns: a process killed with -9 loses only the calls of requests still in flight (and the step decision
records, which are not journaled); ``start()`` writes what the journals of processes that no longer run hold.

``settle(request_id, session_id)`` is called once a client request has finished, after every upstream call it
caused was ``record``-ed: it queues a request mark saying how many calls that were. Marks are written after the
records queued before them, so a mark in the store means its request's usage is there too (``accounting.settlement``
checks the count as well, so a dropped record shows as a request that never settles rather than as missing usage).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from accounting.builder import RecordBuilder, Row
from accounting.calls import StepRecord, UpstreamCall
from accounting.database import StoreUnavailable
from accounting.durable import Backoff, Claim, DurableBuffer, Journal, SpillFile
from accounting.metrics import MeteringMetrics
from accounting.reports import usage_report
from accounting.settings import WriterSettings
from accounting.settlement import settlement_report
from accounting.steps import insert_steps, step_row
from accounting.store import UsageStore

log = logging.getLogger("ecgw.accounting")
T = TypeVar("T")


class StoreMeter:
    """A ``Meter`` that keeps what it records, and so also ``accounting.report_source.UsageReports``."""

    def __init__(self, store: UsageStore, builder: RecordBuilder, metrics: MeteringMetrics,
                 settings: WriterSettings, *, spill_path: Path | None = None,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.metrics = metrics
        self._builder = builder
        self._settings = settings
        self._sleep = sleep
        self._clock = clock
        self._pending: deque[tuple[str, UpstreamCall]] = deque()  # (its record's id, the call)
        self._journal = (Journal(spill_path.with_name(f"{spill_path.name}.journal"), log=log)
                         if spill_path is not None else None)
        self._rows = DurableBuffer(f"metering database at {store.url}", log=log, clock=clock,
                                   spill=SpillFile(spill_path) if spill_path is not None else None,
                                   explain=lambda exc: str(self.store.unavailable(exc)))  # built, not yet written
        # Upstream calls of requests that have not finished yet, oldest first. A request that never finishes (a
        # bug, a task torn down) would stay for ever: past max_open_requests the oldest is forgotten, and then
        # never shows as settled (its mark counts no calls), rather than memory growing without end.
        self._open_calls: dict[str, int] = {}
        self._marks: deque[Row] = deque()
        # Step decision records, turned into rows on the writer's side (not on the request path); kept while the
        # database is down, the oldest dropped past max_buffered.
        self._steps: deque[StepRecord] = deque(maxlen=settings.max_buffered)
        self._wake: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._last_drop_warning = 0.0
        self._opened = False
        self.dropped = 0
        self.written = 0

    # the request path ---------------------------------------------------------------------------------------
    def record(self, call: UpstreamCall) -> None:
        # counted even if dropped below: the request then never settles
        self._open_calls[call.request_id] = self._open_calls.get(call.request_id, 0) + 1
        if len(self._open_calls) > self._settings.max_open_requests:
            forgotten = next(iter(self._open_calls))
            del self._open_calls[forgotten]
            log.warning("request %s made upstream calls but has not finished after %d newer requests; it will not "
                        "show as settled (accounting.writer.max_open_requests)", forgotten,
                        self._settings.max_open_requests)
        if len(self._pending) + len(self._rows) >= self._settings.max_buffered:
            self.dropped += 1
            self.metrics.dropped.inc()
            now = self._clock()
            if now - self._last_drop_warning > 10:
                self._last_drop_warning = now
                log.error("metering buffer full (%d records, accounting.writer.max_buffered); dropped %d so far — "
                          "the database at %s is not keeping up or is down", self._settings.max_buffered,
                          self.dropped, self.store.url)
            return
        record_id = uuid.uuid4().hex
        self._journaled({"k": "call", "id": record_id, "call": _entry(call)})
        self._pending.append((record_id, call))
        if self._wake is not None and len(self._pending) >= self._settings.batch_size:
            self._wake.set()

    def settle(self, request_id: str, session_id: str) -> None:
        """The request has finished: queue its mark (how many upstream calls it caused), written after them."""
        calls = self._open_calls.pop(request_id, 0)
        mark = {"request_id": request_id, "session_id": session_id, "upstream_calls": calls,
                "finished_at": time.time()}
        self._journaled({"k": "mark", "mark": mark})
        self._marks.append(mark)

    def _journaled(self, entry: Row) -> None:
        if self._journal is None:
            return
        try:
            self._journal.append([entry])
        except OSError as exc:  # a full disk: the record is still written, only not safe from a crash before then
            now = self._clock()
            if now - self._last_drop_warning > 10:
                self._last_drop_warning = now
                log.error("could not journal metering records (%s); they are written, but a crash before then "
                          "would lose them", exc)

    def record_step(self, step: StepRecord) -> None:
        self._steps.append(step)

    @property
    def buffered(self) -> int:
        return len(self._pending) + len(self._rows)

    # lifecycle ------------------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Migrate the schema (fails with a clear message if the database is unreachable), replay a spill file,
        then launch the writer."""
        await asyncio.to_thread(self.store.open)
        self._opened = True
        await asyncio.to_thread(self._replay_spill)
        await asyncio.to_thread(self._replay_journals)
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task = asyncio.create_task(self._run(), name="ecgw-metering-writer")

    async def aclose(self) -> None:
        self._closing = True
        if self._task is not None and self._wake is not None:
            self._wake.set()
            await self._task
            self._task = None
        backoff = Backoff(self._settings.retry_initial_s, self._settings.retry_max_s,
                          deadline_s=self._settings.shutdown_timeout_s, clock=self._clock)
        while self.buffered or self._marks or self._steps:
            if await self._flush_once():
                break
            delay = backoff.failed()
            if delay is None:
                break
            await self._sleep(delay)
        if self.buffered or self._marks or self._steps:  # what is left is spilled, or its loss logged
            await asyncio.to_thread(self._spill)
        if self._journal is not None:
            self._journal.close()  # written, spilled, or their loss logged
        await asyncio.to_thread(self.store.dispose)

    async def flush(self) -> bool:
        """Write what is buffered now; False if the database refused."""
        return await self._flush_once()

    async def report(self, by: str, *, since: float | None = None, until: float | None = None,
                     session_prefix: str | None = None, session_id: str | None = None) -> list[dict[str, Any]]:
        await self.flush()
        return await asyncio.to_thread(usage_report, self.store, by, since=since, until=until,
                                       session_prefix=session_prefix, session_id=session_id)

    async def query(self, read: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``read(store, *args, **kwargs)`` in a thread, after writing what is buffered (reports see every call
        made before them)."""
        await self.flush()
        return await asyncio.to_thread(read, self.store, *args, **kwargs)

    async def settlement(self, request_ids: list[str], *, session_prefix: str | None = None,
                         session_id: str | None = None) -> dict[str, Any]:
        await self.flush()  # this worker's own buffer; the others' show up as pending until they write
        return await asyncio.to_thread(settlement_report, self.store, request_ids, session_prefix=session_prefix,
                                       session_id=session_id)

    def exposition(self) -> bytes:
        return self.metrics.exposition()

    def unavailable(self, exc: BaseException) -> StoreUnavailable:
        return self.store.unavailable(exc)

    # the writer -------------------------------------------------------------------------------------------------
    async def _run(self) -> None:
        assert self._wake is not None
        backoff = Backoff(self._settings.retry_initial_s, self._settings.retry_max_s, clock=self._clock)
        while not self._closing:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self._settings.flush_interval_s)
            except TimeoutError:
                pass
            self._wake.clear()
            if self._closing:
                return
            try:
                if await self._flush_once():
                    backoff.reset()
                    continue
            except Exception:  # never let the writer die: records would pile up unseen
                log.exception("metering writer failed; retrying")
            try:  # back off, but wake at once for shutdown
                await asyncio.wait_for(self._wake.wait(), timeout=backoff.failed() or backoff.maximum)
            except TimeoutError:
                pass

    async def _flush_once(self) -> bool:
        if self._lock is None:
            return await self._write_marked()
        async with self._lock:
            return await self._write_marked()

    async def _write_marked(self) -> bool:
        """Build and write what is buffered; then the journal learns that what it held before is written."""
        mark = self._journal.mark() if self._journal is not None else None
        written = await asyncio.to_thread(self._build_and_write)
        if written and mark is not None and self._journal is not None:
            self._journal.written(mark)
        return written

    def _build_and_write(self) -> bool:
        marks = len(self._marks)  # queued before the calls taken below: their requests' records are all queued
        built: list[Row] = []
        while self._pending:
            record_id, call = self._pending.popleft()
            try:
                built.append({**self._builder.build(call), "record_id": record_id})
            except Exception:  # a bug in building must not stop the writer; the call is logged, not stored
                log.exception("could not build a usage record for request %s", call.request_id)
        if built:
            self.metrics.observe(built)
            self._rows.add(built)
        rows, steps, size = len(self._rows), len(self._steps), self._settings.batch_size

        def write(taken: list[Row]) -> None:
            if not self._opened:  # closed without having been started: the schema may not exist yet
                self.store.open()
                self._opened = True
            if taken or marks or steps:
                # One transaction for the records, the marks and the step records (a commit each was most of
                # what a flush cost); a mark is then never visible without its request's records.
                with self.store.engine.begin() as conn:
                    for start in range(0, len(taken), size):
                        self.store.insert(taken[start:start + size], conn=conn)
                    if marks:
                        self.store.insert_marks([self._marks[i] for i in range(marks)], conn=conn)
                    for start in range(0, steps, size):
                        insert_steps(self.store, [step_row(self._steps[i])
                                                  for i in range(start, min(start + size, steps))], conn=conn)

        written = self._rows.write(write)
        if written:
            for _ in range(marks):
                self._marks.popleft()
            for _ in range(steps):
                self._steps.popleft()
            self.written += rows
            self.metrics.written.inc(rows)
        else:
            self.metrics.write_errors.inc()
        self.metrics.buffered.set(self.buffered)
        return written

    # spill file ---------------------------------------------------------------------------------------------------
    def _spill(self) -> None:
        if self._marks:
            log.error("%d request marks not written at shutdown; those requests will not show as settled",
                      len(self._marks))
        if self._steps:
            log.error("%d step decision records not written at shutdown (the dashboard will miss them)",
                      len(self._steps))
        self._rows.add([{**self._builder.build(call), "record_id": record_id} for record_id, call in self._pending])
        self._pending.clear()
        self._rows.spill("accounting.spill_path")

    def _replay_spill(self) -> None:
        claim = self._rows.claim()
        if claim is None:  # none, or another worker claimed it first
            return
        rows = claim.records
        try:
            for start in range(0, len(rows), self._settings.batch_size):
                self.store.insert(rows[start:start + self._settings.batch_size])
        except Exception as exc:
            self._rows.give_back(claim)  # for the next start
            raise StoreUnavailable(f"{self.store.unavailable(exc)} (while writing {len(rows)} records saved in "
                                   f"{claim.path})") from None
        claim.done()
        log.warning("wrote %d usage records saved at the last shutdown from %s", len(rows), claim.path)

    def _replay_journals(self) -> None:
        """The calls and marks journaled by processes that stopped before writing them, written in one
        transaction a journal (records already stored are skipped: their ids are)."""
        for claim in self._journal.orphans() if self._journal is not None else ():
            self._write_claim(claim)

    def _write_claim(self, claim: Claim) -> None:
        rows, marks = [], []
        for entry in claim.records:
            if entry.get("k") == "call":
                try:
                    rows.append({**self._builder.build(UpstreamCall(**entry["call"])), "record_id": entry["id"]})
                except Exception:  # a bug in building must not stop the start; the call is logged, not stored
                    log.exception("could not build a journaled usage record from %s", claim.path)
            elif entry.get("k") == "mark":
                marks.append(entry["mark"])
        try:
            with self.store.engine.begin() as conn:
                for start in range(0, len(rows), self._settings.batch_size):
                    self.store.insert(rows[start:start + self._settings.batch_size], conn=conn)
                if marks:
                    self.store.insert_marks(marks, conn=conn)
        except Exception as exc:
            claim.release()  # for the next start
            raise StoreUnavailable(f"{self.store.unavailable(exc)} (while writing {len(rows)} records journaled in "
                                   f"{claim.path})") from None
        claim.done()
        log.warning("wrote %d usage records and %d request marks journaled by a process that stopped before writing "
                    "them, from %s", len(rows), len(marks), claim.path)


_JOURNALED = tuple(name for name in UpstreamCall.__dataclass_fields__ if name not in ("prices", "request_body",
                                                                                       "output_text", "usage"))


def _entry(call: UpstreamCall) -> Row:
    """The call as its journal line holds it: its fields (not the price table: a replay prices it with the
    meter's), the body and the output text only when they are needed to estimate its tokens (no usage)."""
    entry: Row = {name: getattr(call, name) for name in _JOURNALED}
    if call.usage is not None:
        entry["usage"] = dict(call.usage)
    else:
        entry["request_body"] = dict(call.request_body) if call.request_body is not None else None
        entry["output_text"] = call.output_text
    return entry
