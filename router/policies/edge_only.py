"""Every step on the edge; the cloud sees nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from router.policy import StepResult
from router.step import Step


class EdgeOnly:
    name: ClassVar[str] = "edge-only"

    def __init__(self, knobs: Mapping[str, Any] | None = None) -> None:
        self.knobs = dict(knobs or {})

    async def run(self, step: Step) -> StepResult:
        step.decided("edge", "fixed")
        if step.stream:
            return step.edge.stream(step.request)
        return await step.edge.complete(step.request)
