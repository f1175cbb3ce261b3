"""Reloading the doors (``gateway.egress.doors.DoorsPart``) over real HTTP: the edge deployment list, the cloud model, a
privacy rule and a price change in the file, ``POST /admin/v1/reload``, and the next request uses them; a member the
reload adds is probed before it serves, one it removes is closed once the stream that still used it has finished;
a bad file is refused with 400 and the bad key in ``param``, and the running doors keep serving."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from accounting.calls import MemoryMeter
from accounting.factory import build_record_builder
from accounting.settings import AccountingSettings
from gateway.app import create_app
from gateway.config.settings import load_settings
from gateway.egress.doors import Doors
from gateway.egress.pools.rendezvous import rank
from gateway.service import Services
from tests.door import GuardedCloud, guarded_services, guarded_targets
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer
from tests.fleet.conftest import closed_port, deployment

ADMIN, USER = "sk-admin", "sk-user"
PRICE = {"input": 1.0, "output": 2.0}


def _config(tmp: Path, cloud: ModelServer, edge: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "server": {"api_keys": [USER], "admin_keys": [{"name": "ops", "key": ADMIN}]},
        "edge": {"deployments": edge, "read_timeout_s": 10, "health_interval_s": 3600},
        "cloud": {"model": "openai/gpt-test", "api_base": cloud.url + "/v1",  # type: ignore[attr-defined]
                  "api_key_env": None, "timeout_s": 10},
        "policy": {"default": "cloud-only"},
        "sessions": {"store": "sqlite", "sqlite_path": str(tmp / "sessions.sqlite3")},
        "secrets": {"key_file": str(tmp / "ecgw.key")},
        "database_url": f"sqlite:///{tmp / 'gw.sqlite3'}",
        "privacy": {"layers": {"ner": False}, "audit_spill_path": None},
        "accounting": {"spill_path": None, "litellm_fallback": False, "prices": {"gpt-test": PRICE}},
    }


class Gateway:
    def __init__(self, url: str, services: Services, meter: MemoryMeter, path: Path) -> None:
        self.url, self.services, self.meter, self.path = url, services, meter, path

    def write(self, config: dict[str, Any]) -> None:
        self.path.write_text(yaml.safe_dump(config))

    def reload(self) -> httpx.Response:
        return httpx.post(self.url + "/admin/v1/reload", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30)

    def session_on(self, name: str, members: list[str], tag: str = "s") -> str:
        """A session id of this caller's that affinity ranks on ``name`` first (the owner namespaces it)."""
        prefix = self.services.tenancy.authenticate({"authorization": f"Bearer {USER}"}).prefix
        weighted = [(m, 1.0) for m in members]
        for n in range(10_000):
            if members[rank(f"{prefix}{tag}-{n}", weighted)[0]] == name:
                return f"{tag}-{n}"
        raise AssertionError(f"no session maps to {name}")

    def chat(self, session: str, text: str = "hi", **body: Any) -> httpx.Response:
        return httpx.post(self.url + "/v1/chat/completions", timeout=30,
                          headers={"Authorization": f"Bearer {USER}", "X-Session-Id": session},
                          json={"messages": [{"role": "user", "content": text}], **body})


@pytest.fixture()
def start(tmp_path: Path) -> Iterator[Callable[[dict[str, Any]], Gateway]]:
    started: list[ThreadedServer] = []

    def run(config: dict[str, Any]) -> Gateway:
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        settings = load_settings(path)
        meter = MemoryMeter()
        guards: list[GuardedCloud] = []  # every cloud target's transport wears the door's guard
        services = guarded_services(settings, config_path=str(path), meter=meter,
                                    cloud_transport=guarded_targets(guards))
        server = ThreadedServer(create_app(settings, services=services)).start()
        started.append(server)
        return Gateway(server.url, services, meter, path)

    yield run
    for server in started:
        server.stop()


def _member_closed(doors: Doors, name: str) -> bool:
    member = next(m for m in doors._edge.members if m.name == name)  # type: ignore[attr-defined]
    session = member.upstream._session  # type: ignore[attr-defined]
    return session is not None and bool(session.closed)


