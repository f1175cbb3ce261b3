from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

from eval.index import load_index
from eval.paths import ENV_VAR, acebench_dir, repo_root
from eval.tasks import TaskFormatError, code_blocks, load_task, load_tasks, parse_task

GOOD = '''---
id: demo_task
name: Demo
agent_category: "Automation"
timeout_seconds: 120
privacy_note: "has private data"
extra_key: [1, 2]
---
## Prompt

Do the thing in `/tmp_workspace/exec/`.

```markdown
## Not a section
```

## Expected Behavior

It does the thing.

## Automated Checks

```python
def grade(**kwargs) -> dict:
    return {"overall_score": 1.0}
```

## Workspace Path

```
workspace/demo
```

## Skills

```
task1
agent-browser
```

## Env

```
JUDGE_MODEL
```

## Warmup

```bash
# comment
python3 server.py &
sleep 1
```
'''


def write(tmp_path: Path, text: str, name: str = "task_x.md") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_synthetic_task_fields(tmp_path: Path) -> None:
    task = load_task(write(tmp_path, GOOD))
    assert task.id == "demo_task" and task.name == "Demo"
    assert task.agent_category == "Automation" and task.timeout_seconds == 120
    assert task.privacy_annotated and task.privacy_note == "has private data"
    assert task.front_matter["extra_key"] == [1, 2]
    assert task.prompt.startswith("Do the thing") and "## Not a section" in task.prompt
    assert "Not a section" not in task.sections
    assert task.expected_behavior == "It does the thing."
    assert task.grading_criteria == ""
    assert task.grade_source.startswith("def grade(**kwargs)")
    assert task.workspace_path == "workspace/demo"
    assert task.workspace_dir(tmp_path) == tmp_path / "workspace/demo"
    assert task.skills == ("task1", "agent-browser")
    assert task.env == ("JUDGE_MODEL",)
    assert task.warmup_commands == ("python3 server.py &", "sleep 1")


def test_grade_source_is_executable(tmp_path: Path) -> None:
    namespace: dict[str, object] = {}
    exec(load_task(write(tmp_path, GOOD)).grade_source, namespace)  # noqa: S102
    assert namespace["grade"]() == {"overall_score": 1.0}  # type: ignore[operator]


@pytest.mark.parametrize(("mutate", "section", "fragment"), [
    (lambda t: t.replace("---\nid", "id", 1), "front matter", "must start"),
    (lambda t: t.replace("id: demo_task\n", ""), "front matter", "'id'"),
    (lambda t: t.replace("timeout_seconds: 120", "timeout_seconds: soon"), "front matter", "integer"),
    (lambda t: t.replace("## Prompt", "## Promtp"), "Prompt", "missing"),
    (lambda t: t.replace("def grade(**kwargs)", "def grad(**kwargs)"), "Automated Checks", "grade()"),
    (lambda t: t.replace('return {"overall_score": 1.0}', "return {"), "Automated Checks", "not valid Python"),
    (lambda t: t.replace("workspace/demo", "a\nb"), "Workspace Path", "exactly one"),
    (lambda t: t.replace("```\ntask1", "task1"), "Skills", "expected one fenced code block"),
    (lambda t: t.replace("## Env", "## Warmup", 1), "Warmup", "twice"),
    (lambda t: t.rstrip().rsplit("```", 1)[0], "Warmup", "never closed"),
])
def test_malformed_file_names_file_and_section(tmp_path: Path, mutate, section: str, fragment: str) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path, mutate(GOOD), "broken_task.md")
    with pytest.raises(TaskFormatError) as info:
        load_task(path)
    assert info.value.section == section
    assert info.value.path == path
    message = str(info.value)
    assert "broken_task.md" in message and repr(section) in message and fragment in message


def test_load_tasks_rejects_duplicate_ids(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "a_1.md")
    write(tmp_path, GOOD, "a_2.md")
    with pytest.raises(TaskFormatError, match="also used by"):
        load_tasks(tmp_path)


def test_load_tasks_natural_order(tmp_path: Path) -> None:
    for n in (10, 2, 1):
        write(tmp_path, GOOD.replace("demo_task", f"t{n}"), f"task_{n}_x.md")
    assert [t.id for t in load_tasks(tmp_path)] == ["t1", "t2", "t10"]


def test_code_blocks_keep_language_and_text() -> None:
    blocks = code_blocks("intro\n```json\n{\"a\": 1}\n```\ntext\n```\n```\n")
    assert [(b.language, b.text) for b in blocks] == [("json", '{"a": 1}'), ("", "")]


def test_parse_task_error_uses_given_path() -> None:
    with pytest.raises(TaskFormatError, match=r"virtual\.md"):
        parse_task("no front matter", Path("virtual.md"))


def test_acebench_dir_default_and_override(tmp_path: Path) -> None:
    assert acebench_dir({}) == repo_root().parent / "shared" / "acebench"
    assert acebench_dir({ENV_VAR: str(tmp_path)}) == tmp_path


# ---- the real benchmark ---------------------------------------------------------------------------------------


def test_all_benchmark_tasks_load(acebench: Path) -> None:
    tasks = load_tasks(acebench / "tasks")
    assert len(tasks) == 128
    assert len({t.id for t in tasks}) == 128
    assert sum(t.privacy_annotated for t in tasks) == 100
    for task in tasks:
        assert task.prompt and task.timeout_seconds > 0
        assert task.workspace_path.startswith("workspace/")
        assert any(isinstance(n, ast.FunctionDef) and n.name == "grade" for n in ast.parse(task.grade_source).body)
    categories = Counter(t.agent_category for t in tasks)
    assert set(categories) == {"Office & Daily Tasks", "Information Search & Gathering", "Safety & Security",
                               "Data Analysis", "Development & Operations", "Automation"}
    # 21 tasks carry an LLM judge rubric; one has no Grading Criteria section; 8 use the browser skill
    assert sum(bool(t.llm_judge_rubric) for t in tasks) == 21
    assert sum(not t.grading_criteria for t in tasks) == 1
    assert sum("agent-browser" in t.skills for t in tasks) == 8


def test_benchmark_privacy_annotated_are_1_to_102(acebench: Path) -> None:
    for task in load_tasks(acebench):
        number = int(task.id.split("_")[3])
        assert task.privacy_annotated == (number <= 102), task.id


def test_index_agrees_with_task_files(acebench: Path) -> None:
    rows = {r.id: r for r in load_index(acebench / "tasks_index.tsv")}
    tasks = {t.id: t for t in load_tasks(acebench)}
    assert rows.keys() == tasks.keys()
    for task_id, task in tasks.items():
        row = rows[task_id]
        assert row.name == task.name
        assert row.agent_category == task.agent_category
        assert row.timeout_s == task.timeout_seconds
        assert row.privacy_annotated == task.privacy_annotated
        assert set(row.skills) == set(task.skills), task_id
    assert Counter(r.runtime for r in rows.values())["file-only"] == 46
    assert sum(r.privacy_annotated for r in rows.values()) == 100


def test_index_bad_cell_names_row(tmp_path: Path, acebench: Path) -> None:
    lines = (acebench / "tasks_index.tsv").read_text(encoding="utf-8").splitlines()[:3]
    cells = lines[2].split("\t")
    cells[1] = "two"
    path = write(tmp_path, "\n".join([lines[0], lines[1], "\t".join(cells)]) + "\n", "index.tsv")
    with pytest.raises(TaskFormatError, match=r"index\.tsv.*row 3.*'num'"):
        load_index(path)
