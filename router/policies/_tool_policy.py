"""A policy that gives the edge one tool the gateway answers itself (``advisor``, ``delegate``): the tool's knobs
(name, description), the tool as the edge sees it, and the step run as chunks — streamed, or folded into one
completion. The client never sees the tool."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict

from router.chat_shapes import chunks_to_completion
from router.policies._knobs import Knobbed
from router.policies._messages import function_tool
from router.policy import StepResult
from router.step import Step


class ToolKnobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool_name: str
    tool_description: str


T = TypeVar("T", bound=ToolKnobs)


class ToolPolicy(Knobbed[T]):
    argument: ClassVar[tuple[str, str]]  # the tool's one optional string argument: (name, description)

    def tool(self, knobs: T) -> dict[str, Any]:
        name, description = self.argument
        return function_tool(knobs.tool_name, knobs.tool_description,
                             {name: {"type": "string", "description": description}})

    def _chunks(self, step: Step, knobs: T) -> AsyncIterator[dict[str, Any]]:
        raise NotImplementedError

    async def run(self, step: Step) -> StepResult:
        chunks = self._chunks(step, self.knobs.for_step(step.knobs))
        if step.stream:
            return chunks
        return await chunks_to_completion(chunks)
