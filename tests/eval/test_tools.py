from __future__ import annotations

from pathlib import Path

import pytest

from eval.tools import TOOL_SPECS, Workspace


@pytest.fixture()
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "exec").mkdir()
    (tmp_path / "exec" / "a.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    return Workspace(tmp_path, exec_timeout_s=5)


def test_specs_name_the_five_tools() -> None:
    assert [s["function"]["name"] for s in TOOL_SPECS] == ["read", "write", "edit", "exec", "ls"]


def test_read_with_alias_path_offset_and_limit(ws: Workspace) -> None:
    assert ws.call("read", {"path": "/tmp_workspace/exec/a.txt"}).text == "one\ntwo\nthree"
    result = ws.call("read", '{"file_path": "exec/a.txt", "offset": 2, "limit": 1}')
    assert result.text == "two\n\n[1 more lines in file. Use offset=3 to continue]"
    missing = ws.call("read", {"path": "/tmp_workspace/exec/nope.txt"})
    assert missing.is_error and missing.text == "File not found: /tmp_workspace/exec/nope.txt"


def test_write_creates_parents_and_stays_inside(ws: Workspace) -> None:
    result = ws.call("write", {"path": "/tmp_workspace/exec/deep/b.txt", "content": "héllo"})
    assert result.text == "Successfully wrote 6 bytes to /tmp_workspace/exec/deep/b.txt"
    assert (ws.root / "exec" / "deep" / "b.txt").read_text(encoding="utf-8") == "héllo"
    escape = ws.call("write", {"path": "/tmp_workspace/../outside.txt", "content": "x"})
    assert escape.is_error and "outside the workspace" in escape.text
    assert not (ws.root.parent / "outside.txt").exists()


def test_edit_requires_one_exact_match(ws: Workspace) -> None:
    assert not ws.call("edit", {"path": "exec/a.txt", "oldText": "two", "newText": "2"}).is_error
    assert (ws.root / "exec" / "a.txt").read_text(encoding="utf-8") == "one\n2\nthree\n"
    (ws.root / "exec" / "a.txt").write_text("x x", encoding="utf-8")
    dup = ws.call("edit", {"path": "exec/a.txt", "old_string": "x", "new_string": "y"})
    assert dup.is_error and "Found 2 occurrences" in dup.text
    absent = ws.call("edit", {"path": "exec/a.txt", "oldText": "zzz", "newText": "y"})
    assert absent.is_error and "Could not find" in absent.text


def test_exec_translates_paths_and_reports_exit_codes(ws: Workspace) -> None:
    out = ws.call("exec", {"command": "cat /tmp_workspace/exec/a.txt | wc -l; pwd"})
    assert out.text == "3\n/tmp_workspace" and not out.is_error
    failed = ws.call("exec", {"cmd": "echo oops >&2; exit 3"})
    assert failed.is_error and failed.text == "oops\n\nCommand exited with code 3"
    slow = ws.call("exec", {"command": "sleep 5", "timeout": 0.2})
    assert slow.is_error and "timed out after 0.2 seconds" in slow.text


def test_ls_and_unknown_tool_and_bad_json(ws: Workspace) -> None:
    (ws.root / "exec" / "sub").mkdir()
    assert ws.call("ls", {"path": "/tmp_workspace/exec"}).text == "a.txt\nsub/"
    assert ws.call("ls", {"path": "exec/sub"}).text == "(empty directory)"
    assert ws.call("browser", {}).is_error
    bad = ws.call("read", "{not json")
    assert bad.is_error and "Invalid JSON" in bad.text
    assert ws.call("read", {}).text == "missing required argument: path"


def test_no_translation_when_mounted_at_alias(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, alias=str(tmp_path))
    assert not ws.translated and ws.translate("/tmp_workspace/x") == "/tmp_workspace/x"
