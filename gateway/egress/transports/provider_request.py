"""The provider boundary: what a cloud transport receives is a ``ProviderRequest``, never the client's body.

The door (``gateway.egress.transports.boundary``) builds one from a single allowlist: OpenAI's chat parameters below, the
protected messages, and only the extra body fields the configuration names (``cloud.extra_body_fields``), which
travel as the provider's JSON body (litellm's ``extra_body``), never as arguments of the transport. Where the call
goes, with which key and headers, through which provider, with what retries, fallbacks, timeouts, caching or
callbacks, comes from configuration alone: a transport has no way to take any of it from a request, and a new
litellm argument can never become reachable from one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

# The chat parameters a request may set, the one list of them: OpenAI's chat-completions request parameters
# (platform.openai.com/docs/api-reference/chat/create) less those in WITHHELD, and the two generation parameters
# litellm maps to every provider that the Messages surface produces (``top_k``; ``thinking``, Anthropic's
# reasoning switch, which litellm also maps to DeepSeek's). Each shapes the generation only; none names a machine,
# a credential, a provider or a policy.
CHAT_PARAMETERS: Final = frozenset({
    "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs", "max_completion_tokens",
    "max_tokens", "modalities", "n", "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key",
    "reasoning_effort", "response_format", "seed", "stop", "temperature", "tool_choice", "tools", "top_logprobs",
    "top_p", "verbosity", "web_search_options",
    "thinking", "top_k",
})

# What the gateway itself sets on every cloud call (from configuration and the step), whatever the body says.
GATEWAY_SET: Final = frozenset({"model", "messages", "stream", "stream_options"})

# OpenAI chat parameters a request may not set, and why (dropped like any unknown field, and counted).
WITHHELD: Final[Mapping[str, str]] = {
    "user": "an end user's identity stays home (the gateway reads it for the session id)",
    "safety_identifier": "an end user's identity stays home",
    "metadata": "the gateway's own session hints; litellm would hand it to its callbacks",
    "store": "whether the provider keeps the operator's conversations is the operator's choice",
    "service_tier": "the billing tier of the operator's account is the operator's choice",
    "prompt_cache_retention": "how long the provider keeps the operator's prompts is the operator's choice",
}

# Tool types of chat completions; anything else (``mcp`` with a ``server_url``: litellm would connect to it) is
# dropped from ``tools``.
TOOL_TYPES: Final = frozenset({"function", "custom"})


def _chat_tools(tools: Any) -> tuple[Any, bool]:
    """``tools`` without entries of a type chat completions does not define, and whether any were dropped."""
    if not isinstance(tools, list):
        return tools, False
    kept = [tool for tool in tools if isinstance(tool, dict) and tool.get("type", "function") in TOOL_TYPES]
    return kept, len(kept) != len(tools)


@dataclass(frozen=True)
class ProviderRequest:
    """One cloud call as a transport may see it. Its fields are checked against the allowlist on construction,
    so no code path can hand a transport a name outside it."""

    messages: list[dict[str, Any]]
    params: Mapping[str, Any] = field(default_factory=dict)  # names from CHAT_PARAMETERS
    extra_body: Mapping[str, Any] = field(default_factory=dict)  # names from cloud.extra_body_fields

    def __post_init__(self) -> None:
        stray = set(self.params) - CHAT_PARAMETERS
        if stray:
            raise ValueError(f"not OpenAI chat parameters the cloud takes: {sorted(stray)}")
        clash = set(self.extra_body) & (CHAT_PARAMETERS | GATEWAY_SET)
        if clash:
            raise ValueError(f"extra body fields may not name chat parameters: {sorted(clash)}")
        if isinstance(self.params.get("tools"), list) and _chat_tools(self.params["tools"])[1]:
            raise ValueError(f"tools may only be of the types {sorted(TOOL_TYPES)}")

    def body(self) -> dict[str, Any]:
        """The provider's JSON body as this request shapes it (the transport adds model and stream)."""
        return {"messages": self.messages, **self.params, **self.extra_body}


class ProviderTransport(Protocol):
    """A cloud provider (litellm in ``gateway.egress.transports.cloud``). It takes a ``ProviderRequest`` only; where the
    call goes and with which credentials it was given at construction, from configuration."""

    side: str
    provider: str
    model: str

    async def ready(self) -> tuple[bool, str]: ...

    async def aclose(self) -> None: ...

    async def complete(self, request: ProviderRequest) -> dict[str, Any]: ...

    def stream(self, request: ProviderRequest) -> AsyncIterator[dict[str, Any]]: ...


def check_extra_body_fields(names: Iterable[str]) -> list[str]:
    """``cloud.extra_body_fields`` as given, or a ``ValueError`` saying which name cannot be one."""
    out = list(names)
    for name in out:
        if name in CHAT_PARAMETERS or name in GATEWAY_SET:
            raise ValueError(f"cloud.extra_body_fields names {name!r}, which is not an extra field: "
                             + ("a chat parameter the cloud already takes" if name in CHAT_PARAMETERS
                                else "set by the gateway on every call"))
        if not name or not name.isascii() or not name.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"cloud.extra_body_fields names {name!r}; a field name is letters, digits, _ and -")
    return out


class RequestShape:
    """The one allowlist, for one deployment: which fields of a chat body may leave for the cloud, and how.

    ``on_drop`` hears each field name the allowlist keeps home (once per request and name)."""

    def __init__(self, extra_body_fields: Iterable[str] = (), *,
                 on_drop: Callable[[str], None] | None = None) -> None:
        self.extra_body_fields: frozenset[str] = frozenset(check_extra_body_fields(extra_body_fields))
        self._on_drop = on_drop

    def outgoing(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The part of ``body`` that may leave (a new dict, values shared): what the privacy walk, the last check
        and the audit see, and all the transport will get. Everything else is dropped here, and reported."""
        out: dict[str, Any] = {}
        for name, value in body.items():
            if name in CHAT_PARAMETERS or name in self.extra_body_fields or name == "messages":
                if name == "tools":
                    value, dropped = _chat_tools(value)
                    if dropped:
                        self._dropped("tools[].type")  # boundary.TOOL_TYPES_DROPPED
                out[name] = value
            elif name not in GATEWAY_SET:
                self._dropped(name)
        return out

    def request(self, body: Mapping[str, Any]) -> ProviderRequest:
        """The ``ProviderRequest`` for a body (normally one ``outgoing`` made, then protected)."""
        allowed = self.outgoing(body)
        messages = allowed.pop("messages", None)
        if not isinstance(messages, list):
            raise ValueError("a cloud call needs a list of messages")
        extra = {name: allowed.pop(name) for name in list(allowed) if name in self.extra_body_fields}
        return ProviderRequest(messages=messages, params=allowed, extra_body=extra)

    def _dropped(self, name: str) -> None:
        if self._on_drop is not None:
            self._on_drop(name)
