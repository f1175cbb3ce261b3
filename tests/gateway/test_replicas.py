"""Beyond one machine: two `ecgw serve` replicas (several workers each), one Redis, one PostgreSQL.

Every request opens a new connection, so steps spread over the workers of a replica as well as over replicas.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from accounting.store import UsageStore
from benchmarks.contenders import free_port
from tests.real_parts import postgres_url, redis_url
from tests.replicas import ROOT, fresh_redis, replica_config, replicas

PLACEHOLDER = re.compile(r"\[EMAIL_ADDRESS_\d+\]")
EXPERIMENTS = {"definitions": {"exp": {"arms": {
    "hosted": {"policy": "cloud-only", "weight": 0},  # never assigned by the hash: only when forced
    "local": {"policy": "edge-only", "weight": 1}}}}}


def _chat(base: str, session: str, messages: list[dict[str, Any]], headers: dict[str, str] | None = None,
          **body: Any) -> httpx.Response:
    return httpx.post(base + "/v1/chat/completions", json={"messages": messages, **body},
                      headers={"X-Session-Id": session, **(headers or {})}, timeout=60)


def _text(message: dict[str, Any]) -> str:
    return str(message.get("content") or "")


def _usage_rows(session: str) -> list[dict[str, Any]]:
    store = UsageStore.from_url(postgres_url())
    try:
        return store.rows(session_id=session)
    finally:
        store.dispose()


def test_a_trajectory_alternating_between_two_replicas_keeps_its_state(tmp_path, edge, cloud):
    config = replica_config(tmp_path, edge.url, cloud.url, sessions={"store": "redis", "redis_url": fresh_redis()},
                            database_url=postgres_url(), experiments=EXPERIMENTS)
    run = uuid.uuid4().hex[:8]
    trajectory, sketched = f"traj-{run}", f"sketch-{run}"
    steps = 8
    with replicas(config, count=2, workers=2) as bases:
        messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an agent."}]
        for k in range(steps):
            messages.append({"role": "user", "content": f"Step {k}: mail alice@example.com and bob{k}@example.com"})
            # The first step forces the cloud arm; no later step names it (nor any policy).
            forced = {"X-ECGW-Arm": "exp:hosted"} if k == 0 else {}
            answer = _chat(bases[k % 2], trajectory, messages, forced)
            assert answer.status_code == 200, answer.text
            assert answer.headers["x-ecgw-policy"] == "cloud-only" and answer.headers["x-ecgw-arm"] == "exp:hosted"
            content = answer.json()["choices"][0]["message"]["content"]
            # Every value is restored in every answer, whichever replica pseudonymised it.
            assert "alice@example.com" in content and f"bob{k}@example.com" in content, content
            messages.append({"role": "assistant", "content": content})
        for k in range(steps):
            first = k == 0
            answer = _chat(bases[k % 2], sketched, [{"role": "user", "content": "Plan the release."}],
                           model="ecgw/sketch" if first else "anything")
            assert answer.status_code == 200 and answer.headers["x-ecgw-policy"] == "sketch"
    sent = [r for r in cloud.requests if any("Step 0" in _text(m) for m in r["messages"])]
    assert len(sent) == steps
    assert not any("@example.com" in _text(m) for r in cloud.requests for m in r["messages"])
    # The same value has the same placeholder on every step: each request extends the one before it unchanged
    # (so the cloud's prompt cache keeps hitting), and alice keeps one placeholder throughout.
    for before, after in zip(sent, sent[1:], strict=False):
        assert after["messages"][:len(before["messages"])] == before["messages"]
    alice = {PLACEHOLDER.findall(_text(r["messages"][-1]))[0] for r in sent}
    bobs = [PLACEHOLDER.findall(_text(r["messages"][-1]))[1] for r in sent]
    assert len(alice) == 1 and len(set(bobs)) == steps and alice.isdisjoint(bobs)
    # Sketch once: one plan from the cloud, the same plan in every edge step on either replica.
    plans = [r for r in cloud.requests if not any("Step" in _text(m) for m in r["messages"])]
    assert len(plans) == 1
    planned = [r for r in edge.requests if any("Plan for this task" in _text(m) for m in r["messages"])]
    assert len(planned) == steps and len({str(r["messages"]) for r in planned}) == 1
    # One metering record per upstream call, written by whichever replica made it (replicas flushed on stop).
    rows = _usage_rows(trajectory)
    assert len(rows) == steps and {r["side"] for r in rows} == {"cloud"} and {r["arm"] for r in rows} == {"hosted"}
    sketch_rows = _usage_rows(sketched)
    assert sorted(r["purpose"] for r in sketch_rows if r["side"] == "cloud") == ["plan"]
    assert len([r for r in sketch_rows if r["side"] == "edge"]) == steps


def _burst(bases: list[str], session: str, count: int) -> list[httpx.Response]:
    def one(k: int) -> httpx.Response:
        return _chat(bases[k % len(bases)], session, [{"role": "user", "content": f"Note {k}: n{k}@example.com"}],
                     model="ecgw/cloud-only")

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


@pytest.mark.parametrize("shape", ["sqlite, one replica, 3 workers", "redis, two replicas, 2 workers each"])
def test_simultaneous_steps_of_one_session_never_share_a_placeholder(shape, tmp_path, edge, cloud):
    if shape.startswith("redis"):
        sessions: dict[str, Any] = {"store": "redis", "redis_url": fresh_redis()}
        count, workers = 2, 2
    else:
        sessions = {"store": "sqlite", "sqlite_path": str(tmp_path / "sessions.sqlite3")}
        count, workers = 1, 3
    config = replica_config(tmp_path, edge.url, cloud.url, sessions=sessions,
                            database_url=f"sqlite:///{tmp_path / 'metering.sqlite3'}")
    session, burst = f"burst-{uuid.uuid4().hex[:8]}", 24
    with replicas(config, count=count, workers=workers) as bases:
        answers = _burst(bases, session, burst)
        for k, answer in enumerate(answers):
            assert answer.status_code == 200, answer.text
            content = answer.json()["choices"][0]["message"]["content"]
            assert f"n{k}@example.com" in content and "[EMAIL" not in content, content  # its own value, restored
        given: dict[int, str] = {}
        for request in cloud.requests:
            found = re.fullmatch(r"Note (\d+): (\[EMAIL_ADDRESS_\d+\])", _text(request["messages"][-1]))
            assert found is not None, request["messages"][-1]
            given[int(found[1])] = found[2]
        assert len(given) == burst
        assert len(set(given.values())) == burst  # every value its own placeholder
        # None was lost from the vault: a later step naming them all gets the very same placeholders.
        everyone = " ".join(f"n{k}@example.com" for k in range(burst))
        later = _chat(bases[0], session, [{"role": "user", "content": everyone}])
        assert later.status_code == 200
        assert PLACEHOLDER.findall(_text(cloud.requests[-1]["messages"][-1])) == [given[k] for k in range(burst)]


def _redis(*args: str) -> str:
    return subprocess.run([str(ROOT / "scripts" / "redis.sh"), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_redis_down_answers_503_sends_nothing_and_recovers_when_it_returns(tmp_path, edge, cloud):
    redis_url()  # Redis is installed and the suite runs with it (its own server is started below)
    port, where = free_port(), tmp_path / "redis"
    url = _redis("start", str(port), str(where), "--appendonly", "yes")
    try:
        config = replica_config(tmp_path, edge.url, cloud.url, sessions={"store": "redis", "redis_url": url},
                                database_url=f"sqlite:///{tmp_path / 'metering.sqlite3'}")
        with replicas(config, count=2, workers=1) as bases:
            mail = [{"role": "user", "content": "Write to carol@example.com"}]
            before = _chat(bases[0], "outage", mail, model="ecgw/cloud-only")
            assert before.status_code == 200 and "carol@example.com" in before.json()["choices"][0]["message"]["content"]
            placeholder = PLACEHOLDER.findall(_text(cloud.requests[-1]["messages"][-1]))
            sent = len(cloud.requests)
            subprocess.run(["redis-cli", "-p", str(port), "shutdown"], check=False, capture_output=True)
            down = [_chat(base, "outage", [{"role": "user", "content": f"Write to dave{i}@example.com"}], **extra)
                    for i, (base, extra) in enumerate([(bases[0], {}), (bases[1], {}),
                                                       (bases[0], {"stream": True}), (bases[1], {"model": "x"})])]
            for answer in down:
                assert answer.status_code == 503, answer.text
                error = answer.json()["error"]
                assert error["code"] == "session_store_unavailable"
                assert f"redis 127.0.0.1:{port}/0" in error["message"] and "Retry" in error["message"]
            assert len(cloud.requests) == sent  # nothing reached the cloud, raw or not
            _redis("start", str(port), str(where), "--appendonly", "yes")
            for base in bases:  # recovered by itself, on both replicas, with the session's vault intact
                after = _chat(base, "outage", mail + [{"role": "user", "content": "and erin@example.com"}])
                assert after.status_code == 200, after.text
                assert after.headers["x-ecgw-policy"] == "cloud-only"
                assert "erin@example.com" in after.json()["choices"][0]["message"]["content"]
                assert PLACEHOLDER.findall(_text(cloud.requests[-1]["messages"][0])) == placeholder
    finally:
        _redis("stop", str(where))

