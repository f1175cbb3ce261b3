"""Spend against each budget for an operator: the dashboard's budgets panel (the live counters) and ``ecgw usage
--budgets`` (the metering database) agree with what metering recorded, name keys by their label, and cover every
key — its own limits or ``default_key`` — and every limited arm."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import yaml

from accounting.factory import build_meter
from gateway.app import create_app
from gateway.cli.main import main
from tests.conftest import settings_for
from tests.door import guarded_cloud, guarded_services
from tests.fakes.threaded import ThreadedServer

PRICES = {"openai/gpt-test": {"input": 1000.0, "cache_read": 1000.0, "output": 2000.0}}


def _config(tmp_path: Path) -> dict[str, Any]:
    return {
        "database_url": f"sqlite:///{tmp_path / 'metering.sqlite3'}",
        "secrets": {"key_file": str(tmp_path / "secrets.key")},
        "server": {"api_keys": [{"name": "ci", "key": "k1", "tenant": "acme"}, {"name": "lab", "key": "k2"}],
                   "admin_keys": [{"name": "ops", "key": "adm"}]},
        "accounting": {"prices": PRICES},
        "experiments": {"definitions": {"exp": {"arms": {"hosted": {"policy": "cloud-only"}}}}},
        "limits": {"keys": {"ci": {"cloud_usd": {"amount": 5.0, "window": "30d"}, "rpm": 100}},
                   "default_key": {"cloud_calls": {"amount": 10, "window": "1d"}},
                   "arms": {"exp:hosted": {"cloud_calls": {"amount": 50, "window": "1h"}}}},
        "privacy": {"layers": {"ner": False}},
    }


def test_the_dashboard_and_ecgw_usage_budgets_show_spend_against_every_budget(tmp_path: Path, edge: Any,
                                                                             cloud: Any, capsys: Any) -> None:
    config = _config(tmp_path)
    settings = settings_for(edge.url, cloud.url, **config)  # type: ignore[attr-defined]
    services = guarded_services(settings, meter=build_meter(settings.accounting, database_url=settings.database_url),
                                cloud=guarded_cloud(settings))
    with ThreadedServer(create_app(settings, services=services)) as server:
        for key, steps in (("k1", 3), ("k2", 2)):
            for k in range(steps):
                answer = httpx.post(server.url + "/v1/chat/completions", timeout=30,
                                    headers={"authorization": f"Bearer {key}", "x-session-id": f"{key}-{k}"},
                                    json={"model": "ecgw/cloud-only", "max_tokens": 5,
                                          "messages": [{"role": "user", "content": f"step {k}"}]})
                assert answer.status_code == 200 and answer.headers["x-ecgw-route"] == "cloud", answer.text
        assert httpx.get(server.url + "/ui/api/budgets", headers={"authorization": "Bearer k1"},
                         timeout=10).status_code == 401  # an operator's view: admin keys only
        board = httpx.get(server.url + "/ui/api/budgets", headers={"authorization": "Bearer adm"}, timeout=10)
        assert board.status_code == 200, board.text
    with sqlite3.connect(tmp_path / "metering.sqlite3") as db:
        acme_usd = db.execute("SELECT SUM(cost_usd) FROM ecgw_usage_records WHERE side = 'cloud' AND "
                              "session_id LIKE 't.acme/%'").fetchone()[0]
    live = {(r["scope"], r["name"], r["kind"]): r for r in board.json()["limits"]}
    assert set(live) == {("key", "ci", "cloud_usd"), ("key", "ci", "rpm"), ("key", "lab", "cloud_calls"),
                         ("arm", "exp:hosted", "cloud_calls")}
    assert abs(live[("key", "ci", "cloud_usd")]["spent"] - acme_usd) < 1e-9 and acme_usd > 0
    assert live[("key", "ci", "cloud_usd")]["left"] == 5.0 - live[("key", "ci", "cloud_usd")]["spent"]
    assert live[("key", "lab", "cloud_calls")]["spent"] == 2
    assert live[("key", "ci", "rpm")]["amount"] == 100 and live[("key", "ci", "rpm")]["window"] == "1m"
    assert live[("arm", "exp:hosted", "cloud_calls")]["spent"] == 0  # no session ran under the arm

    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({**config, "edge": {"launch": "never"}, "cloud": {"model": "openai/gpt-test"}}))
    assert main(["usage", "--budgets", "--config", str(path), "--format", "json"]) == 0
    truth = {(r["scope"], r["name"], r["kind"]): r for r in json.loads(capsys.readouterr().out)}
    for budget in (("key", "ci", "cloud_usd"), ("key", "lab", "cloud_calls"), ("arm", "exp:hosted", "cloud_calls")):
        assert abs(truth[budget]["spent"] - live[budget]["spent"]) < 1e-9, budget  # counters settle to metering's
        assert truth[budget]["window"] == live[budget]["window"] and truth[budget]["resets_at"]
    assert main(["usage", "--budgets", "--config", str(path)]) == 0
    table = capsys.readouterr().out
    assert "ci" in table and "cloud_usd" in table and "k1" not in table and "k2" not in table  # labels, no secrets
    assert main(["usage", "--budgets"]) == 2 and "--config" in capsys.readouterr().err
