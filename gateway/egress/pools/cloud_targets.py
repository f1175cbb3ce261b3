"""The cloud targets: named cloud models (``cloud.targets``) with fallback chains, as one ``router.upstreams.Pool``
behind the one cloud door (``CloudChannel``: every target's call is protected, last-checked, restored and metered
under its own model and price).

A call's plan is the target its policy or arm named (``cloud_target``, or a client's ``cloud.model_aliases`` entry)
or ``cloud.default_target``, then that target's ``cloud.fallbacks`` in order. A target that failed
``cool_after`` times in a row is skipped for ``cooldown_s`` (then tried again: one success readmits it); when every
target of a chain is cooling, the chain is tried as configured rather than failing outright.

A reload builds new targets from the new settings and the running ones: a target whose configuration did not change
keeps its transport and its cool-down state; one the reload removed or changed is closed once no request that
started before the reload can reach it (``retire``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from gateway.config.settings import CloudSettings
from gateway.egress.pools.health import Health
from gateway.egress.pools.lifecycle import Sharing
from router.errors import UpstreamError
from router.upstreams import Call, Member, Upstream

log = logging.getLogger("ecgw")


class TargetUpstream(Upstream, Protocol):
    async def ready(self) -> tuple[bool, str]: ...

    async def aclose(self) -> None: ...


class Outgoing(Protocol):
    def outgoing(self, body: Mapping[str, Any]) -> dict[str, Any]: ...


class CloudTargets:
    side = "cloud"

    def __init__(self, targets: Mapping[str, TargetUpstream], *, primary: str,
                 fallbacks: Mapping[str, Sequence[str]], first_token_timeouts: Mapping[str, float | None],
                 cool_after: int, cooldown_s: float, shape: Outgoing,
                 clock: Callable[[], float] = time.monotonic, kept: Mapping[str, Health] | None = None,
                 keys: Mapping[str, str] | None = None, tiers: Mapping[str, str] | None = None) -> None:
        """``kept``: the cool-down state of targets a reload kept; ``keys``: each target's configuration, what a
        reload compares; ``tiers``: each target's tier (default ``standard``)."""
        if primary not in targets:
            raise ValueError(f"the default cloud target {primary!r} is not among {sorted(targets)}")
        self._upstreams = dict(targets)
        self._members = {name: Member(name, upstream, first_token_timeout_s=first_token_timeouts.get(name),
                                      tier=(tiers or {}).get(name, "standard"))
                         for name, upstream in targets.items()}
        self._primary = primary
        self._chains = {name: [name, *[f for f in fallbacks.get(name, ()) if f != name]] for name in targets}
        self._health = {name: (kept or {}).get(name) or Health(cool_after, cooldown_s, clock) for name in targets}
        self._keys = dict(keys or {})
        self.model = self._members[primary].upstream.model
        self._shape = shape

    @classmethod
    def from_settings(cls, settings: CloudSettings, make: Callable[[CloudSettings], TargetUpstream], *,
                      shape: Outgoing, clock: Callable[[], float] = time.monotonic,
                      running: CloudTargets | None = None) -> CloudTargets:
        """The targets a settings snapshot describes, each transport built by ``make``; ``running``: the targets
        they replace (a reload), whose unchanged ones are kept, transport and cool-down included."""
        named = settings.named_targets()
        keys = {name: settings.for_target(name).model_dump_json() for name in named}
        upstreams: dict[str, TargetUpstream] = {}
        kept: dict[str, Health] = {}
        for name, key in keys.items():
            found = running.target_by_key(name, key) if running is not None else None
            if found is not None:
                upstreams[name], kept[name] = found
            else:
                upstreams[name] = make(settings.for_target(name))
        return cls(upstreams, primary=settings.primary, fallbacks=settings.fallbacks,
                   first_token_timeouts={n: t.first_token_timeout_s for n, t in named.items()},
                   cool_after=settings.cool_after, cooldown_s=settings.cooldown_s, shape=shape, clock=clock,
                   kept=kept, keys=keys, tiers={n: t.tier for n, t in named.items()})

    def target_by_key(self, name: str, key: str) -> tuple[TargetUpstream, Health] | None:
        """The target ``name`` if it was built from exactly this configuration, with its cool-down state."""
        if self._keys.get(name) != key:
            return None
        return self._upstreams[name], self._health[name]

    def shares(self, upstream: object) -> bool:
        return any(upstream is mine for mine in self._upstreams.values())

    def outgoing(self, body: dict[str, Any]) -> dict[str, Any]:
        """What of ``body`` may leave for any target (protection scans it; each target takes its own part)."""
        return self._shape.outgoing(body)

    def plan(self, call: Call) -> Sequence[Member]:
        start = call.target if call.target in self._chains else self._primary
        chain = self._chains[start]
        live = [n for n in chain if self._health[n].healthy or self._health[n].probe_due()]
        return [self._members[n] for n in (live or chain)]

    def begin(self, member: Member) -> None:
        self._health[member.name].began()

    def end(self, member: Member, failure: UpstreamError | None) -> None:
        health = self._health[member.name]
        change = health.ended(failure)
        if change == "readmitted":
            log.warning("cloud target %s answers again; its cool-down is over", member.name)
        elif change == "ejected" and failure is not None:
            log.warning("cloud target %s cools down after %d failures in a row: %s", member.name,
                        health.failures, failure.message)

    def cooling(self, name: str) -> bool:
        return not self._health[name].healthy

    async def start(self) -> None:
        return None

    async def ready(self) -> tuple[bool, str]:
        """Ready when the default target is configured (a key to call it with); the others show in ``status``."""
        for name, upstream in self._upstreams.items():
            self._health[name].detail = (await upstream.ready())[1]
        ok, detail = await self._upstreams[self._primary].ready()
        return ok, f"{self._primary}: {detail}"

    def status(self) -> dict[str, dict[str, object]]:
        if len(self._members) == 1:
            return {}
        return {name: {"ready": self._health[name].healthy, "detail": self._health[name].detail,
                       "model": member.upstream.model, "fallbacks": self._chains[name][1:]}
                for name, member in self._members.items()}

    def exposition(self) -> bytes:
        lines = ["# HELP ecgw_cloud_target_cooling 1 while the cloud target cools down (this worker's view)",
                 "# TYPE ecgw_cloud_target_cooling gauge"]
        lines += [f'ecgw_cloud_target_cooling{{target="{n}"}} {int(not h.healthy)}' for n, h in self._health.items()]
        return ("\n".join(lines) + "\n").encode()

    async def stop_checks(self) -> None:
        return None  # targets are not probed in the background

    async def retire(self, alive: Sequence[Sharing]) -> None:
        """No request reaches these targets any more: close those none of ``alive`` shares (all, when none)."""
        for name, upstream in self._upstreams.items():
            if any(targets.shares(upstream) for targets in alive):
                continue
            try:
                await upstream.aclose()
            except Exception:
                log.exception("closing the cloud target %s failed", name)

    async def aclose(self) -> None:
        await self.retire(())
