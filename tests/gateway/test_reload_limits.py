"""What a reload changes beyond policies and keys: budgets and rate limits (``limits``), the learning knobs
(``learning``), and the prices a cost target's feedback and a budget's reservation use — each in force from the next
request, on every replica sharing the store; a bad value keeps the running configuration and names its key."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.app import create_app
from gateway.config.settings import Settings, load_settings
from gateway.service import Services
from gateway.state.stores import build_session_store
from tests.door import guarded_services
from tests.fakes.model_server import Reply
from tests.fakes.threaded import ThreadedServer
from tests.gateway.test_reload import _chat, _config, _reload, _write

NOW = 1_800_000_030.0  # one fixed minute: a rate limit's window never turns over between two requests
PRICE = {"openai/gpt-test": {"input": 1000.0, "output": 2000.0}}  # USD per 1M tokens


@dataclass
class Running:
    url: str
    services: Services


@pytest.fixture()
def gateway(tmp_path: Path) -> Iterator[Callable[[Path], Running]]:
    """A gateway read from ``path`` (a reload reads the file again), its clock fixed at ``NOW``."""
    started: list[ThreadedServer] = []

    def start(path: Path) -> Running:
        settings = load_settings(path)
        services = guarded_services(settings, config_path=str(path), reload_poll_s=0.2, clock=lambda: NOW)
        server = ThreadedServer(create_app(settings, services=services)).start()
        started.append(server)
        return Running(server.url, services)

    yield start
    for server in started:
        server.stop()


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30  # a bound, not a measurement: replicas poll the store every 0.2 s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_a_rate_limit_tightened_by_a_reload_holds_from_the_next_request_on_every_replica(tmp_path, edge, cloud,
                                                                                         gateway):
    config = _config(tmp_path, edge, cloud, limits={"default_key": {"rpm": 100}})
    path = _write(tmp_path / "config.yaml", config)
    a, b = gateway(path), gateway(path)
    for url in (a.url, b.url, a.url):  # three requests of this minute, counted in the store both replicas share
        answer = _chat(url)
        assert answer.status_code == 200 and answer.headers["x-ratelimit-limit-requests"] == "100"
    config["limits"] = {"default_key": {"rpm": 4}}
    _write(path, config)
    reloaded = _reload(a.url)
    assert reloaded.status_code == 200 and reloaded.json()["not_reloadable"] == [], reloaded.text
    assert _chat(a.url).headers["x-ratelimit-limit-requests"] == "4"  # the fourth of this minute
    limited = _chat(a.url)
    assert limited.status_code == 429 and limited.json()["error"]["code"] == "rate_limit_exceeded", limited.text
    _until(lambda: _chat(b.url).status_code == 429, "replica B never enforced the reloaded rpm")
    assert _chat(b.url).headers["x-ratelimit-limit-requests"] == "4"


@pytest.mark.parametrize(("limits", "param"), [
    ({"arms": {"no-such:arm": {"rpm": 1}}}, "limits.arms.no-such:arm"),
    ({"sessions": {"cloud_usd": {"amount": 1, "window": "1d"}}}, "limits.sessions.cloud_usd"),  # gpt-test: no price
])
def test_a_bad_limit_keeps_the_running_limits_and_names_the_key(tmp_path, edge, cloud, gateway, caplog, limits,
                                                               param):
    config = _config(tmp_path, edge, cloud, limits={"default_key": {"rpm": 100}},
                     accounting={"spill_path": None, "litellm_fallback": False})
    path = _write(tmp_path / "config.yaml", config)
    running = gateway(path)
    _write(path, {**config, "limits": limits})
    with caplog.at_level(logging.ERROR, logger="ecgw"):
        answer = _reload(running.url)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_config"
    assert error["param"] == param, error
    assert any(param in r.getMessage() and "refused" in r.getMessage() for r in caplog.records)
    assert _chat(running.url).headers["x-ratelimit-limit-requests"] == "100"  # the running limits still hold


def test_a_cost_target_a_reload_leaves_without_a_price_is_refused(tmp_path, edge, cloud, gateway):
    knobs = {"task-routing": {"scorer": "rules", "target_cost_per_session": 0.5}}
    config = _config(tmp_path, edge, cloud, accounting={"spill_path": None, "litellm_fallback": False,
                                                        "prices": PRICE},
                     policy={"default": "task-routing", "knobs": knobs})
    path = _write(tmp_path / "config.yaml", config)
    running = gateway(path)
    _write(path, {**config, "accounting": {**config["accounting"], "prices": {}}})
    answer = _reload(running.url)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == "policy.knobs.task-routing.target_cost_per_session"


def test_a_shadow_rate_raised_by_a_reload_shadows_the_next_edge_step(tmp_path, edge, cloud, gateway):
    edge_answers = {"default": "step-routing", "knobs": {"step-routing": {"tau": 10, "missing_logprobs": "edge"}}}
    config = _config(tmp_path, edge, cloud, policy=edge_answers, learning={"shadow_rate": 0.0, "seed": 3})
    path = _write(tmp_path / "config.yaml", config)
    running = gateway(path)
    assert _chat(running.url, session="before").headers["x-ecgw-route"] == "edge"
    assert running.services.shadows.started == 0
    config["learning"] = {"shadow_rate": 1.0, "seed": 3, "max_concurrent": 2}
    _write(path, config)
    reloaded = _reload(running.url)
    assert reloaded.status_code == 200 and reloaded.json()["not_reloadable"] == [], reloaded.text
    assert _chat(running.url, session="after").headers["x-ecgw-route"] == "edge"
    _until(lambda: len(cloud.requests) == 1, "the step after the reload was not shadowed")
    assert running.services.shadows.started == 1


def _tracker(settings: Settings) -> dict[str, Any]:
    """The cost target's state as every replica reads it (the shared, encrypted session store)."""
    store = build_session_store(settings)

    async def read() -> Any:
        try:
            return await store.get("~target/task-routing/-", "tracker")
        finally:
            await store.aclose()

    found = asyncio.run(read())
    assert isinstance(found, dict)
    return found


