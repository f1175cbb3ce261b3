"""Configuration: ``config.yaml`` overridden by ``ECGW_*`` environment variables (``__`` nests).

Built once (``load_settings``) and passed down; nothing reads the environment after that.
"""

from __future__ import annotations

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
from accounting.settings import AccountingSettings
from gateway.upstreams.provider_request import check_extra_body_fields
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
    its tenant is stored as a keyed hash of it (``gateway.tenancy``), never as written."""

    name: str
    secret: str = field(repr=False)
    tenant: str
    named: bool = True
    shadow: bool = True  # its steps may be shadowed (``learning.shadow_rate``); ``learning.shadow: false`` opts out


class KeyLearning(_Section):
    """``learning`` on a key entry: ``shadow: false`` keeps the key's steps out of shadow calls."""

    shadow: bool = True


class ApiKeyEntry(_Section):
    """``{name, key | key_env, tenant}``: the key's own name (logs, audit, limits), the secret (inline, or the
    environment variable that holds it), and the tenant that owns its sessions, usage, grades and reports (default:
    the name). Several keys of one tenant share its history, so a key is rotated by adding the new one under the
    same tenant and removing the old."""

    name: str = Field(pattern=NAME_PATTERN)
    key: str | None = Field(None, min_length=1)
    key_env: str | None = Field(None, min_length=1)
    tenant: str | None = Field(None, pattern=NAME_PATTERN)
    learning: KeyLearning = Field(default_factory=KeyLearning)
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
    host: str = "127.0.0.1"
    port: int = Field(4000, ge=1, le=65535)
    api_keys: list[KeyEntry] = Field(default_factory=list)
    session_keys: dict[str, str] = Field(default_factory=dict)
    admin_keys: list[KeyEntry] = Field(default_factory=list)  # may also read every tenant's reports
    max_body_bytes: int = Field(32 * 1024 * 1024, gt=0)
    max_json_depth: int = Field(64, ge=8, le=512)  # deeper request bodies get HTTP 400 (gateway.body)
    behind_tls_proxy: bool = False  # a proxy in front ends TLS: the dashboard's cookie is marked Secure
    workers: int | None = Field(None, ge=1)  # None: one per core, at most DEFAULT_MAX_WORKERS
    log_format: Literal["text", "json"] = "text"

    @property
    def worker_count(self) -> int:
        return self.workers or min(os.cpu_count() or 1, DEFAULT_MAX_WORKERS)

    def keys(self) -> list[ApiKey]:
        """``api_keys``, parsed (secrets from their environment variables, read when the settings were loaded)."""
        return [parse_key(e) for e in self.api_keys]

    def admins(self) -> list[ApiKey]:
        return [parse_key(e) for e in self.admin_keys]

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

    send_max_tokens: bool = False
    string_content: bool = False
    null_content_as_empty: bool = False
    stream_usage: bool = True
    stream_tools: bool = True
    dedupe_tool_call_names: bool = False
    cache_salt: bool = True  # send vLLM's per-tenant ``cache_salt`` (prefix-cache sharing within a tenant only)


