"""The audit side of a protector, one piece for both: the listed units a session registers (persisted as hashes),
the exposure of each cloud call (``privacy.audit.exposure``: which units left raw in the body that went out), and the
reads the reports make — the session's exposure (``privacy.audit.session_report``) and the dashboard's (``privacy.audit.dashboard``).

``PrivacyProtector`` (protection on) and ``RecordingPassThroughProtector`` (``privacy.enabled: false``, audit on)
hold one each, so what counts as exposure, and how it is read back, cannot drift between them.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from privacy.audit.exposure import ExposureRecorder
from privacy.audit.receipts import CallReceipts, ReceiptIssuer, body_bytes
from privacy.audit.session_report import session_exposure
from privacy.audit.store import Hasher, body_opener, units_record
from privacy.audit.writer import AuditWriter
from privacy.detect import Unit, UnitsDocument
from privacy.errors import PrivacyUnavailable
from privacy.registry import UnitRegistry
from privacy.seal import Sealer

T = TypeVar("T")
_SWEEP_EVERY_S = 3600.0


class AuditedUnits:
    def __init__(self, units: UnitRegistry, audit: AuditWriter, hasher: Hasher, *,
                 sealer: Sealer | None = None, checkpoint_interval_s: float = 60.0,
                 retention_days: float | None = None, clock: Callable[[], float] = time.time) -> None:
        self.units = units
        self.audit = audit
        self.hasher = hasher
        self._sealer = sealer  # opens the stored (sealed) bodies for the dashboard
        self._exposure = ExposureRecorder(audit)
        anchor = audit.store.anchor  # receipts are signed with the checkpoints' key: none without one
        self._receipts = ReceiptIssuer(anchor, audit) if anchor is not None else None
        self._checkpoint_interval_s = checkpoint_interval_s
        self._retention_s = retention_days * 86400 if retention_days is not None else None
        self._clock = clock
        self._swept_at = -math.inf
        self._checkpoints: asyncio.Task[None] | None = None

    def over(self, units: UnitRegistry) -> AuditedUnits:
        """The same audit over another registry (a reload's units files), whose file units it records now."""
        other = AuditedUnits(units, self.audit, self.hasher, sealer=self._sealer,
                             checkpoint_interval_s=self._checkpoint_interval_s)
        if units.file_units():
            other._persist("*", units.file_units())
        return other

    async def register(self, session_id: str, document: UnitsDocument) -> list[Unit]:
        units = await self.units.register(session_id, document)
        self._persist(session_id, units)
        return units

    def _persist(self, session_id: str, units: list[Unit]) -> None:
        hasher = self.hasher
        self.audit.submit(lambda: units_record(session_id, units, hasher))

    async def record_exposure(self, call_id: str, session_id: str, body: dict[str, Any]) -> None:
        """Queue the search of ``body`` (as sent) for the session's units; the search runs on the writer thread."""
        _, matcher = await self.units.matcher(session_id)  # compiled once per session and units version
        self._exposure.record(call_id, session_id, dict(body), matcher)  # a copy: the upstream may set keys

    def receipts(self, *, call_id: str, request_id: str, session_id: str, body: dict[str, Any], data: bytes,
                 placeholders: dict[str, int], raw_units: set[str] | frozenset[str],
                 verdict: str, classes: Mapping[str, Mapping[str, int]]) -> CallReceipts | None:
        """The receipts of one call (``privacy.audit.receipts``); None when the audit has no signing key."""
        if self._receipts is None:
            return None
        return CallReceipts(self._receipts, call_id=call_id, request_id=request_id, session_id=session_id,
                            body=body, data=data, placeholders=placeholders, raw_units=raw_units, verdict=verdict,
                            classes=classes)

    def unprotected_receipts(self, *, call_id: str, request_id: str, session_id: str,
                             body: dict[str, Any]) -> CallReceipts | None:
        """The receipts of a call that leaves unchanged (``privacy.enabled: false``)."""
        if self._receipts is None:
            return None
        return self.receipts(call_id=call_id, request_id=request_id, session_id=session_id, body=body,
                             data=body_bytes(body), placeholders={}, raw_units=frozenset(), verdict="unprotected",
                             classes={})

    async def session_exposure(self, session_id: str) -> dict[str, Any]:
        """``privacy.audit.session_report.session_exposure`` read on the writer thread, after every write queued before it."""
        store = self.audit.store

        def read() -> dict[str, Any]:
            store.ensure()
            return session_exposure(store.engine, session_id)

        try:
            report: dict[str, Any] = await asyncio.wrap_future(self.audit.read(read))
        except Exception as exc:
            raise PrivacyUnavailable(f"the privacy audit database cannot be read ({type(exc).__name__})") from exc
        return report

    async def read_audit(self, read: Callable[..., T], *args: Any) -> T:
        """``read(engine, open_body, *args)`` on the writer thread, after every write queued before it;
        ``open_body`` reads a stored (sealed) body back."""
        store, open_body = self.audit.store, body_opener(self._sealer)

        def run() -> T:
            store.ensure()
            return read(store.engine, open_body, *args)

        result: T = await asyncio.wrap_future(self.audit.read(run))
        return result

    async def start(self) -> None:
        self.audit.start()
        if self.units.file_units():
            self._persist("*", self.units.file_units())
        self.checkpoint()  # the key's latest generation and the latest checkpoint, known before the first receipt
        self.sweep()  # retention at start, then hourly
        self._checkpoints = asyncio.create_task(self._sign_periodically())

    def checkpoint(self) -> None:
        """Queue a signed checkpoint of the chain's head (``privacy.audit.chain``), durable like every record."""
        self.audit.submit(lambda: {"kind": "checkpoint"})

    def sweep(self) -> None:
        """Queue the retention sweep (``privacy.retention_days``): the content of calls older than that is
        tombstoned like an erasure, on the writer thread, durable like every record."""
        keep = self._retention_s
        if keep is None:
            return
        now = self._clock()
        self._swept_at = now
        self.audit.submit(lambda: {"kind": "retention", "before": now - keep})

    async def erase(self, session_id: str) -> int:
        """Tombstone the session's audited content now (``AuditStore.erase``), after every write queued before it;
        how many calls were erased. ``PrivacyUnavailable`` when the database cannot take it."""
        store = self.audit.store
        try:
            erased: int = await asyncio.wrap_future(self.audit.read(
                lambda: store.erase(reason="session", session_id=session_id)))
        except Exception as exc:
            raise PrivacyUnavailable(f"the privacy audit database cannot be written ({type(exc).__name__})") from exc
        return erased

    async def _sign_periodically(self) -> None:
        while True:
            await asyncio.sleep(self._checkpoint_interval_s)
            self.checkpoint()
            if self._clock() - self._swept_at >= _SWEEP_EVERY_S:
                self.sweep()

    def flush(self) -> None:
        self.audit.flush()

    async def aclose(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.cancel()
            self._checkpoints = None
        self.checkpoint()  # the head at shutdown, signed after every record queued before it
        await asyncio.to_thread(self.audit.close)
