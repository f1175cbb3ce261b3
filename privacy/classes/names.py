"""The names the configuration uses: the data classes, the target tiers and what a class policy may say. Free of
any other import, since the settings models name them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DataClass = Literal["secrets", "identifiers", "contact", "online", "people", "organisations_places", "special",
                    "listed", "other"]
CLASSES: tuple[DataClass, ...] = ("secrets", "identifiers", "contact", "online", "people", "organisations_places",
                                  "special", "listed", "other")
Tier = Literal["trusted", "standard"]  # a cloud target's, from configuration alone; the edge is ``local``
TIERS: tuple[Tier, ...] = ("trusted", "standard")
ClassAction = Literal["allow", "pseudonymise", "block"]  # per class and tier: leave as is | replace | never send


@dataclass(frozen=True)
class Who:
    """The caller as privacy's overrides name it (``privacy.keys``, ``privacy.tenants``): the key's name (a virtual
    key's id) and its tenant's name; None for either in single-tenant mode. Set from authentication alone."""

    key: str | None = None
    tenant: str | None = None


ANYONE = Who()
