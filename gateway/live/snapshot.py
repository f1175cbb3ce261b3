"""The configuration as a snapshot: what a request reads of the configuration, built whole from one ``Settings``
and swapped whole by a reload (``gateway.live.reload``).

A request holds the snapshot it started with: the gatekeeper pins the current one for the request's whole ASGI
call (its stream included, ``pinned``), so a reload in the middle of a stream changes nothing for it, and
``Configuration.current()`` answers the pinned snapshot inside a request and the newest outside one. Work a request
starts that outlives it (a shadow call, ``gateway.learning.shadow``) takes a ``lease`` on the request's snapshot: it runs on
that snapshot as the request did, and holds it as a request does, until it ends.

What reloads is the settings whose fields say ``reloads(SNAPSHOT)`` (``accounting.reloading``) and under every
``SnapshotPart``'s ``paths`` — the hook by which
other parts (the doors: edge pool, cloud targets, privacy rules, prices; the budgets and rate limits) make their
section reloadable: a part builds its object from the new settings and the running snapshot's object (to keep what
did not change: a pool member's connections and health), raising ``ConfigError`` on a bad value, which keeps the running snapshot; readers
ask ``snapshot.part(name)``. A part's object may hold connections and tasks: ``start`` runs before the snapshot
serves (a pool probes the members a reload added), and ``retire`` once the last request holding the old snapshot
has finished (a pool closes the members no live snapshot still has). A changed setting under no reloadable path is
*not* applied: the snapshot keeps the running value and the reload names the path in ``not_reloadable`` (ports,
workers, database URL, secrets key, session store, …), since what reads it was built once at start.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from accounting.reloading import SNAPSHOT
from gateway.config.reference import reload_paths
from gateway.config.settings import ConfigError, Settings, error_path
from gateway.live.policy_choice import PolicyChooser
from gateway.state.tenancy import Tenancy
from router.policy import PolicyRegistry

log = logging.getLogger("ecgw")

class SnapshotPart(Protocol):
    """A part of the snapshot built from the settings; ``paths``: the settings it makes reloadable."""

    name: str

    @property
    def paths(self) -> tuple[str, ...]:
        """The settings it makes reloadable (those whose fields say they reload in this part)."""
        ...

    def build(self, settings: Settings, running: object | None) -> object:
        """The part for ``settings``; ``running``: the running snapshot's (None at start), to keep what did not
        change. ``ConfigError`` on a bad value."""
        ...

    async def start(self, built: object, running: object | None) -> None:
        """Before ``built`` serves (``running``: the part it replaces, None at start)."""
        ...

    async def retire(self, old: object, alive: Sequence[object]) -> None:
        """``old`` serves no request any more: release what none of ``alive`` (the parts of the snapshots still
        in use) shares."""
        ...


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


# (settings, version, running snapshot or None) → snapshot; ConfigError on a bad value
Build = Callable[[Settings, int, "Snapshot | None"], Snapshot]

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


class Lease:
    """A snapshot held for work that outlives the request that started it: the work runs in ``context()`` (where
    ``Configuration.current()`` is this snapshot), and the snapshot is not retired before ``release``."""

    def __init__(self, snapshot: Snapshot, release: Callable[[Snapshot], None]) -> None:
        self.snapshot = snapshot
        self._release: Callable[[Snapshot], None] | None = release

    def context(self) -> contextvars.Context:
        """A copy of the running context with this snapshot pinned (for ``create_task(..., context=)``)."""
        context = contextvars.copy_context()
        context.run(_PINNED.set, self.snapshot)
        return context

    def release(self) -> None:
        """The work has ended; a second call does nothing."""
        release, self._release = self._release, None
        if release is not None:
            release(self.snapshot)


class Configuration:
    """The current snapshot of one worker, swapped whole; each older one retired once no request holds it."""

    def __init__(self, first: Snapshot, build: Build, *, parts: Sequence[SnapshotPart] = ()) -> None:
        self._current = first
        self._build = build
        self.parts = tuple(parts)
        self._held: dict[int, tuple[Snapshot, int]] = {}  # id → (snapshot, requests holding it)
        self._retiring: dict[int, Snapshot] = {}  # replaced, waiting for its last request
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def reloadable(self) -> tuple[str, ...]:
        return reload_paths(SNAPSHOT) + tuple(p for part in self.parts for p in part.paths)

    def current(self) -> Snapshot:
        pinned = _PINNED.get()
        return pinned if pinned is not None else self._current

    def latest(self) -> Snapshot:
        return self._current

    def prepare(self, settings: Settings, version: int) -> tuple[Snapshot, list[str]]:
        """A snapshot of ``settings`` over the running one, validated whole, and the changed paths it cannot
        apply; ``ConfigError`` (the running snapshot stays) when any part refuses it. Swap it in, or ``discard``
        it."""
        running = self._current.settings
        changed = changed_paths(running, settings)
        not_reloadable = [p for p in changed if not _under(p, self.reloadable)]
        return self._build(applied(running, settings, self.reloadable), version, self._current), not_reloadable

    def renumber(self, version: int) -> None:
        """The running snapshot under the store's version (at start): the same parts, nothing started again."""
        self._current = dataclasses.replace(self._current, version=version)

    async def start(self) -> None:
        for part in self.parts:
            await part.start(self._current.parts[part.name], None)

    async def swap(self, snapshot: Snapshot) -> None:
        """``snapshot`` serves the next request; the one it replaces is retired after its last request."""
        old = self._current
        for part in self.parts:
            await part.start(snapshot.parts[part.name], old.parts[part.name])
        self._current = snapshot
        self._retiring[id(old)] = old
        if id(old) not in self._held:
            self._retire_later(old)

    async def discard(self, snapshot: Snapshot) -> None:
        """A prepared snapshot that will not serve (the reload failed after it was built)."""
        await self._retire(snapshot)

    def _alive(self) -> list[Snapshot]:
        return [self._current, *(held for held, _ in self._held.values())]

    async def _retire(self, old: Snapshot) -> None:
        alive = [s for s in self._alive() if s is not old]
        for part in self.parts:
            try:
                await part.retire(old.parts[part.name], [s.parts[part.name] for s in alive])
            except Exception:  # one part failing to close must not keep the others open
                log.exception("retiring the %s of configuration version %d failed", part.name, old.version)

    def _retire_later(self, old: Snapshot) -> None:
        self._retiring.pop(id(old), None)
        if not self.parts:
            return
        task = asyncio.get_running_loop().create_task(self._retire(old))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _hold(self, snapshot: Snapshot) -> None:
        key = id(snapshot)
        self._held[key] = (snapshot, self._held.get(key, (snapshot, 0))[1] + 1)

    def _let_go(self, snapshot: Snapshot) -> None:
        key = id(snapshot)
        if key not in self._held:  # closed meanwhile (``aclose``): nothing is held any more
            return
        count = self._held[key][1] - 1
        if count:
            self._held[key] = (snapshot, count)
        else:
            del self._held[key]
            if key in self._retiring:
                self._retire_later(snapshot)

    @contextmanager
    def pinned(self) -> Iterator[Snapshot]:
        """The current snapshot, held for everything that runs inside (one request)."""
        snapshot = self._current
        self._hold(snapshot)
        token = _PINNED.set(snapshot)
        try:
            yield snapshot
        finally:
            _PINNED.reset(token)
            self._let_go(snapshot)

    def lease(self) -> Lease:
        """The snapshot in force here (inside a request: the request's own), held until the lease is released:
        taken while the request still holds it, for a task that outlives the request."""
        snapshot = self.current()
        self._hold(snapshot)
        return Lease(snapshot, self._let_go)

    async def aclose(self) -> None:
        """Retire every snapshot: the replaced ones first (what the current one shares stays), then the current."""
        for task in list(self._tasks):
            await task
        for old in list(self._retiring.values()):
            self._retiring.pop(id(old), None)
            await self._retire(old)
        self._held.clear()
        for part in self.parts:
            try:
                await part.retire(self._current.parts[part.name], [])
            except Exception:
                log.exception("closing the %s failed", part.name)
