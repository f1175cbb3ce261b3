"""grid.json merges every run into one folder: earlier policies stay reported; the first layout still reads."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from eval import manifest


def test_separate_runs_into_one_folder_are_all_listed(tmp_path: Path) -> None:
    manifest.record(tmp_path, ["edge-only"], repeat=3, task_ids=["t1", "t2"], suite="s")
    manifest.record(tmp_path, ["cloud-only"], repeat=1, task_ids=["t1"], suite="s")
    # the same policy again, on another task and more runs: both tasks, the larger repeat
    manifest.record(tmp_path, ["edge-only"], repeat=5, task_ids=["t3"], suite="s")
    entries = {e.policy: e for e in manifest.read(tmp_path)}
    assert list(entries) == ["edge-only", "cloud-only"]
    assert entries["edge-only"].task_ids == ("t1", "t2", "t3") and entries["edge-only"].repeat == 5
    assert entries["cloud-only"].task_ids == ("t1",) and entries["cloud-only"].repeat == 1


def test_runs_recording_side_by_side_lose_nothing(tmp_path: Path) -> None:
    policies = [f"p{i}" for i in range(16)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: manifest.record(tmp_path, [p], repeat=1, task_ids=["t"], suite=None), policies))
    assert sorted(e.policy for e in manifest.read(tmp_path)) == sorted(policies)


def test_the_first_layout_is_read_and_upgraded(tmp_path: Path) -> None:
    (tmp_path / manifest.MANIFEST).write_text(json.dumps(
        {"suite": "s", "harness": "acebench", "policies": ["a", "b"], "repeat": 2, "task_ids": ["t1"]}))
    assert [(e.policy, e.repeat, e.task_ids, e.harness) for e in manifest.read(tmp_path)] == [
        ("a", 2, ("t1",), "acebench"), ("b", 2, ("t1",), "acebench")]
    manifest.record(tmp_path, ["c"], repeat=1, task_ids=["t2"], suite="s")
    assert [e.policy for e in manifest.read(tmp_path)] == ["a", "b", "c"]
