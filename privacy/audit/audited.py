"""The audit side of a protector, one piece for both: the listed units a session registers (persisted as hashes),
the exposure of each cloud call (``privacy.audit.exposure``: which units left raw in the body that went out), and the
reads the reports make — the session's exposure (``privacy.audit.session_report``) and the dashboard's (``privacy.audit.dashboard``).

``PrivacyProtector`` (protection on) and ``RecordingPassThroughProtector`` (``privacy.enabled: false``, audit on)
hold one each, so what counts as exposure, and how it is read back, cannot drift between them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from privacy.audit.exposure import ExposureRecorder
from privacy.audit.session_report import session_exposure
from privacy.audit.store import Hasher, body_opener, units_record
from privacy.audit.writer import AuditWriter
from privacy.detect import Unit, UnitsDocument
from privacy.errors import PrivacyUnavailable
from privacy.registry import UnitRegistry
from privacy.seal import Sealer

T = TypeVar("T")


class AuditedUnits:
    def __init__(self, units: UnitRegistry, audit: AuditWriter, hasher: Hasher, *,
                 sealer: Sealer | None = None, checkpoint_interval_s: float = 60.0) -> None:
        self.units = units
        self.audit = audit
        self.hasher = hasher
        self._sealer = sealer  # opens the stored (sealed) bodies for the dashboard
        self._exposure = ExposureRecorder(audit)
        self._checkpoint_interval_s = checkpoint_interval_s
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
        self._checkpoints = asyncio.create_task(self._sign_periodically())

    def checkpoint(self) -> None:
        """Queue a signed checkpoint of the chain's head (``privacy.audit.chain``), durable like every record."""
        self.audit.submit(lambda: {"kind": "checkpoint"})

    async def _sign_periodically(self) -> None:
        while True:
            await asyncio.sleep(self._checkpoint_interval_s)
            self.checkpoint()

    def flush(self) -> None:
        self.audit.flush()

    async def aclose(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.cancel()
            self._checkpoints = None
        self.checkpoint()  # the head at shutdown, signed after every record queued before it
        await asyncio.to_thread(self.audit.close)
