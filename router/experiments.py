"""Policy A/B experiments: named arms (a policy plus knob overrides) with weights, and the stable
assignment of a session to an arm by a hash of its id (the same on every worker and after restarts)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ArmSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    policy: str = Field(description="the arm's policy")
    weight: float = Field(1.0, ge=0, description="the arm's share of sessions, relative to the other arms' weights")
    knobs: dict[str, Any] = Field(default_factory=dict, description="overrides of policy.knobs.<policy> for this arm")
    forceable: bool = Field(True, description="false: X-ECGW-Arm cannot select it (sessions reach it only by the hash)")


class ExperimentSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    salt: str = Field("", description="change it to reshuffle sessions into arms")
    arms: dict[str, ArmSettings] = Field(description="arm name -> {policy, weight, knobs, forceable}")

    @model_validator(mode="after")
    def _weights(self) -> ExperimentSettings:
        if not self.arms:
            raise ValueError("an experiment needs at least one arm")
        if sum(a.weight for a in self.arms.values()) <= 0:
            raise ValueError("the arms' weights must not all be 0")
        return self


class ExperimentsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    active: str | None = Field(None, description=(
        "the experiment that sessions naming no policy are assigned to (by a stable hash of the session id)"))
    definitions: dict[str, ExperimentSettings] = Field(default_factory=dict, description=(
        "name -> {salt, arms: {arm: {policy, weight, knobs}}}; X-ECGW-Arm: <arm> or <experiment>:<arm> forces an arm"))

    @model_validator(mode="after")
    def _active_defined(self) -> ExperimentsSettings:
        if self.active is not None and self.active not in self.definitions:
            raise ValueError(f"experiments.active is {self.active!r}, which is not under experiments.definitions")
        return self


@dataclass(frozen=True)
class Assignment:
    experiment: str
    arm: str
    policy: str
    knobs: dict[str, Any]


def bucket(*parts: str) -> float:
    """A uniform number in [0, 1) from a stable hash of ``parts`` (not Python's salted ``hash``)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def assign(name: str, experiment: ExperimentSettings, session_id: str) -> Assignment:
    """The arm ``session_id`` falls into: cumulative weights over the arms in their configured order."""
    point = bucket("ecgw-arm", name, experiment.salt, session_id)
    total = sum(a.weight for a in experiment.arms.values())
    running = 0.0
    chosen = next(iter(experiment.arms))
    for arm_name, arm in experiment.arms.items():
        if arm.weight <= 0:
            continue
        chosen = arm_name
        running += arm.weight / total
        if point < running:
            break
    return arm_of(name, experiment, chosen)


def arm_of(name: str, experiment: ExperimentSettings, arm: str) -> Assignment:
    settings = experiment.arms[arm]
    return Assignment(experiment=name, arm=arm, policy=settings.policy, knobs=dict(settings.knobs))
