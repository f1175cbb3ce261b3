"""How a setting takes effect when the configuration is reloaded, said once on its pydantic field beside its
description: ``Field(..., json_schema_extra=reloads(DOORS))`` or ``restart("why")``. A field that says nothing takes
its section's. The gateway derives from these which sections each part of a configuration snapshot rebuilds and
why every other change waits for a restart (``gateway.config.reference``). It lives in the lowest layer so that
every package's settings can say it."""

from __future__ import annotations

from typing import Literal

from pydantic.config import JsonDict

Part = Literal["snapshot", "doors", "limits"]

SNAPSHOT: Part = "snapshot"  # rebuilt with every snapshot (policies, experiments, keys) or read from it at each step
DOORS: Part = "doors"  # the doors: the edge pool, the cloud targets, the privacy rules, the prices
LIMITS: Part = "limits"  # the budgets and rate limits
RESTART = "restart"  # kept at its running value until the process restarts


def reloads(part: Part) -> JsonDict:
    """A setting a reload applies, rebuilt by ``part`` of the snapshot."""
    return {"reload": part}


def restart(why: str) -> JsonDict:
    """A setting read once, at start: a reload names it in ``not_reloadable`` with ``why``."""
    return {"reload": RESTART, "why": why}
