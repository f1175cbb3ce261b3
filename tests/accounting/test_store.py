"""The store on SQLite and on a real PostgreSQL: migrations, idempotent batches, aggregation."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from accounting.database import StoreUnavailable, make_engine, safe_url
from accounting.migrations import MIGRATIONS, Migration, current_version, migrate
from accounting.reports import usage_report
from accounting.store import UsageStore
from tests.accounting.rows import row

ALL = [m.version for m in MIGRATIONS]  # every migration this ecgw knows, in order
NEXT = ALL[-1] + 1  # a migration a future ecgw would add


def test_migrations_create_the_schema_once(database_url: str) -> None:
    store = UsageStore.from_url(database_url)
    assert store.open() == ALL
    assert store.open() == []
    assert current_version(store.engine) == len(MIGRATIONS)
    store.insert([row()])
    assert store.count() == 1
    store.dispose()


def test_a_new_migration_is_applied_once_on_an_existing_database(database_url: str) -> None:
    store = UsageStore.from_url(database_url)
    store.open()
    store.insert([row()])
    added = Migration(NEXT, "an index on model",
                      lambda conn: conn.execute(text("CREATE INDEX ix_test_model ON ecgw_usage_records (model)")))
    assert migrate(store.engine, (*MIGRATIONS, added)) == [NEXT]
    assert migrate(store.engine, (*MIGRATIONS, added)) == []
    assert store.count() == 1  # data kept
    with pytest.raises(StoreUnavailable, match="newer than this ecgw"):
        store.open()  # the code knows only up to NEXT - 1 now
    store.dispose()


def test_a_failing_migration_leaves_no_trace(database_url: str) -> None:
    store = UsageStore.from_url(database_url)
    store.open()

    def broken(conn: object) -> None:
        conn.execute(text("CREATE TABLE ecgw_half_done (x INTEGER)"))  # type: ignore[attr-defined]
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        migrate(store.engine, (*MIGRATIONS, Migration(NEXT, "broken", broken)))
    assert current_version(store.engine) == NEXT - 1
    store.dispose()


def test_retried_batches_are_not_double_counted(database_url: str) -> None:
    store = UsageStore.from_url(database_url)
    store.open()
    batch = [row(request_id=f"req-{i}") for i in range(3)]
    store.insert(batch)
    store.insert(batch + [row(request_id="req-9")])
    assert store.count() == 4
    store.dispose()


def test_report_figures(database_url: str) -> None:
    store = UsageStore.from_url(database_url)
    store.open()
    store.insert([
        # request 1: an edge probe and a cloud step
        row(request_id="r1", side="edge", model="qwen", provider="vllm", purpose="probe", prompt_tokens=2000,
            cache_read_tokens=1000, raw_input_tokens=1000, output_tokens=10, cost_usd=None, price_version=None,
            edge_flops=3e15, flops_formula="2*N*(raw_input+output)"),
        row(request_id="r1", prompt_tokens=1000, cache_read_tokens=600, cache_write_tokens=100,
            raw_input_tokens=300, output_tokens=50, cost_usd=0.25),
        # request 2: edge only, estimated
        row(request_id="r2", side="edge", model="qwen", provider="vllm", prompt_tokens=500, cache_read_tokens=0,
            raw_input_tokens=500, output_tokens=40, cost_usd=None, price_version=None, usage_source="estimated",
            edge_flops=1e15, flops_formula="2*N*(raw_input+output)"),
        # another policy
        row(request_id="r3", policy="edge-only", side="edge", model="qwen", cost_usd=None, edge_flops=None),
    ])
    rows = {r["group"]: r for r in usage_report(store, "policy")}
    cloud_only = rows["cloud-only"]
    assert cloud_only["requests"] == 2 and cloud_only["cloud_calls"] == 1 and cloud_only["edge_calls"] == 2
    assert (cloud_only["cloud_raw_input_tokens"], cloud_only["cloud_cache_read_tokens"],
            cloud_only["cloud_cache_write_tokens"], cloud_only["cloud_output_tokens"]) == (300, 600, 100, 50)
    assert cloud_only["cloud_cost_usd"] == pytest.approx(0.25)
    assert (cloud_only["edge_prompt_tokens"], cloud_only["edge_output_tokens"]) == (2500, 50)
    assert cloud_only["edge_pflops"] == pytest.approx(4.0)
    assert cloud_only["cloud_call_rate"] == pytest.approx(0.5)
    assert cloud_only["cache_hit_rate"] == pytest.approx(0.6)
    assert cloud_only["estimated_share"] == pytest.approx(1 / 3)
    assert cloud_only["flops_formula"] == "2*N*(raw_input+output)"
    assert rows["edge-only"]["requests"] == 1
    assert [r["group"] for r in usage_report(store, "purpose")] == ["probe", "step"]
    assert usage_report(store, "day")[0]["group"] == "2026-05-28"
    assert usage_report(store, "policy", since=1_780_000_001.0) == []
    store.dispose()


def test_sqlite_uses_wal(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'w.sqlite3'}")
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    engine.dispose()


def test_unreachable_postgres_names_the_url_without_its_password() -> None:
    url = "postgresql://metering:s3cret-pw@127.0.0.1:1/usage"
    store = UsageStore.from_url(url)
    with pytest.raises(StoreUnavailable) as raised:
        store.open()
    message = str(raised.value)
    assert "s3cret-pw" not in message
    assert "postgresql://metering:***@127.0.0.1:1/usage" in message
    assert safe_url(url) == "postgresql://metering:***@127.0.0.1:1/usage"


def test_unsupported_or_invalid_urls_are_explained() -> None:
    with pytest.raises(StoreUnavailable, match="not a database URL"):
        make_engine("nonsense")
    with pytest.raises(StoreUnavailable, match="unsupported database"):
        make_engine("mysql://u:p@h/db")


def test_a_failing_migration_rolls_back_its_ddl(database_url: str) -> None:
    """DDL is transactional on both databases (SQLite's driver would otherwise autocommit it)."""
    store = UsageStore.from_url(database_url)
    store.open()

    def broken(conn: object) -> None:
        conn.execute(text("CREATE TABLE ecgw_half_done (x INTEGER)"))  # type: ignore[attr-defined]
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        migrate(store.engine, (*MIGRATIONS, Migration(NEXT, "broken", broken)))
    from sqlalchemy import inspect

    with store.engine.connect() as conn:
        assert not inspect(conn).has_table("ecgw_half_done")
    store.dispose()


def test_workers_starting_together_migrate_once(tmp_path: Path) -> None:
    import concurrent.futures

    url = f"sqlite:///{tmp_path / 'race.sqlite3'}"

    def open_store(_: int) -> list[int]:
        store = UsageStore.from_url(url)
        try:
            return store.open()
        finally:
            store.dispose()

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(open_store, range(8)))
    assert sorted(v for r in results for v in r) == ALL
