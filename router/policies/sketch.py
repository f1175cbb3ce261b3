"""Plan-guided edge: on a session's first step the cloud writes a short plan from the task (the first user
message, protected) and the tool names; the plan is stored with the session and appended to the system
message of every step the edge answers."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from router.budgets.errors import KEPT_ON_EDGE, fallback_of
from router.chat_shapes import text_of
from router.errors import PrivacyBlocked, UpstreamError
from router.policies._knobs import Knobbed
from router.policies._messages import first_user_text, tool_names, with_system_suffix
from router.policy import StepResult
from router.step import Step

log = logging.getLogger("ecgw.router")

STATE_KEY = "sketch"

PLAN_PROMPT = ("You plan for a smaller agent model that will do the task itself with the tools listed. Write a "
               "short numbered plan of at most {words} words: the steps, which tool to use for each, and what to "
               "check before finishing. No preamble.")


class SketchKnobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan_words: int = Field(120, ge=10, description="word limit the planner is asked to keep")
    plan_max_tokens: int = Field(400, ge=16, description="hard token limit on the plan")
    plan_prompt: str = Field(PLAN_PROMPT, description="the planner's system prompt; {words} is replaced")
    header: str = Field("Plan for this task (from a planner; adapt it if tool results show it is wrong):", description=(
        "the plan is appended, after this line, to the first system message of every edge step"))


class Sketch(Knobbed[SketchKnobs]):
    name: ClassVar[str] = "sketch"
    knobs_model = SketchKnobs

    @staticmethod
    def plan_request(body: Mapping[str, Any], knobs: SketchKnobs) -> dict[str, Any]:
        tools = ", ".join(tool_names(body)) or "(none)"
        task = first_user_text(body)
        return {
            "messages": [
                {"role": "system", "content": knobs.plan_prompt.replace("{words}", str(knobs.plan_words))},
                {"role": "user", "content": f"Task:\n{task}\n\nTools available: {tools}"},
            ],
            "max_tokens": knobs.plan_max_tokens,
            "temperature": 0,
        }

    async def plan(self, step: Step, knobs: SketchKnobs) -> str | None:
        stored = await step.session.get(STATE_KEY)
        if isinstance(stored, dict):
            plan = stored.get("plan")
            return plan if isinstance(plan, str) and plan else None
        try:
            response = await step.cloud.complete(self.plan_request(step.request, knobs), purpose="plan")
        except KEPT_ON_EDGE as exc:  # no plan this step (not remembered: a budget may reset before the next)
            step.note.signal["fallback"] = fallback_of(exc)
            log.info("sketch: no plan for session %s (%s)", step.context.session_id, exc)
            return None
        except (PrivacyBlocked, UpstreamError) as exc:
            # The session runs without a plan rather than failing; it is not retried on every step.
            log.warning("sketch: no plan for session %s (%s)", step.context.session_id, exc)
            await step.session.keep_first(STATE_KEY, {"plan": None, "error": type(exc).__name__})
            return None
        choices = response.get("choices") or [{}]
        plan = text_of((choices[0].get("message") or {}).get("content")).strip()
        # Sketch once: when two first steps planned at once (two workers or replicas), the first plan written
        # is the session's, and this step uses it too.
        stored = await step.session.keep_first(STATE_KEY, {"plan": plan or None})
        kept = stored.get("plan") if isinstance(stored, dict) else None
        return kept if isinstance(kept, str) and kept else None

    async def run(self, step: Step) -> StepResult:
        knobs = self.knobs.for_step(step.knobs)
        plan = await self.plan(step, knobs)
        step.decided("edge", "with-plan" if plan else "no-plan")
        body = with_system_suffix(step.request, f"{knobs.header}\n{plan}") if plan else step.request
        if step.stream:
            return step.edge.stream(body)
        return await step.edge.complete(body)
