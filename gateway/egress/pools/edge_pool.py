"""The edge pool: several OpenAI-compatible servers (``edge.deployments``) as one ``router.upstreams.Pool``.

A session's steps go to the member that rendezvous hashing on its owner-namespaced id ranks first (so its growing
prefix keeps hitting that server's prefix cache, and every gateway replica picks the same one), unless that member
is ejected or at its ``max_in_flight`` — then to the least-loaded healthy one. The rest of the plan are the other
members, healthy ones first, for the channel's retry before the first byte. A background task probes every member
(``GET /models``) each ``health_interval_s``.

A reload builds a new pool from the new settings and the running one: a member whose configuration did not change
keeps its connections and its health (in-flight count, failures, ejection); a member the reload added serves only
once it answered a probe (one that does not starts ejected and is probed again after ``readmit_after_s``); a member
the reload removed is closed once no request that started before the reload can still reach it (``retire``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from gateway.config.settings import EdgeDeployment, EdgeSettings
from gateway.egress.pools.health import Health
from gateway.egress.pools.lifecycle import Sharing
from gateway.egress.pools.rendezvous import rank
from gateway.egress.transports.openai_http import OpenAIHTTPUpstream
from router.errors import UpstreamError
from router.upstreams import Call, Member, Upstream

log = logging.getLogger("ecgw")


class ProbedUpstream(Upstream, Protocol):
    async def ready(self) -> tuple[bool, str]: ...

    async def aclose(self) -> None: ...


def member_key(deployment: EdgeDeployment, settings: EdgeSettings) -> str:
    """What a member is built from (its own entry and the pool's transport settings): equal keys, same member."""
    return "\0".join((deployment.model_dump_json(), str(settings.connect_timeout_s), str(settings.read_timeout_s),
                      str(settings.max_connections)))


class EdgePool:
    side = "edge"

    def __init__(self, deployments: Sequence[tuple[EdgeDeployment, ProbedUpstream]], *, eject_after: int,
                 readmit_after_s: float, health_interval_s: float, round_robin: bool = False,
                 clock: Callable[[], float] = time.monotonic, kept: Mapping[str, Health] | None = None,
                 keys: Sequence[str] = (), replaces: bool = False) -> None:
        """``keys``: each member's configuration (``member_key``), what a reload compares. ``replaces``: this pool
        replaces a running one (a reload): ``kept`` holds the health of the members it kept (by name), and the
        others are new, probed at ``start`` before they serve."""
        if not deployments:
            raise ValueError("an edge pool needs at least one deployment")
        self._configs = [config for config, _ in deployments]
        self._upstreams = [upstream for _, upstream in deployments]
        self.members = [Member(config.name, upstream, salted=config.compat.cache_salt,
                               relay=upstream if isinstance(upstream, OpenAIHTTPUpstream) else None)
                        for config, upstream in deployments]
        self._weights = [(config.name, config.weight) for config in self._configs]
        kept = kept or {}
        self._health = {m.name: kept.get(m.name) or Health(eject_after, readmit_after_s, clock)
                        for m in self.members}
        self._keys = list(keys)
        self._fresh = [m for m in self.members if m.name not in kept] if replaces else []
        self._interval = health_interval_s
        self._task: asyncio.Task[None] | None = None
        self.model = self.members[0].upstream.model
        self._round_robin = round_robin
        self._turn = 0

    @classmethod
    def from_settings(cls, settings: EdgeSettings, *, on_drop: Callable[[str], None] | None = None,
                      clock: Callable[[], float] = time.monotonic, running: EdgePool | None = None) -> EdgePool:
        """The pool a settings snapshot describes; ``running``: the pool it replaces (a reload), whose members
        with an unchanged configuration it keeps, connections and health included."""
        members: list[tuple[EdgeDeployment, ProbedUpstream]] = []
        kept: dict[str, Health] = {}
        keys = [member_key(d, settings) for d in settings.members()]
        for deployment, key in zip(settings.members(), keys, strict=True):
            found = running.member_by_key(key) if running is not None else None
            if found is not None:
                members.append((deployment, found[0]))
                kept[deployment.name] = found[1]
            else:
                members.append((deployment, OpenAIHTTPUpstream.for_deployment(deployment, settings,
                                                                              on_drop=on_drop)))
        return cls(members, eject_after=settings.eject_after, readmit_after_s=settings.readmit_after_s,
                   health_interval_s=settings.health_interval_s, round_robin=settings.balance == "round-robin",
                   clock=clock, kept=kept, keys=keys, replaces=running is not None)

    def member_by_key(self, key: str) -> tuple[ProbedUpstream, Health] | None:
        """The member built from exactly this configuration (``member_key``), with its health."""
        if key not in self._keys:
            return None
        index = self._keys.index(key)
        return self._upstreams[index], self._health[self.members[index].name]

    def shares(self, upstream: object) -> bool:
        return any(upstream is mine for mine in self._upstreams)

    def health(self, name: str) -> Health:
        return self._health[name]

    def _usable(self, index: int) -> bool:
        config, health = self._configs[index], self._health[self.members[index].name]
        return health.healthy and (config.max_in_flight is None or health.in_flight < config.max_in_flight)

    def _load(self, index: int) -> float:
        return self._health[self.members[index].name].in_flight / self._configs[index].weight

    def _order(self, call: Call) -> list[int]:
        if not self._round_robin:
            return rank(call.session_id, self._weights)
        self._turn += 1
        n = len(self.members)
        return [(self._turn + i) % n for i in range(n)]

    def plan(self, call: Call) -> Sequence[Member]:
        order = self._order(call)
        usable = [i for i in order if self._usable(i)]
        if usable and usable[0] != order[0]:  # the session's own member cannot take it: the least-loaded one
            spill = min(usable, key=lambda i: (self._load(i), usable.index(i)))
            usable.remove(spill)
            usable.insert(0, spill)
        rest = [i for i in order if i not in usable]  # ejected or full: tried last, rather than failing outright
        return [self.members[i] for i in usable + rest]

    def begin(self, member: Member) -> None:
        self._health[member.name].began()

    def end(self, member: Member, failure: UpstreamError | None) -> None:
        health = self._health[member.name]
        if health.ended(failure) == "ejected" and failure is not None:
            log.warning("edge deployment %s ejected after %d consecutive failures: %s", member.name,
                        health.failures, failure.message)

    async def check(self) -> None:
        """Probe every member that is due (healthy ones always; ejected ones after ``readmit_after_s``)."""
        due = [m for m in self.members if self._health[m.name].probe_due()]
        results = await asyncio.gather(*(self._probe(m) for m in due))
        for member, (ok, detail) in zip(due, results, strict=True):
            health = self._health[member.name]
            was_healthy = health.healthy
            if ok:
                health.succeeded(detail)
                if not was_healthy:
                    log.warning("edge deployment %s readmitted: %s", member.name, detail)
            else:
                health.failed(detail)
                if was_healthy and not health.healthy:
                    log.warning("edge deployment %s ejected: %s", member.name, detail)

    async def _probe(self, member: Member) -> tuple[bool, str]:
        upstream = self._upstreams[self.members.index(member)]
        try:
            return await upstream.ready()
        except Exception as exc:  # a probe that breaks is a failed probe, never a dead health loop
            return False, f"probe failed: {type(exc).__name__}"

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.check()
            except Exception:
                log.exception("edge health check failed")

    async def start(self) -> None:
        """Probe the members a reload added (one that does not answer starts ejected), then the health loop."""
        fresh, self._fresh = self._fresh, []
        results = await asyncio.gather(*(self._probe(m) for m in fresh))
        for member, (ok, detail) in zip(fresh, results, strict=True):
            if ok:
                self._health[member.name].succeeded(detail)
                log.info("edge deployment %s joins the pool: %s", member.name, detail)
            else:
                self._health[member.name].eject(detail)
                log.warning("edge deployment %s was added but does not answer; ejected until it does: %s",
                            member.name, detail)
        if self._task is None and len(self.members) > 1:  # one member has nowhere else to send a session
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="ecgw-edge-health")

    async def stop_checks(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def retire(self, alive: Sequence[Sharing]) -> None:
        """No request reaches this pool any more: close the members none of ``alive`` shares (all, when none)."""
        await self.stop_checks()
        for member, upstream in zip(self.members, self._upstreams, strict=True):
            if any(pool.shares(upstream) for pool in alive):
                continue
            try:
                await upstream.aclose()
            except Exception:
                log.exception("closing the edge deployment %s failed", member.name)

    async def aclose(self) -> None:
        await self.retire(())

    async def ready(self) -> tuple[bool, str]:
        """Ready while one member is: probed now, so ``/readyz`` says what is true this moment."""
        if len(self.members) == 1:
            return await self._probe(self.members[0])
        await self.check()
        healthy = [m.name for m in self.members if self._health[m.name].healthy]
        return bool(healthy), f"{len(healthy)} of {len(self.members)} deployments healthy"

    def status(self) -> dict[str, dict[str, object]]:
        """Each member as ``/readyz`` shows it: this worker's view (each worker counts its own calls, and
        ``max_in_flight`` bounds each worker's)."""
        return {m.name: {"ready": self._health[m.name].healthy, "detail": self._health[m.name].detail,
                         "model": m.upstream.model, "in_flight": self._health[m.name].in_flight,
                         "max_in_flight": config.max_in_flight, "in_flight_scope": "worker",
                         "consecutive_failures": self._health[m.name].failures}
                for m, config in zip(self.members, self._configs, strict=True)}

    def exposition(self) -> bytes:
        """This worker's view of each member, in Prometheus' text format (``/metrics``)."""
        lines = ["# HELP ecgw_edge_deployment_up 1 while the edge deployment is admitted (this worker's view)",
                 "# TYPE ecgw_edge_deployment_up gauge"]
        lines += [f'ecgw_edge_deployment_up{{deployment="{m.name}"}} {int(self._health[m.name].healthy)}'
                  for m in self.members]
        lines += ["# HELP ecgw_edge_deployment_in_flight Calls in flight to the edge deployment (this worker)",
                  "# TYPE ecgw_edge_deployment_in_flight gauge"]
        lines += [f'ecgw_edge_deployment_in_flight{{deployment="{m.name}"}} {self._health[m.name].in_flight}'
                  for m in self.members]
        lines += ["# HELP ecgw_edge_deployment_ejections_total Times the edge deployment was ejected (this worker)",
                  "# TYPE ecgw_edge_deployment_ejections_total counter"]
        lines += [f'ecgw_edge_deployment_ejections_total{{deployment="{m.name}"}} {self._health[m.name].ejections}'
                  for m in self.members]
        return ("\n".join(lines) + "\n").encode()
