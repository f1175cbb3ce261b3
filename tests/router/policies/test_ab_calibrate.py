"""`ecgw ab` arithmetic (rates, tokens, cost, exposure, completion with bootstrap CIs) and `ecgw calibrate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gateway.cli.main import main
from router.ab import bootstrap_ci, compare
from tests.fakes.model_server import ModelServer, Reply


def _row(session: str, request: str, arm: str, side: str, purpose: str = "step", **more: object) -> dict[str, object]:
    return {"experiment": "e", "arm": arm, "policy": arm, "session_id": session, "request_id": request,
            "side": side, "purpose": purpose, "raw_input_tokens": 10, "cache_read_tokens": 5,
            "cache_write_tokens": 0, "output_tokens": 2, **more}


ROWS = [
    _row("s1", "r1", "a", "edge", "probe"), _row("s1", "r1", "a", "cloud", cost_usd=0.01),
    _row("s1", "r2", "a", "edge", "probe", edge_flops=2e12), _row("s1", "r2", "a", "edge", edge_flops=3e12),
    _row("s2", "r3", "b", "edge"), _row("s2", "r4", "b", "edge"),
]


def test_compare_counts_per_arm() -> None:
    a, b = compare(ROWS, exposures={"s1": 0.25, "s2": 0.0}, grades={"s1": 1.0, "s2": 0.0})
    assert (a.group, a.requests, a.cloud_requests, a.cloud_call_rate) == ("a", 2, 1, 0.5)
    assert (a.cloud_calls, a.cloud_raw_input_tokens, a.cloud_cache_read_tokens, a.cloud_output_tokens) == (1, 10, 5, 2)
    assert a.cloud_cost_usd == pytest.approx(0.01) and a.unpriced_cloud_calls == 0
    assert a.edge_pflops == pytest.approx(0.005)
    assert a.exposure == 0.25 and a.completion == 1.0
    assert a.purposes == {"edge:probe": 2, "cloud:step": 1, "edge:step": 1}
    assert (b.cloud_call_rate, b.cloud_calls, b.completion) == (0.0, 0, 0.0)


def test_bootstrap_ci_brackets_the_mean_and_is_seeded() -> None:
    values = [1.0] * 30 + [0.0] * 20
    low, high = bootstrap_ci(values, seed=1)
    assert low < 0.6 < high and 0.4 < low and high < 0.8
    assert bootstrap_ci(values, seed=1) == (low, high)
    assert bootstrap_ci([1.0, 1.0]) == (1.0, 1.0)


def test_ab_command_with_grades(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    calls = tmp_path / "calls.jsonl"
    calls.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    grades = tmp_path / "grades.jsonl"
    grades.write_text('{"session_id": "s1", "passed": true}\n{"session_id": "s2", "passed": false}\n')
    assert main(["ab", "--experiment", "e", "--calls", str(calls), "--grades", str(grades), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [g["group"] for g in out] == ["a", "b"]
    assert out[0]["completion"] == 1.0 and out[0]["completion_ci"] == [1.0, 1.0]
    assert main(["ab", "--experiment", "other", "--calls", str(calls)]) == 1  # rows of another experiment


def test_calibrate_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompts = tmp_path / "prompts.jsonl"
    lines = [json.dumps({"prompt": "x" * n}) for n in (100, 200, 300, 400, 500, 600, 700, 800, 900, 1000)]
    prompts.write_text("\n".join(lines) + "\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"policy": {"knobs": {"task-routing": {"scorer": "rules",
                                                                            "rules": {"long_chars": 1000}}}}}))
    assert main(["calibrate", "--prompts", str(prompts), "--target-share", "0.2", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "threshold 0.9000 sends 0.200" in out and "policy.knobs.task-routing.threshold: 0.9000" in out


def test_calibrate_edge_judge_asks_the_edge(tmp_path: Path, edge: ModelServer,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    edge.script(Reply("2"), Reply("9/10"), Reply("5"), Reply("no idea"))
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("say hi\nprove the Riemann hypothesis\nrefactor a module\nwhat?\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"edge": {"base_url": edge.url + "/v1", "model": "edge-model"}}))  # type: ignore[attr-defined]
    assert main(["calibrate", "--prompts", str(prompts), "--target-share", "0.34", "--config", str(config),
                 "--scorer", "edge-judge"]) == 0
    out = capsys.readouterr().out
    assert "prompts 4, scored 3" in out and "threshold 0.9000 sends 0.333" in out
    assert [r["messages"][1]["content"] for r in edge.requests][:2] == ["say hi", "prove the Riemann hypothesis"]


def test_ab_reads_the_metering_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from accounting.store import UsageStore

    url = f"sqlite:///{tmp_path / 'ecgw.sqlite3'}"
    store = UsageStore.from_url(url)
    store.open()
    rows = []
    for i, r in enumerate(ROWS):
        rows.append({"record_id": f"r{i}", "started_at": 0.0, "day": "2026-01-01", "request_id": r["request_id"],
                     "session_id": r["session_id"], "experiment": "e", "arm": r["arm"], "policy": r["policy"],
                     "purpose": r["purpose"], "side": r["side"], "provider": "p", "model": "m", "streamed": False,
                     "status": 200, "latency_s": 0.1, "ttft_s": None, "prompt_tokens": 15, "cache_read_tokens": 5,
                     "cache_write_tokens": 0, "raw_input_tokens": 10, "output_tokens": 2, "reasoning_tokens": None,
                     "usage_source": "upstream", "cost_usd": r.get("cost_usd"), "price_version": None,
                     "edge_flops": r.get("edge_flops"), "flops_formula": None})
    try:
        store.insert(rows)
    except Exception as exc:  # the accounting schema moved on: this test names what ab reads
        pytest.fail(f"accounting's store no longer accepts the columns `ecgw ab` reads: {exc}")
    assert main(["ab", "--experiment", "e", "--database-url", url]) == 0
    out = capsys.readouterr().out
    assert "| a | 1 | 2 | 0.500 | 1 | 10 | 5 | 2 | 0.0100 |" in out


async def test_arm_rates_are_cached_for_their_ttl() -> None:
    from router.rates import ArmRates

    now = [0.0]
    reads: list[tuple[str, str]] = []
    counts = {("e", "a"): (2, 1)}  # arm a served 2 requests, 1 of them called the cloud

    def counts_of(experiment: str, arm: str) -> tuple[int, int] | None:
        reads.append((experiment, arm))
        return counts.get((experiment, arm))

    rates = ArmRates(counts_of, ttl_s=60, clock=lambda: now[0])
    assert await rates("e", "a") == 0.5 and await rates("e", "a") == 0.5 and reads == [("e", "a")]
    now[0] = 61.0
    assert await rates("e", "a") == 0.5 and len(reads) == 2
    assert await rates("e", "nobody") is None
