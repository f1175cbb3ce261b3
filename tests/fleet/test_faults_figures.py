"""The counting behind ``benchmarks.faults``' table (issue 25 §4): what is a failure, what is lost metering, and when
each fault counts as recovered. The benchmark itself runs in ``make bench``; these check its arithmetic only."""

from __future__ import annotations

import asyncio

import httpx

from benchmarks import cloud_stub
from benchmarks.faults import GATEWAY_VICTIM, Call, figures, lost_metering, missing_receipts, written_again
from privacy.audit import ChainSigner
from privacy.audit.receipts import sign


def _call(session: int, start: float, end: float, *, ok: bool = True, streamed: bool = False,
          edge: str | None = None, target: str | None = None, replica: int | None = None) -> Call:
    return Call(session=session, streamed=streamed, start=start, end=end, ok=ok, edge=edge, target=target,
                replica=replica)


def test_a_failed_request_and_a_broken_stream_count_apart_and_the_last_failure_bounds_recovery() -> None:
    calls = [_call(1, -2.0, -1.8, edge="b"), _call(2, -1.0, -0.9, edge="a"),
             _call(1, -0.1, 0.4, ok=False, streamed=True, edge="b"),  # in flight on the killed replica
             _call(3, 0.2, 0.3, ok=False),
             _call(1, 1.5, 1.7, edge="a"), _call(2, 2.0, 2.1, streamed=True, edge="a")]
    row = figures("edge kill -9", calls, [], 10.0, (5, 0, 0))
    assert (row.requests, row.failed, row.plain, row.broken, row.streams) == (6, 1, 4, 1, 2)
    assert row.last_failure_s == 0.4
    assert row.signal_s == 1.7  # session 1, served by b before the kill, answered by a
    assert row.recover_s == 1.7
    assert row.extra["in_flight"] == 1 and row.extra["streams_in_flight_on_victim"] == 1


def test_metering_is_lost_when_a_completed_request_is_unmarked_or_short_of_its_mark() -> None:
    settled = {"ok": (1, 1), "retried": (2, 2), "extra": (1, 3), "unmarked": (None, 0), "short": (3, 1)}
    assert lost_metering(settled) == (5, 2, 3)  # "unmarked" (one record at least) and "short" (two)


def test_metering_counts_as_written_again_only_once_every_replica_wrote_after_the_database_came_back() -> None:
    samples = [(-1.0, [(10.0, 0.0), (8.0, 0.0)]), (0.5, [(12.0, 3.0), (8.0, 4.0)]), (5.0, [(12.0, 40.0), (8.0, 30.0)]),
               (10.5, [(60.0, 0.0), (8.0, 35.0)]), (11.0, [(61.0, 0.0), (45.0, 0.0)])]
    assert written_again(samples, 10.0) == 11.0
    assert written_again(samples[:4], 10.0) is None


def test_a_cloud_fault_recovers_when_the_fallback_answers_and_says_when_the_primary_did_again() -> None:
    calls = [_call(0, -1.0, -0.9, target="primary"), _call(2, 0.0, 3.1, target="backup"),
             _call(4, 1.0, 1.2, target="backup"), _call(0, 10.2, 10.4, target="primary")]
    row = figures("cloud hang", calls, [], 10.0, None)
    assert (row.failed, row.broken, row.unsettled) == (0, 0, None)
    assert row.signal_s == 1.2 and row.recover_s == 1.2  # the earliest fallback answer
    assert "primary again 0.4 s" in row.signal
    assert (row.median_s, row.slowest_s) == (3.1, 3.1)


def test_a_killed_gateway_recovers_when_it_answers_again_and_counts_what_was_in_flight_on_it() -> None:
    other = 1 - GATEWAY_VICTIM
    calls = [_call(1, -1.0, -0.5, replica=GATEWAY_VICTIM), _call(2, -0.2, 0.1, ok=False, replica=GATEWAY_VICTIM),
             _call(3, -0.1, 0.3, replica=other), _call(1, 1.0, 1.2, replica=other),
             _call(2, 12.5, 13.0, replica=GATEWAY_VICTIM)]
    row = figures("gateway kill -9", calls, [], 12.0, (4, 0, 0))
    assert (row.failed, row.signal_s, row.recover_s) == (1, 13.0, 13.0)
    assert row.extra["in_flight"] == 2 and row.extra["in_flight_on_killed_gateway"] == 1


def test_a_receipt_is_missing_when_its_row_or_its_calls_row_is() -> None:
    signer = ChainSigner(bytes(32))
    held = [sign({"rid": f"r{n}", "call": f"c{n}"}, signer) for n in range(3)]
    assert missing_receipts(held, set(held), {"c0", "c1", "c2"}) == 0
    assert missing_receipts(held, {held[0], held[1]}, {"c0", "c1", "c2"}) == 1  # the receipt's row
    assert missing_receipts(held, set(held), {"c0"}) == 2  # the calls' rows


def test_the_cloud_stub_counts_bodies_that_hold_a_raw_address() -> None:

    async def exchange() -> int:
        transport = httpx.ASGITransport(app=cloud_stub.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://stub") as client:
            before = (await client.get("/stats")).json()["raw"]
            for content in ("mail [EMAIL_ADDRESS_001]", f"mail owner1{cloud_stub.RAW}"):
                await client.post("/v1/chat/completions", json={"model": "m", "messages": [
                    {"role": "user", "content": content}]})
            return int((await client.get("/stats")).json()["raw"]) - before

    assert asyncio.run(exchange()) == 1


def test_the_cloud_stub_answers_as_its_mode_says_until_switched_back() -> None:

    async def exchange() -> list[int]:
        transport = httpx.ASGITransport(app=cloud_stub.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://stub") as client:
            chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            statuses = []
            for mode in ("429", "500", "ok"):
                assert (await client.post("/mode", json={"mode": mode})).status_code == 200
                statuses.append((await client.post("/v1/chat/completions", json=chat)).status_code)
            statuses.append((await client.post("/mode", json={"mode": "slow"})).status_code)
            return statuses

    assert asyncio.run(exchange()) == [429, 500, 200, 400]
