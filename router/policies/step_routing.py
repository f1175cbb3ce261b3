"""Per-step routing on the edge's token entropy (the benchmark's entropy router, plus an inline mode).

``probe`` (parity with the benchmark): probe the edge with the full request, ``max_tokens=1``, temperature 0,
``top_logprobs=20``; renormalise the top-k; H = −Σ p ln p (nats); stay on the edge when H ≤ τ, else send the
step to the cloud. ``inline`` (default): start the real edge generation with logprobs, decide on its first
token(s), then either keep streaming it (no second prefill) or cancel it and go to the cloud.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from router.chat_shapes import aclose, chunks_to_completion
from router.entropy import decision_entropy, first_token_stats, logprob_entries
from router.policies._knobs import Knobbed
from router.policies._messages import in_tool_loop
from router.policy import StepResult
from router.step import Step
from router.targets import aim, check_one_target, note_cost_target

log = logging.getLogger("ecgw.router")

STATE_KEY = "step_routing"


class StepRoutingKnobs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["probe", "inline"] = Field("inline", description=(
        "probe (the benchmark: a 1-token probe, then the answer) | inline (decide on the real generation's first "
        "token, no second prefill)"))
    tau: float = Field(1.5, ge=0, description=(
        "nats; stay on the edge when H <= tau (the benchmark: 1.3 for a 27B edge, 1.7 for 9B)"))
    tau_by_model: dict[str, float] = Field(default_factory=dict, description=(
        "per edge model name: {\"qwen3-27b\": 1.3}"))
    top_logprobs: int = Field(20, ge=1, le=20, description="k of the top-k renormalisation")
    decide_tokens: int = Field(1, ge=1, description="inline: mean entropy over this many first tokens")
    missing_logprobs: Literal["edge", "cloud"] = Field("cloud", description=(
        "where a step goes when the edge returns no logprobs (counted, logged): edge | cloud"))
    thinking: bool = Field(False, description="a thinking edge: decide on the first token after think_opener")
    think_opener: str = Field("<think>", description="the thinking edge's opening token")
    think_probe_tokens: int = Field(4, ge=2, description=(
        "probe max_tokens for a thinking edge (opener, whitespace, first real token)"))
    stay_on_cloud_steps: int = Field(0, ge=0, description=(
        "anti ping-pong: after an escalation, the next k steps go to the cloud without probing"))
    hold_in_tool_loop: bool = Field(False, description=(
        "anti ping-pong: a step that answers tool results keeps the previous step's side"))
    target_cloud_rate: float | None = Field(None, ge=0, le=1, description=(
        "instead of tau: the share of steps to escalate (0..1)"))
    target_cost_per_session: float | None = Field(None, gt=0, description=(
        "instead of tau: the cloud USD to aim at per session"))

    @model_validator(mode="after")
    def _threshold_or_target(self) -> StepRoutingKnobs:
        check_one_target(self, {"tau", "tau_by_model"} & self.model_fields_set, "tau")
        return self


class Decision(BaseModel):
    side: Literal["edge", "cloud"]
    reason: str  # entropy | target | missing-logprobs | hold | tool-loop
    entropy: float | None = None
    tau: float | None = None


class StepRouting(Knobbed[StepRoutingKnobs]):
    name: ClassVar[str] = "step-routing"

    knobs_model = StepRoutingKnobs

    def __init__(self, knobs: Mapping[str, Any] | None = None) -> None:
        super().__init__(knobs)
        self.missing_logprobs_events = 0

    @staticmethod
    def tau_for(knobs: StepRoutingKnobs, model: str) -> float:
        return knobs.tau_by_model.get(model, knobs.tau)

    async def run(self, step: Step) -> StepResult:
        knobs = self.knobs.for_step(step.knobs)
        state = dict(await step.session.get(STATE_KEY) or {})
        first = not state.get("steps")
        note_cost_target(step, knobs.target_cost_per_session)
        held = self._held(knobs, state, step)
        if held is None and knobs.mode == "inline":
            return await self._inline(step, knobs, first)
        decision = held or await self._aimed(step, knobs, await self._probe(step, knobs), first)
        step.decided(decision.side, decision.reason, entropy=decision.entropy, tau=decision.tau)
        await self._remember(step, knobs, decision)
        return await self._answer(step, decision.side)

    # decisions ---------------------------------------------------------------------------------------
    @staticmethod
    def _held(knobs: StepRoutingKnobs, state: dict[str, Any], step: Step) -> Decision | None:
        if int(state.get("cloud_left") or 0) > 0:
            return Decision(side="cloud", reason="hold")
        last = state.get("last_side")
        if knobs.hold_in_tool_loop and last in ("edge", "cloud") and in_tool_loop(step.request):
            return Decision(side=last, reason="tool-loop")
        return None

    def _from_entries(self, step: Step, knobs: StepRoutingKnobs, entries: list[Mapping[str, Any]],
                      tokens: int) -> Decision:
        model = step.edge.model
        skip = (knobs.think_opener,) if knobs.thinking else ()
        step.note.features.update(first_token_stats(entries, skip_tokens=skip))
        entropy = decision_entropy(entries, skip_tokens=skip, tokens=tokens)
        tau = self.tau_for(knobs, model)
        if entropy is None:
            self.missing_logprobs_events += 1
            log.warning("step-routing: the edge returned no usable logprobs; step goes to %s "
                        "(step_routing.missing_logprobs)", knobs.missing_logprobs)
            return Decision(side=knobs.missing_logprobs, reason="missing-logprobs", tau=tau)
        return Decision(side="edge" if entropy <= tau else "cloud", reason="entropy", entropy=entropy, tau=tau)

    @staticmethod
    async def _aimed(step: Step, knobs: StepRoutingKnobs, decision: Decision, first: bool) -> Decision:
        """With a target: the entropy against the threshold that aims at it (shared per policy and arm through the
        session store), the achieved share noted with the step. ``first``: the session's first step."""
        if decision.reason != "entropy" or decision.entropy is None:
            return decision
        aimed = await aim(step, StepRouting.name, decision.entropy, rate=knobs.target_cloud_rate,
                          cost=knobs.target_cost_per_session, first=first)
        if aimed is None:
            return decision
        return Decision(side="cloud" if aimed.cloud else "edge", reason="target", entropy=decision.entropy,
                        tau=None if aimed.threshold is None else round(aimed.threshold, 5))

    def probe_body(self, request: Mapping[str, Any], knobs: StepRoutingKnobs) -> dict[str, Any]:
        """The benchmark's probe: the full request, one token, greedy, top-20 logprobs."""
        body = {k: v for k, v in request.items()
                if k not in ("stream", "stream_options", "max_completion_tokens", "n", "logprobs", "top_logprobs")}
        body.update(max_tokens=knobs.think_probe_tokens if knobs.thinking else 1, temperature=0,
                    logprobs=True, top_logprobs=knobs.top_logprobs, stream=False)
        return body

    async def _probe(self, step: Step, knobs: StepRoutingKnobs) -> Decision:
        response = await step.edge.complete(self.probe_body(step.request, knobs), purpose="probe")
        choices = response.get("choices") or [{}]
        return self._from_entries(step, knobs, logprob_entries(choices[0]), 1)

    # answers -----------------------------------------------------------------------------------------
    @staticmethod
    async def _answer(step: Step, side: str) -> StepResult:
        channel = step.edge if side == "edge" else step.cloud
        if step.stream:
            return channel.stream(step.request)
        return await channel.complete(step.request)

    @staticmethod
    async def _remember(step: Step, knobs: StepRoutingKnobs, decision: Decision) -> None:
        """The decision applied to the session's current state in one atomic update, so that the counters of
        concurrent steps (any worker, any replica) add up."""

        def advance(current: Any | None) -> dict[str, Any]:
            state = dict(current) if isinstance(current, dict) else {}
            left = int(state.get("cloud_left") or 0)
            if decision.reason == "hold":
                left = max(left - 1, 0)
            elif decision.reason in ("entropy", "target") and decision.side == "cloud":
                left = knobs.stay_on_cloud_steps
            state.update(
                cloud_left=left,
                last_side=decision.side,
                steps=int(state.get("steps") or 0) + 1,
                escalations=int(state.get("escalations") or 0) + (decision.side == "cloud"),
                missing_logprobs=int(state.get("missing_logprobs") or 0) + (decision.reason == "missing-logprobs"),
                last=decision.model_dump(),
            )
            return state

        await step.session.update(STATE_KEY, advance)

    # inline ------------------------------------------------------------------------------------------
    async def _inline(self, step: Step, knobs: StepRoutingKnobs, first: bool) -> StepResult:
        wants_logprobs = bool(step.request.get("logprobs"))
        client_top = int(step.request.get("top_logprobs") or 0)
        body = {k: v for k, v in step.request.items() if k not in ("n",)}
        body.update(logprobs=True, top_logprobs=max(knobs.top_logprobs, client_top))
        edge = step.edge.stream(body).__aiter__()
        buffered: list[dict[str, Any]] = []
        entries: list[Mapping[str, Any]] = []
        try:
            async for chunk in edge:
                buffered.append(chunk)
                for choice in chunk.get("choices") or ():
                    entries.extend(logprob_entries(choice))
                if self._enough(knobs, entries):
                    break
        except BaseException:
            await aclose(edge)
            raise
        decision = await self._aimed(step, knobs, self._from_entries(step, knobs, entries, knobs.decide_tokens),
                                     first)
        step.decided(decision.side, decision.reason, entropy=decision.entropy, tau=decision.tau)
        await self._remember(step, knobs, decision)
        if decision.side == "cloud":
            await aclose(edge)  # cancels the edge generation: the upstream connection closes
            if step.stream:
                return step.cloud.stream(step.request)
            return await step.cloud.complete(step.request)
        relayed = _continue(buffered, edge, wants_logprobs, client_top)
        if step.stream:
            return relayed
        return await chunks_to_completion(relayed)

    @staticmethod
    def _enough(knobs: StepRoutingKnobs, entries: list[Mapping[str, Any]]) -> bool:
        if not knobs.thinking:
            return len(entries) >= knobs.decide_tokens
        opener = knobs.think_opener.strip()
        useful = [e for e in entries if str(e.get("token") or "").strip() not in ("", opener)]
        return len(useful) >= knobs.decide_tokens


async def _continue(buffered: list[dict[str, Any]], rest: AsyncIterator[dict[str, Any]], wants_logprobs: bool,
                    client_top: int) -> AsyncIterator[dict[str, Any]]:
    """The edge generation as the client asked for it: the chunks read while deciding, then the rest."""
    try:
        for chunk in buffered:
            yield _shape_logprobs(chunk, wants_logprobs, client_top)
        async for chunk in rest:
            yield _shape_logprobs(chunk, wants_logprobs, client_top)
    finally:
        await aclose(rest)


def _shape_logprobs(chunk: dict[str, Any], wants: bool, top: int) -> dict[str, Any]:
    choices = chunk.get("choices")
    if not choices:
        return chunk
    shaped = []
    for choice in choices:
        logprobs = choice.get("logprobs")
        if logprobs is None:
            shaped.append(choice)
        elif not wants:
            shaped.append({**choice, "logprobs": None})
        else:
            content = [{**e, "top_logprobs": (e.get("top_logprobs") or [])[:top]}
                       for e in logprob_entries(choice)]
            shaped.append({**choice, "logprobs": {**logprobs, "content": content}})
    return {**chunk, "choices": shaped}
