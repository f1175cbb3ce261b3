"""Request settlement: two workers (two meters, one database); a request is settled only once its mark and every
upstream call it caused are in the store, whichever worker holds them; a lost record keeps it unsettled."""

from __future__ import annotations

from accounting.settings import WriterSettings
from accounting.settlement import settlement_report
from tests.accounting.rows import call
from tests.accounting.test_writer import meter_for

HOLD = WriterSettings(flush_interval_s=3600, batch_size=100_000)  # nothing written until flushed


async def test_a_request_held_by_another_worker_is_pending_until_that_worker_writes(database_url: str) -> None:
    worker_a, worker_b = meter_for(database_url, HOLD), meter_for(database_url, HOLD)
    await worker_a.start()
    await worker_b.start()
    try:
        # worker A served req-1 (one cloud call); worker B served req-2: an edge probe, then the cloud
        worker_a.record(call(1, request_id="req-1"))
        worker_a.settle("req-1", "s1")
        worker_b.record(call(2, request_id="req-2", side="edge", purpose="probe", model="edge-model"))
        worker_b.record(call(3, request_id="req-2"))
        worker_b.settle("req-2", "s1")
        await worker_a.flush()  # a usage read answered by worker A flushes only A

        report = settlement_report(worker_a.store, ["req-1", "req-2"])
        assert not report["settled"]
        assert report["pending"] == [{"request_id": "req-2", "expected_calls": None, "recorded_calls": 0}]
        assert report["usage"]["cloud_calls"] == 1  # what is there so far, never to be taken as complete

        await worker_b.flush()
        report = settlement_report(worker_a.store, ["req-1", "req-2"])
        assert report["settled"] and report["pending"] == []
        usage = report["usage"]
        assert (usage["requests"], usage["cloud_calls"], usage["edge_calls"]) == (2, 2, 1)
        # 2 cloud calls of 100 prompt (64 cached) + 10 output at $1 in / $2 out per 1M (cache billed as input)
        assert (usage["cloud_raw_input_tokens"], usage["cloud_cache_read_tokens"]) == (72, 128)
        assert usage["cloud_output_tokens"] == 20
        assert usage["cloud_cost_usd"] == round(2 * (100 * 1 + 10 * 2) / 1e6, 6)
    finally:
        await worker_a.aclose()
        await worker_b.aclose()


async def test_a_lost_record_keeps_its_request_unsettled(database_url: str) -> None:
    meter = meter_for(database_url, WriterSettings(flush_interval_s=3600, max_buffered=1))
    await meter.start()
    try:
        meter.record(call(1, request_id="req-9"))
        meter.record(call(2, request_id="req-9"))  # the buffer is full: dropped (and counted in /metrics)
        meter.settle("req-9", "s1")
        await meter.flush()
        report = settlement_report(meter.store, ["req-9"])
        assert report["pending"] == [{"request_id": "req-9", "expected_calls": 2, "recorded_calls": 1}]
        assert not report["settled"]
    finally:
        await meter.aclose()


async def test_a_request_that_made_no_upstream_call_settles_with_no_usage(database_url: str) -> None:
    meter = meter_for(database_url, HOLD)
    await meter.start()
    try:
        meter.settle("req-0", "s1")  # e.g. a request refused before any model was asked
        await meter.flush()
        report = settlement_report(meter.store, ["req-0", "req-unknown"])
        assert report["pending"] == [{"request_id": "req-unknown", "expected_calls": None, "recorded_calls": 0}]
        meter.settle("req-unknown", "s1")
        await meter.flush()
        report = settlement_report(meter.store, ["req-0", "req-unknown"])
        usage = report["usage"]
        assert report["settled"] and (usage["requests"], usage["cloud_calls"], usage["edge_calls"]) == (0, 0, 0)
    finally:
        await meter.aclose()
