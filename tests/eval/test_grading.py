from __future__ import annotations

from pathlib import Path

from eval.grading import run_grader


def test_grader_gets_transcript_and_workspace(tmp_path: Path) -> None:
    source = (
        "def grade(transcript: list, workspace_path: str) -> dict:\n"
        "    from pathlib import Path\n"
        "    n = len(transcript)\n"
        "    ok = (Path(workspace_path) / 'f.txt').exists()\n"
        "    print('noise on stdout')\n"
        "    return {'overall_score': 0.5 if ok else 0.0, 'entries': n}\n")
    (tmp_path / "f.txt").write_text("x")
    outcome = run_grader(source, workspace_path=str(tmp_path), transcript=[{"type": "session"}, {}])
    assert outcome.error is None and outcome.score == 0.5 and outcome.details["entries"] == 2


def test_grader_failures_score_zero_with_reason(tmp_path: Path) -> None:
    raising = run_grader("def grade(**kw):\n    raise RuntimeError('judge unreachable')\n", workspace_path="/x")
    assert raising.score == 0 and raising.error and "judge unreachable" in raising.error
    missing_import = run_grader("def grade(**kw):\n    import privacy_audit\n    return {}\n", workspace_path="/x")
    assert missing_import.score == 0 and "privacy_audit" in (missing_import.error or "")
    no_score = run_grader("def grade(**kw):\n    return {'score': 1}\n", workspace_path="/x")
    assert no_score.score == 0 and "overall_score" in (no_score.error or "")
    out_of_range = run_grader("def grade(**kw):\n    return {'overall_score': 1.5}\n", workspace_path="/x")
    assert out_of_range.score == 0 and "1.5" in (out_of_range.error or "")
    slow = run_grader("def grade(**kw):\n    import time; time.sleep(10)\n", workspace_path="/x", timeout_s=0.5)
    assert slow.score == 0 and slow.error == "grader timed out after 0.5 s"
    killed = run_grader("def grade(**kw):\n    import os; os._exit(7)\n", workspace_path="/x")
    assert killed.score == 0 and "exited with code 7" in (killed.error or "")


def test_grader_sees_given_env() -> None:
    source = "def grade(**kw):\n    import os\n    return {'overall_score': 1.0 if os.environ.get('JUDGE_MODEL') == 'j' else 0.0}\n"
    import os
    assert run_grader(source, workspace_path="/x", env={**os.environ, "JUDGE_MODEL": "j"}).score == 1.0
    assert run_grader(source, workspace_path="/x", env={"PATH": os.environ["PATH"]}).score == 0.0
