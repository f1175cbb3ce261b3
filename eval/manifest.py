"""``grid.json``: what an output folder holds, merged over every ``ecgw eval run`` / ``acebench`` call into it.

One entry per policy — its suite, repeat count, task ids and harness — so ``--policies a`` and then
``--policies b`` into the same ``--out`` are both reported. A policy run again keeps the union of its task ids
and the larger repeat count (runs already on disk stay counted). The read-merge-write holds an exclusive lock,
so calls running side by side into one folder lose nothing. The first layout (one suite, policy list, repeat
and task list for the whole folder) is still read.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST = "grid.json"
VERSION = 2


@dataclass(frozen=True)
class PolicyEntry:
    policy: str
    repeat: int
    task_ids: tuple[str, ...]
    suite: str | None = None
    harness: str = "builtin"


def read(out: Path) -> list[PolicyEntry]:
    """Every policy of the folder, in the order they were first run."""
    data: dict[str, Any] = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    if data.get("version") == VERSION:
        return [PolicyEntry(name, int(e["repeat"]), tuple(e["task_ids"]), e.get("suite"),
                            str(e.get("harness") or "builtin")) for name, e in data["policies"].items()]
    return [PolicyEntry(str(name), int(data["repeat"]), tuple(data["task_ids"]), data.get("suite"),
                        str(data.get("harness") or "builtin")) for name in data["policies"]]


def _merge(old: PolicyEntry | None, new: PolicyEntry) -> PolicyEntry:
    if old is None:
        return new
    return PolicyEntry(new.policy, max(old.repeat, new.repeat), tuple(dict.fromkeys(old.task_ids + new.task_ids)),
                       new.suite or old.suite, new.harness)


@contextmanager
def _locked(out: Path) -> Iterator[None]:
    with (out / (MANIFEST + ".lock")).open("a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def record(out: Path, policies: Sequence[str], *, repeat: int, task_ids: Sequence[str], suite: str | None,
           harness: str = "builtin") -> list[PolicyEntry]:
    """Add this call's policies to the folder's manifest (merging with what is there); returns all entries."""
    out.mkdir(parents=True, exist_ok=True)
    with _locked(out):
        entries = {e.policy: e for e in read(out)} if (out / MANIFEST).is_file() else {}
        for policy in policies:
            entries[policy] = _merge(entries.get(policy), PolicyEntry(policy, repeat, tuple(task_ids), suite,
                                                                      harness))
        data = {"version": VERSION, "policies": {
            e.policy: {"suite": e.suite, "harness": e.harness, "repeat": e.repeat, "task_ids": list(e.task_ids)}
            for e in entries.values()}}
        tmp = out / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, out / MANIFEST)
    return list(entries.values())
