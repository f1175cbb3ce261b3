"""Edge-controlled delegation: the gateway gives the edge a tool (``delegate_to_cloud``); when the edge calls
it, the client's request for this step goes to the cloud (protected, metered as ``delegate``) and the cloud's
answer — text, or tool calls for the client's tools — is the step's answer. The client never sees the tool."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from pydantic import Field

from router.budgets.errors import KEPT_ON_EDGE, fallback_of
from router.errors import PrivacyBlocked
from router.policies._messages import can_inject_tool, with_tools
from router.policies._tool_policy import ToolKnobs, ToolPolicy
from router.policies._turns import Composer, Turn, turn_chunks
from router.step import Step

STATE_KEY = "delegate"

log = logging.getLogger("ecgw.delegate")


class DelegateKnobs(ToolKnobs):
    tool_name: str = Field("delegate_to_cloud", description=(
        "the injected tool (argument: reason); the client never sees it"))
    tool_description: str = Field("Hand this step to a stronger model when it is beyond you; it will answer or call " "tools in your place. Optionally say why.", description=(
        "the injected tool's description, as the edge reads it"))


class Delegate(ToolPolicy[DelegateKnobs]):
    name: ClassVar[str] = "delegate"
    knobs_model = DelegateKnobs
    argument = ("reason", "why the step is delegated")

    async def _chunks(self, step: Step, knobs: DelegateKnobs) -> AsyncIterator[dict[str, Any]]:
        composer = Composer()
        inject = can_inject_tool(step.request, knobs.tool_name)
        body = with_tools(step.request, [self.tool(knobs)]) if inject else step.request
        step.decided("edge", "kept" if inject else "no-tool-slot")
        turn = Turn()
        async for out in turn.relay(turn_chunks(step.edge, body, stream=step.stream), composer):
            yield out
        delegated = inject and any(c["function"]["name"] == knobs.tool_name for c in turn.calls)
        if not delegated:
            for chunk in composer.tool_calls(turn.calls):
                yield chunk
            for chunk in composer.finish("tool_calls" if turn.calls else turn.finish_reason):
                yield chunk
            return
        step.decided("cloud", "delegated")
        await step.session.update(STATE_KEY, lambda state: {
            **(state or {}), "delegated_steps": int((state or {}).get("delegated_steps") or 0) + 1})
        cloud = Turn()
        try:
            async for out in cloud.relay(turn_chunks(step.cloud, step.request, stream=step.stream,
                                                     purpose="delegate"), composer):
                yield out
        except (PrivacyBlocked, *KEPT_ON_EDGE) as exc:
            # Raised before the cloud produced anything: the step may not leave (privacy, a spent budget), so the
            # edge answers it itself, without the delegation tool.
            log.info("delegation not sent (%s); the edge answers", exc)
            step.decided("edge", "delegation-blocked")
            if not isinstance(exc, PrivacyBlocked):
                step.note.signal["fallback"] = fallback_of(exc)
            cloud = Turn()
            async for out in cloud.relay(turn_chunks(step.edge, step.request, stream=step.stream), composer):
                yield out
        for chunk in composer.tool_calls(cloud.calls):
            yield chunk
        for chunk in composer.finish("tool_calls" if cloud.calls else cloud.finish_reason):
            yield chunk
