"""Every step on the cloud, through the protected channel."""

from __future__ import annotations

from typing import ClassVar

from router.policies._knobs import NoKnobs
from router.policy import StepResult
from router.step import Step


class CloudOnly(NoKnobs):
    name: ClassVar[str] = "cloud-only"

    async def run(self, step: Step) -> StepResult:
        step.decided("cloud", "fixed")
        if step.stream:
            return step.cloud.stream(step.request)
        return await step.cloud.complete(step.request)