def test_a_price_reload_reaches_the_cost_targets_feedback(tmp_path, edge, cloud, gateway):
    """The tracker counts a cloud call at the prices of the snapshot its step started on: the call's own price
    table (``PricedMeter`` stamps it), else the snapshot's ``call_cost`` — no longer the prices read at start."""
    table = tmp_path / "routes.json"
    table.write_text(json.dumps({"t1": {"decision": "cloud"}}))  # the cloud without a warm-up
    knobs = {"task-routing": {"scorer": "table", "table_path": str(table), "target_cost_per_session": 0.5}}
    config = _config(tmp_path, edge, cloud, accounting={"spill_path": None, "prices": PRICE},
                     policy={"default": "task-routing", "knobs": knobs})
    path = _write(tmp_path / "config.yaml", config)
    running = gateway(path)

    def ask(session: str) -> float:
        """A cloud step; its usage at the old and at the tenfold price."""
        cloud.script(Reply(content="from the cloud"))
        answer = _chat(running.url, session=session, metadata={"task_id": "t1"})
        assert answer.status_code == 200 and answer.headers["x-ecgw-route"] == "cloud", answer.text
        usage = cloud.usages[-1]
        return float(usage["prompt_tokens"] * 1000.0 + usage["completion_tokens"] * 2000.0) / 1e6

    first = ask("one")
    assert _tracker(running.services.settings)["usd"] == pytest.approx(first)
    config["accounting"] = {**config["accounting"],
                            "prices": {"openai/gpt-test": {"input": 10000.0, "output": 20000.0}}}
    _write(path, config)
    assert _reload(running.url).status_code == 200
    second = ask("two")
    assert _tracker(running.services.settings)["usd"] == pytest.approx(first + 10 * second)


def test_a_price_reload_reaches_the_budgets_reservations(tmp_path, edge, cloud, gateway):
    """A cloud call reserves its estimate (prompt and ``max_tokens`` at the price) before it goes: 0.03 USD of a
    0.1 USD budget at the first price, 0.3 at the tenfold one, which the budget no longer holds."""
    config = _config(tmp_path, edge, cloud, accounting={"spill_path": None, "prices": PRICE},
                     policy={"default": "cloud-only"},
                     limits={"default_key": {"cloud_usd": {"amount": 0.1, "window": "1d"}}})
    path = _write(tmp_path / "config.yaml", config)
    running = gateway(path)
    cloud.script(Reply(content="from the cloud"))
    before = _chat(running.url, session="one", max_tokens=10)
    assert before.headers["x-ecgw-route"] == "cloud" and "x-ecgw-fallback" not in before.headers, before.text
    config["accounting"] = {**config["accounting"],
                            "prices": {"openai/gpt-test": {"input": 10000.0, "output": 20000.0}}}
    _write(path, config)
    assert _reload(running.url).status_code == 200
    after = _chat(running.url, session="two", max_tokens=10)
    assert after.status_code == 200 and after.headers["x-ecgw-route"] == "edge", after.text
    assert after.headers["x-ecgw-fallback"] == "budget"
