"""`ecgw usage`: groupings, formats, --since, and its answers to bad input."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from accounting.reports import REPORT_FIELDS
from accounting.store import UsageStore
from gateway.cli.main import main
from tests.accounting.rows import row

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def filled(database_url: str) -> str:
    store = UsageStore.from_url(database_url)
    store.open()
    store.insert([
        row(request_id="r1", session_id="a", policy="cloud-only", raw_input_tokens=1_500_000,
            cache_read_tokens=2_500_000, prompt_tokens=4_000_000, output_tokens=250_000, cost_usd=7.5,
            started_at=1_780_000_000.0, day="2026-05-28"),
        row(request_id="r2", session_id="b", policy="edge-only", side="edge", model="qwen", cost_usd=None,
            price_version=None, edge_flops=2.5e15, flops_formula="2*N*(raw_input+output)",
            started_at=1_780_090_000.0, day="2026-05-29", experiment="exp1", arm="control", purpose="probe"),
    ])
    store.dispose()
    return database_url


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["usage", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_rows_have_the_issue_fields(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--by", "policy", "--format", "json", "--database-url", filled)
    assert code == 0
    rows = {r["group"]: r for r in json.loads(out)}
    for field in ("group", "requests", "cloud_calls", "edge_calls", "cloud_raw_input_tokens",
                  "cloud_cache_read_tokens", "cloud_cache_write_tokens", "cloud_output_tokens", "cloud_cost_usd",
                  "edge_prompt_tokens", "edge_output_tokens", "edge_pflops", "cloud_call_rate", "cache_hit_rate",
                  "estimated_share"):
        assert field in rows["cloud-only"]
    assert rows["cloud-only"]["cloud_cost_usd"] == 7.5 and rows["cloud-only"]["cloud_call_rate"] == 1.0
    assert rows["edge-only"]["edge_pflops"] == 2.5 and rows["edge-only"]["cloud_call_rate"] == 0.0


@pytest.mark.parametrize(("by", "groups"), [
    ("session", ["a", "b"]), ("policy", ["cloud-only", "edge-only"]), ("day", ["2026-05-28", "2026-05-29"]),
    ("purpose", ["probe", "step"]), ("model", ["gpt-test", "qwen"]),
])
def test_groupings(filled: str, capsys: pytest.CaptureFixture[str], by: str, groups: list[str]) -> None:
    code, out, _ = _run(capsys, "--by", by, "--format", "json", "--database-url", filled)
    assert code == 0 and [r["group"] for r in json.loads(out)] == groups


def test_experiment_and_arm_groupings_keep_unassigned_calls(filled: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, "--by", "arm", "--format", "json", "--database-url", filled)
    assert sorted(str(r["group"]) for r in json.loads(out)) == ["None", "control"]


def test_since(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, "--by", "day", "--format", "json", "--since", "2026-05-29", "--database-url", filled)
    assert [r["group"] for r in json.loads(out)] == ["2026-05-29"]
    code, _, err = _run(capsys, "--since", "last tuesday", "--database-url", filled)
    assert code == 2 and "7d" in err


def test_table_uses_the_paper_units_and_names_the_formula(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--by", "policy", "--database-url", filled)
    assert code == 0
    header = out.splitlines()[0]
    assert "millions" in header and "USD" in header and "PFLOPs" in header
    assert "2*N*(raw_input+output)" in header
    line = next(ln for ln in out.splitlines() if ln.startswith("cloud-only"))
    assert "1.5000" in line and "2.5000" in line and "0.2500" in line and "7.5000" in line


def test_csv_and_markdown(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, "--by", "session", "--format", "csv", "--database-url", filled)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["group"] for r in rows] == ["a", "b"] and list(rows[0]) == list(REPORT_FIELDS)
    _, out, _ = _run(capsys, "--by", "session", "--format", "md", "--database-url", filled)
    assert "| session | requests |" in out and "| a |" in out


def test_unknown_grouping_exits_2_listing_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["usage", "--by", "colour"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    for valid in ("session", "policy", "experiment", "arm", "model", "purpose", "day"):
        assert valid in err


def test_unreachable_database_is_explained_without_the_password(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "--database-url", "postgresql://ops:hunter2@127.0.0.1:1/metering")
    assert code == 1 and out == ""
    assert "postgresql://ops:***@127.0.0.1:1/metering" in err and "hunter2" not in err


def test_missing_sqlite_file_is_explained(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "--database-url", f"sqlite:///{tmp_path / 'nope.sqlite3'}")
    assert code == 1 and "does not exist" in err
    assert not (tmp_path / "nope.sqlite3").exists()


def test_database_url_comes_from_the_config_file(filled: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ECGW_DATABASE_URL", raising=False)
    config = tmp_path / "c.yaml"
    config.write_text(f"database_url: {filled}\n")
    code, out, _ = _run(capsys, "--config", str(config), "--format", "json")
    assert code == 0 and len(json.loads(out)) == 2


def test_the_installed_command(filled: str) -> None:
    done = subprocess.run([sys.executable, "-m", "gateway.cli", "usage", "--by", "model", "--format", "json",
                           "--database-url", filled], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [r["group"] for r in json.loads(done.stdout)] == ["gpt-test", "qwen"]