def test_edge_deployments_reload_added_probed_removed_drained(tmp_path, start, replicas, cloud):
    a, b = replicas["a"], replicas["b"]
    config = _config(tmp_path, cloud, [deployment("a", a.url)])
    config["policy"] = {"default": "edge-only"}
    gw = start(config)
    on_b = gw.session_on("b", ["a", "b", "gone"])
    assert gw.chat(on_b).headers["x-ecgw-edge-deployment"] == "a"  # one member: everything goes to a
    # b and a member nobody answers for are added: b serves its sessions at once, the dead one never
    dead = closed_port()
    config["edge"]["deployments"] = [deployment("a", a.url), deployment("b", b.url),
                                     deployment("gone", f"http://127.0.0.1:{dead}")]
    gw.write(config)
    answer = gw.reload()
    assert answer.status_code == 200 and answer.json()["not_reloadable"] == [], answer.text
    ready = httpx.get(gw.url + "/readyz").json()["upstreams"]["edge"]["deployments"]
    assert ready["gone"]["ready"] is False and ready["b"]["ready"] is True  # probed before it served
    assert ready["b"]["in_flight_scope"] == "worker"  # max_in_flight bounds each worker's own calls
    on_gone = gw.session_on("gone", ["a", "b", "gone"], tag="g")
    assert gw.chat(on_gone).status_code == 200
    assert gw.chat(on_b).headers["x-ecgw-edge-deployment"] == "b"
    failed = [c for c in gw.meter.calls if c.deployment == "gone"]
    assert failed == []  # the unanswering member started ejected: no request was spent on it
    # a stream in flight on a while a reload removes a: it finishes there, and a is closed after it
    before = gw.services.doors
    on_a = gw.session_on("a", ["a", "b", "gone"], tag="a")
    a.script(Reply(content=" ".join(f"w{i}" for i in range(10)), chunk_delay_s=0.05))
    with httpx.Client(timeout=30) as client, client.stream(
            "POST", gw.url + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}],
                                                           "stream": True},
            headers={"Authorization": f"Bearer {USER}", "X-Session-Id": on_a}) as stream:
        assert stream.headers["x-ecgw-edge-deployment"] == "a"
        lines = stream.iter_lines()
        next(line for line in lines if line.startswith("data: "))
        config["edge"]["deployments"] = [deployment("b", b.url)]
        gw.write(config)
        assert gw.reload().status_code == 200
        assert not _member_closed(before, "a")  # still streaming through it
        rest = [line for line in lines if line.startswith("data: ")]
    assert rest[-1] == "data: [DONE]"
    assert gw.chat(on_a).headers["x-ecgw-edge-deployment"] == "b"
    deadline = 50  # the old doors retire in a task after the stream's request ends: a bound, not a measurement
    while not _member_closed(before, "a") and deadline:
        httpx.get(gw.url + "/healthz")
        deadline -= 1
    assert _member_closed(before, "a") and not _member_closed(gw.services.doors, "b")  # b was kept, not rebuilt


def test_cloud_model_privacy_rule_and_price_reload(tmp_path, start, replicas, cloud):
    a = replicas["a"]
    config = _config(tmp_path, cloud, [deployment("a", a.url)])
    gw = start(config)
    assert gw.chat("s1", "mail me at jane@example.com").status_code == 200
    first = cloud.requests[-1]
    assert first["model"] == "gpt-test" and "jane@example.com" not in json.dumps(first)  # pseudonymised
    config["cloud"]["model"] = "openai/gpt-other"
    config["privacy"]["actions"] = {"EMAIL_ADDRESS": "block"}
    config["accounting"]["prices"] = {"gpt-test": PRICE, "gpt-other": {"input": 10.0, "output": 20.0}}
    gw.write(config)
    assert gw.reload().status_code == 200
    assert gw.chat("s2", "plain words").status_code == 200
    assert cloud.requests[-1]["model"] == "gpt-other"  # the next request reaches the new model
    sent = len(cloud.requests)
    blocked = gw.chat("s3", "mail me at jane@example.com")
    assert blocked.status_code == 200 and blocked.headers["x-ecgw-route"] == "edge"  # the new rule: block
    assert len(cloud.requests) == sent and "jane@example.com" in json.dumps(a.requests[-1])
    # the price table of each call is its snapshot's, whenever the writer builds its row
    builder = build_record_builder(AccountingSettings(litellm_fallback=False))  # no prices of its own
    rows = [builder.build(c) for c in gw.meter.calls if c.side == "cloud"]
    old, new = rows[0], rows[1]
    assert (old["model"], new["model"]) == ("openai/gpt-test", "openai/gpt-other")
    for row, (inp, out) in ((old, (1.0, 2.0)), (new, (10.0, 20.0))):
        assert row["cost_usd"] == pytest.approx((row["raw_input_tokens"] * inp + row["output_tokens"] * out) / 1e6)
        assert row["cost_usd"] > 0


@pytest.mark.parametrize(("change", "param"), [
    (lambda c, url: c["edge"].update(deployments=[deployment("a", url), {"name": "b", "model": "m"}]),
     "edge.deployments.1.base_url"),
    (lambda c, url: c["cloud"].update(fallbacks={"default": ["nowhere"]}), "cloud"),
    (lambda c, url: c["privacy"].update(units_files=["/nonexistent/sensitive_items.json"]),
     "privacy.units_files.0"),
    (lambda c, url: c["accounting"]["prices"].update({"gpt-test": {"input": -1, "output": 1}}),
     "accounting.prices.gpt-test.input"),
])
def test_a_bad_doors_section_is_refused_and_the_running_doors_serve(tmp_path, start, replicas, cloud, change, param):
    a = replicas["a"]
    config = _config(tmp_path, cloud, [deployment("a", a.url)])
    gw = start(config)
    doors = gw.services.doors
    change(config, a.url)
    gw.write(config)
    answer = gw.reload()
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == param and answer.json()["error"]["code"] == "invalid_config"
    assert gw.services.doors is doors  # the running snapshot's doors, untouched
    assert gw.chat("after").status_code == 200 and cloud.requests[-1]["model"] == "gpt-test"
