"""The configuration as a snapshot: what a request reads of the configuration, built whole from one ``Settings``
and swapped whole by a reload (``gateway.reload``).

A request holds the snapshot it started with: the gatekeeper pins the current one for the request's whole ASGI
call (its stream included, ``pinned``), so a reload in the middle of a stream changes nothing for it, and
``Configuration.current()`` answers the pinned snapshot inside a request and the newest outside one.

What reloads is the settings under ``RELOADABLE`` and under every ``SnapshotPart``'s ``paths`` — the hook by which
other parts (edge pools and cloud targets, budgets and limits, prices) make their section reloadable: a part
builds its object from the new settings (raising ``ConfigError`` on a bad value, which keeps the running
snapshot), and readers ask ``snapshot.part(name)``. A changed setting under no such path is *not* applied: the
snapshot keeps the running value and the reload names the path in ``not_reloadable`` (ports, workers, database
URL, secrets key, session store, …), since what reads it was built once at start.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from gateway.policy_choice import PolicyChooser
from gateway.settings import ConfigError, Settings, error_path
from gateway.tenancy import Tenancy
from router.policy import PolicyRegistry

# Sections a snapshot rebuilds (the policies with their knobs, the experiments, the keys and their tenants).
RELOADABLE: tuple[str, ...] = ("policy", "experiments", "server.api_keys", "server.admin_keys", "server.session_keys")


class SnapshotPart(Protocol):
    """A part of the snapshot built from the settings; ``paths``: the settings it makes reloadable."""

    name: str
    paths: tuple[str, ...]

    def build(self, settings: Settings) -> object: ...


@dataclass(frozen=True)
class Snapshot:
    version: int
    settings: Settings
    policies: PolicyRegistry
    chooser: PolicyChooser
    tenancy: Tenancy
    parts: Mapping[str, object] = field(default_factory=dict)

    def part(self, name: str) -> object:
        return self.parts[name]


Build = Callable[[Settings, int], Snapshot]  # (settings, version) → snapshot; ConfigError on a bad value

_PINNED: contextvars.ContextVar[Snapshot | None] = contextvars.ContextVar("ecgw_snapshot", default=None)


def leaves(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{dotted path: value}`` of every leaf of a settings dump (lists are leaves)."""
    if isinstance(data, Mapping) and data:
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(leaves(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: data}


def _under(path: str, prefixes: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in prefixes)


def changed_paths(old: Settings, new: Settings) -> list[str]:
    before, after = leaves(old.model_dump(mode="json")), leaves(new.model_dump(mode="json"))
    return sorted(p for p in before.keys() | after.keys() if before.get(p, None) != after.get(p, None))


def applied(old: Settings, new: Settings, reloadable: Sequence[str]) -> Settings:
    """``old`` with every reloadable section taken from ``new`` (the rest keeps its running value)."""
    data = old.model_dump(mode="json")
    fresh = new.model_dump(mode="json")
    for path in reloadable:
        *parents, last = path.split(".")
        target, source = data, fresh
        for key in parents:
            target, source = target[key], source[key]
        target[last] = source[last]
    try:
        return Settings(**data)
    except ValidationError as exc:  # the new sections do not fit the running ones
        raise ConfigError(f"configuration is invalid: {exc}", param=error_path(exc.errors()[0])) from None
    except Exception as exc:  # anything else the new sections raise while they are built
        raise ConfigError(f"configuration is invalid: {exc}") from None


class Configuration:
    """The current snapshot of one worker, swapped whole."""

    def __init__(self, first: Snapshot, build: Build, *, parts: Sequence[SnapshotPart] = ()) -> None:
        self._current = first
        self._build = build
        self.parts = tuple(parts)

    @property
    def reloadable(self) -> tuple[str, ...]:
        return RELOADABLE + tuple(p for part in self.parts for p in part.paths)

    def current(self) -> Snapshot:
        pinned = _PINNED.get()
        return pinned if pinned is not None else self._current

    def latest(self) -> Snapshot:
        return self._current

    def prepare(self, settings: Settings, version: int) -> tuple[Snapshot, list[str]]:
        """A snapshot of ``settings`` over the running one, validated whole, and the changed paths it cannot
        apply; ``ConfigError`` (the running snapshot stays) when any part refuses it."""
        running = self._current.settings
        changed = changed_paths(running, settings)
        not_reloadable = [p for p in changed if not _under(p, self.reloadable)]
        return self._build(applied(running, settings, self.reloadable), version), not_reloadable

    def swap(self, snapshot: Snapshot) -> None:
        self._current = snapshot

    @contextmanager
    def pinned(self) -> Iterator[Snapshot]:
        """The current snapshot, held for everything that runs inside (one request)."""
        snapshot = self._current
        token = _PINNED.set(snapshot)
        try:
            yield snapshot
        finally:
            _PINNED.reset(token)
