"""What a session's scrub made of each top-level part of the bodies it sent before (each message, each other key).

An agent's step N+1 re-sends steps 1..N and one or two new messages: a part seen before is neither copied from the
client's body, walked, looked up slot by slot, detected nor applied again — its scrubbed form, its findings and the
placeholders it was given are taken from here (``PrivacyProtector._scrub``). The last check still reads the whole
body that would leave. Keyed by the session, the rules it was scrubbed under (profile, the class policy's key for
the tier, the units version, the vault's life) and the content hash of the part as the client sent it, so an edited
message (an agent truncating or compacting its history) is another part, scrubbed again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from privacy.classes.policy import Held
from privacy.lastcheck.leaves import content_hash, json_bytes
from privacy.lru import WeighedLRU
from privacy.scrubber import Applied, ScrubResult, weigh_result

SeenKey = tuple[str, str, str, bytes]
# One slot's findings: its location, the findings (locations relative to it) and, for a cached slot result, where
# their finding set is kept (``ScrubResult.audit_sets``; None: the call's own rows, built for this call only).
SlotFindings = tuple[str, Sequence[Applied], dict[str, Any] | None]


@dataclass(frozen=True)
class SeenPart:
    """One part as a scrub left it (before the last check). ``value`` is never handed out: each body gets a copy.
    ``first`` and ``rest``: (location after the part's prefix, result) of each of its slots that found or changed
    anything, the known fields' and the others' (``privacy.walk.slot_order``)."""

    value: Any
    first: Sequence[tuple[str, ScrubResult]]
    rest: Sequence[tuple[str, ScrubResult]]
    binary: Sequence[str]  # its non-text content parts, after the prefix
    given: frozenset[str]  # the placeholders the scrub put into it
    held: Held  # what it carries by data class
    audited: frozenset[str]  # values an ``audit`` action let through

    def findings(self, prefix: str, first: bool) -> list[SlotFindings]:
        """(location, findings, their finding sets' memo) of its slots that found something, at ``prefix``."""
        return [(prefix + suffix, result.applied, result.audit_sets)
                for suffix, result in (self.first if first else self.rest) if result.applied]


class SeenParts:
    """Per process, bounded: (session, rules, part name, content hash) → ``SeenPart``. A miss only costs a scrub."""

    def __init__(self, entries: int, max_bytes: int) -> None:
        self._entries = entries
        self._data: WeighedLRU[SeenKey, SeenPart] = WeighedLRU(entries, max_bytes, _weigh)
        self._lives: OrderedDict[str, str] = OrderedDict()  # session → the life of its vault last seen here

    def life(self, session_id: str) -> str:
        """The life of the session's vault (``Vault.epoch``) its last scrub here saw; "-": none (no vault, or
        not known here)."""
        return self._lives.get(session_id, "-")

    def live(self, session_id: str, life: str) -> None:
        self._lives[session_id] = life
        self._lives.move_to_end(session_id)
        if len(self._lives) > self._entries:
            self._lives.popitem(last=False)

    @staticmethod
    def key(session_id: str, rules: str, name: str, value: Any) -> SeenKey | None:
        """None for a part that is not plain JSON (it is scrubbed every time)."""
        digest = content_hash(value)
        return None if digest is None else (session_id, rules, name, digest)

    def get(self, key: SeenKey) -> SeenPart | None:
        return self._data.get(key)

    def put(self, key: SeenKey, part: SeenPart) -> None:
        self._data.put(key, part)

    @property
    def weight(self) -> int:
        """The estimate of what the kept parts weigh."""
        return self._data.weight

    def forget(self, session_id: str) -> None:
        """An erased session: what was kept of its parts goes."""
        self._lives.pop(session_id, None)
        for key in [key for key in self._data if key[0] == session_id]:
            self._data.pop(key)


def _weigh(part: SeenPart) -> int:
    """The part's value as compact JSON (``json_bytes``, orjson's: the cheap spelling the key was hashed from), and
    its slots' results (``weigh_result``)."""
    return len(json_bytes(part.value) or b"") + sum(weigh_result(result) for _, result in (*part.first, *part.rest))
