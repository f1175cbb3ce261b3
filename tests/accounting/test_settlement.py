"""Request settlement: two workers (two meters, one database); a request is settled only once its mark and every
upstream call it caused are in the store, whichever worker holds them; a lost record keeps it unsettled."""

from __future__ import annotations

from typing import Any

import httpx

from accounting.settings import WriterSettings
from accounting.settlement import MAX_REQUEST_IDS, settlement_report
from tests.accounting.rows import call
from tests.accounting.test_writer import meter_for
from tests.fakes.model_server import ModelServer, Reply

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


async def test_requests_that_never_finish_do_not_pile_up(database_url: str) -> None:
    """Only max_open_requests unfinished requests are remembered: the oldest is forgotten (it can then never show
    as settled), the newer ones settle as usual."""
    meter = meter_for(database_url, WriterSettings(flush_interval_s=3600, max_open_requests=2))
    await meter.start()
    try:
        for n in (1, 2, 3):  # req-1 is never finished before two newer requests make calls
            meter.record(call(n, request_id=f"req-{n}"))
        for n in (3, 2, 1):
            meter.settle(f"req-{n}", "s1")
        await meter.flush()
        report = await meter.settlement(["req-1", "req-2", "req-3"])
        assert report["pending"] == [{"request_id": "req-1", "expected_calls": 0, "recorded_calls": 1}]
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


def test_the_gateway_marks_every_request_streamed_failed_or_not(start_metered_gateway: Any, cloud: ModelServer,
                                                                 edge: ModelServer) -> None:
    gw = start_metered_gateway(accounting={"writer": {"flush_interval_s": 3600}})  # written only when asked
    headers = {"X-Session-Id": "s-mark", "X-ECGW-Policy": "cloud-only"}
    body = {"model": "ecgw", "messages": [{"role": "user", "content": "hello there"}]}
    ids = []
    with httpx.stream("POST", gw.base_url + "/chat/completions", headers=headers,
                      json={**body, "stream": True, "stream_options": {"include_usage": True}}) as response:
        assert response.status_code == 200
        ids.append(response.headers["x-ecgw-request-id"])
        response.read()
    ids.append(httpx.post(gw.base_url + "/chat/completions", headers=headers, json=body)
               .headers["x-ecgw-request-id"])
    cloud.script(Reply(status=400, error_message="bad request upstream"))
    failed = httpx.post(gw.base_url + "/chat/completions", headers=headers, json=body)
    assert failed.status_code >= 400
    ids.append(failed.headers["x-ecgw-request-id"])
    refused = httpx.post(gw.base_url + "/chat/completions", headers=headers, content=b"{not json")
    assert refused.status_code == 400  # refused before any session: settled with no call, not pending for ever
    ids.append(refused.headers["x-ecgw-request-id"])

    answer = httpx.post(gw.url + "/v1/usage/requests", json={"request_ids": ids}).json()
    assert answer["settled"] and answer["requests"] == 4
    usage = answer["usage"]
    assert usage["cloud_calls"] == 3 and usage["edge_calls"] == 0  # the failed call is metered too
    reported = cloud.usages  # two answers with usage; the failure reported none
    assert len(reported) == 2
    assert usage["cloud_output_tokens"] == sum(u["completion_tokens"] for u in reported)
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in reported)
    assert usage["cloud_cache_read_tokens"] == cached
    assert usage["cloud_raw_input_tokens"] == sum(u["prompt_tokens"] for u in reported) - cached


def test_the_settlement_endpoint_refuses_bad_questions(start_metered_gateway: Any) -> None:
    gw = start_metered_gateway()
    for bad in ({"request_ids": "req-1"}, {"ids": []}, {"request_ids": [1]},
                {"request_ids": [f"r{i}" for i in range(MAX_REQUEST_IDS + 1)]}):
        response = httpx.post(gw.url + "/v1/usage/requests", json=bad)
        assert response.status_code == 400
        assert response.json()["error"]["param"] == "request_ids"
    assert httpx.post(gw.url + "/v1/usage/requests", content=b"{").status_code == 400
