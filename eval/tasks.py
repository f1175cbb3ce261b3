"""Load AceBench task files: YAML front matter plus ``## Section`` blocks, into a typed ``Task``.

A task file looks like::

    ---
    id: ACE_Bench_task_1_hipaa_phi_referral
    name: ...
    agent_category: "Safety & Security"
    timeout_seconds: 600
    privacy_note: "..."          # only on privacy-annotated tasks
    ---
    ## Prompt
    ...
    ## Automated Checks
    ```python
    def grade(**kwargs) -> dict: ...
    ```
    ## Workspace Path
    ```
    workspace/ACE_Bench/task_1_hipaa_phi_referral
    ```
    ## Skills / ## Env / ## Warmup   (one fenced block each, possibly empty)

Headings are recognised only outside fenced code blocks, so a prompt that quotes Markdown cannot start a
section by accident. Any problem raises ``TaskFormatError`` naming the file and the section.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REQUIRED_SECTIONS = ("Prompt", "Automated Checks", "Workspace Path")
KNOWN_SECTIONS = REQUIRED_SECTIONS + (
    "Expected Behavior", "Grading Criteria", "LLM Judge Rubric", "Skills", "Env", "Warmup")
REQUIRED_FRONT_MATTER = ("id", "name", "timeout_seconds")

_HEADING = re.compile(r"^## +(?P<title>\S.*?)\s*$")
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


class TaskFormatError(ValueError):
    """A task file that cannot be loaded; the message names the file and the section."""

    def __init__(self, path: Path | str, section: str, problem: str) -> None:
        self.path = Path(path)
        self.section = section
        self.problem = problem
        super().__init__(f"{self.path}: section {section!r}: {problem}")


@dataclass(frozen=True)
class CodeBlock:
    language: str
    text: str


@dataclass(frozen=True)
class Task:
    id: str
    name: str
    path: Path
    agent_category: str
    timeout_seconds: int
    privacy_note: str | None
    prompt: str
    grade_source: str
    workspace_path: str
    expected_behavior: str = ""
    grading_criteria: str = ""
    llm_judge_rubric: str = ""
    skills: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    warmup: str = ""
    front_matter: Mapping[str, Any] = field(default_factory=dict)
    sections: Mapping[str, str] = field(default_factory=dict)

    @property
    def privacy_annotated(self) -> bool:
        return self.privacy_note is not None

    @property
    def suite_root(self) -> Path:
        """The directory the ``Workspace Path`` is relative to: the parent of the ``tasks/`` folder."""
        return self.path.parent.parent

    def workspace_dir(self, root: Path | None = None) -> Path:
        return (root if root is not None else self.suite_root) / self.workspace_path

    @property
    def warmup_commands(self) -> tuple[str, ...]:
        return tuple(line for line in (s.strip() for s in self.warmup.splitlines()) if line and not line.startswith("#"))


# ---------------------------------------------------------------------------------------------------------------
# parsing


def _split_front_matter(text: str, path: Path) -> tuple[dict[str, Any], str]:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise TaskFormatError(path, "front matter", "the file must start with a '---' line")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise TaskFormatError(path, "front matter", "no closing '---' line") from None
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise TaskFormatError(path, "front matter", f"invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise TaskFormatError(path, "front matter", "expected a YAML mapping")
    for key in REQUIRED_FRONT_MATTER:
        if data.get(key) in (None, ""):
            raise TaskFormatError(path, "front matter", f"missing required key {key!r}")
    return data, "\n".join(lines[end + 1:])


def split_sections(body: str, path: Path) -> dict[str, str]:
    """``## Title`` → the text under it, up to the next heading outside a fenced block."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    fence: str | None = None
    fence_section = ""
    for line in body.splitlines():
        match = _FENCE.match(line)
        if match:
            marker = match["fence"]
            if fence is None:
                fence, fence_section = marker, next(reversed(sections), "")
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not match["info"].strip():
                fence = None
        elif fence is None:
            heading = _HEADING.match(line)
            if heading:
                title = heading["title"]
                if title in sections:
                    raise TaskFormatError(path, title, "the section appears twice")
                current = sections[title] = []
                continue
        if current is not None:
            current.append(line)
        elif line.strip():
            raise TaskFormatError(path, "front matter", "text before the first '## ' section heading")
    if fence is not None:
        raise TaskFormatError(path, fence_section or "body", "a fenced code block is never closed")
    return {title: "\n".join(lines).strip("\n") for title, lines in sections.items()}


