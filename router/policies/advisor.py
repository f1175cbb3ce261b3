"""Cloud advisory, edge in control: the gateway gives the edge a tool (``ask_cloud_advisor``) and answers it
itself, inside the same client request: it builds the advisor's context (task, transcript, the question),
asks the cloud (protected, metered as ``advice``), returns the advice as the tool result and asks the edge
again — at most ``max_consults`` times a step. The client never sees the tool or its calls."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, ClassVar

from pydantic import Field, field_validator

from router.budgets.errors import KEPT_ON_EDGE, fallback_of
from router.chat_shapes import text_of
from router.errors import PrivacyBlocked, PrivacyUnavailable, UpstreamError
from router.policies._messages import (
    call_id,
    can_inject_tool,
    messages_of,
    tool_names,
    with_tools,
)
from router.policies._tool_policy import ToolKnobs, ToolPolicy
from router.policies._turns import Composer, Turn, turn_chunks
from router.step import Step

ADVISOR_PROMPT = ("You advise a smaller agent model that is working on a task with tools. Read the task and its "
                  "transcript, then answer its question with concrete, actionable advice in at most {words} "
                  "words: what to do next and what to watch out for. Do not call tools.")

STATE_KEY = "advisor"

LIMIT_REACHED = "The advisor cannot be consulted again in this step; continue on your own."

log = logging.getLogger("ecgw.advisor")


class AdvisorKnobs(ToolKnobs):
    tool_name: str = Field("ask_cloud_advisor", description=(
        "the injected tool (argument: question); the client never sees it"))
    tool_description: str = Field("Ask a stronger model for advice when you are unsure how to proceed. " "Optionally say what you want to know.", description=(
        "the injected tool's description, as the edge reads it"))
    max_consults: int = Field(2, ge=0, description="consultations per client request; after that the tool is withdrawn")
    transcript: str = Field("full", description=(
        "what the advisor sees after the task: full | recent:N (the last N messages)"))
    tool_result_chars: int = Field(2000, ge=0, description=(
        "tool results are trimmed to this many characters in the advisor's context"))
    advice_words: int = Field(150, ge=10, description="word limit the advisor is asked to keep")
    advice_max_tokens: int = Field(400, ge=16, description="hard token limit on the advice")
    advisor_prompt: str = Field(ADVISOR_PROMPT, description="{words} is replaced")

    @field_validator("transcript")
    @classmethod
    def _transcript(cls, value: str) -> str:
        if value == "full":
            return value
        head, _, count = value.partition(":")
        if head != "recent" or not count.isdigit() or int(count) < 1:
            raise ValueError("expected 'full' or 'recent:N' with N ≥ 1")
        return value


def _trim(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" …[{len(text) - limit} characters trimmed]"


def render_transcript(messages: list[dict[str, Any]], knobs: AdvisorKnobs) -> tuple[str, str]:
    """(task, transcript) as plain text: the first user message, then what followed it."""
    first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    task = text_of(messages[first_user].get("content")) if first_user is not None else ""
    rest = messages[first_user + 1:] if first_user is not None else [m for m in messages
                                                                      if m.get("role") != "system"]
    if knobs.transcript != "full":
        rest = rest[-int(knobs.transcript.split(":")[1]):]
    lines = []
    for message in rest:
        role = message.get("role")
        text = text_of(message.get("content"))
        if role in ("tool", "function"):
            lines.append(f"[tool result {message.get('name') or message.get('tool_call_id') or ''}] "
                         f"{_trim(text, knobs.tool_result_chars)}")
            continue
        if text:
            lines.append(f"[{role}] {text}")
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            lines.append(f"[{role} calls {function.get('name')}] {function.get('arguments') or ''}")
    return task, "\n".join(lines)


class Advisor(ToolPolicy[AdvisorKnobs]):
    name: ClassVar[str] = "advisor"
    knobs_model = AdvisorKnobs
    argument = ("question", "what you want advice on")

    @staticmethod
    def advice_request(messages: list[dict[str, Any]], question: str, tools: list[str],
                       knobs: AdvisorKnobs) -> dict[str, Any]:
        task, transcript = render_transcript(messages, knobs)
        parts = [f"Task:\n{task}", f"Tools the agent has: {', '.join(tools) or '(none)'}"]
        if transcript:
            parts.append(f"Transcript so far:\n{transcript}")
        parts.append(f"The agent asks: {question or 'What should I do next?'}")
        return {
            "messages": [
                {"role": "system", "content": knobs.advisor_prompt.replace("{words}", str(knobs.advice_words))},
                {"role": "user", "content": "\n\n".join(parts)},
            ],
            "max_tokens": knobs.advice_max_tokens,
            "temperature": 0,
        }

    async def _consult(self, step: Step, messages: list[dict[str, Any]], call: Mapping[str, Any],
                       knobs: AdvisorKnobs) -> str:
        arguments = (call.get("function") or {}).get("arguments") or ""
        question = ""
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
            if isinstance(parsed, dict) and isinstance(parsed.get("question"), str):
                question = parsed["question"]
            elif isinstance(parsed, str):
                question = parsed
        except json.JSONDecodeError:
            question = arguments
        request = self.advice_request(messages, question, tool_names(step.request), knobs)
        step.note.count("consultations")
        try:
            response = await step.cloud.complete(request, purpose="advice")
        except KEPT_ON_EDGE as exc:  # a spent (or unreadable) cloud budget: the edge carries on alone
            step.note.signal["fallback"] = fallback_of(exc)
            log.info("advisor consultation not sent: %s", exc)
            return "(the advisor is unavailable for this step; continue on your own)"
        except (PrivacyBlocked, PrivacyUnavailable, UpstreamError) as exc:
            # The edge is in control: a missing advisor is an answer it can work with, not a failed step.
            reason = exc.message if isinstance(exc, UpstreamError) else exc.reason
            log.warning("advisor consultation not sent or failed: %s", reason)
            return "(the advisor is unavailable for this step; continue on your own)"
        choices = response.get("choices") or [{}]
        return text_of((choices[0].get("message") or {}).get("content")).strip() or "(no advice)"

    async def _chunks(self, step: Step, knobs: AdvisorKnobs) -> AsyncIterator[dict[str, Any]]:
        composer = Composer()
        messages = messages_of(step.request)
        inject = can_inject_tool(step.request, knobs.tool_name)
        consults = 0
        step.decided("edge", "advisor", consultations=0)
        while True:
            offer = inject and consults < knobs.max_consults
            body = {**step.request, "messages": messages}
            if offer:
                body = with_tools(body, [self.tool(knobs)])
            turn = Turn()
            async for out in turn.relay(turn_chunks(step.edge, body, stream=step.stream), composer):
                yield out
            asked = [c for c in turn.calls if c["function"]["name"] == knobs.tool_name] if inject else []
            client_calls = [c for c in turn.calls if c not in asked]
            if not asked or not offer:
                # Done: no advisor call (or no more allowed, in which case a stray call is dropped).
                for chunk in composer.tool_calls(client_calls):
                    yield chunk
                reason = turn.finish_reason
                if asked and not client_calls:
                    reason = "stop"
                for chunk in composer.finish("tool_calls" if client_calls else reason):
                    yield chunk
                if consults:
                    await step.session.update(STATE_KEY, _counted(consults))
                return
            # Resolve the advisor first; client tool calls of the same message are dropped and re-asked.
            answered = [{**c, "id": call_id(c)} for c in asked]
            results = []
            for call in answered:
                if consults < knobs.max_consults:
                    advice = await self._consult(step, messages, call, knobs)
                    consults += 1
                else:
                    advice = LIMIT_REACHED
                results.append({"role": "tool", "tool_call_id": call["id"], "content": advice})
            messages = [*messages, {"role": "assistant", "content": turn.content or None, "tool_calls": answered},
                        *results]


def _counted(consults: int) -> Callable[[Any | None], dict[str, Any]]:
    """The advisor's per-session counters with one more advised step (an atomic session update)."""

    def add(state: Any | None) -> dict[str, Any]:
        state = dict(state) if isinstance(state, dict) else {}
        return {**state, "consults": int(state.get("consults") or 0) + consults,
                "steps_with_advice": int(state.get("steps_with_advice") or 0) + 1}

    return add
