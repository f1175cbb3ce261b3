"""The ``accounting:`` section of config.yaml."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from accounting.reloading import DOORS, reloads


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PriceTier(_Section):
    """Prices that apply when a call's prompt is larger than ``above_prompt_tokens``."""

    above_prompt_tokens: int = Field(gt=0, description=(
        "the tier applies to calls whose prompt has more tokens than this"))
    input: float = Field(ge=0, description="USD per 1M uncached prompt tokens in this tier")
    cache_read: float | None = Field(default=None, ge=0, description=(
        "USD per 1M prefix-cache hits in this tier; null = input"))
    cache_write: float | None = Field(default=None, ge=0, description=(
        "USD per 1M tokens written to the cache in this tier; null = input"))
    output: float = Field(ge=0, description="USD per 1M completion tokens in this tier")


class ModelPrice(_Section):
    """USD per 1M tokens. ``cache_read``/``cache_write`` default to ``input`` when the provider has no cache price."""

    input: float = Field(ge=0, description="USD per 1M uncached prompt tokens")
    cache_read: float | None = Field(default=None, ge=0, description="USD per 1M prefix-cache hits; null = input")
    cache_write: float | None = Field(default=None, ge=0, description=(
        "USD per 1M tokens written to the cache; null = input"))
    output: float = Field(ge=0, description="USD per 1M completion tokens, reasoning included")
    tiers: list[PriceTier] = Field(default_factory=list, description=(
        "prices for calls whose prompt is larger than above_prompt_tokens"))


class EdgeModel(_Section):
    """What edge FLOPs need to know about a local model."""

    params: float = Field(gt=0, description="active parameters (MoE: active, not total)")
    layers: int | None = Field(default=None, gt=0, description="transformer layers (flops_attention)")
    hidden_size: int | None = Field(default=None, gt=0, description=(
        "hidden size (flops_attention, when heads × head_dim is not given)"))
    attention_heads: int | None = Field(default=None, gt=0, description=(
        "attention heads (flops_attention, with head_dim)"))
    kv_heads: int | None = Field(default=None, gt=0, description=(
        "recorded for completeness; GQA changes memory, not attention FLOPs"))
    head_dim: int | None = Field(default=None, gt=0, description="the dimension of one attention head")

    @property
    def d_attn(self) -> int | None:
        if self.attention_heads and self.head_dim:
            return self.attention_heads * self.head_dim
        return self.hidden_size


class WriterSettings(_Section):
    batch_size: int = Field(default=500, gt=0, description="records per INSERT")
    flush_interval_s: float = Field(default=0.5, gt=0, description="longest a record waits before it is written")
    max_buffered: int = Field(default=200_000, gt=0, description=(
        "records held while the database is down; beyond this they are dropped and counted (/metrics)"))
    max_open_requests: int = Field(default=100_000, gt=0, description=(
        "requests whose upstream calls are counted until they settle; past this the oldest is forgotten (it then "
        "never shows as settled)"))
    retry_initial_s: float = Field(default=0.5, gt=0, description=(
        "first retry delay after a failed write; doubles each time"))
    retry_max_s: float = Field(default=5.0, gt=0, description=(
        "longest retry delay: metering resumes at most this long after the database is back"))
    shutdown_timeout_s: float = Field(default=30.0, ge=0, description=(
        "how long shutdown keeps retrying before spilling to spill_path"))


class AccountingSettings(_Section):
    enabled: bool = Field(True, description="false records nothing (and /v1/usage answers 503)")
    price_version: str | None = Field(None, json_schema_extra=reloads(DOORS), description=(
        "stored with every priced record; null = a hash of the table below"))
    prices: dict[str, ModelPrice] = Field(default_factory=dict, json_schema_extra=reloads(DOORS), description=(
        "USD per 1M tokens, per model (matched case-insensitively, with or without the litellm provider prefix)"))
    litellm_fallback: bool = Field(True, json_schema_extra=reloads(DOORS), description=(
        "models not listed above are priced from litellm's bundled cost map; unknown models get cost null and one "
        "warning"))
    edge_models: dict[str, EdgeModel] = Field(default_factory=dict, description=(
        "the edge models' size, keyed by edge.model, for edge FLOPs; unknown models get edge_flops null and one "
        "warning"))
    flops_formula: Literal["cache-credit", "no-cache-credit"] = Field("cache-credit", description=(
        "cache-credit: 2·N·(raw_input+output), prefix-cache hits free · no-cache-credit: 2·N·(prompt+output)"))
    flops_attention: bool = Field(False, description=(
        "add 2·layers·context·d_attn per computed token (needs the model's shape above)"))
    writer: WriterSettings = Field(WriterSettings(), description=(
        "the background writer that keeps metering off the request path"))
    spill_path: str | None = Field("ecgw-usage-spill.jsonl", description=(
        "records that could not be written at shutdown (database down) go here; written at the next start"))

    @model_validator(mode="after")
    def _attention_needs_shape(self) -> AccountingSettings:
        if self.flops_attention:
            missing = [name for name, m in self.edge_models.items() if not (m.layers and m.d_attn)]
            if missing:
                raise ValueError(f"flops_attention needs layers and hidden_size (or attention_heads and head_dim) "
                                 f"for every edge model; missing for {', '.join(missing)}")
        return self
