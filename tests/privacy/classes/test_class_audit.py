"""Did any contact data reach a standard target? ``ecgw audit query`` and the period report's classes × tiers after
real traffic: a gateway on loopback with a standard and a trusted cloud target (doubles speaking OpenAI's wire),
SQLite, two tenants; the answer checked against the receipts the clients received."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gateway.app import create_app
from gateway.cli.main import main
from privacy.audit.receipts import parse
from tests.conftest import settings_for
from tests.door import guarded_services, guarded_targets
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer

ACME, BETA = "sk-acme-1", "sk-beta-1"


@dataclass
class Run:
    tmp: Path
    config: Path
    db: Path
    start: float
    claims: list[dict[str, Any]]  # every receipt's claims as the clients received them


def _step(url: str, key: str, text: str) -> httpx.Response:
    r = httpx.post(url + "/v1/chat/completions", timeout=30, headers={"Authorization": f"Bearer {key}"},
                   json={"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": text}]})
    assert r.status_code == 200, r.text
    return r


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    tmp = tmp_path_factory.mktemp("classes-audit")
    edge_fake, public, private = (ModelServer("edge", model="edge-model"), ModelServer("public", model="gpt-public"),
                                  ModelServer("private", model="gpt-private"))
    with ThreadedServer(edge_fake.app) as edge, ThreadedServer(public.app) as pub, \
            ThreadedServer(private.app) as priv:
        db, key_file = tmp / "gw.sqlite3", str(tmp / "ecgw.key")
        targets = {"targets": {
            "public": {"model": "openai/gpt-public", "api_base": pub.url + "/v1", "timeout_s": 20},
            "private": {"model": "openai/gpt-private", "api_base": priv.url + "/v1", "timeout_s": 20,
                        "tier": "trusted"}},
            "default_target": "public", "fallbacks": {"public": ["private"]}}
        settings = settings_for(
            edge.url, pub.url, database_url=f"sqlite:///{db}", secrets={"key_file": key_file}, cloud=targets,
            server={"api_keys": [{"name": "acme-1", "key": ACME, "tenant": "acme"},
                                 {"name": "beta-1", "key": BETA, "tenant": "beta"}]},
            accounting={"spill_path": None},
            privacy={"layers": {"ner": False}, "audit_spill_path": None,
                     "classes": {"contact": {"standard": "block"}}})
        server = ThreadedServer(create_app(settings, services=guarded_services(
            settings, cloud_transport=guarded_targets([])))).start()
        try:
            start = time.time()
            seen = [_step(server.url, ACME, "Write to alice@example.com about the invoice."),
                    _step(server.url, ACME, "Deploy with key AKIAIOSFODNN7EXAMPLE today."),
                    _step(server.url, BETA, "Mail bob@example.org and carol@example.net the summary."),
                    _step(server.url, BETA, "What is a monad?")]
        finally:
            server.stop()  # the audit flushed and its head signed
    claims = [parse(t)[1] for r in seen for t in r.headers["x-ecgw-egress-receipt"].split(",")]
    config = tmp / "config.yaml"
    config.write_text(yaml.safe_dump({"database_url": f"sqlite:///{db}", "secrets": {"key_file": key_file}}),
                      encoding="utf-8")
    yield Run(tmp, config, db, start, claims)


def _query(run: Run, capsys: pytest.CaptureFixture[str], *args: str, fmt: str = "json") -> tuple[int, str]:
    code = main(["audit", "query", *args, "--since", str(run.start), "--config", str(run.config), "--format", fmt])
    return code, capsys.readouterr().out


def test_the_query_counts_the_bodies_of_a_class_that_reached_a_tier(run: Run, capsys: pytest.CaptureFixture[str]
                                                                     ) -> None:
    expected = {(c["tier"], name) for c in run.claims for name in c["classes"]}
    assert expected == {("trusted", "contact"), ("standard", "secrets")}  # contact never went to standard
    code, out = _query(run, capsys, "--class", "contact", "--tier", "trusted")
    answer = json.loads(out)
    assert code == 0 and answer["count"] == 2 and answer["chain"]["verified"] is True
    assert {r["target"] for r in answer["receipts"]} == {"private"}
    assert sorted(r["contact"]["pseudonymised"] for r in answer["receipts"]) == [1, 2]
    code, out = _query(run, capsys, "--class", "contact", "--tier", "standard")
    assert code == 0 and json.loads(out)["count"] == 0
    code, out = _query(run, capsys, "--class", "secrets", "--tier", "standard", "--owner", "acme")
    assert json.loads(out)["count"] == 1
    code, out = _query(run, capsys, "--class", "contact", "--tier", "trusted", "--owner", "beta", fmt="md")
    assert code == 0 and "**1** bodies holding contact data were handed to a trusted target" in out
    assert "The audit chain over the period verified" in out and "| private |" in out


def test_the_period_report_has_classes_by_tier_and_action(run: Run, capsys: pytest.CaptureFixture[str]) -> None:
    out = run.tmp / "report.json"
    assert main(["privacy-report", "--owner", "all", "--since", str(run.start), "--format", "json",
                 "--config", str(run.config), "--output", str(out)]) == 0, capsys.readouterr().err
    rows = json.loads(out.read_text())["classes"]["by_class_tier"]
    assert rows == [{"class": "contact", "tier": "trusted", "pseudonymised": 3, "raw": 0, "receipts": 2},
                    {"class": "secrets", "tier": "standard", "pseudonymised": 1, "raw": 0, "receipts": 1}]
    assert main(["privacy-report", "--owner", "all", "--since", str(run.start), "--format", "md",
                 "--config", str(run.config)]) == 0
    assert "| contact | trusted | 3 | 0 | 2 |" in capsys.readouterr().out


def test_bad_options_are_refused_and_a_tampered_trail_does_not_verify(run: Run,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["audit", "query", "--class", "health", "--tier", "standard", "--config", str(run.config)])
    assert "invalid choice: 'health'" in capsys.readouterr().err
    assert _query(run, capsys, "--class", "contact", "--tier", "trusted", "--until", "yesterday")[0] == 2
    copy = run.tmp / "tampered.sqlite3"
    with closing(sqlite3.connect(run.db)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)  # the database with its write-ahead log, not the main file alone
        target.execute("UPDATE privacy_receipt SET target = 'public' WHERE target = 'private'")
        target.commit()  # a receipt rewritten: its chain entry no longer matches
    code = main(["audit", "query", "--class", "contact", "--tier", "trusted", "--config", str(run.config),
                 "--database-url", f"sqlite:///{copy}", "--format", "json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == 1 and answer["chain"]["verified"] is False and answer["chain"]["breaks"]
