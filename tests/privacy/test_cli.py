"""``ecgw scrub`` and ``ecgw privacy-report`` as a user runs them."""

from __future__ import annotations

import io
import json
import sys

from gateway.cli.main import main
from tests.privacy.helpers import UNITS, protector, units_document


def run(monkeypatch, capsys, argv, stdin=""):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_scrub_writes_the_cloud_body_and_a_report(monkeypatch, capsys, tmp_path):
    units = tmp_path / "units.json"
    units.write_text(json.dumps(UNITS), encoding="utf-8")
    report = tmp_path / "r.json"
    body = {"model": "m", "messages": [{"role": "user", "content": "Call 415 555 0132, key AKIAIOSFODNN7EXAMPLE"}]}
    code, out, _ = run(monkeypatch, capsys, ["scrub", "--units", str(units), "--report", str(report)],
                       json.dumps(body))
    assert code == 0
    assert json.loads(out)["messages"][0]["content"] == "Call [PHONE_001], key [AWS_ACCESS_KEY_001]"
    findings = json.loads(report.read_text())["findings"]
    assert {f["unit_id"] for f in findings} == {"cust-7.phone", None}
    # the raw values, in any spelling, never reach the report (its keyed hashes are random hex, so a short
    # digit run like "415" may appear in them by chance)
    text = report.read_text()
    assert "415 555 0132" not in text and "4155550132" not in text and "AKIAIOSFODNN7EXAMPLE" not in text


def test_scrub_rejects_invalid_input(monkeypatch, capsys):
    code, out, err = run(monkeypatch, capsys, ["scrub"], "not json")
    assert code == 2 and out == "" and "not JSON" in err
    code, _, err = run(monkeypatch, capsys, ["scrub"], '{"no": "messages"}')
    assert code == 2 and "messages" in err


async def test_privacy_report_computes_exposure(monkeypatch, capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'audit.sqlite3'}"
    p = protector(database_url=url, layers={"ner": False}, actions={"contact": "audit"})
    await p.register_units("s-1", units_document())
    await p.protect({"messages": [{"role": "user", "content": "415-555-0132 / Maria Gonzalez / 张伟"}]},
                    session_id="s-1", request_id="r-1")
    p.flush()
    export = tmp_path / "cloud_assistant_audit.jsonl"
    code, out, _ = run(monkeypatch, capsys, ["privacy-report", "--session", "s-1", "--format", "json",
                                             "--database-url", url, "--export", str(export)])
    assert code == 0
    report = json.loads(out)
    status = {u["unit_id"]: u["status"] for u in report["units"]}
    assert status["cust-7.phone"] == "exposed" and status["cust-7.full_name"] == "protected"
    assert status["emp-2.姓名"] == "protected" and status["cust-7.email"] == "not_sent"
    assert abs(report["exposure"] - 2 / 12) < 1e-9  # phone weight 2 of 12
    line = json.loads(export.read_text().splitlines()[0])
    assert line["session_id"] == "s-1" and "[FULL_NAME_001]" in line["input"][0]["content"]
    code, md, _ = run(monkeypatch, capsys, ["privacy-report", "--session", "s-1", "--database-url", url])
    assert code == 0 and "exposure (weighted): 16.7%" in md
