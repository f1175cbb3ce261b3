"""Every step on the edge; the cloud sees nothing."""

from __future__ import annotations

from typing import ClassVar

from router.policies._knobs import NoKnobs
from router.policy import StepResult
from router.step import Step


class EdgeOnly(NoKnobs):
    name: ClassVar[str] = "edge-only"

    async def run(self, step: Step) -> StepResult:
        step.decided("edge", "fixed")
        if step.stream:
            return step.edge.stream(step.request)
        return await step.edge.complete(step.request)
