"""Scored rows read back, in one shape for tables and figures: a committed ``accuracy.json`` (a full
run of ``wsim accuracy --out``) or a fresh :class:`~.evaluate.DataSetResult` (e.g. a quick subset).

    full = load_results()["h200"]                 # validation/results/accuracy.json
    print(full.class_table())                     # MAPE per row class, wsim beside the baselines
    accuracy_scatter(full.scatter_series())       # simulator.views.accuracy_plot

A row carries each predictor's time over the measured one (``ratios``); the measured times too,
except for an external data set (B200 from gemm-model), whose written results keep only ratios.
The reader takes both layouts ``accuracy.json`` has had: data sets at the top level (rows with
``class`` and ``<predictor>_us`` or ``<predictor>_ratio``) and under ``"datasets"`` (rows add
``classes`` and ``scored``: unscored rows are left out here, as in every score).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .evaluate import DataSetResult
from .report import class_dimensions
from .scoring import Score

RESULTS_JSON = Path(__file__).resolve().parent.parent / "results" / "accuracy.json"
#: Row columns ending in ``_us`` that are not a predictor's time.
_NOT_PREDICTORS = ("measured_us", "kernel_us", "shipped_us")


@dataclass
class ScoredRows:
    name: str
    title: str
    subset: str
    labels: list[str]
    classes: dict[str, np.ndarray]        # dimension -> each row's class (the primary dimension first)
    ratios: dict[str, np.ndarray]         # predictor -> predicted / measured, per row
    measured_us: np.ndarray | None        # None for an external data set (ratios only)

    @property
    def row_class(self) -> np.ndarray:
        """Each row's class in the data set's primary dimension (e.g. H200: schedule and tile)."""
        return next(iter(self.classes.values()))

    def mape(self, sel: np.ndarray | None = None) -> dict[str, float]:
        """MAPE (percent) of each predictor over the rows ``sel`` (default: all)."""
        k = np.ones(len(self.labels), bool) if sel is None else sel
        return {p: 100 * float(np.mean(np.abs(r[k] - 1))) if k.any() else float("nan") for p, r in self.ratios.items()}

    def scores(self) -> dict[str, Score]:
        """Every predictor's score over all rows (Spearman needs the measured times: NaN without them)."""
        out = {}
        for p, r in self.ratios.items():
            meas = self.measured_us if self.measured_us is not None else np.ones(len(r))
            s = Score.of(r * meas, meas)
            out[p] = s if self.measured_us is not None else Score(s.n, s.mape, s.max_err, s.bias, float("nan"))
        return out

    def class_table(self, dimension: str | None = None) -> str:
        """MAPE per class of one dimension (default: the primary one), every predictor on the same rows,
        and over all rows."""
        dim = dimension or next(iter(self.classes))
        if dim not in self.classes:
            raise KeyError(f"dimension {dim!r}: this data set classes its rows by {', '.join(self.classes)}")
        cls_of = self.classes[dim]
        names = list(self.ratios)
        widths = [max(10, len(n) + 2) for n in names]
        first = max(len(dim), *(len(str(c)) for c in cls_of), len("all rows")) + 2
        lines = [f"{dim:<{first}}{'rows':>6}" + "".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True))]
        for c in [*sorted(set(cls_of)), None]:
            sel = np.ones(len(cls_of), bool) if c is None else cls_of == c
            m = self.mape(sel)
            lines.append(f"{'all rows' if c is None else c:<{first}}{int(sel.sum()):>6}"
                         + "".join(f"{m[n]:>{w - 1}.1f}%" for n, w in zip(names, widths, strict=True)))
        return "\n".join(lines)

    def scatter_series(self, predictors: list[str] | None = None) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """(name, measured us, predicted us) per predictor, for ``accuracy_scatter``."""
        if self.measured_us is None:
            raise ValueError(f"{self.name}: only ratios to the measured times are committed (external data): "
                             "no scatter of times; use the ratios (accuracy_ratio_by_class)")
        return [(p, self.measured_us, self.ratios[p] * self.measured_us) for p in (predictors or list(self.ratios))]


def _dataset(name: str, d: dict) -> ScoredRows:
    rows = [r for r in d["rows"] if r.get("scored", True)]
    preds = [k[:-3] for k in rows[0] if k.endswith("_us") and k not in _NOT_PREDICTORS] if rows else []
    if rows and "measured_us" in rows[0]:
        meas = np.array([r["measured_us"] for r in rows], float)
        ratios = {p: np.array([r[f"{p}_us"] for r in rows], float) / meas for p in preds}
    else:
        meas = None
        ratios = {k[:-6]: np.array([r[k] for r in rows], float) for k in (rows[0] if rows else {})
                  if k.endswith("_ratio")}
    primary = next(iter(d.get("by_class") or {}), "row class")     # the data set's class title, where written
    classes = {primary: np.array([r["class"] for r in rows])}
    for dim in dict.fromkeys(k for r in rows for k in r.get("classes", {})):
        classes[dim] = np.array([r.get("classes", {}).get(dim, "-") for r in rows])
    return ScoredRows(name, d.get("title", name), d.get("subset", ""), [r["label"] for r in rows], classes,
                      ratios, meas)


def load_results(path: str | Path = RESULTS_JSON) -> dict[str, ScoredRows]:
    """Every data set of an ``accuracy.json`` with rows (default: the committed full run)."""
    data = json.loads(Path(path).read_text())
    sets = data.get("datasets", data)
    return {name: _dataset(name, d) for name, d in sets.items() if isinstance(d, dict) and d.get("rows")}


def from_result(res: DataSetResult) -> ScoredRows:
    """A data set scored in this process (:func:`~.evaluate.evaluate_dataset`), its scored rows only."""
    k = res.keep
    meas = res.measured_us[k]
    return ScoredRows(res.ds.name, res.ds.title, res.subset, [r.label for r, keep in zip(res.rows, k, strict=True)
                                                              if keep],
                      {dim: v[k] for dim, v in class_dimensions(res).items()},
                      {p: v[k] / meas for p, v in res.predictors().items()}, meas)


__all__ = ["RESULTS_JSON", "ScoredRows", "from_result", "load_results"]
