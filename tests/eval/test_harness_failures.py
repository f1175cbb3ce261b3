"""Harness defects a review found, each pinned by a test that fails without its fix."""

from __future__ import annotations

from pathlib import Path

from eval.grading import run_grader
from eval.harness import _install_ground_truth
from eval.tools import Workspace


def test_bad_tool_arguments_are_a_tool_error_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    ws = Workspace(tmp_path)
    for name, args in (("read", {"path": "a.txt", "offset": "ten"}), ("ls", {"path": ".", "limit": [1]}),
                       ("exec", {"command": "true", "timeout": "30s"}),
                       ("edit", {"path": "blob.bin", "oldText": "x", "newText": "y"})):
        result = ws.call(name, args)
        assert result.is_error, (name, result)


def test_exec_returns_when_the_command_does_and_caps_the_models_timeout(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, exec_timeout_s=2)
    # A command that leaves a child in the background answers with its output, not with the harness's timeout
    # error; a model's timeout of 1000 s is capped by the harness's 2 s.
    result = ws.call("exec", {"command": "sleep 30 & echo started"})
    assert not result.is_error and result.text.strip() == "started"
    slow = ws.call("exec", {"command": "sleep 30", "timeout": 1000})
    assert slow.is_error and "timed out after 2" in slow.text


def test_a_grader_that_prints_without_a_newline_still_scores() -> None:
    source = "import sys\ndef grade(**kw):\n    sys.stdout.write('checking...')\n    return {'overall_score': 1.0}\n"
    assert run_grader(source, workspace_path="/tmp").score == 1.0


def test_ground_truth_replaces_what_the_agent_left_and_never_follows_a_link(tmp_path: Path) -> None:
    source = tmp_path / "task_gt"
    source.mkdir()
    (source / "answer.json").write_text('{"ok": true}')
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "gt").symlink_to(outside)
    _install_ground_truth(source, workspace / "gt")
    assert not (outside / "answer.json").exists()
    assert (workspace / "gt" / "answer.json").read_text() == '{"ok": true}' and not (workspace / "gt").is_symlink()
    planted = tmp_path / "ws2"
    planted.mkdir()
    (planted / "gt").write_text("planted")
    _install_ground_truth(source, planted / "gt")
    assert (planted / "gt" / "answer.json").exists()
