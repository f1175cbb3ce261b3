"""Every report says what it said before the audit recorded a session's repeated findings once (issue 41 item 2).

One multi-step agent-like traffic — a system prompt full of contact details re-sent at every step, tool rounds
that add findings, a second session, a tenant of its own, an ``audit`` action, listed units — goes through a real
gateway on loopback (the cloud a double speaking OpenAI's wire format; SQLite, and a fresh schema on PostgreSQL when
``ECGW_TEST_POSTGRES_URL`` is set). Then every reader of the audit is asked: the session exposure route, the
receipts route, the dashboard's overview and per-call bodies, ``ecgw privacy-report`` (per session and the period
report), ``ecgw audit verify`` and ``ecgw audit query``. Their answers, with what differs between any two runs
(ids, times, hashes over them) replaced by names in order of appearance, equal the snapshot
``repeated_prefix_reports.json``, taken from the code before the change on the same traffic (regenerate it only
from that code: ``ECGW_SNAPSHOT_WRITE=1``). The counts the traffic implies are checked on their own too.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from sqlalchemy import func, select, text

from accounting.database import make_engine
from gateway.app import create_app
from gateway.cli.main import main
from privacy import SessionPrivacy
from privacy.audit import PrivacyCall, all_findings, cloud_bodies, overview
from tests.conftest import settings_for
from tests.door import guarded_services, guarded_targets
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer
from tests.privacy.helpers import UNITS

SNAPSHOT = Path(__file__).with_name("repeated_prefix_reports.json")
ACME, BETA, ADMIN = "sk-acme-1", "sk-beta-1", "sk-admin"
SYSTEM = ("You are the support agent of Example Corp. Escalations go to ops-lead@example.com or +1 415 555 0199; "
          "billing questions to billing@example.org (Grace Hopper, 212-555-0147); the VPN gateway is 81.2.69.142 "
          "and the backup one 81.2.69.160. Customer Maria Gonzalez (Maria.Gonzalez@acme-mail.com, 415-555-0132) "
          "has priority. Sign every reply as the support team, support@example.com.")
STEPS = 5  # tool rounds of the first session: each step re-sends everything before it
_TIMES = {"created_at", "ts", "timestamp", "at", "since", "until", "start", "end", "generated_at", "from", "to",
          "since_iso", "until_iso", "signed_at", "signed_at_iso", "t", "bucket_s"}
_OPAQUE = re.compile(r"^[A-Za-z0-9_.-]{40,}$")  # a token or a hash, whole
_ID = re.compile(r"\b(?:req-)?[0-9a-f]{16,64}\b")  # an id or a hash inside a string


def _history(step: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM},
                                      {"role": "user", "content": "Look up the open tickets and answer them."}]
    for n in range(step):
        call = {"id": f"call_{n}", "type": "function",
                "function": {"name": "read_ticket", "arguments": json.dumps({"ticket": n})}}
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": f"call_{n}",
                      "content": f"Ticket {n}: from customer{n}@example.net, phone 212-555-01{n:02d}, "
                                 f"asks about the invoice sent to accounts{n}@example.org."}]
    return messages


def _post(url: str, key: str, session: str, messages: list[dict[str, Any]]) -> httpx.Response:
    r = httpx.post(url + "/v1/chat/completions", timeout=60,
                   headers={"Authorization": f"Bearer {key}", "X-Session-Id": session},
                   json={"model": "ecgw/cloud-only", "messages": messages})
    assert r.status_code == 200, r.text
    return r


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return claims


class _Names:
    """Ids, times and hashes over them, replaced by names in order of appearance: equal values get equal names."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def __call__(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {self._key(k): self(v, str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v, key) for v in value]
        if key in _TIMES and isinstance(value, int | float | str) and value is not None:
            return "<time>"
        if isinstance(value, str):
            if _OPAQUE.match(value):
                return self._seen.setdefault(value, f"<id{len(self._seen)}>")
            return _ID.sub(lambda m: self._seen.setdefault(m.group(), f"<id{len(self._seen)}>"), value)
        return value

    def _key(self, key: Any) -> Any:
        return self(key) if isinstance(key, str) else key


def _database(tmp: Path, kind: str) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp / 'gw.sqlite3'}"
        return
    from tests.real_parts import postgres_url

    base = postgres_url()
    schema = f"prefix_{uuid.uuid4().hex[:12]}"
    admin = make_engine(base)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield base + ("&" if "?" in base else "?") + f"options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text("SET LOCAL lock_timeout = '30s'"))
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def _findings(db: str) -> dict[str, list[list[Any]]]:
    """What the audit holds per call of each session, oldest first (``all_findings``: a call's own rows and its
    finding sets'; before sets, ``privacy_finding``'s rows): how many findings of each type, layer, action, location
    and unit (the keyed hashes aside: their key is made anew for every run)."""
    engine = make_engine(db)
    found, calls_t = all_findings(), PrivacyCall.__table__  # type: ignore[attr-defined]
    keys = (found.c.type, found.c.layer, found.c.action, found.c.location, found.c.unit_id, found.c.field,
            found.c.dimension)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(calls_t.c.session_id, calls_t.c.created_at, calls_t.c.id, *keys, func.count())
                                .select_from(calls_t.join(found, found.c.call_id == calls_t.c.id))
                                .group_by(calls_t.c.session_id, calls_t.c.created_at, calls_t.c.id, *keys)).all()
    finally:
        engine.dispose()
    calls: dict[tuple[str, float, str], list[list[Any]]] = {}
    for session, created, call, *counted in rows:
        calls.setdefault((session, created, call), []).append(list(counted))
    out: dict[str, list[list[Any]]] = {}
    for (session, _, _), counted in sorted(calls.items()):
        out.setdefault(session, []).append(sorted(counted, key=lambda r: [str(v) for v in r]))
    return out


