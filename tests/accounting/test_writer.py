"""The batching writer: off the request path, flushed on close, buffered and retried through outages."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from accounting.factory import build_record_builder
from accounting.metrics import MeteringMetrics
from accounting.settings import AccountingSettings, ModelPrice, WriterSettings
from accounting.store import UsageStore
from accounting.writer import StoreMeter
from tests.accounting.rows import call

FAST = WriterSettings(batch_size=50, flush_interval_s=0.05, retry_initial_s=0.05, retry_max_s=0.2,
                      shutdown_timeout_s=0.5)


def meter_for(database_url: str, settings: WriterSettings = FAST, spill: Path | None = None) -> StoreMeter:
    accounting = AccountingSettings(prices={"gpt-test": ModelPrice(input=1, output=2)}, litellm_fallback=False)
    return StoreMeter(UsageStore.from_url(database_url), build_record_builder(accounting), MeteringMetrics(),
                      settings, spill_path=spill)


def _count(database_url: str) -> int:
    store = UsageStore.from_url(database_url)
    try:
        return store.count()
    finally:
        store.dispose()


def _metric(meter: StoreMeter, name: str) -> float:
    value = meter.metrics.registry.get_sample_value(name)
    return 0.0 if value is None else value


async def _until(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.02)


async def test_record_only_enqueues_and_close_flushes_everything(database_url: str) -> None:
    meter = meter_for(database_url, WriterSettings(flush_interval_s=60, batch_size=100_000))
    await meter.start()
    for n in range(1_000):
        meter.record(call(n))
    assert meter.buffered == 1_000 and meter.written == 0  # nothing happened on the "request path"
    await meter.aclose()
    assert _count(database_url) == 1_000
    assert _metric(meter, "ecgw_metering_written_records_total") == 1_000
    assert _metric(meter, "ecgw_metering_buffered_records") == 0


async def test_the_writer_writes_in_the_background(database_url: str) -> None:
    meter = meter_for(database_url)
    await meter.start()
    for n in range(120):
        meter.record(call(n))
    await _until(lambda: meter.written == 120)
    assert _count(database_url) == 120
    await meter.aclose()


def _break(database_url: str) -> None:
    store = UsageStore.from_url(database_url)
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE ecgw_usage_records RENAME TO ecgw_usage_records_away"))
    store.dispose()


def _mend(database_url: str) -> None:
    store = UsageStore.from_url(database_url)
    with store.engine.begin() as conn:
        conn.execute(text("ALTER TABLE ecgw_usage_records_away RENAME TO ecgw_usage_records"))
    store.dispose()


async def test_a_database_outage_is_buffered_and_retried(database_url: str) -> None:
    meter = meter_for(database_url)
    await meter.start()
    _break(database_url)
    for n in range(30):
        meter.record(call(n))
    await _until(lambda: _metric(meter, "ecgw_metering_write_errors_total") >= 2)
    assert meter.buffered == 30
    assert _metric(meter, "ecgw_metering_buffered_records") == 30
    _mend(database_url)
    await _until(lambda: meter.written == 30)
    await meter.aclose()
    assert _count(database_url) == 30


async def test_the_buffer_is_bounded_and_drops_are_counted(database_url: str) -> None:
    meter = meter_for(database_url, FAST.model_copy(update={"max_buffered": 5}))
    await meter.start()
    _break(database_url)
    for n in range(8):
        meter.record(call(n))
    assert meter.dropped == 3
    assert _metric(meter, "ecgw_metering_dropped_records_total") == 3
    _mend(database_url)
    await meter.aclose()
    assert _count(database_url) == 5


async def test_shutdown_during_an_outage_spills_and_the_next_start_writes_them(database_url: str,
                                                                               tmp_path: Path) -> None:
    spill = tmp_path / "spill.jsonl"
    meter = meter_for(database_url, spill=spill)
    await meter.start()
    _break(database_url)
    for n in range(12):
        meter.record(call(n))
    await meter.aclose()
    assert len(spill.read_text().splitlines()) == 12
    _mend(database_url)
    again = meter_for(database_url, spill=spill)
    await again.start()
    await again.aclose()
    assert _count(database_url) == 12 and not spill.exists()


@pytest.mark.postgres
async def test_postgres_refusing_connections_is_survived(postgres_url: str) -> None:
    name = make_url(postgres_url).database
    admin = make_url(postgres_url).set(drivername="postgresql", database="postgres").render_as_string(False)
    meter = meter_for(postgres_url)
    await meter.start()
    meter.record(call(0))
    await _until(lambda: meter.written == 1)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
    try:
        for n in range(1, 21):
            meter.record(call(n))
        await _until(lambda: _metric(meter, "ecgw_metering_write_errors_total") >= 1)
        assert meter.buffered == 20
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    await _until(lambda: meter.written == 21)
    await meter.aclose()
    assert _count(postgres_url) == 21
