"""One JSON file per task run: write it, read it back as a ``RunRecord`` (the harness's output, the report's input)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from eval.metrics import CloudUsage, RunRecord, UnitLeak


def record_to_json(record: RunRecord, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    data = asdict(record)
    data.update(extra or {})
    return data


def _leaks(raw: Any) -> tuple[UnitLeak, ...] | None:
    if raw is None:
        return None
    return tuple(UnitLeak(float(u["weight"]), float(u["leak"]), str(u.get("unit_id", ""))) for u in raw)


def _cloud(raw: Mapping[str, Any] | None) -> CloudUsage:
    raw = raw or {}
    return CloudUsage(int(raw.get("prompt", 0)), int(raw.get("cache_read", 0)), int(raw.get("cache_write", 0)),
                      int(raw.get("output", 0)))


def record_from_json(data: Mapping[str, Any]) -> RunRecord:
    return RunRecord(
        task_id=str(data["task_id"]),
        run=int(data["run"]),
        overall_score=float(data.get("overall_score") or 0.0),
        error=data.get("error"),
        cloud=_cloud(data.get("cloud")),
        cloud_cost_usd=float(data.get("cloud_cost_usd") or 0.0),
        edge_flops=float(data.get("edge_flops") or 0.0),
        leaks=_leaks(data.get("leaks")),
        judge_leaks=_leaks(data.get("judge_leaks")),
        attempts=int(data.get("attempts") or 1),
        incomplete=tuple(str(reason) for reason in data.get("incomplete") or ()),
        shadow_calls=int(data.get("shadow_calls") or 0),
        shadow_cloud=_cloud(data.get("shadow_cloud")),
        shadow_cost_usd=float(data.get("shadow_cost_usd") or 0.0),
    )


def save_run(path: Path, record: RunRecord, extra: Mapping[str, Any] | None = None) -> None:
    """Atomically: a reader (or a resumed grid) never sees half a record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record_to_json(record, extra), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def load_run(path: Path) -> RunRecord:
    return record_from_json(json.loads(path.read_text(encoding="utf-8")))