class EdgeDeployment(_Section):
    """One member of the edge pool (``edge.deployments``)."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    base_url: str
    model: str
    weight: float = Field(1.0, gt=0)
    # Per worker: each worker of each replica counts its own calls (docs/fleet.md), so a deployment behind R
    # replicas of W workers may see R × W × max_in_flight at once. Past it a session spills to the least-loaded one.
    max_in_flight: int | None = Field(None, ge=1)
    compat: CompatSettings = Field(default_factory=CompatSettings)
    api_key_env: str | None = None


class EdgeSettings(_Section):
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "edge"
    api_key_env: str | None = None
    connect_timeout_s: float = Field(5.0, gt=0)
    read_timeout_s: float = Field(600.0, gt=0)
    max_connections: int = Field(256, gt=0)
    compat: CompatSettings = Field(default_factory=CompatSettings)
    # `ecgw serve` may start and supervise a local vLLM as the edge (gateway/launch): auto = only when nothing
    # answers at base_url; launch_model: a local model directory (None = the embedded SmolLM2-135M-Instruct).
    launch: Literal["auto", "always", "never"] = "auto"
    launch_model: str | None = None
    launch_args: list[str] = Field(default_factory=list)
    # A pool of several servers (gateway.upstreams.edge_pool); empty: base_url/model above are the one deployment,
    # named "default". A pool never launches.
    deployments: list[EdgeDeployment] = Field(default_factory=list)
    balance: Literal["affinity", "round-robin"] = "affinity"  # round-robin: no session affinity (a baseline)
    health_interval_s: float = Field(10.0, gt=0)  # seconds between background probes of every deployment
    eject_after: int = Field(3, ge=1)  # consecutive failures (calls or probes) that eject a deployment
    readmit_after_s: float = Field(30.0, gt=0)  # an ejected deployment is probed again after this; answering readmits

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


CloudTransport = Literal["litellm", "openai"]

# Where the own transport sends a provider's calls when no api_base is configured: the providers whose own API is
# OpenAI's chat-completions wire, by the model's provider prefix (``deepseek/deepseek-chat``).
OPENAI_WIRE_BASES: Mapping[str, str] = {"openai": "https://api.openai.com/v1", "deepseek": "https://api.deepseek.com"}


def cloud_provider(model: str) -> tuple[str, str]:
    """A cloud model's provider prefix and the model's name at that provider, as litellm splits them
    (``openai/gpt-4o`` → ``openai``, ``gpt-4o``; no prefix: OpenAI)."""
    provider, _, name = model.partition("/")
    return (provider, name) if name else ("openai", model)


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

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    timeout_s: float = Field(600.0, gt=0)
    first_token_timeout_s: float | None = Field(None, gt=0)  # a stream with no token by then falls back
    max_retries: int = Field(0, ge=0)
    extra_body_fields: list[str] = Field(default_factory=list)  # as cloud.extra_body_fields, for this target
    transport: CloudTransport = "litellm"  # as cloud.transport, for this target

    @model_validator(mode="after")
    def _transport_has_an_address(self) -> CloudTarget:
        check_transport(self.transport, self.model, self.api_base)
        return self

    @field_validator("extra_body_fields")
    @classmethod
    def _extra_fields(cls, names: list[str]) -> list[str]:
        return check_extra_body_fields(names)


class CloudSettings(_Section):
    model: str = "deepseek/deepseek-chat"
    api_base: str | None = None
    api_key_env: str | None = "DEEPSEEK_API_KEY"
    timeout_s: float = Field(600.0, gt=0)
    first_token_timeout_s: float | None = Field(None, gt=0)
    max_retries: int = Field(0, ge=0)
    # Provider-specific body fields a request may send (DeepSeek's ``thinking``, a vendor's extras): they go as
    # JSON fields of the provider's body (litellm's ``extra_body``), through the privacy walk and the last check,
    # never as litellm arguments. A request's other non-OpenAI fields are dropped (ecgw_cloud_dropped_fields).
    extra_body_fields: list[str] = Field(default_factory=list)
    # Which code makes the call: "litellm" (any provider litellm speaks; the default) or "openai", the gateway's own
    # OpenAI-compatible transport (gateway.upstreams.cloud_http) for a target that speaks OpenAI's chat-completions
    # wire: ~0.1 ms of CPU a call against litellm's ~4 ms (JSON) and ~10 ms (stream), measured by
    # benchmarks.transport. It sends the allowlisted body as it is, with none of litellm's per-provider mappings.
    transport: CloudTransport = "litellm"
    # Several named models (gateway.fleet.cloud_targets); empty: the fields above are the one target, "default".
    targets: dict[str, CloudTarget] = Field(default_factory=dict)
    default_target: str | None = None  # null: the first of ``targets``
    fallbacks: dict[str, list[str]] = Field(default_factory=dict)  # target -> the targets tried after it, in order
    model_aliases: dict[str, str] = Field(default_factory=dict)  # a client's model name -> a target (cloud-only)
    cool_after: int = Field(2, ge=1)  # consecutive failures after which a target is skipped for cooldown_s
    cooldown_s: float = Field(30.0, gt=0)

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
                                       transport=self.transport)}

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
                             transport=target.transport)


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
    default: str = "edge-only"
    knobs: dict[str, dict[str, Any]] = Field(default_factory=dict)


class SessionSettings(_Section):
    store: Literal["auto", "memory", "sqlite", "redis"] = "auto"
    sqlite_path: str = "ecgw-sessions.sqlite3"
    ttl_s: float = Field(7 * 86400, gt=0)
    fingerprint_fallback: bool = True
    redis_url: str | None = None  # store: redis (auto picks redis when this is set)
    redis_pool_size: int = Field(32, ge=1)  # connections per worker
    redis_timeout_s: float = Field(5.0, gt=0)  # connect/read timeout; past it a step answers 503

    @model_validator(mode="after")
    def _redis_needs_url(self) -> SessionSettings:
        if self.store == "redis" and not self.redis_url:
            raise ValueError("sessions.store is 'redis' but sessions.redis_url is not set; set it to "
                             "redis://host:6379/0 (or ECGW_SESSIONS__REDIS_URL)")
        return self


class SecretsSettings(_Section):
    """Where the gateway's secret key lives: it encrypts session state at rest and keys every hash (audit values,
    API-key owners, session ids from ``user``/``metadata``). Never inside a database."""

    key_env: str | None = None  # name of an environment variable holding the key (64 hex digits or base64)
    key_file: str | None = None  # null: ecgw.key beside the SQLite session store or database, created 0600


class LearningSettings(_Section):
    """Learning the router from the gateway's own traffic (``gateway.shadow``, ``router.learning``)."""

    # The share of edge-answered steps the cloud is also asked (purpose ``shadow``), to label them: the operator's
    # cost (``limits.shadow``), never the tenant's, never shown to the client.
    shadow_rate: float = Field(0.0, ge=0, le=1)
    max_concurrent: int = Field(4, ge=1)  # shadow calls in flight per worker; past it a step is not shadowed
    shutdown_grace_s: float = Field(10.0, ge=0)  # at shutdown, how long shadow calls in flight may finish
    seed: int | None = None  # the sampling coin's seed (tests, benchmarks); None: random


