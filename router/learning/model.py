"""A fitted router as a file: which features it reads, how it standardises them, its logistic coefficients, and
``fitted_until`` (the newest step it learned from, so ``replay`` evaluates only later sessions). JSON, small and
readable: a coefficient per named feature, on standardised values, so their sizes compare."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accounting.errors import EcgwError
from router.learning.features import vector

KIND = "ecgw-router/logistic-v1"


class ModelFileError(EcgwError, ValueError):
    """A model file that cannot be used; the message starts with its path."""


@dataclass(frozen=True)
class RouterModel:
    features: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    fitted_until: float
    report: Mapping[str, Any] = field(default_factory=dict)  # cross-validated AUC, calibration, counts

    def score(self, row: Sequence[float]) -> float:
        """P(the edge disagrees with the cloud) for a vector in ``features`` order."""
        z = self.intercept + sum(c * (x - m) / s for c, x, m, s in
                                 zip(self.coefficients, row, self.means, self.scales, strict=True))
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def predict(self, features: Mapping[str, Any]) -> float | None:
        """P(disagree) for a step's features; None when one the model reads is missing."""
        row = vector(features, self.features)
        return None if row is None else self.score(row)

    def as_json(self) -> dict[str, Any]:
        return {"kind": KIND, "target": "the edge's answer disagrees with the cloud's (shadow label)",
                "features": list(self.features),
                "standardise": {"means": list(self.means), "scales": list(self.scales)},
                "coefficients": dict(zip(self.features, self.coefficients, strict=True)),
                "intercept": self.intercept, "fitted_until": self.fitted_until, "report": dict(self.report)}

    def write(self, path: Path) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.as_json(), indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)


def _numbers(value: Any, n: int, what: str) -> tuple[float, ...]:
    if not isinstance(value, list) or len(value) != n or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        raise ValueError(f"{what} must be {n} finite numbers")
    return tuple(float(v) for v in value)


def from_json(data: Any) -> RouterModel:
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ValueError(f"not a router model (its 'kind' must be {KIND!r}; make one with `ecgw router fit`)")
    features = data.get("features")
    if not isinstance(features, list) or not features or not all(isinstance(f, str) for f in features):
        raise ValueError("'features' must be a list of feature names")
    n = len(features)
    standardise = data.get("standardise") or {}
    coefficients = data.get("coefficients")
    if not isinstance(coefficients, dict) or set(coefficients) != set(features):
        raise ValueError("'coefficients' must give one number per feature")
    scales = _numbers(standardise.get("scales"), n, "standardise.scales")
    if any(s <= 0 for s in scales):
        raise ValueError("standardise.scales must be positive")
    intercept, until = data.get("intercept"), data.get("fitted_until")
    for name, value in (("intercept", intercept), ("fitted_until", until)):
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            raise ValueError(f"'{name}' must be a number")
    assert isinstance(intercept, int | float) and isinstance(until, int | float)
    return RouterModel(tuple(features), _numbers(standardise.get("means"), n, "standardise.means"), scales,
                       _numbers([coefficients[f] for f in features], n, "coefficients"), float(intercept),
                       float(until), report if isinstance(report := data.get("report"), dict) else {})


def load_model(path: str | Path) -> RouterModel:
    """The model in ``path``; ``ModelFileError`` naming the path when it is missing or not a valid model."""
    where = Path(path)
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelFileError(f"{where}: no such model file (make one with `ecgw router fit --out {where}`)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{where}: cannot read a model from it: {exc}") from None
    try:
        return from_json(data)
    except ValueError as exc:
        raise ModelFileError(f"{where}: {exc}") from None
