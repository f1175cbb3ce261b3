"""The cloud: any provider litellm speaks. It takes a ``ProviderRequest`` only (``gateway.egress.transports.
provider_request``); where the call goes, with which key, timeout and retries, comes from ``cloud.*`` settings.

A provider's redirect is never followed (as the own transport and the edge do not): litellm's HTTP clients follow
one, re-posting the protected body and the key to wherever ``Location`` points, so every call carries this door's
own client (litellm's ``client``: an ``AsyncOpenAI`` for the providers litellm calls through the OpenAI SDK, its own
``AsyncHTTPHandler`` for the others), whose response hook refuses a 3xx before anything follows it; the call fails
as a 502 naming the status. A client of the wrong kind fails every call loudly, never silently."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any, Final, Protocol

from accounting.errors import EcgwError
from gateway.config.settings import OPENAI_WIRE_BASES, CloudSettings, ConfigError, cloud_provider
from gateway.egress.transports.cloud_key import CloudKey
from gateway.egress.transports.provider_request import ProviderRequest
from gateway.egress.transports.stream_end import StreamEnd
from router.errors import UpstreamError

# Names litellm reads out of ``extra_body`` itself instead of sending them (a credential), beside its arguments.
_READ_FROM_EXTRA_BODY: Final = frozenset({"azure_ad_token"})
# The gateway prices calls itself (accounting.prices) and never reads litellm's cost: a custom price of zero keeps
# litellm's cost calculator from looking the model up in its price map on every call and on every stream's
# assembled response (~1-1.5 ms of CPU per streamed call on the benchmark stub). litellm keeps these arguments.
_NO_LITELLM_PRICING: Final = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
_CHUNK_NOISE = ("provider_specific_fields", "citations", "moderation", "obfuscation", "service_tier")
# The providers of ``litellm.openai_compatible_providers`` that the installed litellm calls through its own HTTP
# handler instead of the OpenAI SDK (tests/gateway/egress/transports/test_litellm_redirects.py checks both kinds).
_OWN_HANDLER: Final = frozenset({"azure_ai", "cometapi", "deepseek", "edenai", "fireworks_ai", "hosted_vllm",
                                 "opencode_go", "together_ai", "xai"})
_REDIRECT_SAID = "the provider answered HTTP "


class RedirectRefused(EcgwError):
    """A provider answered a redirect; the request was not sent on."""

    def __init__(self, status: int) -> None:
        super().__init__(f"{_REDIRECT_SAID}{status} (a redirect), which the gateway does not follow: the request and "
                         "its key stay with the configured address; check cloud.api_base")
        self.status = status


class _Answer(Protocol):
    """An HTTP answer as httpx (litellm's handler) and the OpenAI SDK's httpx both give it to a response hook."""

    @property
    def is_redirect(self) -> bool: ...

    @property
    def status_code(self) -> int: ...


async def _refuse_redirects(response: _Answer) -> None:
    """httpx runs a client's response hooks on every answer before it follows a redirect."""
    if response.is_redirect:
        raise RedirectRefused(response.status_code)


def _clean(value: Any) -> Any:
    """litellm's objects as OpenAI's wire shape: no ``None``-valued extras, no provider-specific noise."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None and k not in _CHUNK_NOISE}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _openai_shape(obj: Any) -> dict[str, Any]:
    data: dict[str, Any] = _clean(obj.model_dump())
    for choice in data.get("choices") or ():
        choice.setdefault("finish_reason", None)
        choice.setdefault("logprobs", None)
        message = choice.get("message")
        if message is not None:
            message.setdefault("content", None)
    usage = data.get("usage")
    if isinstance(usage, dict):
        usage.pop("cost", None)
    return data


class LiteLLMUpstream:
    side = "cloud"

    def __init__(self, settings: CloudSettings) -> None:
        import litellm  # paid once, at start-up (create_app), never on the edge path

        litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners in the gateway's output
        self._litellm = litellm
        from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper

        # litellm's OpenAI path cannot tell ``data: [DONE]`` from a body that ended (the SDK stops at either) and
        # calls a stream without a finish_reason broken: this is the message it raises then, taken from litellm.
        self._ended_unfinished = str(CustomStreamWrapper._stream_eof_error())
        self.model = settings.model
        self.provider = cloud_provider(settings.model)[0]
        self._settings = settings
        self._key = CloudKey(settings)
        self._client: Any = None  # made on the first call, in the serving loop
        from litellm.constants import openai_compatible_providers

        self._openai_sdk = self.provider == "openai" or (self.provider in openai_compatible_providers
                                                         and self.provider not in _OWN_HANDLER)
        taken = sorted(set(settings.extra_body_fields) & litellm_arguments(litellm))
        if taken:
            raise ConfigError(f"cloud.extra_body_fields names {taken}, which litellm would read as its own "
                              "arguments instead of sending them to the provider (transport litellm); remove them",
                              param="cloud.extra_body_fields")

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def _own_client(self) -> Any:
        """litellm's ``client`` for this provider, over an HTTP client that refuses redirects."""
        if self._client is None:
            hooks: dict[str, list[Callable[..., object]]] = {"response": [_refuse_redirects]}
            if self._openai_sdk:
                import openai

                _, _, key, base = self._litellm.get_llm_provider(self.model, api_base=self._settings.api_base)
                self._client = openai.AsyncOpenAI(
                    api_key=self._key.value or key or "none", base_url=base or OPENAI_WIRE_BASES["openai"],
                    max_retries=0, timeout=self._settings.timeout_s,
                    http_client=openai.DefaultAsyncHttpxClient(event_hooks=hooks, follow_redirects=False))
            else:
                from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

                self._client = AsyncHTTPHandler(timeout=self._settings.timeout_s, event_hooks=hooks,
                                                follow_redirects=False)
        return self._client

    async def ready(self) -> tuple[bool, str]:
        return self._key.ready()

    def _kwargs(self, request: ProviderRequest, *, stream: bool) -> dict[str, Any]:
        """litellm's arguments: the request's chat parameters, its extra fields as the provider's JSON body,
        and everything else from configuration."""
        kwargs: dict[str, Any] = dict(request.params)
        kwargs.update(model=self.model, messages=request.messages, stream=stream, drop_params=True,
                      timeout=self._settings.timeout_s, num_retries=self._settings.max_retries,
                      client=self._own_client(), **_NO_LITELLM_PRICING)
        if request.extra_body:
            kwargs["extra_body"] = dict(request.extra_body)
        if self._settings.api_base:
            kwargs["api_base"] = self._settings.api_base
        if self._key.value:
            kwargs["api_key"] = self._key.value
        elif self._settings.api_base:
            kwargs["api_key"] = "none"
        if stream:
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    def _fault(self, exc: Exception) -> UpstreamError:
        exceptions = self._litellm.exceptions
        where = self._settings.api_base or self.provider
        message = getattr(exc, "message", None) or str(exc)
        said = message.find(_REDIRECT_SAID)
        if said >= 0:  # RedirectRefused, as litellm re-raised it
            return UpstreamError(502, f"The cloud upstream {self.model} at {where}: {message[said:]}",
                                 upstream="cloud", type_="upstream_redirect")
        if isinstance(exc, exceptions.Timeout):
            return UpstreamError(504, f"The cloud upstream {self.model} at {where} timed out; raise "
                                      "cloud.timeout_s or try again.", upstream="cloud", type_="upstream_timeout")
        if isinstance(exc, exceptions.APIConnectionError) and getattr(exc, "status_code", 500) >= 500:
            return UpstreamError(502, f"The cloud upstream {self.model} at {where} is unreachable or failed: "
                                      f"{message}", upstream="cloud", type_="upstream_unreachable")
        status = getattr(exc, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            return UpstreamError(status, f"The cloud upstream {self.model} answered HTTP {status}: {message}",
                                 upstream="cloud")
        return UpstreamError(502, f"The cloud upstream {self.model} failed: {message}", upstream="cloud")

    async def complete(self, request: ProviderRequest) -> dict[str, Any]:
        self._key.check()
        try:
            response = await self._litellm.acompletion(**self._kwargs(request, stream=False))
        except Exception as exc:  # litellm raises its own hierarchy; map every one to an upstream error
            raise self._fault(exc) from None
        return _openai_shape(response)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[dict[str, Any]]:
        self._key.check()
        end = StreamEnd()
        try:
            stream = await self._litellm.acompletion(**self._kwargs(request, stream=True))
            try:
                async for chunk in stream:
                    seen = end.see(_openai_shape(chunk))
                    if seen is not None:
                        yield seen
            except self._litellm.exceptions.MidStreamFallbackError as exc:
                if self._ended_unfinished not in str(exc):
                    raise
                # The body ended without an error, only without a finish_reason (a sloppy dialect): the answer is
                # complete. litellm held the usage back for its closing chunk; it is in the chunks it kept.
                usage = next((c.usage for c in reversed(stream.chunks) if getattr(c, "usage", None)), None)
                if usage is not None:
                    end.see({"choices": [], "usage": _clean(usage.model_dump())})
        except Exception as exc:
            raise self._fault(exc) from None
        for chunk in end.close():
            yield chunk


def litellm_arguments(litellm: Any) -> frozenset[str]:
    """Every name the installed litellm takes as an argument of a chat call, or reads out of ``extra_body``."""
    from litellm.types.utils import all_litellm_params

    names = set(all_litellm_params) | _READ_FROM_EXTRA_BODY
    for function in (litellm.acompletion, litellm.completion):
        names |= set(inspect.signature(function).parameters)
    return frozenset(names)
