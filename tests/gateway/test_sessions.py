"""Session identity and the sticky policy choice."""

from __future__ import annotations

import httpx

from gateway.state.sessions import fingerprint, identify_session

MSGS = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Do the task."}]


def ident(headers=None, body=None):
    return identify_session(headers or {}, body or {"messages": MSGS})


def test_identity_order_header_metadata_user_fingerprint():
    body = {"messages": MSGS, "metadata": {"session_id": "meta"}, "user": "usr"}
    assert ident({"x-session-id": "hdr"}, body) == ("hdr", "header")
    assert ident({}, body) == ("meta", "metadata")
    assert ident({}, {"messages": MSGS, "user": "usr"}) == ("usr", "user")
    session, source = ident({}, {"messages": MSGS})
    assert source == "fingerprint" and session.startswith("fp-")


def test_fingerprint_is_stable_as_the_trajectory_grows_and_differs_between_tasks():
    later = MSGS + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    assert fingerprint({"messages": MSGS}) == fingerprint({"messages": later})
    other = [MSGS[0], {"role": "user", "content": "Another task."}]
    assert fingerprint({"messages": MSGS}) != fingerprint({"messages": other})


def _post(gw, headers=None, **body):
    return httpx.post(gw.base_url + "/chat/completions", headers=headers,
                      json={"messages": [{"role": "user", "content": "x"}], **body})


def test_policy_choice_is_sticky_per_session(gateway, edge, cloud):
    first = _post(gateway, {"X-Session-Id": "sticky"}, model="ecgw/cloud-only")
    assert first.headers["x-ecgw-policy"] == "cloud-only"
    later = _post(gateway, {"X-Session-Id": "sticky"}, model="whatever")
    assert later.headers["x-ecgw-policy"] == "cloud-only"
    assert len(cloud.requests) == 2 and edge.requests == []
    other = _post(gateway, {"X-Session-Id": "fresh"}, model="whatever")
    assert other.headers["x-ecgw-policy"] == "edge-only"


def test_virtual_key_binds_session_and_authenticates(start_gateway):
    gw = start_gateway(server={"session_keys": {"sk-run-9": "run-9"}})
    response = _post(gw, {"Authorization": "Bearer sk-run-9"})
    assert response.status_code == 200 and response.headers["x-ecgw-session"] == "run-9"
    assert _post(gw).status_code == 401


def test_every_upstream_call_is_attributed_to_the_session(gateway):
    _post(gateway, {"X-Session-Id": "attrib"}, model="ecgw/edge-only")
    _post(gateway, {"X-Session-Id": "attrib"}, model="ecgw/cloud-only")
    assert [(c.session_id, c.side) for c in gateway.meter.calls] == [("attrib", "edge"), ("attrib", "cloud")]


async def test_sqlite_store_is_shared_between_instances(tmp_path):
    from gateway.state.sessions import SQLiteSessionStore

    path = str(tmp_path / "sessions.sqlite3")
    worker_a, worker_b = SQLiteSessionStore(path), SQLiteSessionStore(path)
    await worker_a.set("s1", "vault", {"alice@example.com": "[EMAIL_001]"})
    assert await worker_b.get("s1", "vault") == {"alice@example.com": "[EMAIL_001]"}
    await worker_b.set("s1", "vault", {"alice@example.com": "[EMAIL_001]", "bob@example.com": "[EMAIL_002]"})
    assert len(await worker_a.get("s1", "vault")) == 2
    assert await worker_a.get("s2", "vault") is None
    await worker_a.aclose()
    await worker_b.aclose()


def test_store_choice_follows_worker_count(tmp_path):
    from gateway.config.settings import load_settings
    from gateway.state.sealing import SealedStore
    from gateway.state.sessions import MemorySessionStore, SQLiteSessionStore
    from gateway.state.stores import build_session_store

    one = load_settings(None, server={"workers": 1})
    assert isinstance(build_session_store(one), MemorySessionStore)
    in_process = load_settings(None)  # an app built in-process (tests, embedding) is one worker
    assert isinstance(build_session_store(in_process), MemorySessionStore)
    many = load_settings(None, server={"workers": 2}, sessions={"sqlite_path": str(tmp_path / "s.sqlite3")})
    shared = build_session_store(many)  # encrypted at rest, with a key file created beside it
    assert isinstance(shared, SealedStore) and isinstance(shared.inner, SQLiteSessionStore)
    assert (tmp_path / "ecgw.key").stat().st_mode & 0o777 == 0o600


def test_session_ids_with_slashes_work_for_units(gateway):
    response = httpx.put(gateway.base_url + "/sessions/exp:advisor/task-7/run-1/units",
                         json={"items": [{"entity_id": "u1", "name": "card", "sensitive_fields": [
                             {"field": "card", "value": "4111 1111 1111 1111", "dimension": "financial",
                              "weight": 1.0}]}]})
    assert response.status_code == 200
    assert response.json()["session_id"] == "exp:advisor/task-7/run-1"


async def test_idle_sessions_are_forgotten_after_the_ttl(tmp_path):
    from gateway.state.sessions import MemorySessionStore, SQLiteSessionStore

    now = [1000.0]
    for store in (MemorySessionStore(ttl_s=60, clock=lambda: now[0]),
                  SQLiteSessionStore(str(tmp_path / "s.sqlite3"), ttl_s=60, clock=lambda: now[0])):
        await store.set("idle", "vault", {"a": "[EMAIL_001]"})
        now[0] += 50
        await store.set("busy", "policy", "advisor")
        now[0] += 30  # idle: 80 s untouched; busy: 30 s
        await store.sweep(now[0]) if isinstance(store, SQLiteSessionStore) else store.sweep(now[0])
        assert await store.get("idle", "vault") is None
        assert await store.get("busy", "policy") == "advisor"
        now[0] = 1000.0


async def test_a_session_file_from_before_expiry_and_encryption_is_not_kept(tmp_path):
    """Such a file holds vaults in plain text that the sealed store would never read: they are removed at open,
    not migrated, so nothing raw stays on disk."""
    import sqlite3

    from gateway.state.sessions import SQLiteSessionStore

    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE session_state (session_id TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, "
                "PRIMARY KEY (session_id, key))")
    old.execute("INSERT INTO session_state VALUES ('s1', 'privacy.vault', '{\"[NAME_001]\": \"Zhang Wei\"}')")
    old.commit()
    old.close()
    store = SQLiteSessionStore(str(path))
    try:
        assert await store.get("s1", "privacy.vault") is None
        await store.set("s1", "k", {"v": 1})
        assert await store.get("s1", "k") == {"v": 1}
    finally:
        await store.aclose()
    for file in tmp_path.iterdir():  # the database, its WAL and shared-memory files
        assert b"Zhang Wei" not in file.read_bytes(), file.name
