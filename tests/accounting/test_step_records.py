"""Step decision records in the metering store (migration 3), on SQLite and PostgreSQL: idempotent writes, the
route mix and request rate per policy, time buckets that start on the bucket boundary, a session's steps."""

from __future__ import annotations

from typing import Any

from accounting.calls import StepRecord
from accounting.steps import insert_steps, request_rate, route_mix, session_steps, step_row
from accounting.store import UsageStore


def _step(request_id: str, at: float, policy: str, route: str, **extra: Any) -> dict[str, Any]:
    return step_row(StepRecord(request_id=request_id, session_id=extra.pop("session_id", "s1"), policy=policy,
                               started_at=at, latency_s=0.1, status=extra.pop("status", 200), route=route, **extra))


def test_route_mix_rate_and_steps(database_url: str) -> None:
    store = UsageStore.from_url(database_url)
    try:
        store.open()
        rows = [_step("r1", 100.0, "step-routing", "edge", decision="edge", reason="entropy",
                      signal={"entropy": 0.2, "tau": 1.5}),
                _step("r2", 159.9, "step-routing", "mixed", decision="cloud", reason="entropy"),
                _step("r3", 160.0, "cloud-only", "edge", decision="cloud", fallback="privacy-blocked"),
                _step("r4", 179.0, "cloud-only", "cloud", status=502, session_id="s2")]
        insert_steps(store, rows)
        insert_steps(store, rows[:2])  # a retried batch is not counted twice
        mix = {r["policy"]: r for r in route_mix(store)}
        assert mix["step-routing"] == {"policy": "step-routing", "steps": 2, "privacy_blocked": 0, "edge": 1,
                                       "cloud": 0, "mixed": 1, "none": 0}
        assert (mix["cloud-only"]["edge"], mix["cloud-only"]["cloud"], mix["cloud-only"]["privacy_blocked"]) == (
            1, 1, 1)
        assert [(r["t"], r["policy"], r["steps"], r["errors"]) for r in request_rate(store, 60)] == [
            (60.0, "step-routing", 1, 0), (120.0, "cloud-only", 2, 1), (120.0, "step-routing", 1, 0)]
        assert [r["t"] for r in request_rate(store, 60, since=160.0)] == [120.0]
        steps = session_steps(store, "s1")
        assert [s["request_id"] for s in steps] == ["r1", "r2", "r3"]
        assert steps[0]["signal"] == {"entropy": 0.2, "tau": 1.5} and steps[2]["fallback"] == "privacy-blocked"
    finally:
        store.dispose()


async def test_the_writer_keeps_step_records_through_shutdown(tmp_path: Any) -> None:
    """A step record queued on the meter (nothing else pending) is in the store once the meter has closed."""
    from accounting.factory import build_record_builder
    from accounting.metrics import MeteringMetrics
    from accounting.settings import AccountingSettings, WriterSettings
    from accounting.writer import StoreMeter

    url = f"sqlite:///{tmp_path / 'steps.sqlite3'}"
    settings = AccountingSettings(writer=WriterSettings(flush_interval_s=60))
    meter = StoreMeter(UsageStore.from_url(url), build_record_builder(settings), MeteringMetrics(), settings.writer)
    await meter.start()
    meter.record_step(StepRecord(request_id="r1", session_id="s9", policy="edge-only", started_at=100.0,
                                 latency_s=0.1, status=200, route="edge", decision="edge", signal={"why": "fixed"}))
    await meter.aclose()
    store = UsageStore.from_url(url)
    try:
        steps = session_steps(store, "s9")
        assert [(s["request_id"], s["decision"]) for s in steps] == [("r1", "edge")]
    finally:
        store.dispose()


def test_features_and_labels_are_kept_and_read_for_learning(database_url: str) -> None:
    """Migration 6: a step's features and its shadow label, stored as JSON and read back by ``labelled_steps``."""
    from accounting.steps import labelled_steps

    store = UsageStore.from_url(database_url)
    try:
        store.open()
        insert_steps(store, [
            _step("f1", 100.0, "step-routing", "edge", features={"entropy_first": 0.4, "last_role": "tool"},
                  label={"agree": False, "kind": "tool", "similarity": 0.0}),
            _step("f2", 101.0, "step-routing", "edge", features={"entropy_first": 0.1}),
            _step("f3", 102.0, "step-routing", "edge", session_id="s2", features={"entropy_first": 0.9},
                  label={"agree": True, "kind": "text", "similarity": 0.8})])
        assert [(s["request_id"], s["label"]["agree"]) for s in labelled_steps(store)] == [("f1", False), ("f3", True)]
        assert [s["request_id"] for s in labelled_steps(store, since=101.0)] == ["f3"]
        assert [s["request_id"] for s in labelled_steps(store, until=102.0)] == ["f1"]
        assert labelled_steps(store)[0]["features"] == {"entropy_first": 0.4, "last_role": "tool"}
        assert session_steps(store, "s1")[1]["features"] == {"entropy_first": 0.1}
        assert session_steps(store, "s1")[1]["label"] is None
    finally:
        store.dispose()
