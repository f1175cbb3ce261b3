"""The ``accounting:`` section of config.yaml."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PriceTier(_Section):
    """Prices that apply when a call's prompt is larger than ``above_prompt_tokens``."""

    above_prompt_tokens: int = Field(gt=0)
    input: float = Field(ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    output: float = Field(ge=0)


class ModelPrice(_Section):
    """USD per 1M tokens. ``cache_read``/``cache_write`` default to ``input`` when the provider has no cache price."""

    input: float = Field(ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    output: float = Field(ge=0)
    tiers: list[PriceTier] = Field(default_factory=list)


class EdgeModel(_Section):
    """What edge FLOPs need to know about a local model."""

    params: float = Field(gt=0)  # active parameters (MoE: active, not total)
    layers: int | None = Field(default=None, gt=0)
    hidden_size: int | None = Field(default=None, gt=0)
    attention_heads: int | None = Field(default=None, gt=0)
    kv_heads: int | None = Field(default=None, gt=0)  # recorded for completeness; GQA changes memory, not attention FLOPs
    head_dim: int | None = Field(default=None, gt=0)

    @property
    def d_attn(self) -> int | None:
        if self.attention_heads and self.head_dim:
            return self.attention_heads * self.head_dim
        return self.hidden_size


class WriterSettings(_Section):
    batch_size: int = Field(default=500, gt=0)
    flush_interval_s: float = Field(default=0.5, gt=0)
    max_buffered: int = Field(default=200_000, gt=0)
    max_open_requests: int = Field(default=100_000, gt=0)
    retry_initial_s: float = Field(default=0.5, gt=0)
    retry_max_s: float = Field(default=5.0, gt=0)
    shutdown_timeout_s: float = Field(default=30.0, ge=0)


class AccountingSettings(_Section):
    enabled: bool = True  # false records nothing
    price_version: str | None = None  # None: a hash of the price table
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    litellm_fallback: bool = True
    edge_models: dict[str, EdgeModel] = Field(default_factory=dict)
    flops_formula: Literal["cache-credit", "no-cache-credit"] = "cache-credit"
    flops_attention: bool = False
    writer: WriterSettings = WriterSettings()
    spill_path: str | None = "ecgw-usage-spill.jsonl"  # where records go if the database is down at shutdown

    @model_validator(mode="after")
    def _attention_needs_shape(self) -> AccountingSettings:
        if self.flops_attention:
            missing = [name for name, m in self.edge_models.items() if not (m.layers and m.d_attn)]
            if missing:
                raise ValueError(f"flops_attention needs layers and hidden_size (or attention_heads and head_dim) "
                                 f"for every edge model; missing for {', '.join(missing)}")
        return self
