"""Nothing raw at rest: session state sealed with AES-GCM, the key outside the database, bad keys refused at start,
and a value that does not open keeps the step off the cloud without overwriting anything."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import httpx
import pytest

from gateway.app import check_secrets
from gateway.cli.main import main
from gateway.config.settings import ConfigError, load_settings
from gateway.state.keys import load_keys
from gateway.state.sealing import SealBroken, SealedStore
from gateway.state.sessions import SQLiteSessionStore
from tests.fakes.model_server import Reply

NAME, PASSWORD = "Zhang Wei", "Tr0ub4dor&3"


def _bytes_under(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


async def test_sealed_sqlite_store_keeps_no_value_in_plain_text(tmp_path):
    store = SealedStore(SQLiteSessionStore(str(tmp_path / "s.sqlite3")), os.urandom(32))
    vault = {"values": {"[NAME_001]": NAME, "[PASSWORD_001]": PASSWORD}}
    await store.set("run-1", "privacy.vault", vault)
    assert await store.get("run-1", "privacy.vault") == vault
    on_disk = _bytes_under(tmp_path)  # the database and its WAL
    assert NAME.encode() not in on_disk and PASSWORD.encode() not in on_disk and b"NAME_001" not in on_disk
    # another key does not open it; a value moved to another session does not open either
    other = SealedStore(store.inner, os.urandom(32))
    with pytest.raises(SealBroken):
        await other.get("run-1", "privacy.vault")
    await store.inner.set("run-2", "privacy.vault", await store.inner.get("run-1", "privacy.vault"))
    with pytest.raises(SealBroken):
        await store.get("run-2", "privacy.vault")
    await store.aclose()


def test_key_file_is_created_0600_beside_the_store_and_reused(tmp_path):
    settings = load_settings(None, server={"workers": 2}, sessions={"sqlite_path": str(tmp_path / "s.sqlite3")},
                             database_url=f"sqlite:///{tmp_path / 'db' / 'm.sqlite3'}")
    first = load_keys(settings, persistent_sessions=True)
    path = tmp_path / "ecgw.key"
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_keys(settings, persistent_sessions=True).master == first.master
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="secrets.key_file"):
        load_keys(settings, persistent_sessions=True)


def test_a_key_from_the_environment_must_be_there_and_be_a_key(tmp_path, monkeypatch):
    settings = load_settings(None, secrets={"key_env": "ECGW_TEST_VAULT_KEY"})
    monkeypatch.delenv("ECGW_TEST_VAULT_KEY", raising=False)
    with pytest.raises(ConfigError, match="secrets.key_env.*ECGW_TEST_VAULT_KEY"):
        load_keys(settings, persistent_sessions=True)
    monkeypatch.setenv("ECGW_TEST_VAULT_KEY", "too-short")
    with pytest.raises(ConfigError, match="secrets.key_env"):
        load_keys(settings, persistent_sessions=True)
    monkeypatch.setenv("ECGW_TEST_VAULT_KEY", "ab" * 32)
    assert load_keys(settings, persistent_sessions=True).master == bytes.fromhex("ab" * 32)


def test_serve_with_a_missing_or_wrong_key_exits_2_naming_the_setting(tmp_path, monkeypatch, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(f"server: {{workers: 2}}\nsessions: {{sqlite_path: {tmp_path / 's.sqlite3'}}}\n"
                      f"database_url: sqlite:///{tmp_path / 'm.sqlite3'}\nsecrets: {{key_env: ECGW_TEST_VAULT_KEY}}\n")
    monkeypatch.delenv("ECGW_TEST_VAULT_KEY", raising=False)
    assert main(["serve", "--config", str(config)]) == 2
    assert "secrets.key_env" in capsys.readouterr().err
    monkeypatch.setenv("ECGW_TEST_VAULT_KEY", "11" * 32)
    check_secrets(load_settings(str(config)))  # the first start seals the store with this key
    monkeypatch.setenv("ECGW_TEST_VAULT_KEY", "22" * 32)
    assert main(["serve", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "does not open the session store" in err and "secrets.key_env" in err


def test_a_vault_entry_that_does_not_open_keeps_the_step_off_the_cloud(start_gateway, cloud, tmp_path):
    path = tmp_path / "s.sqlite3"
    gw = start_gateway(sessions={"store": "sqlite", "sqlite_path": str(path)}, privacy={"layers": {"ner": False}})
    units = {"items": [{"entity_id": "a", "name": "a", "sensitive_fields": [
        {"field": "password", "value": PASSWORD, "dimension": "credential", "weight": 1}]}]}
    assert httpx.put(f"{gw.base_url}/sessions/t1/units", json=units).status_code == 200
    body = {"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": f"password {PASSWORD}"}]}
    cloud.script(Reply(content="ok"))
    assert httpx.post(gw.base_url + "/chat/completions", json=body, headers={"X-Session-Id": "t1"}).status_code == 200
    calls = len(cloud.requests)
    db = sqlite3.connect(path)
    (value,) = db.execute("SELECT value FROM session_state WHERE session_id='t1' AND key='privacy.vault'").fetchone()
    text = value.decode() if isinstance(value, bytes) else value
    middle = len(text) // 2  # one base64 character of the ciphertext changed
    tampered = text[:middle] + ("B" if text[middle] != "B" else "C") + text[middle + 1:]
    db.execute("UPDATE session_state SET value=? WHERE session_id='t1' AND key='privacy.vault'", (tampered,))
    db.commit()
    r = httpx.post(gw.base_url + "/chat/completions", json=body, headers={"X-Session-Id": "t1"})
    assert r.status_code == 503 and r.json()["error"]["type"] == "privacy_unavailable"
    assert "decrypted" in r.json()["error"]["message"] and PASSWORD not in r.text
    assert len(cloud.requests) == calls  # nothing went to the cloud
    (after,) = db.execute("SELECT value FROM session_state WHERE session_id='t1' AND key='privacy.vault'").fetchone()
    assert after == tampered  # and nothing was overwritten
    db.close()


def test_audit_bodies_rest_sealed_and_the_export_opens_them_with_the_same_config(start_gateway, cloud, tmp_path,
                                                                                  capsys):
    sections = {"sessions": {"store": "sqlite", "sqlite_path": str(tmp_path / "s.sqlite3")},
                "database_url": f"sqlite:///{tmp_path / 'gw.sqlite3'}",
                # minimal: listed units and secrets alone, so the name (no unit here) leaves raw and the stored
                # body holds a raw value to seal
                "privacy": {"profile": "minimal", "layers": {"ner": False}, "audit_spill_path": None}}
    gw = start_gateway(**sections)
    cloud.script(Reply(content="ok"))
    body = {"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": f"I am {NAME}; mail me"}]}
    assert httpx.post(gw.base_url + "/chat/completions", json=body, headers={"X-Session-Id": "e1"}).status_code == 200
    gw.services.protector.flush()  # type: ignore[attr-defined]
    (stored,) = sqlite3.connect(tmp_path / "gw.sqlite3").execute("SELECT body FROM privacy_call").fetchone()
    assert stored.startswith("ecgw-sealed:v1:") and NAME not in stored  # no units here: the name left raw
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps(sections))
    export = tmp_path / "audit.jsonl"
    assert main(["privacy-report", "--config", str(config), "--session", "e1", "--export", str(export)]) == 0
    line = json.loads(export.read_text())
    assert line["input"][0]["content"] == f"I am {NAME}; mail me"
    other = tmp_path / "other.yaml"  # another key cannot open them, and says so
    other.write_text(json.dumps({**sections, "secrets": {"key_file": str(tmp_path / "other.key")}}))
    capsys.readouterr()
    assert main(["privacy-report", "--config", str(other), "--session", "e1", "--export", str(export)]) == 1
    assert "could not be decrypted" in capsys.readouterr().err
