"""The benchmark harness runs end to end (few requests, no timing assertions: timing lives in RESULTS.md)."""

from __future__ import annotations

from benchmarks import run


def test_harness_runs_every_contender_and_renders(monkeypatch):
    report = run.run(smoke=True, include_litellm=False, include_portkey=False)
    for rows in report["latency"].values():
        assert set(rows) == {"direct", "ecgw-edge-only"}
        assert all(r["n"] == 10 and r["errors"] == 0 for r in rows.values())
        assert "added_p50_ms" in rows["ecgw-edge-only"]
    assert report["agent_request_cloud_private"]["ecgw-cloud-private"]["errors"] == 0
    assert len(report["privacy_scrub"]["steps_ms"]) == 5
    assert report["rss_mb"]["ecgw-edge-only"] > 0
    for key in ("replicas", "replicas_cloud_litellm"):  # through transport auto (the own door), then litellm
        replicas = report[key]  # one replica, then two sharing one Redis (scripts/redis.sh)
        assert set(replicas) == {"one replica", "two replicas"}
        assert all(r["errors"] == 0 and r["n"] > 0 and r["redis_commands_per_step"] > 0 for r in replicas.values())
    text = run.render(report)
    assert "### Non-streaming, concurrency 4" in text and "ecgw-cloud-private" in text
    assert "Replicas sharing one Redis" in text and "cloud.transport auto" in text and "cloud.transport litellm" in text


def test_the_replicas_agent_step_is_the_20_kb_request_through_the_protected_door():
    from benchmarks.replicas import agent_body

    body = agent_body()
    assert body["model"] == "ecgw/cloud-only" and len(body["messages"]) == 2 + 2 * 39
    assert len(body["messages"][0]["content"]) >= 20_000


def test_the_scrub_benchmark_reports_the_request_path_and_the_audit_writer_apart():
    from benchmarks.scrub import measure

    report = measure(steps=3, calls=2)
    assert (report["trajectory"]["steps"], report["repeat"]["calls"]) == (2, 2)
    for part in ("trajectory", "repeat"):
        row = report[part]
        # every step writes audit rows: the writer's share is there, and the process's is at least the request path's
        assert row["main_p50_ms"] > 0 and row["writer_p50_ms"] > 0 and row["writer_min_ms"] > 0, row
        assert row["process_p50_ms"] >= row["main_p50_ms"], row


def test_the_class_benchmark_measures_the_agent_steps_classes():
    from benchmarks.classes import measure, render

    report = measure(steps=5, rounds=2)
    # the workload's people, addresses and its one token are found and classed: the check runs on real counts
    assert {"contact", "people", "secrets"} <= set(report["claims"]) and report["cpu_us_p50"] > 0
    assert "The data-class check" in render(report)


def test_the_detectors_benchmark_sets_each_part_against_a_baseline_without_it():
    from benchmarks.detectors import measure, render

    report = measure(rounds=1, smoke=True)
    # the pair really differs by the real-text layer: it finds values in real-looking prompts the rest does not
    assert report["prompt_findings"]["with"] > report["prompt_findings"]["without"], report["prompt_findings"]
    for row in ("realtext_agent_cold", "realtext_incremental", "realtext_prompt", "meter_agent_cold"):
        assert report[row]["with_ms"] > 0 and report[row]["without_ms"] > 0, report[row]
    assert report["classes_agent_step_ms"] > 0
    text = render(report)
    assert "real-prompt detectors" in text and "scan budget" in text and "data-class check" in text


def test_the_cpu_benchmark_reads_the_gateway_against_the_bare_relay_in_the_same_run():
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "benchmarks.cpu", "--requests", "20", "--warmup", "5",
                          "--concurrency", "4", "--rounds", "2"], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout.splitlines()[0])
    for shape in ("json", "stream"):  # both relays answered every request (a failed one raises), twice each
        row = report[shape]
        assert len(row["gateway"]["cpu_us_per_request"]["runs"]) == 2
        assert row["bare"]["cpu_us_per_request"]["min"] > 0
        assert row["x_bare"]["min"] == round(row["gateway"]["cpu_us_per_request"]["min"]
                                             / row["bare"]["cpu_us_per_request"]["min"], 2)


def test_the_memory_benchmark_measures_forked_workers_a_soak_and_open_streams(tmp_path):
    import json
    import subprocess
    import sys

    from benchmarks.results import RESULTS

    before = RESULTS.read_bytes()
    out = subprocess.run([sys.executable, "-m", "benchmarks.memory", "--smoke"], capture_output=True, text=True,
                         check=True, timeout=900)
    report = json.loads(out.stdout.splitlines()[0])
    assert all(row["mb"] > 0 and row["cpu_s"] > 0 for row in report["components"].values()), report["components"]
    assert report["one_worker"]["pss_mb"] > 0 and report["one_worker"]["warmup_errors"] == 0
    soak = report["soak"]
    assert len(soak["workers"]) == 2 and soak["errors"] == 0 and not soak["restarted_workers"]
    assert len(soak["rss_mb_samples"]) == 21 and all(w["pss_mb"] > 0 for w in soak["workers"])
    streams = report["open_streams"]
    assert streams["completed"] == report["streams"] and streams["open_at_measure"] > 0
    assert report["raw_addresses_reached_cloud"] == 0  # the cloud-private half was protected
    assert all(0 < w["uss_mb"] < w["rss_mb"] for w in soak["workers"])  # forked: most of a worker is shared
    assert "per further worker" in out.stdout
    assert RESULTS.read_bytes() == before  # --smoke writes nothing
