"""Load the benchmark's per-task index, ``tasks_index.tsv`` (one typed row per task)."""

from __future__ import annotations

import csv
from dataclasses import dataclass, fields
from pathlib import Path

from eval.tasks import TaskFormatError


@dataclass(frozen=True)
class IndexRow:
    id: str
    num: int
    name: str
    agent_category: str
    source: str
    original_id: str
    timeout_s: int
    judge_type: str  # LLM / mixed / programmatic
    judge_detail: str
    needs_web: str  # y / n / opt
    web_note: str
    runtime: str  # file-only / mock-services / local-webapp+browser / internet
    mock_services: tuple[str, ...]
    skills: tuple[str, ...]
    privacy_annotated: bool
    privacy_scope: str
    grade_reads_chat_jsonl: bool
    prompt_lang: str


COLUMNS = tuple(f.name for f in fields(IndexRow))
_LISTS = {"mock_services", "skills"}
_INTS = {"num", "timeout_s"}
_FLAGS = {"privacy_annotated", "grade_reads_chat_jsonl"}


def _convert(column: str, value: str, path: Path, line: int) -> object:
    value = value.strip()
    if column in _LISTS:
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if column in _INTS:
        try:
            return int(value)
        except ValueError:
            raise TaskFormatError(path, f"row {line}", f"column {column!r} is not an integer: {value!r}") from None
    if column in _FLAGS:
        if value not in ("y", "n"):
            raise TaskFormatError(path, f"row {line}", f"column {column!r} must be y or n, not {value!r}")
        return value == "y"
    return value


def load_index(path: Path) -> list[IndexRow]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise TaskFormatError(path, "header", f"missing columns: {', '.join(missing)}")
        rows = []
        for line, raw in enumerate(reader, start=2):
            values = {c: _convert(c, raw.get(c) or "", path, line) for c in COLUMNS}
            rows.append(IndexRow(**values))  # type: ignore[arg-type]
    return rows
