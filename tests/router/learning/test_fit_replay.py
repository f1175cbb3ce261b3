"""``ecgw router fit`` and ``replay`` on the synthetic workload (benchmarks/learning.py) stored in a real SQLite file:
fitted on the first sessions, replayed only on the sessions after the model's ``fitted_until``, the learned router
beats entropy alone at a 25 % cloud rate; and the commands' failures are clear."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accounting.calls import StepRecord
from accounting.steps import insert_steps, step_row
from accounting.store import UsageStore
from benchmarks.learning import step_rows
from gateway.cli.main import main
from router.learning.fit import auc, fold_of
from router.learning.model import load_model


def _store(tmp_path: Path, train: int = 120, test: int = 80) -> str:
    url = f"sqlite:///{tmp_path / 'steps.sqlite3'}"
    store = UsageStore.from_url(url)
    try:
        store.open()
        rows = step_rows(11, range(train + test), start_at=1_000_000.0)
        insert_steps(store, [step_row(StepRecord(
            request_id=r["request_id"], session_id=r["session_id"], policy="step-routing", started_at=r["started_at"],
            latency_s=0.1, status=200, route="edge", features=r["features"], label=r["label"])) for r in rows])
    finally:
        store.dispose()
    return url


def test_fit_then_replay_on_later_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = _store(tmp_path)
    split = 1_000_000.0 + 120 * 6  # the first 120 sessions' steps start before this
    model_file = tmp_path / "router.json"
    assert main(["router", "fit", "--since", "0", "--until", str(split), "--out", str(model_file),
                 "--database-url", url, "--format", "json"]) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert fitted["sessions"] == 120 and fitted["steps"] == 720
    assert fitted["cv_auc"] > fitted["entropy_auc"] + 0.1  # the step's kind says more than its entropy
    assert sum(row["steps"] for row in fitted["calibration"]) == 720
    model = load_model(model_file)
    assert model.fitted_until == split - 1 and set(json.loads(model_file.read_text())["coefficients"]) == set(
        model.features)
    assert main(["router", "replay", str(model_file), "--database-url", url, "--format", "json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["sessions"] == 80 and replayed["steps"] == 480  # only sessions after fitted_until
    at = replayed["at"]
    assert at["learned"] > at["entropy"] >= at["random"] - 0.05
    assert at["lead_ci95"][0] > 0  # the lead's bootstrap interval excludes zero
    assert [p["cloud_rate"] for p in replayed["curves"]["learned"]][:3] == [0.0, 0.05, 0.1]
    assert replayed["curves"]["learned"][-1]["agreement"] == 1.0  # everything on the cloud agrees with it
    assert main(["router", "replay", str(model_file), "--database-url", url]) == 0
    assert "lead over entropy" in capsys.readouterr().out


def test_the_commands_fail_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'empty.sqlite3'}"
    UsageStore.from_url(url).open()
    assert main(["router", "fit", "--out", str(tmp_path / "m.json"), "--database-url", url]) == 1
    assert "too little to learn from: 0 labelled steps" in capsys.readouterr().err
    assert main(["router", "replay", str(tmp_path / "missing.json"), "--database-url", url]) == 2
    assert f"{tmp_path / 'missing.json'}: no such model file" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text('{"kind": "something else"}')
    assert main(["router", "replay", str(tmp_path / "bad.json"), "--database-url", url]) == 2
    assert "bad.json: not a router model" in capsys.readouterr().err
    assert main(["router", "fit", "--since", "yesterday", "--out", "x", "--database-url", url]) == 2


def test_auc_and_folds() -> None:
    assert auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    assert auc([0.5, 0.5], [0, 1]) == 0.5 and auc([1, 2], [1, 1]) is None
    assert fold_of("synthetic-1-3", 5) == fold_of("synthetic-1-3", 5)
    assert len({fold_of(f"s{i}", 5) for i in range(50)}) == 5
