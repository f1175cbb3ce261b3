"""Where listed units come from: config files (every session) and ``PUT /v1/sessions/{id}/units`` (one session).

Per-session units live in the session store, so every worker sees them; matchers are compiled once per version.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

from privacy.detect import Unit, UnitMatcher, UnitsDocument, units_of
from privacy.session_store import SessionStore

UNITS_KEY = "privacy.units"
UNITS_VERSION_KEY = "privacy.units.version"


class UnitRegistry:
    def __init__(self, sessions: SessionStore, files: list[str], *, matchers: int = 256) -> None:
        self._sessions = sessions
        self._files = files
        self._file_units: list[Unit] | None = None
        self._matchers: OrderedDict[str, UnitMatcher] = OrderedDict()
        self._max = matchers

    def file_units(self) -> list[Unit]:
        if self._file_units is None:
            units: list[Unit] = []
            for path in self._files:
                units.extend(units_of(UnitsDocument.from_file(path)))
            self._file_units = units
        return self._file_units

    async def register(self, session_id: str, document: UnitsDocument) -> list[Unit]:
        data = document.model_dump(mode="json")
        version = hashlib.blake2b(document.model_dump_json().encode(), digest_size=8).hexdigest()
        await self._sessions.set(session_id, UNITS_KEY, data)
        await self._sessions.set(session_id, UNITS_VERSION_KEY, version)
        return units_of(document)

    async def forget(self, session_id: str) -> None:
        """The session's units gone (an erasure), with the matchers compiled from them."""
        await self._sessions.set(session_id, UNITS_KEY, None)
        await self._sessions.set(session_id, UNITS_VERSION_KEY, None)
        for key in [k for k in self._matchers if k.startswith(f"{session_id}\0")]:
            del self._matchers[key]

    async def session_units(self, session_id: str) -> list[Unit]:
        data = await self._sessions.get(session_id, UNITS_KEY)
        return units_of(UnitsDocument.model_validate(data)) if isinstance(data, dict) else []

    async def matcher(self, session_id: str) -> tuple[str, UnitMatcher | None]:
        """``(version, matcher)``; the version keys the detection cache, so new units mean a re-scan."""
        version = await self._sessions.get(session_id, UNITS_VERSION_KEY)
        version = version if isinstance(version, str) else "-"
        cache_key = f"{session_id}\0{version}"
        matcher = self._matchers.get(cache_key)
        if matcher is None:
            units = self.file_units() + (await self.session_units(session_id) if version != "-" else [])
            matcher = UnitMatcher(units)
            self._matchers[cache_key] = matcher
            if len(self._matchers) > self._max:
                self._matchers.popitem(last=False)
        return version, (matcher if len(matcher) else None)
