"""The stored record of one upstream call (the current schema; ``accounting.migrations`` creates it)."""

from __future__ import annotations

from sqlmodel import Field, SQLModel

USAGE_SOURCES = ("upstream", "estimated", "none")


class UsageRecord(SQLModel, table=True):
    __tablename__ = "ecgw_usage_records"

    id: int | None = Field(default=None, primary_key=True)
    record_id: str = Field(max_length=32, unique=True)  # makes retried batches idempotent
    started_at: float = Field(index=True)  # unix seconds
    day: str = Field(max_length=10, index=True)  # UTC date, YYYY-MM-DD
    request_id: str = Field(max_length=64, index=True)
    session_id: str = Field(max_length=256, index=True)
    experiment: str | None = Field(default=None, max_length=128)
    arm: str | None = Field(default=None, max_length=128)
    policy: str = Field(max_length=64)
    purpose: str = Field(max_length=64)
    side: str = Field(max_length=8)
    provider: str = Field(max_length=64)
    model: str = Field(max_length=256)
    deployment: str | None = Field(default=None, max_length=64)  # the edge deployment or cloud target by name
    # the API key the call was made for, by its label (a named key's name, a virtual key's id, a bare key's keyed
    # hash; never a secret); None without keys, and on rows older than migration 7
    key_label: str | None = Field(default=None, max_length=64)
    streamed: bool
    status: int
    latency_s: float
    ttft_s: float | None = None
    prompt_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    raw_input_tokens: int
    output_tokens: int
    reasoning_tokens: int | None = None
    usage_source: str = Field(max_length=16)
    cost_usd: float | None = None
    price_version: str | None = Field(default=None, max_length=64)
    edge_flops: float | None = None
    flops_formula: str | None = Field(default=None, max_length=64)


class RequestMark(SQLModel, table=True):
    """One client request that has finished, written after every upstream call it caused: how many there were.
    A request is *settled* — its usage complete in the store — when this row exists and that many usage records
    carry its ``request_id`` (see ``accounting.settlement``)."""

    __tablename__ = "ecgw_request_marks"

    id: int | None = Field(default=None, primary_key=True)
    request_id: str = Field(max_length=64, unique=True)
    session_id: str = Field(max_length=256, index=True)
    upstream_calls: int
    finished_at: float


class StepRecordRow(SQLModel, table=True):
    """One client request's decision record (``accounting.calls.StepRecord``); ``signal`` is JSON."""

    __tablename__ = "ecgw_step_records"

    id: int | None = Field(default=None, primary_key=True)
    request_id: str = Field(max_length=64, unique=True)
    session_id: str = Field(max_length=256, index=True)
    started_at: float = Field(index=True)
    experiment: str | None = Field(default=None, max_length=128)
    arm: str | None = Field(default=None, max_length=128)
    policy: str = Field(max_length=64)
    route: str = Field(max_length=8)
    decision: str | None = Field(default=None, max_length=32)
    reason: str | None = Field(default=None, max_length=64)
    signal: str
    fallback: str | None = Field(default=None, max_length=32)
    status: int
    latency_s: float
    trace_id: str | None = Field(default=None, max_length=32)
    features: str | None = None  # JSON: numbers and labels (``router.learning.features``)
    label: str | None = None  # JSON: a shadow call's agreement label, when the step had one


class SessionGrade(SQLModel, table=True):
    """A session's completion grade (0..1) as a harness reported it (``PUT /v1/sessions/{id}/grade``)."""

    __tablename__ = "ecgw_session_grades"

    session_id: str = Field(max_length=256, primary_key=True)
    score: float
    source: str | None = Field(default=None, max_length=128)
    updated_at: float
