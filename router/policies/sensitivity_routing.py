"""Routing by what the step carries: the edge answers every step whose context (the whole body the cloud would
get) holds a data class named in ``classes`` (default: the special categories and secrets), the cloud the rest.
The classes are those the cloud door's protection finds (``privacy.classes``), read before anything leaves; a step
whose classes cannot be read (protection failed, or would not let it leave) stays on the edge."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from privacy.classes.names import DataClass
from privacy.errors import PrivacyError
from router.channels import ClassReading
from router.policies._knobs import Knobbed
from router.policy import StepResult
from router.step import Step

SENSITIVE: tuple[DataClass, ...] = ("special", "secrets")


class SensitivityKnobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    classes: list[DataClass] = Field(default_factory=lambda: list(SENSITIVE), description=(
        "a step whose context holds any of these data classes stays on the edge (privacy.classes' names)"))


class SensitivityRouting(Knobbed[SensitivityKnobs]):
    name: ClassVar[str] = "sensitivity-routing"

    knobs_model = SensitivityKnobs

    async def run(self, step: Step) -> StepResult:
        knobs = self.knobs.for_step(step.knobs)
        held: frozenset[str] | None = None
        if isinstance(step.cloud, ClassReading):
            try:
                held = await step.cloud.classes(step.request)
            except PrivacyError:
                held = None
        sensitive = sorted(set(knobs.classes) & held) if held is not None else []
        cloud = held is not None and not sensitive
        step.decided("cloud" if cloud else "edge", "classes" if held is not None else "classes-unknown",
                     classes=",".join(sensitive) or None)
        channel = step.cloud if cloud else step.edge
        if step.stream:
            return channel.stream(step.request)
        return await channel.complete(step.request)
