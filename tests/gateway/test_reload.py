"""Reloading the configuration without a restart: POST /admin/v1/reload (and SIGHUP), validated whole, swapped
whole; requests in flight finish on the snapshot they started with; replicas sharing a store converge."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gateway.app import create_app
from gateway.config.reference import restart_reason
from gateway.config.settings import load_settings
from tests.door import guarded_services, guarded_targets
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer

ADMIN, USER, LATER = "sk-admin", "sk-user", "sk-later"


def _config(tmp: Path, edge: ModelServer, cloud: ModelServer, **sections: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "server": {"api_keys": [USER], "admin_keys": [{"name": "ops", "key": ADMIN}]},
        "edge": {"base_url": edge.url + "/v1", "model": "edge-model", "read_timeout_s": 10},  # type: ignore[attr-defined]
        "cloud": {"model": "openai/gpt-test", "api_base": cloud.url + "/v1",  # type: ignore[attr-defined]
                  "api_key_env": None, "timeout_s": 10},
        "sessions": {"store": "sqlite", "sqlite_path": str(tmp / "sessions.sqlite3")},
        "secrets": {"key_file": str(tmp / "ecgw.key")},
        "database_url": f"sqlite:///{tmp / 'gw.sqlite3'}",
        "privacy": {"layers": {"ner": False}, "audit_spill_path": None},
        "accounting": {"spill_path": None},
    }
    for key, value in sections.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    return config


@pytest.fixture()
def gateway(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """A gateway read from ``path`` (a reload reads the file again), built with ``parts``; its URL."""
    started: list[ThreadedServer] = []

    def start(path: Path, **parts: Any) -> str:
        settings = load_settings(path)
        services = guarded_services(settings, config_path=str(path), reload_poll_s=0.2, **parts)
        server = ThreadedServer(create_app(settings, services=services)).start()
        started.append(server)
        return server.url

    yield start
    for server in started:
        server.stop()


def _write(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(config))
    return path


def _reload(url: str, key: str = ADMIN) -> httpx.Response:
    return httpx.post(url + "/admin/v1/reload", headers={"Authorization": f"Bearer {key}"}, timeout=30)


def _chat(url: str, key: str = USER, session: str = "s", **body: Any) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", timeout=30,
                      headers={"Authorization": f"Bearer {key}", "X-Session-Id": session},
                      json={"messages": [{"role": "user", "content": "hi"}], **body})


def test_a_valid_file_is_swapped_in_and_what_needs_a_restart_is_named(tmp_path, edge, cloud, gateway):
    config = _config(tmp_path, edge, cloud)
    path = _write(tmp_path / "config.yaml", config)
    url = gateway(path)
    assert _chat(url, session="before").headers["x-ecgw-policy"] == "edge-only"
    assert _chat(url, LATER).status_code == 401
    ui = lambda key: httpx.get(url + "/ui", headers={"Authorization": f"Bearer {key}"}).status_code  # noqa: E731
    assert ui("sk-ops-later") == 401
    config["policy"] = {"default": "cloud-only"}
    config["server"] = {**config["server"], "api_keys": [USER, {"name": "later", "key": LATER, "tenant": "t2"}],
                        "admin_keys": [{"name": "ops", "key": ADMIN}, {"name": "ops2", "key": "sk-ops-later"}],
                        "port": 4999}
    _write(path, config)
    answer = _reload(url)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"reloaded": True, "version": 1, "not_reloadable": ["server.port"],
                             "why": {"server.port": restart_reason("server.port")}, "removed_keys": []}
    cloud.script(Reply(content="from the cloud"), Reply(content="again"))
    assert _chat(url, session="after").headers["x-ecgw-policy"] == "cloud-only"
    assert _chat(url, LATER, session="other").status_code == 200  # a key added by the reload
    assert ui("sk-ops-later") == 200  # the dashboard reads the admin keys of the request's snapshot too
    assert _chat(url, session="before").headers["x-ecgw-policy"] == "edge-only"  # a session's sticky choice stays
    assert _reload(url).json()["version"] == 2  # store-wide, one more each time


@pytest.mark.parametrize(("change", "param"), [
    ({"policy": {"default": "no-such-policy"}}, "policy.default"),
    ({"server": {"api_keys": [{"name": "ci", "key_env": "ECGW_TEST_UNSET_VARIABLE"}]}}, "server.api_keys.0.key_env"),
    ({"policy": {"knobs": {"random-matched": {"no_such_knob": 1}}}}, "policy.knobs.random-matched"),
    ({"policy": {"knobs": {"no-such-policy": {}}}}, "policy.knobs.no-such-policy"),
])
def test_a_bad_file_keeps_the_running_configuration_and_names_the_key(tmp_path, edge, cloud, gateway, caplog,
                                                                       change, param):
    config = _config(tmp_path, edge, cloud)
    path = _write(tmp_path / "config.yaml", config)
    url = gateway(path)
    bad = {**config, **{k: ({**config.get(k, {}), **v}) for k, v in change.items()}}
    _write(path, bad)
    with caplog.at_level(logging.ERROR, logger="ecgw"):
        answer = _reload(url)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_config"
    assert error["param"] is not None and error["param"].startswith(param), error
    assert any(param.split(".")[0] in r.getMessage() and "refused" in r.getMessage() for r in caplog.records)
    assert _chat(url).status_code == 200  # the running configuration still serves


def test_reload_needs_an_admin_key_and_every_call_is_audited(tmp_path, edge, cloud, gateway):
    path = _write(tmp_path / "config.yaml", _config(tmp_path, edge, cloud))
    url = gateway(path)
    refused = _reload(url, USER)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "admin_key_required"
    assert _reload(url).status_code == 200
    from gateway.admin.database import AdminDatabase

    db = AdminDatabase.from_url(f"sqlite:///{tmp_path / 'gw.sqlite3'}")
    try:
        actions = [(a["who"], a["action"], a["status"]) for a in db.actions()]
    finally:
        db.dispose()
    assert actions[-2][1:] == ("config.reload", 403) and actions[-2][0].startswith("o.")  # a bare key: its hash
    assert actions[-1] == ("ops", "config.reload", 200)
    assert USER not in str(actions) and ADMIN not in str(actions)


def test_a_stream_in_flight_finishes_on_the_configuration_it_started_with(tmp_path, edge, cloud, gateway):
    config = _config(tmp_path, edge, cloud)
    path = _write(tmp_path / "config.yaml", config)
    url = gateway(path)
    words = " ".join(f"w{i}" for i in range(12))
    edge.script(Reply(content=words, chunk_delay_s=0.1))
    body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
    with httpx.Client(timeout=30) as client, client.stream(
            "POST", url + "/v1/chat/completions", json=body,
            headers={"Authorization": f"Bearer {USER}", "X-Session-Id": "long"}) as stream:
        lines = stream.iter_lines()
        first = next(line for line in lines if line.startswith("data: "))
        # mid-stream: the caller's key is removed and the default policy changed
        config["server"] = {**config["server"], "api_keys": [LATER]}
        config["policy"] = {"default": "cloud-only"}
        _write(path, config)
        assert _reload(url).status_code == 200
        rest = [line for line in lines if line.startswith("data: ")]
    text = "".join(json.loads(x[6:])["choices"][0]["delta"].get("content") or ""
                   for x in [first, *rest] if x != "data: [DONE]" and json.loads(x[6:]).get("choices"))
    assert stream.status_code == 200 and rest[-1] == "data: [DONE]" and text.replace(" ", "") == words.replace(" ", "")
    assert _chat(url).status_code == 401  # the next request is on the new configuration


def test_two_replicas_sharing_a_store_agree_after_a_reload(tmp_path, edge, cloud, gateway):
    config = _config(tmp_path, edge, cloud)
    path = _write(tmp_path / "config.yaml", config)
    a, b = gateway(path), gateway(path)
    config["server"] = {**config["server"], "api_keys": [USER, LATER]}
    _write(path, config)
    assert _reload(a).json()["version"] == 1
    assert _chat(a, LATER).status_code == 200
    deadline = time.monotonic() + 30  # a bound, not a measurement: B polls the store every 0.2 s
    while _chat(b, LATER).status_code == 401:
        assert time.monotonic() < deadline, "replica B never adopted version 1"
        time.sleep(0.2)
    assert _reload(b).json()["version"] == 2  # the version is the store's, not the replica's


def test_a_request_holds_its_snapshot_while_a_reload_swaps_in_another(tmp_path, edge, cloud):
    from gateway.live.snapshot import Configuration

    settings = load_settings(_write(tmp_path / "c.yaml", _config(tmp_path, edge, cloud)))
    services = guarded_services(settings)
    config: Configuration = services.config
    before = config.current()

    async def swap_inside_a_request() -> None:
        with config.pinned() as held:
            newer, _ = config.prepare(load_settings(None, policy={"default": "cloud-only"}), 7)
            await config.swap(newer)
            assert config.current() is held is before  # inside the request: its own snapshot
        assert config.current() is newer and newer.settings.policy.default == "cloud-only"
        await services.aclose()

    asyncio.run(swap_inside_a_request())


def test_a_lease_holds_its_requests_snapshot_after_the_request_until_it_is_released(tmp_path, edge, cloud):
    import dataclasses

    from gateway.live.snapshot import Configuration, Snapshot

    class Recording:  # a snapshot part that records what is retired
        name = "recording"
        paths: tuple[str, ...] = ()

        def __init__(self) -> None:
            self.retired: list[object] = []

        def build(self, settings: object, running: object | None) -> object:
            return object()

        async def start(self, built: object, running: object | None) -> None:
            return None

        async def retire(self, old: object, alive: object) -> None:
            self.retired.append(old)

    services = guarded_services(load_settings(_write(tmp_path / "c.yaml", _config(tmp_path, edge, cloud))))
    part = Recording()
    first = dataclasses.replace(services.config.current(), parts={part.name: object()})

    def build(settings: Any, version: int, running: Snapshot | None) -> Snapshot:
        return dataclasses.replace(first, version=version, settings=settings, parts={part.name: object()})

    config = Configuration(first, build, parts=[part])

    async def lease_past_the_request() -> None:
        with config.pinned():
            lease = config.lease()  # taken inside the request: its snapshot
        newer, _ = config.prepare(load_settings(None, policy={"default": "cloud-only"}), 1)
        await config.swap(newer)
        for _ in range(3):
            await asyncio.sleep(0)
        assert part.retired == []  # the request has ended, the lease still holds its snapshot
        assert config.current() is newer and lease.context().run(config.current) is first
        lease.release()
        lease.release()  # once only
        await config.aclose()
        assert part.retired == [first.parts[part.name], newer.parts[part.name]]
        await services.aclose()

    asyncio.run(lease_past_the_request())


# --- a reload that would switch authentication off, and every other failure (issue 37, finding 1) -----------------


def _actions(tmp: Path) -> list[dict[str, Any]]:
    from gateway.admin.database import AdminDatabase

    db = AdminDatabase.from_url(f"sqlite:///{tmp / 'gw.sqlite3'}")
    try:
        return db.actions()
    finally:
        db.dispose()


def _anonymous(url: str) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", timeout=30, headers={"X-Session-Id": "anon"},
                      json={"messages": [{"role": "user", "content": "hi"}]})


@pytest.mark.parametrize(("file", "says"), [
    ("", "is empty"),
    ("# every line commented out\n", "is empty"),
    ("policy:\n  default: edge-only\n", "server.admin_keys: ops, server.api_keys.0 (a bare key)"),
])
def test_a_file_that_would_leave_no_key_is_refused_and_the_keys_stay(tmp_path, edge, cloud, gateway, file, says):
    path = _write(tmp_path / "config.yaml", _config(tmp_path, edge, cloud))
    url = gateway(path)
    path.write_text(file)
    answer = _reload(url)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_config" and says.replace("server.admin_keys: ops, ", "") in error["message"]
    assert USER not in answer.text and ADMIN not in answer.text  # a bare key is named by its place, not its secret
    assert _anonymous(url).status_code == 401 and _chat(url).status_code == 200  # the running keys stay
    last = _actions(tmp_path)[-1]
    assert (last["who"], last["action"], last["status"]) == ("ops", "config.reload", 400)
    assert last["detail"].startswith("refused") and ADMIN not in last["detail"] and USER not in last["detail"]


def test_dropping_every_admin_key_is_refused_naming_them(tmp_path, edge, cloud, gateway):
    config = _config(tmp_path, edge, cloud)
    path = _write(tmp_path / "config.yaml", config)
    url = gateway(path)
    _write(path, {**config, "server": {"api_keys": [USER]}})
    answer = _reload(url)
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "server.admin_keys"
    assert "server.admin_keys: ops" in answer.json()["error"]["message"]
    assert _reload(url).status_code == 400  # the admin key still opens the reload, and the file is still refused
    assert _actions(tmp_path)[-1]["detail"] == "refused: would drop server.admin_keys: ops"


def test_removing_some_keys_is_allowed_and_audited_and_auth_none_written_out_opens_the_gateway(
        tmp_path, edge, cloud, gateway):
    config = _config(tmp_path, edge, cloud)
    path = _write(tmp_path / "config.yaml", config)
    url = gateway(path)
    _write(path, {**config, "server": {"api_keys": [LATER], "admin_keys": config["server"]["admin_keys"]}})
    answer = _reload(url)
    assert answer.status_code == 200 and answer.json()["removed_keys"] == ["server.api_keys.0 (a bare key)"]
    assert _chat(url).status_code == 401 and _chat(url, LATER).status_code == 200
    assert _actions(tmp_path)[-1]["detail"] == "removed keys: server.api_keys.0 (a bare key)"
    _write(path, {**config, "server": {"auth": "none"}})
    answer = _reload(url)
    assert answer.status_code == 200, answer.text
    assert answer.json()["removed_keys"] == ["server.api_keys.0 (a bare key)", "server.admin_keys: ops"]
    assert _anonymous(url).status_code == 200  # no key anywhere, on purpose


@pytest.mark.parametrize(("write", "param"), [
    (lambda path, config: path.write_bytes(yaml.safe_dump(config).encode() + b"# caf\xe9\n"), None),
    (lambda path, config: _write(path, {**config, "cloud": {**config["cloud"], "extra_body_fields": ["api_base"],
                                                       "transport": "litellm"}}),
     "cloud.extra_body_fields"),
])
def test_every_reload_failure_is_a_400_with_an_audit_row_and_the_gateway_keeps_serving(
        tmp_path, edge, cloud, gateway, write, param):
    config = _config(tmp_path, edge, cloud)
    path = _write(tmp_path / "config.yaml", config)
    url = gateway(path, cloud_transport=guarded_targets([]))  # a reload builds the cloud's transport again
    write(path, config)
    answer = _reload(url)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_config" and error["param"] == param
    assert ("not UTF-8" if param is None else "litellm would read") in error["message"]
    assert answer.headers["x-ecgw-request-id"].startswith("req-")
    assert _actions(tmp_path)[-1]["status"] == 400
    assert _chat(url).status_code == 200


def test_a_replica_loads_the_text_the_reload_validated_not_its_own_later_copy(tmp_path, edge, cloud, gateway):
    """The good file came back before the other replica polled: it still runs the version the reload accepted
    (it used to wait for its copy's digest to match, for ever)."""
    config = _config(tmp_path, edge, cloud)
    path = _write(tmp_path / "config.yaml", config)
    a, b = gateway(path), gateway(path)
    _write(path, {**config, "server": {**config["server"], "api_keys": [USER, LATER]}})
    assert _reload(a).status_code == 200
    _write(path, config)  # changed again at once, with no reload
    deadline = time.monotonic() + 30  # a bound, not a measurement: B polls the store every 0.2 s
    while _chat(b, LATER).status_code == 401:
        assert time.monotonic() < deadline, "replica B never adopted the accepted version"
        time.sleep(0.2)


def test_a_version_record_the_store_forgot_does_not_leave_a_replica_behind(tmp_path, edge, cloud, gateway):
    """The store drops a record idle for ``sessions.ttl_s``; the next reload is numbered 1 again, and a replica
    that had seen a version 1 long ago adopts it all the same."""
    from gateway.app import build_session_store
    from gateway.live.reload import VERSION_KEY, VERSION_SESSION

    config = _config(tmp_path, edge, cloud)
    path = _write(tmp_path / "config.yaml", config)
    a, b = gateway(path), gateway(path)

    def adopted(key: str) -> None:
        deadline = time.monotonic() + 30  # a bound, not a measurement: B polls the store every 0.2 s
        while _chat(b, key).status_code == 401:
            assert time.monotonic() < deadline, f"replica B never adopted the version that adds {key}"
            time.sleep(0.2)

    _write(path, {**config, "server": {**config["server"], "api_keys": [USER, "sk-first"]}})
    assert _reload(a).json()["version"] == 1
    adopted("sk-first")
    store = build_session_store(load_settings(path))

    async def forget() -> None:
        await store.set(VERSION_SESSION, VERSION_KEY, None)
        await store.aclose()

    asyncio.run(forget())
    _write(path, {**config, "server": {**config["server"], "api_keys": [USER, LATER]}})
    assert _reload(a).json()["version"] == 1
    adopted(LATER)
