"""The period report (``ecgw privacy-report --owner … --since … --until …``) after real traffic: two tenants through
one gateway over real HTTP (the cloud a double speaking OpenAI's wire format, two cloud targets, SQLite), then the
report read by the CLI. Its numbers are checked against what is known independently: ``GET /v1/usage`` for the
same owner and period, the placeholders in the bodies the cloud double received per target, the fallback headers
the client saw, ``ecgw audit verify``; and the Markdown, HTML and PDF (its text extracted, its pages rendered as
images) against the JSON."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gateway.app import create_app
from gateway.cli.main import main
from tests.conftest import settings_for
from tests.door import guarded_services, guarded_targets
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer
from tests.privacy.helpers import UNITS

ACME, BETA, ADMIN = "sk-acme-1", "sk-beta-1", "sk-admin"
PRICES = {"openai/gpt-primary": {"input": 2.0, "cache_read": 0.5, "output": 8.0},
          "openai/gpt-backup": {"input": 1.0, "cache_read": 0.25, "output": 4.0}}
PLACEHOLDER = re.compile(r"\[([A-Z][A-Z0-9_]*?)_\d{3,6}\]")


@dataclass
class Run:
    tmp: Path
    config: Path
    start: float
    middle: float  # acme's first batch before it, its second after
    end: float
    usage: dict[tuple[str, str, str], list[dict[str, Any]]]  # (key, by, period) -> /v1/usage rows
    bodies: dict[str, list[dict[str, Any]]]  # target -> bodies the cloud double received
    fallbacks: dict[str, Counter[str]] = field(default_factory=dict)  # key -> x-ecgw-fallback values seen
    receipts: dict[str, int] = field(default_factory=dict)  # key -> x-ecgw-egress-receipt tokens received


def _step(url: str, key: str, session: str, text: str, *, model: str = "ecgw/cloud-only") -> httpx.Response:
    r = httpx.post(url + "/v1/chat/completions", timeout=30,
                   headers={"Authorization": f"Bearer {key}", "X-Session-Id": session},
                   json={"model": model, "messages": [{"role": "user", "content": text}]})
    assert r.status_code == 200, r.text
    return r


def _usage(url: str, key: str, by: str, since: float, until: float) -> list[dict[str, Any]]:
    iso = {name: datetime.fromtimestamp(t, UTC).isoformat() for name, t in (("since", since), ("until", until))}
    r = httpx.get(url + "/v1/usage", params={"by": by, **iso},
                  headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert r.status_code == 200, r.text
    return list(r.json()["data"])


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    tmp = tmp_path_factory.mktemp("period")
    edge_fake, cloud_fake = ModelServer("edge", model="edge-model"), ModelServer("cloud", model="gpt-primary")
    with ThreadedServer(edge_fake.app) as edge, ThreadedServer(cloud_fake.app) as cloud:
        db, key_file = f"sqlite:///{tmp / 'gw.sqlite3'}", str(tmp / "ecgw.key")
        targets = {"targets": {
            "primary": {"model": "openai/gpt-primary", "api_base": cloud.url + "/v1", "timeout_s": 20},
            "backup": {"model": "openai/gpt-backup", "api_base": cloud.url + "/v1", "timeout_s": 20}},
            "default_target": "primary", "model_aliases": {"gpt-cheap": "backup"}}
        settings = settings_for(
            edge.url, cloud.url, database_url=db, secrets={"key_file": key_file}, cloud=targets,
            server={"api_keys": [{"name": "acme-1", "key": ACME, "tenant": "acme"},
                                 {"name": "beta-1", "key": BETA, "tenant": "beta"}], "admin_keys": [ADMIN]},
            accounting={"prices": PRICES, "spill_path": None},
            limits={"keys": {"beta-1": {"cloud_calls": {"amount": 2, "window": "1d"}}}},
            privacy={"layers": {"ner": False}, "audit_spill_path": None, "response_guard": {"action": "audit"},
                     "actions": {"contact": "audit", "IP_ADDRESS": "audit", "CREDIT_CARD": "block"}})
        services = guarded_services(settings, cloud_transport=guarded_targets([]))
        server = ThreadedServer(create_app(settings, services=services)).start()
        url, fallbacks = server.url, {ACME: Counter[str](), BETA: Counter[str]()}
        try:
            start = time.time()
            cloud_fake.script(Reply(content="Done. Frank (frank@example.com) was copied."))  # no request said so
            seen = [
                (ACME, _step(url, ACME, "a1", "Write to alice@example.com about the invoice.")),
                (ACME, _step(url, ACME, "a1", "Mail bob@example.org and carol@example.net the summary.",
                             model="gpt-cheap")),
            ]
            assert httpx.put(url + "/v1/sessions/a2/units", json=UNITS, timeout=30,
                             headers={"Authorization": f"Bearer {ACME}"}).status_code == 200
            seen += [
                (ACME, _step(url, ACME, "a2", "Call 415-555-0132 about Maria Gonzalez.")),
                (ACME, _step(url, ACME, "a2", "Client IP 81.2.69.142 logged in.")),
                (ACME, _step(url, ACME, "a2", "Charge card 4111 1111 1111 1111 for the order.")),
            ]
            middle = time.time()
            seen.append((ACME, _step(url, ACME, "a3", "Forward it to dave@example.com please.")))
            seen += [(BETA, _step(url, BETA, "b1", f"Ping erin{n}@example.com today.")) for n in range(3)]
            end = time.time()  # every record of the traffic is older; the shutdown checkpoint is newer
            receipts = {ACME: 0, BETA: 0}
            for key, response in seen:
                if "x-ecgw-fallback" in response.headers:
                    fallbacks[key][response.headers["x-ecgw-fallback"]] += 1
                receipts[key] += len([t for t in response.headers.get("x-ecgw-egress-receipt", "").split(",") if t])
            usage = {(key, by, period): _usage(url, key, by, start, until)
                     for key in (ACME, BETA, ADMIN) for by in ("deployment", "policy")
                     for period, until in (("first", middle), ("all", end))}
        finally:
            server.stop()  # the audit is flushed and its head signed at shutdown
    bodies: dict[str, list[dict[str, Any]]] = {"primary": [], "backup": []}
    for body in cloud_fake.requests:
        bodies["primary" if body.get("model") == "gpt-primary" else "backup"].append(body)
    config = tmp / "config.yaml"
    config.write_text(yaml.safe_dump({"database_url": db, "secrets": {"key_file": key_file}}), encoding="utf-8")
    yield Run(tmp, config, start, middle, end, usage, bodies, fallbacks, receipts)


def _report(run: Run, capsys: pytest.CaptureFixture[str], owner: str, fmt: str = "json", *,
            until: float | None = None) -> Path:
    out = run.tmp / f"report-{owner}-{fmt}-{until}.{fmt}"
    argv = ["privacy-report", "--owner", owner, "--since", str(run.start), "--until", str(until or run.end),
            "--format", fmt, "--config", str(run.config), "--output", str(out)]
    code = main(argv)
    assert code == 0, capsys.readouterr().err
    return out


def _json(run: Run, capsys: pytest.CaptureFixture[str], owner: str, *, until: float | None = None) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(_report(run, capsys, owner, until=until).read_text(encoding="utf-8"))
    return report


USAGE_FIELDS = ("cloud_calls", "cloud_raw_input_tokens", "cloud_cache_read_tokens", "cloud_output_tokens",
                "cloud_cost_usd")


def _cloud_rows(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(r["group"]): {k: r[k] for k in USAGE_FIELDS} for r in rows if r["cloud_calls"]}


def _by(report_rows: list[dict[str, Any]], name: str) -> dict[str, dict[str, Any]]:
    return {r[name]: {k: r[k] for k in USAGE_FIELDS} for r in report_rows}


@pytest.mark.parametrize(("owner", "key"), [("acme", ACME), ("beta", BETA), ("all", ADMIN)])
def test_cloud_calls_tokens_and_cost_equal_the_usage_api_for_the_same_owner_and_period(run, capsys, owner, key):
    for period, until in (("first", run.middle), ("all", run.end)):
        report = _json(run, capsys, owner, until=until)
        by_target = _cloud_rows(run.usage[(key, "deployment", period)])
        assert _by(report["cloud_calls"]["by_target"], "target") == by_target
        assert _by(report["cloud_calls"]["by_policy"], "policy") == _cloud_rows(run.usage[(key, "policy", period)])
        assert report["cloud_calls"]["total"] == sum(r["cloud_calls"] for r in by_target.values())
    acme = _json(run, capsys, "acme")
    assert set(_by(acme["cloud_calls"]["by_target"], "target")) == {"primary", "backup"}
    assert acme["cloud_calls"]["total"] == 5  # 6 steps, one kept on the edge by a block
    assert _json(run, capsys, "acme", until=run.middle)["cloud_calls"]["total"] == 4  # the last one is after


def test_a_tenant_sees_only_its_own_and_all_names_every_owner(run, capsys):
    acme, beta, every = (_json(run, capsys, o) for o in ("acme", "beta", "all"))
    assert acme["owner"] == "t.acme" and acme["owners"] == [] and beta["owners"] == []
    assert beta["cloud_calls"]["total"] == 2 and beta["placeholders"]["by_type"] == {"EMAIL_ADDRESS": 2}
    assert beta["left_raw"]["units_left_raw"] == 0 and beta["kept_on_edge"]["by_reason"] == {"budget": 1}
    owners = {o["owner"]: o for o in every["owners"]}
    assert set(owners) == {"t.acme", "t.beta"}
    for name, one in (("t.acme", acme), ("t.beta", beta)):
        assert owners[name]["cloud_calls"] == one["cloud_calls"]["total"]
        assert owners[name]["placeholders"] == one["placeholders"]["total"]
        assert owners[name]["kept_on_edge"] == one["kept_on_edge"]["steps"]
    assert every["cloud_calls"]["total"] == acme["cloud_calls"]["total"] + beta["cloud_calls"]["total"]
    # the receipts stored are those the clients were handed, one per cloud call
    assert acme["cloud_calls"]["receipts"]["total"] == run.receipts[ACME] == acme["cloud_calls"]["total"]
    assert beta["cloud_calls"]["receipts"]["total"] == run.receipts[BETA]


def test_placeholders_per_target_are_those_in_the_bodies_the_cloud_received(run, capsys):
    every = _json(run, capsys, "all")
    seen = {target: Counter(PLACEHOLDER.findall(json.dumps(bodies))) for target, bodies in run.bodies.items()}
    assert every["placeholders"]["by_target"] == {t: dict(sorted(c.items())) for t, c in seen.items() if c}
    assert every["placeholders"]["by_target"]["backup"] == {"EMAIL_ADDRESS": 2}
    assert every["placeholders"]["total"] == sum(sum(c.values()) for c in seen.values())


def test_what_left_raw_names_the_operators_audit_actions_and_blocks_and_budgets_kept_steps_on_the_edge(run, capsys):
    acme = _json(run, capsys, "acme")
    raw = acme["left_raw"]
    assert raw["units_left_raw"] == 1 and raw["by_audit_action"] == 1 and raw["missed"] == 0  # the listed phone
    assert "415-555-0132" in json.dumps(run.bodies)  # it did leave raw, as the operator's audit action allows
    assert raw["audit_actions"]["by_type"] == {"IP_ADDRESS": 1, "PHONE": 1}
    assert acme["kept_on_edge"]["by_reason"] == dict(run.fallbacks[ACME]) == {"privacy-blocked": 1}
    assert acme["kept_on_edge"]["calls_stopped"] == {"privacy-blocked": 1}
    assert _json(run, capsys, "beta")["kept_on_edge"]["by_reason"] == dict(run.fallbacks[BETA])
    assert acme["fail_closed"] == {"total": 0, "by_reason": {}}
    assert acme["inbound"] == {"total": 1, "by_type": {"EMAIL_ADDRESS": 1}, "by_action": {"audit": 1}}
    assert _json(run, capsys, "beta")["inbound"]["total"] == 0


def test_the_trail_is_verified_with_the_checkpoint_that_signs_the_period(run, capsys):
    acme = _json(run, capsys, "acme")
    trail = acme["trail"]
    assert trail["verified"] and trail["intact"] and trail["breaks"] == []
    assert trail["anchored"] and trail["period_checkpoints"]
    assert main(["audit", "verify", "--config", str(run.config), "--format", "json"]) == 0
    verified = json.loads(capsys.readouterr().out)
    assert {p["hash"] for p in trail["period_checkpoints"]} <= set(verified["checkpoint_hashes"])
    assert trail["head_hash"] == verified["head_hash"]


def _md_table(text: str, title: str) -> list[list[str]]:
    block = text.split(f"**{title}**", 1)[1].split("\n\n", 2)[1]
    return [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines()[2:]]


def _fact(text: str, label: str) -> str:
    found = re.search(re.escape(label) + r": ([^\s<]+)", text)
    assert found, label
    return found.group(1)


def _numbers(report: dict[str, Any]) -> dict[str, str]:
    return {"cloud calls": str(report["cloud_calls"]["total"]),
            "protected bodies in the audit": str(report["cloud_calls"]["audited"]),
            "cloud cost (USD)": f"{report['cloud_calls']['cost_usd']:.6f}",
            "egress receipts issued": str(report["cloud_calls"]["receipts"]["total"]),
            "placeholders sent": str(report["placeholders"]["total"]),
            "listed units found raw in what left": str(report["left_raw"]["units_left_raw"]),
            "steps kept on the edge": str(report["kept_on_edge"]["steps"]),
            "fail-closed events": str(report["fail_closed"]["total"]),
            "inbound findings": str(report["inbound"]["total"]),
            "signed checkpoints": str(report["trail"]["checkpoints"])}


def test_markdown_and_html_show_the_jsons_numbers(run, capsys):
    report = _json(run, capsys, "all")
    md = _report(run, capsys, "all", "md").read_text(encoding="utf-8")
    page = _report(run, capsys, "all", "html").read_text(encoding="utf-8")
    for label, value in _numbers(report).items():
        assert _fact(md, label) == value, label
        assert _fact(page, label) == value, label
    rows = {r[0]: r[1:] for r in _md_table(md, "Cloud calls by target")}
    for r in report["cloud_calls"]["by_target"]:
        assert rows[r["target"]] == [str(r["cloud_calls"]), str(r["cloud_raw_input_tokens"]),
                                     str(r["cloud_cache_read_tokens"]), str(r["cloud_output_tokens"]),
                                     f"{r['cloud_cost_usd']:.6f}"]
        cells = "".join(f"<td>{c}</td>" for c in [r["target"], *rows[r["target"]]])
        assert cells in page
    assert {r[0]: int(r[1]) for r in _md_table(md, "Placeholders by type")} == report["placeholders"]["by_type"]
    assert page.count("<svg") == 2  # exposure over time, categories per target


def test_the_pdf_renders_its_pages_and_its_text_holds_the_jsons_numbers(run, capsys):
    import pypdfium2

    report = _json(run, capsys, "all")
    pdf = pypdfium2.PdfDocument(str(_report(run, capsys, "all", "pdf")))
    try:
        assert len(pdf) >= 3  # text pages, then one page per figure
        text = ""
        for i in range(len(pdf)):
            page = pdf[i]
            assert (round(page.get_width()), round(page.get_height())) == (595, 842)  # A4 in points
            image = page.render(scale=0.5).to_pil().convert("L")
            assert image.size == (298, 421)
            histogram = image.histogram()
            assert sum(histogram[:128]) > 200, f"page {i + 1} is blank"  # dark pixels: text or a chart
            text += page.get_textpage().get_text_range() + "\n"
    finally:
        pdf.close()
    flat = " ".join(text.split())
    for label, value in _numbers(report).items():
        assert f"{label}: {value}" in flat, label
    for r in report["cloud_calls"]["by_target"]:
        assert " ".join([r["target"], str(r["cloud_calls"]), str(r["cloud_raw_input_tokens"])]) in flat
    assert "What left for the cloud over time" in flat and "per cloud target" in flat


@pytest.mark.parametrize(("on_error", "status", "reason"), [("fail", 503, "privacy-unavailable"),
                                                             ("edge", 200, "privacy-error-edge")])
def test_a_step_whose_protection_could_not_run_is_a_fail_closed_event(tmp_path, edge, cloud, on_error, status,
                                                                      reason):
    from accounting.database import make_engine
    from accounting.store import UsageStore
    from gateway.state.tenancy import owner_of
    from privacy.report import Scope, build_report
    from tests.privacy.detect.test_edge_detector import closed_port_url

    db = f"sqlite:///{tmp_path / 'gw.sqlite3'}"
    settings = settings_for(edge.url, cloud.url, database_url=db, accounting={"spill_path": None},
                            privacy={"layers": {"ner": False}, "audit_spill_path": None, "on_privacy_error": on_error,
                                     "edge_detector": {"enabled": True, "base_url": closed_port_url(),
                                                       "timeout_s": 5}})
    server = ThreadedServer(create_app(settings, services=guarded_services(settings))).start()
    try:
        start = time.time()
        r = httpx.post(server.url + "/v1/chat/completions", timeout=30, headers={"X-Session-Id": "s"}, json={
            "model": "ecgw/cloud-only", "messages": [{"role": "user", "content": "Please email Johanna Lindqvist at "
                                                                                 "the Uppsala office."}]})
        assert r.status_code == status, r.text
    finally:
        server.stop()
    report = build_report(make_engine(db), Scope("all", None, start, time.time() + 1), usage=UsageStore.from_url(db),
                          public=None, owner_of=owner_of)
    assert report["fail_closed"] == {"total": 1, "by_reason": {reason: 1}}
    assert report["kept_on_edge"]["calls_stopped"] == {reason: 1}
    assert report["cloud_calls"]["total"] == 0 and report["cloud_calls"]["audited"] == 0  # nothing left
    assert report["kept_on_edge"]["by_reason"] == ({"privacy-blocked": 1} if on_error == "edge" else {})
    assert report["trail"] == {"verified": False, "reason": "no public key to verify the checkpoints with"}


@pytest.mark.postgres
def test_on_postgresql_the_reports_numbers_are_the_usage_apis_too(tmp_path, edge, cloud, capsys):
    import uuid

    from sqlalchemy import text

    from accounting.database import make_engine
    from tests.real_parts import postgres_url

    schema = f"period_{uuid.uuid4().hex[:12]}"
    admin = make_engine(postgres_url())
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    db = postgres_url() + ("&" if "?" in postgres_url() else "?") + f"options=-csearch_path%3D{schema}"
    key_file = str(tmp_path / "ecgw.key")
    settings = settings_for(edge.url, cloud.url, database_url=db, secrets={"key_file": key_file},
                            server={"api_keys": [{"name": "acme-1", "key": ACME, "tenant": "acme"},
                                                 {"name": "beta-1", "key": BETA, "tenant": "beta"}]},
                            accounting={"prices": {"openai/gpt-test": PRICES["openai/gpt-primary"]},
                                        "spill_path": None},
                            privacy={"layers": {"ner": False}, "audit_spill_path": None})
    server = ThreadedServer(create_app(settings, services=guarded_services(settings))).start()
    try:
        start = time.time()
        for key, text_ in ((ACME, "Write to alice@example.com."), (ACME, "And to bob@example.org."),
                           (BETA, "Ping carol@example.net.")):
            _step(server.url, key, "s", text_)
        end = time.time()  # every record of the traffic is older; the shutdown checkpoint is newer
        usage = _usage(server.url, ACME, "deployment", start, end)
    finally:
        server.stop()
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"database_url": db, "secrets": {"key_file": key_file}}), encoding="utf-8")
    run = Run(tmp_path, config, start, end, end, {}, {})
    try:
        report = _json(run, capsys, "acme")
        assert _by(report["cloud_calls"]["by_target"], "target") == _cloud_rows(usage)
        assert report["cloud_calls"]["total"] == 2 and report["placeholders"]["by_type"] == {"EMAIL_ADDRESS": 2}
        assert report["trail"]["intact"] and report["trail"]["anchored"]
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def test_bad_options_are_refused_with_what_to_do(tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"database_url": f"sqlite:///{tmp_path / 'db.sqlite3'}",
                                      "secrets": {"key_file": str(tmp_path / "ecgw.key")}}), encoding="utf-8")
    base = ["privacy-report", "--config", str(config)]
    for argv, said in ((["--owner", "acme/other"], "name a tenant"),
                       (["--owner", "acme", "--since", "2026-05-02", "--until", "2026-05-01"], "before --until"),
                       (["--owner", "acme", "--until", "yesterday"], "--until 'yesterday'"),
                       (["--session", "s1", "--format", "pdf"], "use --owner")):
        assert main(base + argv) == 2, argv
        assert said in capsys.readouterr().err, argv
    assert main(base + ["--owner", "acme", "--format", "md"]) == 0  # an empty period is a report, not an error
    assert "- cloud calls: 0" in capsys.readouterr().out


def test_a_tampered_trail_is_reported_broken_and_a_tenant_is_not_shown_other_owners_records(run, capsys):
    import sqlite3
    from contextlib import closing

    copy = run.tmp / "tampered.sqlite3"
    with closing(sqlite3.connect(run.tmp / "gw.sqlite3")) as source, closing(sqlite3.connect(copy)) as db:
        source.backup(db)  # a copy with what the write-ahead log holds
        # beta's findings: each in a finding set its session's calls reference (a set is the calls' content)
        db.execute("UPDATE privacy_finding_set SET type = 'NOTHING' WHERE session_id LIKE 't.beta/%'")
        db.commit()
    config = run.tmp / "tampered.yaml"
    config.write_text(yaml.safe_dump({**yaml.safe_load(run.config.read_text(encoding="utf-8")),
                                      "database_url": f"sqlite:///{copy}"}), encoding="utf-8")
    tampered = Run(run.tmp, config, run.start, run.middle, run.end, {}, {})
    every, acme = _json(tampered, capsys, "all"), _json(tampered, capsys, "acme")
    assert not every["trail"]["intact"] and not acme["trail"]["intact"]
    assert {b["what"] for b in every["trail"]["breaks"]} == {"altered"}
    assert all("where" in b for b in every["trail"]["breaks"])
    assert acme["trail"]["breaks"] and all("where" not in b for b in acme["trail"]["breaks"])
    assert "trail: BROKEN" in _report(tampered, capsys, "acme", "md").read_text(encoding="utf-8")
