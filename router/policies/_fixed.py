"""A policy that sends every step to one side, the same way: edge-only and cloud-only."""

from __future__ import annotations

from typing import ClassVar, Literal

from router.policies._knobs import NoKnobs
from router.policy import StepResult
from router.step import Step


class FixedSide(NoKnobs):
    side: ClassVar[Literal["edge", "cloud"]]

    async def run(self, step: Step) -> StepResult:
        step.decided(self.side, "fixed")
        channel = step.edge if self.side == "edge" else step.cloud
        if step.stream:
            return channel.stream(step.request)
        return await channel.complete(step.request)