def code_blocks(section: str) -> list[CodeBlock]:
    blocks: list[CodeBlock] = []
    fence: str | None = None
    language = ""
    buffer: list[str] = []
    for line in section.splitlines():
        match = _FENCE.match(line)
        if fence is None and match:
            fence, language, buffer = match["fence"], match["info"].strip(), []
        elif fence is not None and match and match["fence"][0] == fence[0] and not match["info"].strip():
            blocks.append(CodeBlock(language, "\n".join(buffer)))
            fence = None
        elif fence is not None:
            buffer.append(line)
    return blocks


def _single_block(sections: Mapping[str, str], title: str, path: Path) -> CodeBlock:
    text = sections.get(title)
    if text is None:
        return CodeBlock("", "")
    blocks = code_blocks(text)
    if not blocks:
        if text.strip():
            raise TaskFormatError(path, title, "expected a fenced code block")
        return CodeBlock("", "")
    if len(blocks) > 1:
        raise TaskFormatError(path, title, f"expected one fenced code block, found {len(blocks)}")
    return blocks[0]


def _lines(block: CodeBlock) -> tuple[str, ...]:
    return tuple(line.strip() for line in block.text.splitlines() if line.strip())


def _grade_source(sections: Mapping[str, str], path: Path) -> str:
    title = "Automated Checks"
    blocks = [b for b in code_blocks(sections[title]) if b.language in ("python", "py", "")]
    if not blocks:
        raise TaskFormatError(path, title, "no ```python code block")
    source = blocks[0].text
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise TaskFormatError(path, title, f"grade() source is not valid Python: line {exc.lineno}: {exc.msg}") \
            from None
    if not any(isinstance(node, ast.FunctionDef) and node.name == "grade" for node in tree.body):
        raise TaskFormatError(path, title, "the code block defines no top-level grade() function")
    return source


def parse_task(text: str, path: Path) -> Task:
    front, body = _split_front_matter(text, path)
    sections = split_sections(body, path)
    for title in REQUIRED_SECTIONS:
        if title not in sections:
            raise TaskFormatError(path, title, "required section is missing")
    if not sections["Prompt"].strip():
        raise TaskFormatError(path, "Prompt", "the prompt is empty")
    try:
        timeout = int(front["timeout_seconds"])
    except (TypeError, ValueError):
        raise TaskFormatError(path, "front matter", "timeout_seconds must be an integer") from None
    if timeout <= 0:
        raise TaskFormatError(path, "front matter", "timeout_seconds must be positive")
    workspace = _lines(_single_block(sections, "Workspace Path", path))
    if len(workspace) != 1:
        raise TaskFormatError(path, "Workspace Path", f"expected exactly one path line, found {len(workspace)}")
    note = front.get("privacy_note")
    return Task(
        id=str(front["id"]),
        name=str(front["name"]),
        path=path,
        agent_category=str(front.get("agent_category") or ""),
        timeout_seconds=timeout,
        privacy_note=str(note) if note not in (None, "") else None,
        prompt=sections["Prompt"].strip(),
        grade_source=_grade_source(sections, path),
        workspace_path=workspace[0],
        expected_behavior=sections.get("Expected Behavior", "").strip(),
        grading_criteria=sections.get("Grading Criteria", "").strip(),
        llm_judge_rubric=sections.get("LLM Judge Rubric", "").strip(),
        skills=_lines(_single_block(sections, "Skills", path)),
        env=_lines(_single_block(sections, "Env", path)),
        warmup=_single_block(sections, "Warmup", path).text,
        front_matter=front,
        sections=sections,
    )


def load_task(path: Path) -> Task:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFormatError(path, "file", f"cannot read: {exc}") from None
    return parse_task(text, path)


def _natural_key(path: Path) -> tuple[Any, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name))


def load_tasks(directory: Path) -> list[Task]:
    """Every ``*.md`` in ``directory`` (or its ``tasks/`` folder), in natural order; ids must be unique."""
    if (directory / "tasks").is_dir():
        directory = directory / "tasks"
    if not directory.is_dir():
        raise FileNotFoundError(f"no task directory at {directory}")
    tasks = [load_task(p) for p in sorted(directory.glob("*.md"), key=_natural_key)]
    seen: dict[str, Path] = {}
    for task in tasks:
        if task.id in seen:
            raise TaskFormatError(task.path, "front matter", f"id {task.id!r} is also used by {seen[task.id]}")
        seen[task.id] = task.path
    return tasks
