"""The two ways out of the gateway. ``Doors`` alone holds the upstreams — the edge pool and the cloud targets — and
hands out channels over them, so the cloud is never reachable except through a ``CloudChannel`` (protect →
upstream → restore → meter), and every cloud transport only behind the provider boundary (``ProviderBoundary``: it
gets ``ProviderRequest`` objects built by the one allowlist, never a client's body). This is the only module that
imports the cloud transports (``make lint`` checks it).

The doors are part of the configuration's snapshot (``DoorsPart``): a reload of the edge pool, the cloud targets,
the privacy rules or the prices builds new doors over the running ones (keeping every member whose configuration did
not change), a request goes out through the doors of the snapshot it started with, and the old doors' members that
no live snapshot shares are closed after the last such request."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from accounting.calls import Meter, PricedMeter
from accounting.factory import build_pricer
from accounting.reloading import DOORS
from gateway.config.reference import reload_paths
from gateway.config.settings import CloudSettings, ConfigError, Settings, edge_endpoint, resolved_transport
from gateway.egress.pools.cloud_targets import CloudTargets
from gateway.egress.pools.edge_pool import EdgePool
from gateway.egress.pools.fixed import Fixed
from gateway.egress.pools.lifecycle import Sharing
from gateway.egress.transports.boundary import DroppedFields, ProviderBoundary
from gateway.egress.transports.provider_request import ProviderTransport, RequestShape
from gateway.live.snapshot import Snapshot
from privacy import Protector
from privacy.detect import UnitsDocument
from privacy.factory import reconfigured
from privacy.session_store import SessionStore
from router.budgets.limits import NO_SPEND, Spend
from router.channels import CloudChannel, EdgeChannel
from router.context import CallContext, RouteTracker
from router.upstreams import Call, Pool, Upstream

log = logging.getLogger("ecgw")


class ManagedUpstream(Upstream, Protocol):
    async def ready(self) -> tuple[bool, str]: ...


class ManagedPool(Pool, Protocol):
    """A pool with a lifecycle and a face for ``/readyz`` and ``/metrics``."""

    async def start(self) -> None: ...

    async def stop_checks(self) -> None:
        """Stop background health checks (a reload's pool has taken over)."""
        ...

    async def retire(self, alive: Sequence[Sharing]) -> None:
        """Close the members none of ``alive`` shares."""
        ...

    def shares(self, upstream: object) -> bool: ...

    async def ready(self) -> tuple[bool, str]: ...

    def status(self) -> dict[str, dict[str, object]]: ...

    def exposition(self) -> bytes: ...


def configured_transport(settings: CloudSettings) -> ProviderTransport:
    """One target's transport, as its ``transport`` names it or ``auto`` picks it (``resolved_transport``): litellm
    (imported here, at start-up, and only when a target uses it) or the gateway's own OpenAI-compatible one."""
    if resolved_transport(settings.transport, settings.model) == "openai":
        from gateway.egress.transports.cloud_http import OpenAIWireCloud

        return OpenAIWireCloud(settings)
    from gateway.egress.transports.cloud import LiteLLMUpstream

    return LiteLLMUpstream(settings)


def cloud_targets(settings: CloudSettings, transport: Callable[[CloudSettings], ProviderTransport],
                  dropped: DroppedFields, running: CloudTargets | None = None) -> CloudTargets:
    """Every configured target behind its own allowlist; the pool's allowlist (what protection scans) is their
    union, and counts what none of them takes."""
    named = settings.named_targets()
    union = sorted({f for target in named.values() for f in target.extra_body_fields})

    def behind_boundary(one: CloudSettings) -> ProviderBoundary:
        return ProviderBoundary(transport(one), RequestShape(one.extra_body_fields))

    return CloudTargets.from_settings(settings, behind_boundary, shape=RequestShape(union, on_drop=dropped),
                                      running=running)


class Doors:
    def __init__(self, *, edge: ManagedPool, cloud: CloudTargets, meter: Meter, protector: Protector,
                 dropped: DroppedFields, edge_dropped: DroppedFields | None = None) -> None:
        self._edge = edge
        self._cloud = cloud
        self._meter = meter
        self._protector = protector
        self.dropped = dropped  # the fields the boundary kept off the cloud (``/metrics``)
        self.edge_dropped = edge_dropped or DroppedFields(side="edge")  # and those the edge transport kept off
        self.edge_model = edge.model
        self.cloud_model = cloud.model

    @classmethod
    def build(cls, settings: Settings, *, meter: Meter, protector: Protector, edge: ManagedUpstream | None = None,
              cloud: ProviderTransport | None = None,
              cloud_transport: Callable[[CloudSettings], ProviderTransport] | None = None,
              running: Doors | None = None, field_hash_key: bytes | None = None) -> Doors:
        """The configured pools (each cloud target's transport from ``configured_transport``), or the
        upstreams given (tests, benchmarks): ``edge`` as a pool of one, ``cloud`` as the transport of every target,
        ``cloud_transport`` building each target's transport from its settings (tests wrap litellm's in a guard).
        Built from one settings snapshot; ``running``: the doors a reload replaces (their unchanged members, the
        counters and a given edge are kept); ``field_hash_key``: what the log's hash of a dropped field's name is
        keyed with (``DroppedFields``)."""
        dropped = running.dropped if running is not None else DroppedFields(hash_key=field_hash_key)
        edge_dropped = (running.edge_dropped if running is not None
                        else DroppedFields(side="edge", hash_key=field_hash_key))
        edge_pool: ManagedPool
        if edge is not None:
            edge_pool = running._edge if running is not None else Fixed(edge, salted=settings.edge.compat.cache_salt)
        else:
            edge_pool = EdgePool.from_settings(settings.edge, on_drop=edge_dropped, running=(
                running._edge if running is not None and isinstance(running._edge, EdgePool) else None))
        if cloud is not None:
            given = cloud
            cloud_transport = lambda _: given  # noqa: E731 - every target is the one transport given
        elif cloud_transport is None:
            cloud_transport = configured_transport
        return cls(edge=edge_pool, cloud=cloud_targets(settings.cloud, cloud_transport, dropped,
                                                       running._cloud if running is not None else None),
                   meter=meter, protector=protector, dropped=dropped, edge_dropped=edge_dropped)

    def exposition(self) -> bytes:
        """The boundary's metrics (fields kept off each side's calls), and each pool member's health."""
        return (self.dropped.exposition() + self.edge_dropped.exposition() + self._edge.exposition()
                + self._cloud.exposition())

    def edge(self, context: CallContext, route: RouteTracker, spend: Spend = NO_SPEND) -> EdgeChannel:
        return EdgeChannel(self._edge, self._meter, context, route, Call(context.session_id, context.owner), spend)

    def cloud(self, context: CallContext, route: RouteTracker, spend: Spend = NO_SPEND, *,
              target: str | None = None) -> CloudChannel:
        """The cloud door; ``target``: the configured target a policy or an arm named (None: the default)."""
        return CloudChannel(self._cloud, self._meter, context, route, Call(context.session_id, context.owner, target),
                            self._protector, spend)

    async def start(self, running: Doors | None = None) -> None:
        """Before these doors serve: the members a reload added are probed, and the health checks move here."""
        if running is not None:
            await running._edge.stop_checks()
        for pool in (self._edge, self._cloud):
            await pool.start()

    async def retire(self, alive: Sequence[Doors]) -> None:
        """No request goes out through these doors any more: close what none of ``alive`` shares."""
        await self._edge.retire([d._edge for d in alive])
        await self._cloud.retire([d._cloud for d in alive])

    async def ready(self) -> dict[str, tuple[bool, str]]:
        return {"edge": await self._edge.ready(), "cloud": await self._cloud.ready()}

    def deployments(self) -> dict[str, dict[str, dict[str, object]]]:
        """Each pool's members as ``/readyz`` shows them (none for a pool of one)."""
        return {side: status for side, pool in (("edge", self._edge), ("cloud", self._cloud))
                if (status := pool.status())}



def doors_of(snapshot: Snapshot) -> Doors:
    """The doors of a configuration snapshot (``build_services`` registers them as a part of every one)."""
    doors = snapshot.part(DoorsPart.name)
    assert isinstance(doors, Doors)
    return doors


def check_units_files(paths: Sequence[str]) -> None:
    """Every units file reads as a ``sensitive_items.json`` document (``ConfigError`` naming the one that does not)."""
    for index, path in enumerate(paths):
        try:
            UnitsDocument.from_file(path)
        except (OSError, ValueError) as exc:  # missing, unreadable, not JSON, not the schema
            reason = exc.strerror if isinstance(exc, OSError) else str(exc).splitlines()[0]
            raise ConfigError(f"privacy.units_files.{index}: {path} does not load as a sensitive_items.json "
                              f"document ({reason})", param=f"privacy.units_files.{index}") from None


class DoorsPart:
    """The doors as a part of the configuration's snapshot (``gateway.live.snapshot.SnapshotPart``): each snapshot's
    doors carry its edge pool, cloud targets, privacy rules (the one protector, reconfigured) and price table."""

    name = "doors"

    @property
    def paths(self) -> tuple[str, ...]:
        """What a reload of the doors applies: the settings whose fields say ``reloads(DOORS)``. The rest of
        ``edge`` (``launch*``) is what ``ecgw serve`` acted on at start; the privacy audit keeps one writer and one
        hash chain for the process's life."""
        return reload_paths(DOORS)

    def __init__(self, *, meter: Meter, protector: Protector, sessions: SessionStore,
                 edge: ManagedUpstream | None = None, cloud: ProviderTransport | None = None,
                 cloud_transport: Callable[[CloudSettings], ProviderTransport] | None = None,
                 field_hash_key: bytes | None = None) -> None:
        self._meter = meter
        self._field_hash_key = field_hash_key
        self._protector = protector  # the process's own: started and closed by its owner, never by a snapshot
        self._sessions = sessions
        self._edge = edge
        self._cloud = cloud
        self._cloud_transport = cloud_transport

    def build(self, settings: Settings, running: object | None) -> Doors:
        old = running if isinstance(running, Doors) else None
        protector = self._protector
        if old is not None:
            check_units_files(settings.privacy.units_files)
            try:
                protector = reconfigured(self._protector, settings.privacy, sessions=self._sessions,
                                         edge=edge_endpoint(settings.edge))
            except ValueError as exc:  # an edge layer with no endpoint to ask
                raise ConfigError(f"privacy.edge_detector: {exc}", param="privacy.edge_detector") from None
        return Doors.build(settings, meter=PricedMeter(self._meter, build_pricer(settings.accounting)),
                           protector=protector, edge=self._edge, cloud=self._cloud,
                           cloud_transport=self._cloud_transport, running=old, field_hash_key=self._field_hash_key)

    async def start(self, built: object, running: object | None) -> None:
        assert isinstance(built, Doors)
        await built.start(running if isinstance(running, Doors) else None)

    async def retire(self, old: object, alive: Sequence[object]) -> None:
        assert isinstance(old, Doors)
        await old.retire([d for d in alive if isinstance(d, Doors)])
