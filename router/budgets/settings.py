"""The ``limits:`` section of config.yaml: budgets and rate limits per API key, per session and per experiment arm.

LIMITS (one mapping) holds any of ``cloud_usd``, ``cloud_tokens``, ``cloud_calls``, ``edge_pflops`` — each
``{amount, window}`` with ``window`` one of ``1h``, ``1d``, ``30d`` (fixed, UTC-aligned) or ``session`` (the
session's life) — and ``rpm``, ``tpm`` (requests and tokens per minute, a fixed UTC minute).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Window = Literal["1h", "1d", "30d", "session"]
BUDGET_KINDS = ("cloud_usd", "cloud_tokens", "cloud_calls", "edge_pflops")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Budget(_Section):
    amount: float = Field(ge=0)
    window: Window


class Limits(_Section):
    cloud_usd: Budget | None = None
    cloud_tokens: Budget | None = None
    cloud_calls: Budget | None = None
    edge_pflops: Budget | None = None
    rpm: int | None = Field(None, gt=0)
    tpm: int | None = Field(None, gt=0)

    def budgets(self) -> list[tuple[str, Budget]]:
        """(kind, budget) for every budget set, in a fixed order."""
        return [(kind, b) for kind in BUDGET_KINDS if (b := getattr(self, kind)) is not None]

    @property
    def empty(self) -> bool:
        return not self.budgets() and self.rpm is None and self.tpm is None


class LimitsSettings(_Section):
    keys: dict[str, Limits] = Field(default_factory=dict)  # API key name (or virtual key id) → its limits
    default_key: Limits | None = None  # for every key not named under keys (and the anonymous caller)
    sessions: Limits | None = None  # for every session
    arms: dict[str, Limits] = Field(default_factory=dict)  # "<experiment>:<arm>" → that arm's limits
    shadow: Limits | None = None  # the operator's budget for shadow calls (learning.shadow_rate), no tenant's
    on_exceed: Literal["edge", "reject"] = "edge"  # a spent cloud budget: answer on the edge, or 429
    # The output a reservation assumes for a cloud call whose request names no max_tokens (a cloud target may
    # name its own cap): a reservation is an upper bound, settled to the call's actual cost when it ends.
    default_max_tokens: int = Field(4096, gt=0)

    @model_validator(mode="after")
    def _arm_names(self) -> LimitsSettings:
        for name in self.arms:
            experiment, _, arm = name.rpartition(":")
            if not experiment or not arm:
                raise ValueError(f"limits.arms: {name!r} is not '<experiment>:<arm>'")
        return self

    @property
    def configured(self) -> bool:
        every = [*self.keys.values(), self.default_key, self.sessions, *self.arms.values(), self.shadow]
        return any(limits is not None and not limits.empty for limits in every)
