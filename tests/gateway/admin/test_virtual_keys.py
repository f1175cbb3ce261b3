"""Virtual keys at run time: created by an admin (API or CLI), shown once, never listed, owned by a tenant,
limited to a session and to policies, expiring; revoked on one replica, refused on another within seconds; every
admin action audited without a secret."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx

from gateway.admin.database import AdminDatabase
from gateway.cli.main import main
from tests.fakes.model_server import Reply
from tests.gateway import test_reload
from tests.gateway.test_reload import ADMIN, USER, _chat, _config, _write

gateway = test_reload.gateway  # the same fixture: a gateway read from a config file


def _admin(method: str, url: str, path: str, key: str = ADMIN, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, url + path, headers={"Authorization": f"Bearer {key}"}, timeout=30, **kwargs)


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30  # a bound, not a measurement: replicas poll every 0.2 s here
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_a_key_is_shown_once_works_for_its_tenant_and_is_revoked_on_every_replica(tmp_path, edge, cloud, gateway):
    path = _write(tmp_path / "config.yaml", _config(tmp_path, edge, cloud))
    a, b = gateway(path), gateway(path)
    created = _admin("POST", a, "/admin/v1/keys", json={"tenant": "acme", "policies": ["edge-only", "cloud-only"]})
    assert created.status_code == 201, created.text
    assert set(created.json()) == {"id", "key"}
    key_id, secret = created.json()["id"], created.json()["key"]
    assert _chat(a, secret).status_code == 200  # at once on the replica that made it
    _until(lambda: _chat(b, secret).status_code == 200, "replica B never learnt the new key")
    cloud.script(Reply(content="ok"))
    assert _chat(a, secret, model="ecgw/cloud-only").status_code == 200
    refused = _chat(a, secret, session="s2", model="ecgw/sketch")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "policy_not_allowed"
    usage = _admin("GET", a, "/v1/usage?by=session").json()
    assert "t.acme/s" in json.dumps(usage)  # owned by the tenant, not by a hash of the key
    listed = _admin("GET", a, "/admin/v1/keys").json()["data"]
    assert [k["id"] for k in listed] == [key_id] and listed[0]["tenant"] == "acme" and listed[0]["created_by"] == "ops"
    assert secret not in json.dumps(listed) and "hash" not in json.dumps(listed)

    assert _admin("DELETE", b, f"/admin/v1/keys/{key_id}").json() == {"id": key_id, "revoked": True}
    assert _chat(b, secret).status_code == 401
    _until(lambda: _chat(a, secret).status_code == 401, "replica A kept accepting a revoked key")
    assert _admin("DELETE", a, f"/admin/v1/keys/{key_id}").status_code == 404

    db = AdminDatabase.from_url(f"sqlite:///{tmp_path / 'gw.sqlite3'}")
    try:
        audit = [(r["who"], r["action"], r["target"], r["status"]) for r in db.actions()]
    finally:
        db.dispose()
    assert audit == [("ops", "keys.create", key_id, 201), ("ops", "keys.list", None, 200),
                     ("ops", "keys.revoke", key_id, 200), ("ops", "keys.revoke", key_id, 404)]
    assert secret not in str(audit) and ADMIN not in str(audit)


def test_bound_expiring_and_refused_keys(tmp_path, edge, cloud, gateway):
    url = gateway(_write(tmp_path / "config.yaml", _config(tmp_path, edge, cloud)))
    assert _admin("POST", url, "/admin/v1/keys", USER, json={"tenant": "x"}).status_code == 403  # not an admin
    for body, param in (({"tenant": "has space"}, "tenant"), ({"tenant": "x", "policies": ["nope"]}, "policies"),
                        ({"tenant": "x", "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
                        ({"tenant": "x", "expires_at": "2999-01-01T00:00:00"}, "expires_at"),
                        ({"tenant": "x", "endpoint": "http://evil"}, "endpoint")):
        bad = _admin("POST", url, "/admin/v1/keys", json=body)
        assert bad.status_code == 400 and bad.json()["error"]["param"] == param, (body, bad.text)
    for raw in (b"not json", b"[1]", b'{"tenant": ' + b"[" * 100 + b"]" * 100 + b"}",
                b'{"tenant": "\xff"}'):  # the one body reader's refusals
        bad = _admin("POST", url, "/admin/v1/keys", content=raw)
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "body", (raw, bad.text)
    bound = _admin("POST", url, "/admin/v1/keys", json={"tenant": "acme", "session": "run-9"}).json()["key"]
    assert _chat(url, bound, session="other").headers["x-ecgw-session"] == "run-9"
    soon = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 2))
    brief = _admin("POST", url, "/admin/v1/keys", json={"tenant": "acme", "expires_at": soon}).json()["key"]
    assert _chat(url, brief).status_code == 200
    _until(lambda: _chat(url, brief).status_code == 401, "an expired key kept working")
    assert _chat(url, brief).json()["error"]["code"] == "expired_api_key"


def test_the_cli_creates_lists_and_revokes_over_the_database(tmp_path, edge, cloud, gateway, capsys):
    path = _write(tmp_path / "config.yaml", _config(tmp_path, edge, cloud))
    url = gateway(path)
    assert main(["keys", "create", "--config", str(path), "--tenant", "acme", "--policies", "edge-only"]) == 0
    made = json.loads(capsys.readouterr().out)
    _until(lambda: _chat(url, made["key"]).status_code == 200, "the gateway never learnt the CLI's key")
    assert main(["keys", "list", "--config", str(path)]) == 0
    listed = capsys.readouterr().out
    assert made["id"] in listed and made["key"] not in listed
    assert main(["keys", "revoke", made["id"], "--config", str(path)]) == 0
    _until(lambda: _chat(url, made["key"]).status_code == 401, "the gateway kept a key the CLI revoked")
    assert main(["keys", "create", "--config", str(path), "--tenant", "acme", "--policies", "nope"]) == 2


def test_a_virtual_keys_own_limits_hold_and_bad_limits_are_refused(tmp_path, edge, cloud, gateway):
    """Limits given at a key's creation are enforced like ``limits.keys.<name>`` (the config here names no limit at
    all), and a limit of the wrong shape is refused naming its field."""
    url = gateway(_write(tmp_path / "config.yaml", _config(tmp_path, edge, cloud)))
    for limits, param in (({"cloud_calls": {"amount": 1}}, "limits.cloud_calls.window"),
                          ({"cloud_calls": {"amount": 1, "window": "1d"}, "endpoint": "http://evil"}, "limits.endpoint")):
        bad = _admin("POST", url, "/admin/v1/keys", json={"tenant": "acme", "limits": limits})
        assert bad.status_code == 400 and bad.json()["error"]["param"] == param, (limits, bad.text)
    made = _admin("POST", url, "/admin/v1/keys", json={
        "tenant": "acme", "limits": {"cloud_calls": {"amount": 2, "window": "1d"}}}).json()
    other = _admin("POST", url, "/admin/v1/keys", json={"tenant": "beta"}).json()["key"]
    cloud.script(*[Reply(content="ok")] * 6)
    answers = [_chat(url, made["key"], session=f"v{i}", model="ecgw/cloud-only") for i in range(3)]
    assert [a.status_code for a in answers] == [200] * 3
    assert [a.headers.get("x-ecgw-fallback") for a in answers] == [None, None, "budget"]
    assert _chat(url, other, session="w", model="ecgw/cloud-only").headers.get("x-ecgw-fallback") is None
    budget = httpx.get(url + "/v1/budget", headers={"Authorization": f"Bearer {made['key']}"}, timeout=30).json()
    assert [(r["kind"], r["spent"]) for r in budget["limits"]] == [("cloud_calls", 2)]