def _stored(db: str) -> dict[str, int]:
    """Finding rows the database holds per session: a call's own and the finding sets' (not in the snapshot)."""
    engine = make_engine(db)
    try:
        with engine.connect() as conn:
            out: dict[str, int] = {}
            for table in ("privacy_finding", "privacy_finding_set"):
                for session, n in conn.execute(text(f"SELECT session_id, COUNT(*) FROM {table} GROUP BY session_id")):
                    out[session] = out.get(session, 0) + int(n)
    finally:
        engine.dispose()
    return out


def _cli(*argv: str, code: int = 0) -> Any:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(list(argv)) == code
    return json.loads(printed.getvalue())


def _reports(tmp: Path, kind: str) -> dict[str, Any]:
    """Drive the traffic through a gateway on ``kind``'s database and ask every reader of the audit."""
    out: dict[str, Any] = {}
    for db in _database(tmp, kind):
        key_file = str(tmp / "ecgw.key")
        edge_fake, cloud_fake = ModelServer("edge", model="edge-model"), ModelServer("cloud", model="gpt-primary")
        with ThreadedServer(edge_fake.app) as edge, ThreadedServer(cloud_fake.app) as cloud:
            targets = {"targets": {"primary": {"model": "openai/gpt-primary", "api_base": cloud.url + "/v1",
                                               "timeout_s": 20}}, "default_target": "primary"}
            settings = settings_for(
                edge.url, cloud.url, database_url=db, secrets={"key_file": key_file}, cloud=targets,
                server={"api_keys": [{"name": "acme-1", "key": ACME, "tenant": "acme"},
                                     {"name": "beta-1", "key": BETA, "tenant": "beta"}], "admin_keys": [ADMIN]},
                accounting={"spill_path": None},
                privacy={"layers": {"ner": False}, "audit_spill_path": None, "response_guard": {"action": "audit"},
                         "actions": {"IP_ADDRESS": "audit"}})
            services = guarded_services(settings, cloud_transport=guarded_targets([]))
            server = ThreadedServer(create_app(settings, services=services)).start()
            url = server.url
            try:
                start = time.time()
                cloud_fake.script(Reply(content="Done; Frank (frank@example.com) has it."))  # never sent: inbound
                assert httpx.put(url + "/v1/sessions/agent-1/units", json=UNITS, timeout=30,
                                 headers={"Authorization": f"Bearer {ACME}"}).status_code == 200
                sent = [(ACME, "agent-1", _post(url, ACME, "agent-1", _history(n))) for n in range(STEPS)]
                sent += [(ACME, "agent-2", _post(url, ACME, "agent-2", _history(n))) for n in range(2)]
                sent += [(BETA, "beta-1", _post(url, BETA, "beta-1", _history(n)[1:])) for n in range(2)]
                end = time.time()
                receipts = []
                for key, _, response in sent:
                    rid = response.headers["x-ecgw-request-id"]
                    r = httpx.get(url + f"/v1/receipts/{rid}", headers={"Authorization": f"Bearer {key}"},
                                  timeout=30)
                    assert r.status_code == 200, r.text
                    receipts.append({"header": [_claims(t) for t in
                                                response.headers["x-ecgw-egress-receipt"].split(",")],
                                     "route": r.json()})
                out["receipts"] = receipts
                out["exposure"] = {}
                for key, session in ((ACME, "agent-1"), (ACME, "agent-2"), (BETA, "beta-1")):
                    r = httpx.get(url + f"/v1/sessions/{session}/privacy", timeout=30,
                                  headers={"Authorization": f"Bearer {key}"})
                    assert r.status_code == 200, r.text
                    out["exposure"][session] = r.json()
                protector = services.protector
                assert isinstance(protector, SessionPrivacy)
                out["dashboard"] = asyncio.run(protector.read_audit(overview))
                internal = [s["session_id"] for s in out["dashboard"]["sessions"]]
                out["cloud_bodies"] = {s: asyncio.run(protector.read_audit(cloud_bodies, s)) for s in internal}
            finally:
                server.stop()
        out["findings"] = _findings(db)
        out["stored"] = _stored(db)  # not in the snapshot: what changed
        out["where"] = {"db": db, "key_file": key_file}  # nor this run's files
        config = tmp / "config.yaml"
        config.write_text(yaml.safe_dump({"database_url": db, "secrets": {"key_file": key_file}}), encoding="utf-8")
        common = ("--config", str(config))
        period = ("--since", str(start), "--until", str(end + 1))
        out["session_reports"] = {s: _cli("privacy-report", "--session", s, "--format", "json", *common)
                                  for s in internal}
        for owner in ("acme", "beta", "all"):
            report = tmp / f"period-{owner}.json"
            assert main(["privacy-report", "--owner", owner, *period, "--format", "json", *common,
                         "--output", str(report)]) == 0
            found = json.loads(report.read_text(encoding="utf-8"))
            points = found.pop("series")["points"]  # buckets of wall-clock time: their sums hold across runs
            found["series_sums"] = {k: sum(p[k] for p in points) for k in points[0] if k != "t"} if points else {}
            out[f"period_{owner}"] = found
        out["verify"] = _cli("audit", "verify", "--format", "json", *common)
        out["query"] = {f"{c}/{t}": _cli("audit", "query", "--class", c, "--tier", t, *period,
                                         "--format", "json", *common)
                        for c in ("contact", "online", "listed") for t in ("standard", "trusted")}
    return out


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def reports(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if request.param == "postgresql" and not os.environ.get("ECGW_TEST_POSTGRES_URL"):
        pytest.skip("ECGW_TEST_POSTGRES_URL is not set (the test PostgreSQL server, scripts/postgres.sh)")
    return _reports(tmp_path_factory.mktemp(f"prefix-{request.param}"), request.param)


def test_every_report_says_what_it_said_before_on_the_same_traffic(reports: dict[str, Any]) -> None:
    named = _Names()({k: v for k, v in reports.items() if k not in ("stored", "where")})
    if os.environ.get("ECGW_SNAPSHOT_WRITE") == "1":
        SNAPSHOT.write_text(json.dumps(named, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    snapshot = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    for name in sorted(set(snapshot) | set(named)):
        assert named.get(name) == snapshot.get(name), name
    # the counts the traffic implies, on their own: each step of a session re-sends the one before it whole
    steps = reports["cloud_bodies"][[s for s in reports["cloud_bodies"] if s.endswith("agent-1")][0]]
    assert len(steps) == STEPS
    pseudonymised = [step["findings"].get("pseudonymise", 0) for step in steps]
    grown = [b - a for a, b in zip(pseudonymised, pseudonymised[1:], strict=False)]
    assert pseudonymised[0] >= 6 and grown and all(g == grown[0] > 0 for g in grown), pseudonymised
    assert all(step["findings"]["audit"] == steps[0]["findings"]["audit"] > 0 for step in steps)  # the IP, each step
    assert reports["verify"]["intact"] is True


def test_a_session_stores_each_finding_once_not_once_per_call_that_sends_it_again(reports: dict[str, Any]) -> None:
    """Each step of a session re-sends the step before it whole, so what its calls found is what its last call found,
    and that is all the database holds: the findings of the repeated prefix are written once, not at every call."""
    held = reports["stored"]
    for session, calls in reports["cloud_bodies"].items():
        per_call = [sum(call["findings"].values()) for call in calls]
        assert held.get(session, 0) == per_call[-1], (session, per_call)
    assert sum(held.values()) < sum(sum(sum(c["findings"].values()) for c in calls)
                                    for calls in reports["cloud_bodies"].values()) / 2


def test_ecgw_audit_verify_names_every_call_that_references_a_tampered_set(reports: dict[str, Any],
                                                                          tmp_path: Path) -> None:
    """One row of the first session's system prompt set altered in a copy of the database: each of its calls sent
    that set, so each reads altered, and ``ecgw audit verify`` exits 1."""
    import sqlite3
    from contextlib import closing

    if not reports["where"]["db"].startswith("sqlite:///"):
        pytest.skip("the copy is a SQLite backup")
    copy = tmp_path / "tampered.sqlite3"
    with closing(sqlite3.connect(reports["where"]["db"].removeprefix("sqlite:///"))) as source, \
            closing(sqlite3.connect(copy)) as db:
        source.backup(db)
        (set_id,) = db.execute("SELECT set_id FROM privacy_finding_set WHERE session_id = 't.acme/agent-1' AND "
                               "location = 'messages[0].content' LIMIT 1").fetchone()
        db.execute("UPDATE privacy_finding_set SET action = 'audit' WHERE id = "
                   "(SELECT MIN(id) FROM privacy_finding_set WHERE set_id = ?)", (set_id,))
        db.commit()
        calls = {row[0] for row in db.execute("SELECT call_id FROM privacy_call_set WHERE set_id = ?", (set_id,))}
    assert len(calls) == STEPS  # every step of the session sent its system prompt
    config = tmp_path / "tampered.yaml"
    config.write_text(yaml.safe_dump({"database_url": f"sqlite:///{copy}",
                                      "secrets": {"key_file": reports["where"]["key_file"]}}), encoding="utf-8")
    verified = _cli("audit", "verify", "--format", "json", "--config", str(config), code=1)
    assert {b["what"] for b in verified["breaks"]} == {"altered"}
    assert {b["where"].split("(call ")[1].rstrip(")") for b in verified["breaks"]} == calls
