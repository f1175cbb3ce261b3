"""Budgets and rate limits on one gateway (real HTTP, the cloud a double speaking OpenAI's wire format): a spent
cloud budget keeps steps on the edge (or answers 429 with ``on_exceed: reject``), every surface and internal call
counts, cache reads are priced at their own rate, an unreadable budget keeps the step off the cloud, and rate
limits answer 429 in each surface's own envelope."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from accounting.calls import MemoryMeter
from accounting.factory import build_meter
from gateway.app import create_app
from gateway.config.settings import load_settings
from tests.conftest import RunningGateway, settings_for
from tests.door import guarded_cloud, guarded_services
from tests.fakes.threaded import ThreadedServer

KEY = {"authorization": "Bearer k1"}
# USD per 1M tokens: a cache read costs a tenth of a raw input token
PRICES = {"openai/gpt-test": {"input": 1000.0, "cache_read": 100.0, "output": 2000.0}}


# Budgets read the time from this clock: the middle of a minute, so no test's requests straddle two windows.
MID_MINUTE = time.time() // 60 * 60 + 30


@pytest.fixture()
def start_gateway(edge: Any, cloud: Any) -> Iterator[Callable[..., RunningGateway]]:
    """The suite's ``start_gateway``, with the budgets' clock held still."""
    started: list[ThreadedServer] = []

    def start(**overrides: Any) -> RunningGateway:
        settings = settings_for(edge.url, cloud.url, **overrides)
        meter, guard = MemoryMeter(), guarded_cloud(settings)
        services = guarded_services(settings, meter=meter, cloud=guard, clock=lambda: MID_MINUTE)
        server = ThreadedServer(create_app(settings, services=services)).start()
        started.append(server)
        return RunningGateway(url=server.url, settings=settings, services=services, meter=meter, guard=guard)

    yield start
    for server in started:
        server.stop()


def chat(gw: Any, text: str, *, session: str = "s1", headers: dict[str, str] | None = None,
         **body: Any) -> httpx.Response:
    return httpx.post(gw.base_url + "/chat/completions", json={"messages": [{"role": "user", "content": text}],
                                                               **body},
                      headers={**KEY, "x-session-id": session, **(headers or {})}, timeout=30)


def budget_of(gw: Any, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    answer = httpx.get(gw.base_url + "/budget", headers={**KEY, **(headers or {})}, timeout=10)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["limits"])


def limited(accounting: dict[str, Any] | None = None, **limits: Any) -> dict[str, Any]:
    return {"server": {"api_keys": ["k1", "k2"]}, "accounting": {"prices": PRICES, **(accounting or {})},
            "limits": limits,
            "privacy": {"layers": {"ner": False}}}  # patterns suffice here; NER would only slow each start


def test_a_spent_cloud_budget_answers_on_the_edge_and_the_record_says_so(start_gateway, cloud, edge):
    gw = start_gateway(**limited(keys={"k1": {"cloud_calls": {"amount": 2, "window": "1d"}}}))
    answers = [chat(gw, f"step {k}", model="ecgw/cloud-only") for k in range(4)]
    assert [a.status_code for a in answers] == [200] * 4
    assert [a.headers["x-ecgw-route"] for a in answers] == ["cloud", "cloud", "edge", "edge"]
    assert [a.headers.get("x-ecgw-fallback") for a in answers] == [None, None, "budget", "budget"]
    assert len(cloud.requests) == 2 and answers[3].json()["choices"][0]["message"]["content"].startswith("edge")
    records = {s.request_id: s for s in gw.meter.steps}
    kept = records[answers[2].headers["x-ecgw-request-id"]]
    assert kept.fallback == "budget" and kept.decision == "cloud"  # what the policy wanted, and what happened
    assert kept.signal["budget"] == "k1/cloud_calls/1d"
    # another key has its own (default: unlimited) budget
    other = chat(gw, "other key", headers={"authorization": "Bearer k2"}, model="ecgw/cloud-only")
    assert other.headers["x-ecgw-route"] == "cloud" and "x-ecgw-fallback" not in other.headers
    [row] = budget_of(gw)
    assert row["name"] == "k1" and row["kind"] == "cloud_calls" and row["window"] == "1d"
    assert row["amount"] == 2 and row["spent"] == 2 and row["left"] == 0 and row["resets_at"].endswith("T00:00:00Z")


def test_on_exceed_reject_answers_429_naming_the_budget_its_reset_and_what_is_left(start_gateway, cloud):
    gw = start_gateway(**limited(keys={"k1": {"cloud_calls": {"amount": 1, "window": "1h"}}}, on_exceed="reject"))
    assert chat(gw, "first", model="ecgw/cloud-only").status_code == 200
    refused = chat(gw, "second", model="ecgw/cloud-only")
    assert refused.status_code == 429 and len(cloud.requests) == 1
    error = refused.json()["error"]
    assert error["code"] == "budget_exceeded" and "x-ecgw-fallback" not in refused.headers
    assert "cloud_calls budget of k1" in error["message"] and "0 left" in error["message"]
    assert ":00:00Z" in error["message"] and 1 <= int(refused.headers["retry-after"]) <= 3600


def test_cache_reads_are_priced_at_their_own_rate_and_the_counter_matches_metering(start_gateway, cloud):
    gw = start_gateway(**limited(keys={"k1": {"cloud_usd": {"amount": 100.0, "window": "30d"}}}))
    prefix = " ".join(f"word{i}" for i in range(40))  # the double caches prompts in blocks of 16 tokens
    for k in range(2):
        assert chat(gw, f"{prefix} question {k}", model="ecgw/cloud-only").status_code == 200
    first, second = cloud.usages
    assert second["prompt_tokens_details"]["cached_tokens"] > 0  # the second call read the cache

    def cost(usage: dict[str, Any]) -> float:
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        raw = usage["prompt_tokens"] - cached
        return (raw * 1000.0 + cached * 100.0 + usage["completion_tokens"] * 2000.0) / 1e6

    [row] = budget_of(gw)
    assert row["spent"] == pytest.approx(cost(first) + cost(second))
    uncached = (second["prompt_tokens"] * 1000.0 + second["completion_tokens"] * 2000.0) / 1e6
    assert row["spent"] < cost(first) + uncached  # not billed as if the cache were raw input


def test_responses_messages_and_internal_calls_count(start_gateway, cloud, edge):
    gw = start_gateway(**limited(keys={"k1": {"cloud_calls": {"amount": 3, "window": "1d"}}}))
    responses = httpx.post(gw.base_url + "/responses", json={"model": "ecgw/cloud-only", "input": "hello"},
                           headers={**KEY, "x-session-id": "r"}, timeout=30)
    assert responses.status_code == 200 and responses.headers["x-ecgw-route"] == "cloud"
    messages = httpx.post(gw.base_url + "/messages", json={
        "model": "ecgw/cloud-only", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]},
        headers={"x-api-key": "k1", "x-session-id": "m"}, timeout=30)
    assert messages.status_code == 200 and messages.headers["x-ecgw-route"] == "cloud"
    # sketch's plan is an internal cloud call (purpose "plan"): the third and last one the budget allows
    sketched = chat(gw, "Plan the release.", session="sk", model="ecgw/sketch")
    assert sketched.status_code == 200 and budget_of(gw)[0]["spent"] == 3
    assert len(cloud.requests) == 3
    # now the budget is spent: each surface answers on the edge, and a new sketch session gets no plan
    again = httpx.post(gw.base_url + "/messages", json={
        "model": "ecgw/cloud-only", "max_tokens": 64, "messages": [{"role": "user", "content": "again"}]},
        headers={"x-api-key": "k1", "x-session-id": "m"}, timeout=30)
    assert again.status_code == 200 and again.headers["x-ecgw-fallback"] == "budget"
    assert again.json()["type"] == "message"
    unplanned = chat(gw, "Plan another release.", session="sk2", model="ecgw/sketch")
    assert unplanned.status_code == 200 and len(cloud.requests) == 3
    record = next(s for s in gw.meter.steps if s.request_id == unplanned.headers["x-ecgw-request-id"])
    assert record.reason == "no-plan" and record.signal["fallback"] == "budget"


def test_a_spent_edge_budget_answers_429(start_gateway, edge):
    gw = start_gateway(**limited(sessions={"edge_pflops": {"amount": 1e-12, "window": "session"}},
                                 accounting={"edge_models": {"edge-model": {"params": 1e9}}}))
    assert chat(gw, "one two three").status_code == 200  # 2·1e9·tokens FLOPs: past 1e-12 PFLOPs at once
    refused = chat(gw, "again")
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "budget_exceeded"
    assert "edge_pflops budget of session" in refused.json()["error"]["message"]
    assert "retry-after" not in refused.headers  # a session's budget does not reset
    assert chat(gw, "a new session has its own", session="s2").status_code == 200


def test_rate_limits_answer_429_in_each_surface_envelope_with_openai_headers(start_gateway):
    gw = start_gateway(**limited(keys={"k1": {"rpm": 2}}))
    ok = chat(gw, "one")
    assert ok.status_code == 200
    assert ok.headers["x-ratelimit-limit-requests"] == "2" and ok.headers["x-ratelimit-remaining-requests"] == "1"
    assert chat(gw, "two").status_code == 200
    refused = chat(gw, "three")
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limit_exceeded"
    for answer in (refused,):
        assert 1 <= int(answer.headers["retry-after"]) <= 60
        assert answer.headers["x-ratelimit-remaining-requests"] == "0"
        assert answer.headers["x-ratelimit-reset-requests"].endswith("s")
    messages = httpx.post(gw.base_url + "/messages", json={
        "model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
        headers={"x-api-key": "k1"}, timeout=30)
    assert messages.status_code == 429 and messages.json()["type"] == "error"
    assert messages.json()["error"]["type"] == "rate_limit_error" and "retry-after" in messages.headers
    responses = httpx.post(gw.base_url + "/responses", json={"input": "hi"}, headers=KEY, timeout=30)
    assert responses.status_code == 429 and responses.json()["error"]["code"] == "rate_limit_exceeded"
    assert chat(gw, "k2 is not limited", headers={"authorization": "Bearer k2"}).status_code == 200


def test_token_rate_limit_counts_prompt_and_max_tokens(start_gateway):
    gw = start_gateway(**limited(keys={"k1": {"tpm": 300}}))
    ok = chat(gw, "short", max_tokens=100)
    assert ok.status_code == 200 and ok.headers["x-ratelimit-limit-tokens"] == "300"
    left = int(ok.headers["x-ratelimit-remaining-tokens"])
    assert 150 < left < 200  # 100 for max_tokens and a generous count of the prompt
    refused = chat(gw, "too much", max_tokens=250)
    assert refused.status_code == 429 and "tokens per minute" in refused.json()["error"]["message"]
    assert refused.headers["x-ratelimit-remaining-tokens"] == str(left)  # the refused request counted nothing


def test_an_unreadable_budget_keeps_the_step_on_the_edge(tmp_path: Path, edge, cloud):
    """The metering database that seeds the counter cannot be read: nothing goes to the cloud, and it says so."""
    database = tmp_path / "metering.sqlite3"
    settings = settings_for(edge.url, cloud.url, database_url=f"sqlite:///{database}",  # type: ignore[attr-defined]
                            **limited(keys={"k1": {"cloud_usd": {"amount": 1.0, "window": "30d"}}}))
    meter = build_meter(settings.accounting, database_url=settings.database_url)
    services = guarded_services(settings, meter=meter, cloud=guarded_cloud(settings))
    with ThreadedServer(create_app(settings, services=services)) as server:
        gw = type("GW", (), {"base_url": server.url + "/v1"})()
        assert chat(gw, "warm up", model="ecgw/edge-only").status_code == 200  # the database exists now
        with sqlite3.connect(database) as db:
            db.execute("ALTER TABLE ecgw_usage_records RENAME TO elsewhere")
        kept = chat(gw, "to the cloud?", model="ecgw/cloud-only")
        assert kept.status_code == 200 and kept.headers["x-ecgw-route"] == "edge"
        assert kept.headers["x-ecgw-fallback"] == "budget-unavailable"
        assert cloud.requests == []
        unreadable = httpx.get(gw.base_url + "/budget", headers=KEY, timeout=10)
        assert unreadable.status_code == 503 and unreadable.json()["error"]["code"] == "budget_unavailable"
        with sqlite3.connect(database) as db:
            db.execute("ALTER TABLE elsewhere RENAME TO ecgw_usage_records")


@pytest.mark.parametrize(("limits", "named"), [
    ({"keys": {"alice": {"cloud_usd": {"amount": 5, "window": "2h"}}}}, "limits.keys.alice.cloud_usd.window"),
    ({"keys": {"alice": {"cloud_usd": {"amount": -1, "window": "1d"}}}}, "limits.keys.alice.cloud_usd.amount"),
    ({"sessions": {"rpm": 0}}, "limits.sessions.rpm"),
    ({"arms": {"noexp:arm": {"cloud_calls": {"amount": 1, "window": "1h"}}}}, "limits.arms.noexp:arm"),
    ({"default_key": {"edge_pflops": {"amount": 1, "window": "1d"}}}, "limits.default_key.edge_pflops"),
    ({"default_key": {"cloud_dollars": {"amount": 1, "window": "1d"}}}, "limits.default_key.cloud_dollars"),
])
def test_a_malformed_limit_stops_serve_with_exit_2_naming_the_key(tmp_path: Path, capsys, limits, named):
    import yaml

    from gateway.cli.main import main

    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"limits": limits, "cloud": {"model": "openai/gpt-test"},
                                      "accounting": {"prices": PRICES}, "edge": {"launch": "never"}}))
    assert main(["serve", "--config", str(config)]) == 2  # `ecgw serve`, stopped before it binds a port
    assert named in capsys.readouterr().err


def test_limits_section_loads_from_yaml(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text("limits:\n  on_exceed: reject\n  keys:\n    alice: {cloud_usd: {amount: 5, window: 30d}, "
                      "rpm: 60}\n")
    settings = load_settings(config)
    assert settings.limits.keys["alice"].cloud_usd is not None and settings.limits.keys["alice"].rpm == 60
    assert settings.limits.configured and settings.limits.on_exceed == "reject"
