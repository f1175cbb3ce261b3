"""A privacy trajectory through `ecgw serve` with two workers and SQLite stores, then every file the gateway wrote —
databases, WAL files, spill files, its log, anything else in its folder — searched byte for byte for each raw value."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import yaml

from benchmarks.contenders import free_port
from tests.fakes.model_server import Reply, ToolCall
from tests.processes import wait_healthy

ROOT = Path(__file__).resolve().parents[2]
A, B = "sk-tenant-a", "sk-tenant-b"
NAME, NAME_ZH, PHONE = "Zhang Wei", "李娜", "13812345678"
PASSWORD, EMAIL, ID_CARD = "Tr0ub4dor&3", "alice.private@example.com", "11010519491231002X"
RAW = (NAME, NAME_ZH, PHONE, PASSWORD, EMAIL, ID_CARD)
UNITS = {"items": [{"entity_id": "alice", "name": "customer", "sensitive_fields": [
    {"field": "full_name", "value": NAME, "dimension": "identity", "weight": 2},
    {"field": "colleague", "value": NAME_ZH, "dimension": "identity", "weight": 1},
    {"field": "phone", "value": PHONE, "dimension": "contact", "weight": 1},
    {"field": "password", "value": PASSWORD, "dimension": "credential", "weight": 3},
    {"field": "email", "value": EMAIL, "dimension": "contact", "weight": 1},
    {"field": "id_card", "value": ID_CARD, "dimension": "identity", "weight": 3}]}]}
PLACEHOLDER = re.compile(r"\[[A-Z][A-Z0-9_]*_\d+\]")


def _forms(value: str) -> set[bytes]:
    """The byte forms a value could take in a file: UTF-8, JSON-escaped, UTF-16."""
    return {value.encode(), json.dumps(value).strip('"').encode(), value.encode("utf-16-le")}


def test_nothing_raw_rests_on_disk_after_a_multi_worker_trajectory(tmp_path, edge, cloud):
    work = tmp_path / "gw"
    work.mkdir()
    port = free_port()
    config = {"server": {"port": port, "workers": 2, "api_keys": [A, B]},
              "edge": {"base_url": edge.url + "/v1", "model": "edge-model"},
              "cloud": {"model": "openai/gpt-test", "api_base": cloud.url + "/v1", "api_key_env": None},
              "policy": {"default": "cloud-only"},
              "sessions": {"sqlite_path": str(work / "sessions.sqlite3")},
              "database_url": f"sqlite:///{work / 'gateway.sqlite3'}",
              "accounting": {"spill_path": str(work / "usage-spill.jsonl")},
              "privacy": {"layers": {"ner": False}, "audit_spill_path": str(work / "audit-spill.jsonl")}}
    config_path = tmp_path / "config.yaml"  # written by the test, outside the gateway's folder
    config_path.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECGW_")}
    log_path = work / "gateway.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--config", str(config_path)],
                                cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_healthy(base[:-3], proc)
        _trajectory(base, cloud)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    written = [p for p in work.rglob("*") if p.is_file()]
    names = {p.name for p in written}
    assert {"sessions.sqlite3", "gateway.sqlite3", "gateway.log", "ecgw.key"} <= names, names
    assert (work / "ecgw.key").stat().st_mode & 0o777 == 0o600
    for path in written:
        data = path.read_bytes()
        for raw in RAW:
            for form in _forms(raw):
                assert form not in data, f"{raw!r} found in {path.name}"


def _post(base: str, key: str, body: dict, session: str | None = "trip") -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"}
    if session:
        headers["X-Session-Id"] = session
    r = httpx.post(base + "/chat/completions", json=body, headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    return r


def _trajectory(base: str, cloud) -> None:
    auth = {"Authorization": f"Bearer {A}"}
    assert httpx.put(base + "/sessions/trip/units", json=UNITS, headers=auth).status_code == 200
    history = [{"role": "system", "content": "You are a travel agent."},
               {"role": "user", "content": f"Book a trip for {NAME} (ID {ID_CARD}), phone {PHONE}. "
                                           f"The portal password is {PASSWORD}."}]
    cloud.script(Reply(content="ok"))
    _post(base, A, {"messages": history})
    placeholders = sorted(set(PLACEHOLDER.findall(json.dumps(cloud.requests[-1]))))
    assert len(placeholders) == 4
    history += [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "email", "arguments": json.dumps({"to": EMAIL, "cc": NAME_ZH, "body": f"ID {ID_CARD}"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"sent to {EMAIL}; {NAME_ZH} will call {PHONE}"}]
    for _ in range(4):  # fresh connections: the steps land on both workers, which share the sealed vault
        cloud.script(Reply(content=None, tool_calls=[ToolCall("book", json.dumps({"who": " ".join(placeholders)}))]))
        r = _post(base, A, {"messages": history, "tools": [
            {"type": "function", "function": {"name": "book", "parameters": {"type": "object"}}}]})
        arguments = json.loads(r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
        assert NAME in arguments["who"] and PASSWORD in arguments["who"]  # restored on whichever worker
    sent = json.dumps(cloud.requests[-1], ensure_ascii=False)
    assert not any(raw in sent for raw in RAW)
    everything = sorted(set(PLACEHOLDER.findall(sent)))
    cloud.script(Reply(content=" ".join(everything)))
    streamed = httpx.post(base + "/chat/completions", headers={**auth, "X-Session-Id": "trip"}, timeout=60,
                          json={"messages": history, "stream": True})
    assert NAME_ZH.encode() in streamed.content or json.dumps(NAME_ZH).strip('"').encode() in streamed.content
    # a session named by `user` (an e-mail address), and the other tenant trying A's session
    cloud.script(Reply(content="ok"))
    _post(base, A, {"user": EMAIL, "messages": history}, session=None)
    cloud.script(Reply(content=" ".join(everything)))
    theirs = _post(base, B, {"messages": [{"role": "user", "content": "Repeat: " + " ".join(everything)}]})
    assert not any(raw in theirs.text for raw in RAW)
    report = httpx.get(base + "/sessions/trip/privacy", headers=auth).json()
    assert report["units_known"] == 6 and report["units_exposed"] == 0
    usage = httpx.get(base + "/usage?by=session", headers=auth)
    assert usage.status_code == 200 and EMAIL not in usage.text
