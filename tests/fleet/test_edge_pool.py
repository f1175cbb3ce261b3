"""The edge pool through the gateway: session affinity, spill, retry before the first byte, ejection and
readmission, the tenant's cache salt, and metering by deployment. Real loopback servers throughout."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from gateway.config.settings import EdgeSettings
from gateway.egress.pools.edge_pool import EdgePool
from router.upstreams import Call, cache_salt
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer
from tests.fleet.conftest import closed_port, deployment, session_on


def _chat(gw: Any, session: str, text: str = "hello", *, key: str | None = None, stream: bool = False,
          **body: Any) -> httpx.Response:
    headers = {"X-Session-Id": session, **({"authorization": f"Bearer {key}"} if key else {})}
    return httpx.post(gw.base_url + "/chat/completions", headers=headers, timeout=30,
                      json={"model": "ecgw/edge-only", "stream": stream,
                            "messages": [{"role": "user", "content": text}], **body})


def _text(response: httpx.Response) -> str:
    if response.headers["content-type"].startswith("application/json"):
        return str(response.json()["choices"][0]["message"]["content"])
    events = [json.loads(line[6:]) for line in response.text.splitlines()
              if line.startswith("data: {")]
    return "".join(c["delta"].get("content") or "" for e in events for c in e.get("choices") or ())


def _pool(*members: dict[str, Any], **edge: Any) -> dict[str, Any]:
    return {"deployments": list(members), **edge}


def test_affinity_is_the_same_on_two_gateways_and_moves_only_what_must(start_gateway, replicas):
    a, b, c = (replicas[n] for n in "abc")
    two = _pool(deployment("a", a.url), deployment("b", b.url))
    three = _pool(deployment("a", a.url), deployment("b", b.url), deployment("c", c.url))
    without_b = _pool(deployment("a", a.url), deployment("c", c.url))
    first, second = start_gateway(edge=two), start_gateway(edge=two)
    grown, shrunk = start_gateway(edge=three), start_gateway(edge=without_b)
    sessions = [f"traj-{n}" for n in range(24)]

    def placement(gw: Any) -> dict[str, str]:
        out = {}
        for session in sessions:
            response = _chat(gw, session)
            assert response.status_code == 200, response.text
            out[session] = response.headers["x-ecgw-edge-deployment"]
        return out

    on_first = placement(first)
    assert placement(first) == on_first  # a session's next step goes where its prefix is cached
    assert placement(second) == on_first  # the other gateway agrees without talking to the first
    assert set(on_first.values()) == {"a", "b"}
    served = {name: sum(1 for r in fake.requests if r["messages"][-1]["content"] == "hello")
              for name, fake in (("a", a), ("b", b))}
    assert served == {n: 3 * list(on_first.values()).count(n) for n in "ab"}  # the header names who answered

    on_grown = placement(grown)
    moved = {s for s in sessions if on_grown[s] != on_first[s]}
    assert moved and all(on_grown[s] == "c" for s in moved)  # only to the new member
    on_shrunk = placement(shrunk)
    for session in sessions:  # removing b moves b's sessions and nobody else's
        if on_grown[session] != "b":
            assert on_shrunk[session] == on_grown[session]
        else:
            assert on_shrunk[session] in ("a", "c")


@pytest.mark.parametrize("stream", [False, True])
def test_a_5xx_before_the_first_byte_is_retried_on_another_replica(start_gateway, replicas, stream):
    a, b = replicas["a"], replicas["b"]
    gw = start_gateway(edge=_pool(deployment("a", a.url), deployment("b", b.url)))
    session = session_on("a", [("a", 1.0), ("b", 1.0)])
    a.script(Reply(status=500, error_message="CUDA out of memory"))
    b.script(Reply("from b"))
    response = _chat(gw, session, stream=stream)
    assert response.status_code == 200, response.text
    assert response.headers["x-ecgw-edge-deployment"] == "b"
    assert _text(response) == "from b"
    assert len(a.requests) == len(b.requests) == 1
    calls = [(c.deployment, c.status) for c in gw.meter.calls if c.side == "edge"]
    assert calls == [("a", 502), ("b", 200)]  # both attempts metered, each under its deployment
    assert gw.meter.steps[-1].signal["edge_chain"] == "a:502>b"


def test_a_connection_failure_is_retried_and_the_dead_replica_ejected(start_gateway, replicas):
    b = replicas["b"]
    dead = f"http://127.0.0.1:{closed_port()}"
    gw = start_gateway(edge=_pool(deployment("dead", dead), deployment("b", b.url), eject_after=2,
                                  readmit_after_s=3600))
    session = session_on("dead", [("dead", 1.0), ("b", 1.0)])
    for _ in range(3):
        response = _chat(gw, session)
        assert response.status_code == 200 and response.headers["x-ecgw-edge-deployment"] == "b"
    # two failures ejected it: the third step went straight to b
    assert [c.deployment for c in gw.meter.calls] == ["dead", "b", "dead", "b", "b"]
    ready = httpx.get(gw.url + "/readyz", timeout=30).json()["upstreams"]["edge"]
    assert ready["deployments"]["dead"]["ready"] is False and ready["deployments"]["b"]["ready"] is True
    metrics = httpx.get(gw.url + "/metrics", timeout=30).text
    assert 'ecgw_edge_deployment_up{deployment="dead"} 0' in metrics
    assert 'ecgw_edge_deployment_up{deployment="b"} 1' in metrics


def test_a_client_error_is_not_retried(start_gateway, replicas):
    a, b = replicas["a"], replicas["b"]
    gw = start_gateway(edge=_pool(deployment("a", a.url), deployment("b", b.url)))
    a.script(Reply(status=400, error_message="max_tokens too large"))
    response = _chat(gw, session_on("a", [("a", 1.0), ("b", 1.0)]))
    assert response.status_code == 400 and not b.requests  # it would fail on every replica alike


def test_an_ejected_replica_is_probed_and_readmitted():
    now = [0.0]
    fake = ModelServer("edge-late", model="edge-model")
    server = ThreadedServer(fake.app)  # bound (its port known) but not serving yet: connections are refused
    live = ModelServer("edge-live", model="edge-model")
    with ThreadedServer(live.app) as other:
        settings = EdgeSettings(deployments=[deployment("late", server.url), deployment("live", other.url)],
                                eject_after=2, readmit_after_s=30)
        pool = EdgePool.from_settings(settings, clock=lambda: now[0])  # a clock the test moves
        session = session_on("late", [("late", 1.0), ("live", 1.0)])

        async def scenario() -> None:
            await pool.check()
            assert pool.health("late").healthy  # one failure is not yet an ejection
            await pool.check()
            assert not pool.health("late").healthy
            assert [m.name for m in pool.plan(Call(session))] == ["live", "late"]
            server.start()
            now[0] = 29.0
            await pool.check()  # not due yet: an ejected member waits readmit_after_s
            assert not pool.health("late").healthy
            now[0] = 31.0
            await pool.check()
            assert pool.health("late").healthy
            assert [m.name for m in pool.plan(Call(session))] == ["late", "live"]
            await pool.aclose()

        try:
            asyncio.run(scenario())
        finally:
            server.stop()


def test_a_full_replica_spills_to_the_least_loaded_one():
    settings = EdgeSettings(deployments=[deployment("a", "http://127.0.0.1:9", max_in_flight=1),
                                         deployment("b", "http://127.0.0.1:9"),
                                         deployment("c", "http://127.0.0.1:9")])
    pool = EdgePool.from_settings(settings)
    members = [("a", 1.0), ("b", 1.0), ("c", 1.0)]
    session = session_on("a", members)
    by_name = {m.name: m for m in pool.members}
    assert pool.plan(Call(session))[0].name == "a"
    pool.begin(by_name["a"])  # a is at its limit
    second = pool.plan(Call(session))[1].name  # the one rendezvous ranks next
    pool.begin(by_name[second])
    spill = pool.plan(Call(session))
    assert spill[0].name == ({"b", "c"} - {second}).pop()  # the least loaded, not merely the next in rank
    assert spill[-1].name == "a"  # full, yet tried last rather than failing


def test_each_tenant_gets_its_own_cache_salt_and_a_request_cannot_name_one(start_gateway, replicas):
    a = replicas["a"]
    gw = start_gateway(edge=_pool(deployment("a", a.url)), server={"api_keys": ["key-one", "key-two"]})
    prompt = "the same long shared system prompt " * 8
    for key in ("key-one", "key-two", "key-one"):
        assert _chat(gw, "same-session", prompt, key=key).status_code == 200
    salts = [r["cache_salt"] for r in a.requests]
    assert salts[0] != salts[1] and salts[0] == salts[2]
    # the second tenant's identical prompt found nothing of the first's in the prefix cache
    cached = [u["prompt_tokens_details"]["cached_tokens"] for u in a.usages]
    assert cached[:2] == [0, 0] and cached[2] > 0
    forged = _chat(gw, "other", prompt, key="key-two", cache_salt=salts[0])
    assert forged.status_code == 200 and a.requests[-1]["cache_salt"] == salts[1]
    assert a.usages[-1]["prompt_tokens_details"]["cached_tokens"] > 0  # its own tenant's prefix, not key-one's


def test_a_server_that_takes_no_cache_salt_gets_none(start_gateway, replicas):
    a = replicas["a"]
    gw = start_gateway(edge=_pool(deployment("a", a.url, compat={"cache_salt": False})))
    assert _chat(gw, "s", cache_salt="chosen-by-the-client").status_code == 200
    assert "cache_salt" not in a.requests[-1]


def test_usage_groups_by_deployment(tmp_path, start_gateway, replicas):
    from accounting.factory import build_record_builder
    from accounting.store import UsageStore

    a, b = replicas["a"], replicas["b"]
    gw = start_gateway(edge=_pool(deployment("a", a.url), deployment("b", b.url)))
    for n in range(8):
        assert _chat(gw, f"usage-{n}").status_code == 200
    builder = build_record_builder(gw.settings.accounting)
    store = UsageStore.from_url(f"sqlite:///{tmp_path / 'usage.sqlite3'}")
    store.open()
    store.insert([builder.build(call) for call in gw.meter.calls])
    rows = {r["group"]: r["requests"] for r in store.aggregate("deployment")}
    assert rows == {"a": len(a.requests), "b": len(b.requests)} and sum(rows.values()) == 8
    store.dispose()


def test_the_pool_names_only_configured_deployments():
    with pytest.raises(ValueError, match="unique"):
        EdgeSettings(deployments=[deployment("a", "http://x"), deployment("a", "http://y")])
    assert cache_salt("o.1") != cache_salt("o.2") and cache_salt(None) == cache_salt(None)


def test_round_robin_takes_turns_whatever_the_session():
    settings = EdgeSettings(deployments=[deployment(n, "http://127.0.0.1:9") for n in "abc"], balance="round-robin")
    pool = EdgePool.from_settings(settings)
    firsts = [pool.plan(Call("one-session"))[0].name for _ in range(6)]
    assert firsts == ["b", "c", "a", "b", "c", "a"]  # no affinity: the baseline the bench compares with
