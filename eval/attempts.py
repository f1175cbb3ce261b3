"""Attempts of one task run: each has a session id of its own, so a redo or a resume meters only itself.

A run is redone by deleting its ``result.json`` and resumed after a crash by running the grid again; either way
the run directory is cleared for a new attempt — except ``attempts.jsonl``, the ledger, one line per attempt
(number, session id, start time). The first attempt's session id is the run's stable name
(``eval:cloud-only:task_1:run0``), a later one's adds its number (``…:run0:a2``), so an attempt never shares its
session — its audit, its sticky routing — with an earlier one, while sessions stay deterministic (``random-matched``
draws its coins from the session id, so a grid replays). Deleting a whole run folder deletes its ledger too: use a
new ``--experiment`` name for a fresh grid against the same gateway. The record says how many attempts it took.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

LEDGER = "attempts.jsonl"


@dataclass(frozen=True)
class Attempt:
    number: int  # 1 for a run's first attempt
    session_id: str


def _entries(run_dir: Path) -> list[dict[str, object]]:
    path = run_dir / LEDGER
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a line cut short by a crash
        if isinstance(value, dict):
            entries.append(value)
    return entries


def begin(run_dir: Path, base_session: str) -> Attempt:
    """Clear ``run_dir`` for a new attempt (keeping the ledger), record the attempt, return its session."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for child in run_dir.iterdir():
        if child.name == LEDGER:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    number = len(_entries(run_dir)) + 1
    attempt = Attempt(number, base_session if number == 1 else f"{base_session}:a{number}")
    with (run_dir / LEDGER).open("a", encoding="utf-8") as ledger:
        ledger.write(json.dumps({"attempt": number, "session_id": attempt.session_id,
                                 "started_at": round(time.time(), 3)}) + "\n")
    return attempt


def current(run_dir: Path, base_session: str) -> Attempt:
    """The latest attempt in the ledger; a run without one (made before ledgers existed) is its base session."""
    entries = _entries(run_dir)
    if not entries:
        return Attempt(1, base_session)
    last = entries[-1]
    return Attempt(int(str(last.get("attempt") or len(entries))), str(last.get("session_id") or base_session))
