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
    amount: float = Field(ge=0, description="how much may be spent in one window")
    window: Window = Field(description="1h | 1d | 30d (fixed, UTC-aligned) | session (the session's life)")


class Limits(_Section):
    cloud_usd: Budget | None = Field(None, description="a budget of cloud USD: {amount, window}")
    cloud_tokens: Budget | None = Field(None, description="a budget of cloud tokens: {amount, window}")
    cloud_calls: Budget | None = Field(None, description="a budget of cloud calls: {amount, window}")
    edge_pflops: Budget | None = Field(None, description="a budget of edge PFLOPs: {amount, window}")
    rpm: int | None = Field(None, gt=0, description="requests per UTC minute")
    tpm: int | None = Field(None, gt=0, description="tokens (prompt + max_tokens) per UTC minute")

    def budgets(self) -> list[tuple[str, Budget]]:
        """(kind, budget) for every budget set, in a fixed order."""
        return [(kind, b) for kind in BUDGET_KINDS if (b := getattr(self, kind)) is not None]

    @property
    def empty(self) -> bool:
        return not self.budgets() and self.rpm is None and self.tpm is None


class LimitsSettings(_Section):
    keys: dict[str, Limits] = Field(default_factory=dict, description=(
        "<key name or virtual key id>: {cloud_usd|cloud_tokens|cloud_calls|edge_pflops: {amount, window: "
        "1h|1d|30d|session}, rpm, tpm}"))
    default_key: Limits | None = Field(None, description="LIMITS for every key not named under keys")
    sessions: Limits | None = Field(None, description="LIMITS for every session")
    arms: dict[str, Limits] = Field(default_factory=dict, description="\"<experiment>:<arm>\": LIMITS")
    shadow: Limits | None = Field(None, description=(
        "LIMITS of shadow calls (learning.shadow_rate): the operator's budget, no tenant's"))
    on_exceed: Literal["edge", "reject"] = Field("edge", description=(
        "a spent cloud budget: answer on the edge (x-ecgw-fallback: budget), or reject (429)"))
    default_max_tokens: int = Field(4096, gt=0, description=(
        "the output a reservation assumes for a cloud call whose request names no max_tokens; with a budget in "
        "scope the call is sent with this cap, so the reservation holds"))

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
