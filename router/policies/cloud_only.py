"""Every step on the cloud, through the protected channel."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from router.policy import StepResult
from router.step import Step


class CloudOnly:
    name: ClassVar[str] = "cloud-only"

    def __init__(self, knobs: Mapping[str, Any] | None = None) -> None:
        self.knobs = dict(knobs or {})

    async def run(self, step: Step) -> StepResult:
        step.decided("cloud", "fixed")
        if step.stream:
            return step.cloud.stream(step.request)
        return await step.cloud.complete(step.request)
