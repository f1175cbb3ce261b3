"""What the own OpenAI-compatible transport (``gateway.egress.transports.cloud_http``) changes in an allowlisted body for the
provider it calls: the part of litellm's per-provider mapping that the providers it serves need.

- OpenAI's own API answers 400 to the two generation parameters that are not OpenAI's (``top_k``, ``thinking``):
  they are left out, as litellm's ``drop_params`` leaves them out.
- DeepSeek (``deepseek/…``, as litellm's ``DeepSeekChatConfig`` with ``drop_params``): ``thinking`` goes as
  ``{"type": "enabled" | "disabled"}`` only (DeepSeek takes no budget); without it, ``reasoning_effort`` is turned
  into it (``none`` disables, any other effort enables) and is kept only beside an enabled ``thinking`` and when it
  is an effort DeepSeek knows; ``verbosity``, which DeepSeek does not take, is left out (``top_k`` goes, as
  litellm sends it).
- Any other endpoint (``openai/…`` at an ``api_base``: vLLM, a router) gets the body as it is.

What litellm's DeepSeek mapping does and this does not: it collapses a message's list of text parts into one string
(the own door sends the parts as the last check saw them), drops tools whose type is not ``function``, and adds a
blank ``reasoning_content`` to earlier assistant messages in thinking mode. A target that needs those is given
``transport: litellm``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

Body = dict[str, Any]
Dialect = Callable[[Body], Body]

NOT_OPENAI: Final = frozenset({"top_k", "thinking"})
OPENAI_HOST: Final = "api.openai.com"
NOT_DEEPSEEK: Final = frozenset({"verbosity"})
# The efforts litellm passes on to DeepSeek beside an enabled ``thinking`` (its SUPPORTED_REASONING_EFFORTS).
DEEPSEEK_EFFORTS: Final = frozenset({"minimal", "low", "medium", "high", "xhigh", "max", "ultra"})


def as_is(body: Body) -> Body:
    return body


def openai_api(body: Body) -> Body:
    return {name: value for name, value in body.items() if name not in NOT_OPENAI}


def deepseek(body: Body) -> Body:
    out = {name: value for name, value in body.items() if name not in NOT_DEEPSEEK | {"thinking", "reasoning_effort"}}
    thinking, effort = body.get("thinking"), body.get("reasoning_effort")
    if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "disabled"):
        out["thinking"] = {"type": thinking["type"]}
    elif effort is not None:
        out["thinking"] = {"type": "disabled" if effort == "none" else "enabled"}
    if out.get("thinking") == {"type": "enabled"} and effort in DEEPSEEK_EFFORTS:
        out["reasoning_effort"] = effort
    return out


def dialect(provider: str, host: str | None) -> Dialect:
    """The mapping for a call to ``host`` of a ``provider/…`` model."""
    if host == OPENAI_HOST:
        return openai_api
    if provider == "deepseek":
        return deepseek
    return as_is