class ObservabilitySettings(_Section):
    otlp_endpoint: str | None = None  # e.g. http://127.0.0.1:4318 (OTLP/HTTP); None: no traces
    service_name: str = "ecgw"
    trace_header: str = "x-ecgw-trace-id"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ECGW_", env_nested_delimiter="__", extra="forbid")

    server: ServerSettings = Field(default_factory=ServerSettings)
    edge: EdgeSettings = Field(default_factory=EdgeSettings)
    cloud: CloudSettings = Field(default_factory=CloudSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    sessions: SessionSettings = Field(default_factory=SessionSettings)
    privacy: PrivacySettings = Field(default_factory=PrivacySettings)
    accounting: AccountingSettings = Field(default_factory=AccountingSettings)
    experiments: ExperimentsSettings = Field(default_factory=ExperimentsSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    observability: ObservabilitySettings = Field(default_factory=ObservabilitySettings)
    learning: LearningSettings = Field(default_factory=LearningSettings)
    database_url: str = "sqlite:///ecgw.sqlite3"
    secrets: SecretsSettings = Field(default_factory=SecretsSettings)

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


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """``path`` (YAML), then ``ECGW_*`` environment variables over it, then ``overrides`` (the command line's
    ``--port`` and the like) over both."""
    data: dict[str, Any] = {}
    if path is not None:
        file = Path(path)
        try:
            loaded = yaml.safe_load(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {file} does not exist") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {file} is not valid YAML: {exc}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {file}: expected a mapping of sections at the top level")
        data = loaded
    try:
        environment = EnvSettingsSource(Settings)()
        return Settings(**_merge(_merge(data, environment), overrides))
    except ValidationError as exc:
        where = f"config file {path}" if path is not None else "configuration"
        errors = exc.errors()
        lines = "\n  ".join(_describe(e) for e in errors)
        raise ConfigError(f"{where} is invalid:\n  {lines}", param=error_path(errors[0])) from None
