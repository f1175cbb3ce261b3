"""Fitting the router: an L2-regularised logistic regression (Newton's method, numpy) predicting "the edge would
disagree with the cloud" from a step's features, cross-validated by session (a session's steps are never split
between training and testing), with its AUC and calibration.

Why not scikit-learn: the model is a dozen coefficients; numpy (already a dependency) fits it exactly in a few
Newton steps, and the file it produces stays one we define and can read back without the library.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from router.learning.features import DECISION_FEATURES, vector
from router.learning.model import RouterModel

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Dataset:
    x: Array
    y: Array  # 1 = the edge disagreed with the cloud
    sessions: tuple[str, ...]
    started: tuple[float, ...]
    entropy: Array  # entropy_first, the signal entropy-only routing reads


def dataset(rows: Sequence[Mapping[str, Any]], features: Sequence[str] = DECISION_FEATURES) -> Dataset:
    """Labelled step rows (``accounting.steps.labelled_steps``) as arrays; rows missing a feature are left out."""
    xs: list[list[float]] = []
    ys: list[float] = []
    sessions: list[str] = []
    started: list[float] = []
    entropy: list[float] = []
    for row in rows:
        found = vector(row["features"], features)
        label = row.get("label") or {}
        if found is None or not isinstance(label.get("agree"), bool):
            continue
        xs.append(found)
        ys.append(0.0 if label["agree"] else 1.0)
        sessions.append(str(row["session_id"]))
        started.append(float(row["started_at"]))
        entropy.append(float(row["features"].get("entropy_first") or 0.0))
    return Dataset(np.array(xs, dtype=np.float64).reshape(len(xs), len(features)), np.array(ys, dtype=np.float64),
                   tuple(sessions), tuple(started), np.array(entropy, dtype=np.float64))


def logistic(x: Array, y: Array, *, l2: float = 1.0, iterations: int = 50) -> tuple[Array, float]:
    """Weights and intercept minimising the log loss + l2/2·|w|² (the intercept unpenalised), by Newton's method."""
    n, d = x.shape
    design = np.hstack([np.ones((n, 1)), x])
    beta = np.zeros(d + 1)
    penalty = np.eye(d + 1) * l2
    penalty[0, 0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ beta, -35, 35)))
        gradient = design.T @ (p - y) + penalty @ beta
        hessian = (design * (p * (1 - p))[:, None]).T @ design + penalty + np.eye(d + 1) * 1e-9
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return beta[1:], float(beta[0])


def auc(scores: Sequence[float] | Array, labels: Sequence[float] | Array) -> float | None:
    """The probability that a random positive scores above a random negative (ties count half); None without both."""
    s, y = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    positives, negatives = s[y == 1], s[y == 0]
    if not len(positives) or not len(negatives):
        return None
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s))
    sorted_s = s[order]
    i = 0
    while i < len(s):  # average ranks over ties
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    rank_sum = float(ranks[y == 1].sum())
    return (rank_sum - len(positives) * (len(positives) + 1) / 2) / (len(positives) * len(negatives))


def calibration(p: Array, y: Array, bins: int = 5) -> list[dict[str, float | int | str]]:
    """Per bin of predicted probability: the mean prediction, the observed disagreement rate, the steps."""
    out: list[dict[str, float | int | str]] = []
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        mask = (p >= low) & ((p < high) if b < bins - 1 else (p <= high))
        if mask.any():
            out.append({"bin": f"{low:.1f}-{high:.1f}", "predicted": round(float(p[mask].mean()), 4),
                        "observed": round(float(y[mask].mean()), 4), "steps": int(mask.sum())})
    return out


def fold_of(session: str, folds: int) -> int:
    """A session's fold, stable across runs and machines."""
    return int.from_bytes(hashlib.sha256(session.encode()).digest()[:4], "big") % folds


def _standardised(x: Array) -> tuple[Array, Array]:
    means = x.mean(axis=0)
    scales = x.std(axis=0)
    scales[scales < 1e-9] = 1.0
    return means, scales


@dataclass(frozen=True)
class Fitted:
    model: RouterModel
    report: dict[str, Any]


def fit(rows: Sequence[Mapping[str, Any]], *, features: Sequence[str] = DECISION_FEATURES, folds: int = 5,
        l2: float = 1.0) -> Fitted:
    """The model fitted on every labelled row, and a report of how it did on sessions it had not seen (each fold's
    sessions predicted by a model fitted on the other folds). ``ValueError`` when there is too little to learn."""
    data = dataset(rows, features)
    n = len(data.y)
    if n < 10 or len(set(data.sessions)) < folds or data.y.min() == data.y.max():
        raise ValueError(f"too little to learn from: {n} labelled steps with every feature, "
                         f"{len(set(data.sessions))} sessions, {int(data.y.sum())} disagreements (need at least 10 "
                         f"steps, {folds} sessions and both outcomes; raise learning.shadow_rate or wait longer)")
    assignment = np.array([fold_of(s, folds) for s in data.sessions])
    held_out = np.full(n, np.nan)
    for k in range(folds):
        train, test = assignment != k, assignment == k
        if not test.any() or not train.any() or data.y[train].min() == data.y[train].max():
            continue
        means, scales = _standardised(data.x[train])
        w, b = logistic((data.x[train] - means) / scales, data.y[train], l2=l2)
        held_out[test] = 1.0 / (1.0 + np.exp(-np.clip(((data.x[test] - means) / scales) @ w + b, -35, 35)))
    scored = ~np.isnan(held_out)
    means, scales = _standardised(data.x)
    w, b = logistic((data.x - means) / scales, data.y, l2=l2)
    report: dict[str, Any] = {
        "steps": n, "sessions": len(set(data.sessions)), "disagreement_rate": round(float(data.y.mean()), 4),
        "folds": folds, "cv_auc": _round(auc(held_out[scored], data.y[scored])),
        "entropy_auc": _round(auc(data.entropy, data.y)),
        "cv_brier": round(float(np.mean((held_out[scored] - data.y[scored]) ** 2)), 4) if scored.any() else None,
        "calibration": calibration(held_out[scored], data.y[scored]),
    }
    model = RouterModel(tuple(features), tuple(float(v) for v in means), tuple(float(v) for v in scales),
                        tuple(round(float(v), 6) for v in w), round(b, 6), max(data.started), report)
    return Fitted(model, report)


def _round(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else round(value, 4)
