"""Error metrics, computed for every predictor on exactly the same rows."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


def spearman(a: Iterable[float], b: Iterable[float]) -> float:
    """Spearman rank correlation (average ranks for ties); NaN for fewer than 2 rows or a constant side."""
    x, y = np.asarray(list(a), float), np.asarray(list(b), float)
    if len(x) < 2:
        return float("nan")

    def ranks(v: np.ndarray) -> np.ndarray:
        order = np.argsort(v, kind="mergesort")
        r = np.empty(len(v))
        r[order] = np.arange(len(v), dtype=float)
        for val in np.unique(v):           # average ties
            idx = np.where(v == val)[0]
            if len(idx) > 1:
                r[idx] = r[idx].mean()
        return r
    rx, ry = ranks(x), ranks(y)
    sx, sy = rx.std(), ry.std()
    if sx == 0 or sy == 0:
        return float("nan")
    return float(((rx - rx.mean()) * (ry - ry.mean())).mean() / (sx * sy))


@dataclass
class Score:
    n: int
    mape: float        # mean |pred/meas - 1|, percent
    max_err: float     # percent
    bias: float        # mean (pred/meas - 1), percent (negative: too fast)
    spearman: float

    @classmethod
    def of(cls, pred, meas) -> Score:
        """The score of ``pred`` against ``meas``; every value must be finite (select the rows first,
        with :func:`common_rows`, so that no predictor is scored on rows another one skipped)."""
        p, m = np.asarray(pred, float), np.asarray(meas, float)
        if not (np.isfinite(p).all() and np.isfinite(m).all() and (m > 0).all()):
            raise ValueError("Score.of: non-finite prediction or non-positive measurement: select common rows first")
        if len(p) == 0:
            return cls(0, float("nan"), float("nan"), float("nan"), float("nan"))
        e = p / m - 1.0
        return cls(len(p), 100 * float(np.mean(np.abs(e))), 100 * float(np.max(np.abs(e))),
                   100 * float(np.mean(e)), spearman(p, m))


def common_rows(predictors: dict[str, np.ndarray], labels: list[str],
                reasons: dict[str, dict[int, str]] | None = None) -> tuple[np.ndarray, list[str]]:
    """The rows every predictor predicts (a boolean mask), and one line per row left out naming the
    predictors that have no value for it and why (``reasons[predictor][row]`` where known)."""
    n = len(labels)
    keep = np.ones(n, bool)
    missing: dict[int, list[str]] = {}
    for name, p in predictors.items():
        bad = ~np.isfinite(np.asarray(p, float))
        keep &= ~bad
        for i in np.flatnonzero(bad):
            why = (reasons or {}).get(name, {}).get(int(i), "no prediction")
            missing.setdefault(int(i), []).append(f"{name}: {why}")
    return keep, [f"{labels[i]}: {'; '.join(v)}" for i, v in sorted(missing.items())]
