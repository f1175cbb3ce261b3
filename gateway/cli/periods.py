"""Whose records over which time, as the auditor's commands take them (``ecgw privacy-report --owner``, ``ecgw
audit query``): an owner named by its tenant or as the gateway names it, and a moment as unix seconds, ISO 8601 or a
duration back from now."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from privacy.report import Scope

_OWNER_KINDS = ("t.", "o.", "k.")


def owner_prefix(owner: str) -> str | None:
    """The session-id prefix of ``owner`` (None: ``all``)."""
    from gateway.state.tenancy import tenant_owner

    if owner == "all":
        return None
    if not owner or "/" in owner:
        raise ValueError(f"--owner {owner!r}: name a tenant (acme), an owner as the gateway names it (t.acme), "
                         "or all")
    return (owner if owner.startswith(_OWNER_KINDS) else tenant_owner(owner)) + "/"


def moment(value: str | None, *, now: float, name: str) -> float | None:
    """Unix seconds, an ISO 8601 time (UTC unless it says otherwise), or a duration back from now (``7d``)."""
    from accounting.reports import BadReportRequest, parse_since

    try:
        return parse_since(value, now=now)
    except BadReportRequest as exc:
        raise ValueError(str(exc).replace("--since", name)) from None


def scope(owner: str, since: str | None, until: str | None, *, now: float) -> Scope:
    """The auditor's ``--owner``, ``--since`` and ``--until`` as one report scope (``--until`` defaults to now);
    ValueError names the option that is wrong."""
    from privacy.report import Scope

    prefix = owner_prefix(owner)
    start = moment(since, now=now, name="--since")
    end = moment(until, now=now, name="--until") or now
    if start is not None and start >= end:
        raise ValueError("--since must come before --until")
    return Scope(owner=owner if prefix is None else prefix[:-1], prefix=prefix, since=start, until=end)
