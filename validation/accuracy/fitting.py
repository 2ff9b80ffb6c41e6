"""Constants fitted or derived on a data set's rows, once on every row and once per
leave-one-shape-out fold.

* :class:`FittedConstant`: chosen to minimise MAPE on the training rows. In-model ones (they change
  the simulated cycles) are searched on a cheap surrogate: every row simulated at the corners of a
  small grid and interpolated in between. The surrogate only proposes; the chosen point is then
  simulated for real and that simulation is what gets scored (:mod:`.command`).
* :class:`DerivedConstant`: computed from measured values of the training rows (no search).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

#: The one fitted constant that is added after the simulation (it does not change the cycles).
POST_HOC = "launch_overhead_ns"


@dataclass(frozen=True)
class FittedConstant:
    name: str                       # an ArchSpec constant
    unit: str
    grid: np.ndarray                # coarse search grid (a finer one follows around its best point)
    note: str
    simulated: tuple[float, ...] = ()    # in-model: the surrogate's corner values; () = POST_HOC
    scale: str = "lin"              # surrogate interpolation: "lin", or "inv" (in 1/value: a rate)

    def __post_init__(self):
        if not self.simulated and self.name != POST_HOC:
            raise ValueError(f"{self.name}: only {POST_HOC} can be fitted without simulating it")


@dataclass(frozen=True)
class DerivedConstant:
    name: str
    unit: str
    derive: Callable[[list], float]     # training rows -> value
    note: str


@dataclass
class Surrogate:
    """Kernel times (us, no launch overhead) of every row at every corner of the in-model grid."""

    constants: tuple[FittedConstant, ...]      # the in-model ones, in grid-axis order
    kernel_us: np.ndarray                      # shape: (len(c.simulated) for c in constants) + (rows,)

    def corners(self) -> list[dict[str, float]]:
        """Every grid corner, C order (the order of ``kernel_us``'s leading axes)."""
        axes = [c.simulated for c in self.constants]
        return [{c.name: float(c.simulated[i]) for c, i in zip(self.constants, idx, strict=True)}
                for idx in np.ndindex(*(len(a) for a in axes))]

    def kernel(self, cand: dict[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
        """Interpolated kernel times for candidate values ``cand`` (K each) on ``rows``: (K, n)."""
        axes = []
        for c in self.constants:
            x = np.asarray(c.simulated, float)
            v = np.asarray(cand[c.name], float).reshape(-1)
            if c.scale == "inv":
                x, v = 1.0 / x, 1.0 / v
            order = np.argsort(x)
            xs = x[order]
            i = np.clip(np.searchsorted(xs, v, side="right") - 1, 0, len(xs) - 2)
            axes.append((order[i], order[i + 1], (v - xs[i]) / (xs[i + 1] - xs[i])))
        g = self.kernel_us[..., rows]
        out = 0.0
        for corner in np.ndindex(*([2] * len(axes))):
            weight, index = 1.0, []
            for (lo, hi, w), bit in zip(axes, corner, strict=True):
                index.append(hi if bit else lo)
                weight = weight * (w if bit else 1.0 - w)
            out = out + weight[:, None] * g[tuple(index)]
        return out


def _predict(fitted, surrogate: Surrogate | None, kernel_us: np.ndarray, cand: dict[str, np.ndarray],
             rows: np.ndarray) -> np.ndarray:
    g = surrogate.kernel(cand, rows) if surrogate is not None else kernel_us[None, rows]
    launch = cand.get(POST_HOC)
    return g + (np.asarray(launch, float).reshape(-1, 1) / 1e3 if launch is not None else 0.0)


def _search(fitted, surrogate, kernel_us, meas, rows, grids: dict[str, np.ndarray]):
    names = list(grids)
    flat = [g.ravel() for g in np.meshgrid(*[grids[n] for n in names], indexing="ij")]
    m = meas[None, rows]
    best, best_err = None, np.inf
    chunk = max(1, 400_000 // max(1, int(rows.sum())))
    for s in range(0, len(flat[0]), chunk):
        cand = {n: flat[i][s:s + chunk] for i, n in enumerate(names)}
        err = np.mean(np.abs(_predict(fitted, surrogate, kernel_us, cand, rows) / m - 1.0), axis=1)
        i = int(np.nanargmin(err))
        if err[i] < best_err:
            best_err, best = float(err[i]), {n: float(flat[j][s + i]) for j, n in enumerate(names)}
    return best


def grid_fit(fitted: tuple[FittedConstant, ...], surrogate: Surrogate | None, kernel_us: np.ndarray,
             meas: np.ndarray, rows: np.ndarray) -> dict[str, float]:
    """The fitted constants minimising the surrogate's MAPE on ``rows`` (a boolean mask): an
    exhaustive coarse grid, then a finer one around its best point (deterministic)."""
    grids = {c.name: np.asarray(c.grid, float) for c in fitted}
    best = _search(fitted, surrogate, kernel_us, meas, rows, grids)
    fine = {}
    for n, vals in grids.items():
        step = float(np.min(np.diff(vals))) if len(vals) > 1 else 0.0
        lo, hi = max(vals[0], best[n] - step), min(vals[-1], best[n] + step)
        fine[n] = np.unique(np.round(np.linspace(lo, hi, 11), 6))
    return _search(fitted, surrogate, kernel_us, meas, rows, fine)


@dataclass
class FoldPlan:
    """What the rows give the constants: on every row, and per shape without that shape."""

    all_rows: dict[str, float]
    folds: dict[str, dict[str, float]] = field(default_factory=dict)
    surrogate_cv_us: np.ndarray | None = None     # the surrogate's own fold predictions (diagnostic)

    def of(self, shape: str) -> dict[str, float]:
        return self.folds[shape]

    def ranges(self) -> dict[str, tuple[float, float]]:
        names = self.all_rows
        return {n: (min(f[n] for f in self.folds.values()), max(f[n] for f in self.folds.values()))
                for n in names} if self.folds else {}


def plan_folds(ds, rows: list, surrogate: Surrogate | None, kernel_us: np.ndarray | None = None) -> FoldPlan | None:
    """Fit/derive ``ds``'s constants on all ``rows`` and per leave-one-shape-out fold. ``kernel_us``:
    the rows' kernel times at the shipped constants (for a fit with no in-model constant)."""
    if not ds.fitted and not ds.derived:
        return None
    meas = np.array([r.measured_us for r in rows])
    shapes = np.array([r.shape for r in rows])
    if ds.fitted:
        kern = surrogate.kernel_us.reshape(-1, len(rows)) if surrogate is not None else kernel_us[None, :]
        usable = np.isfinite(kern).all(axis=0)
    else:
        usable = np.ones(len(rows), bool)

    def constants(train: np.ndarray) -> dict[str, float]:
        out = {c.name: float(c.derive([r for r, t in zip(rows, train, strict=True) if t])) for c in ds.derived}
        if ds.fitted:
            out.update(grid_fit(ds.fitted, surrogate, kernel_us, meas, train))
        return out

    plan = FoldPlan(constants(usable))
    cv = np.full(len(rows), np.nan)
    for s in sorted(set(shapes)):
        test = shapes == s
        train = usable & ~test
        if not train.any():
            continue
        plan.folds[s] = c = constants(train)
        if ds.fitted:
            cand = {n: np.array([c[n]]) for n in c}
            cv[test] = _predict(ds.fitted, surrogate, kernel_us, cand, test)[0]
    plan.surrogate_cv_us = cv if ds.fitted else None
    return plan


# ============================================================= MAPE-optimal one-parameter fits
def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values, kind="mergesort")
    v, w = values[order], weights[order]
    c = np.cumsum(w)
    return float(v[np.searchsorted(c, 0.5 * c[-1])])


def mape_offset(pred: np.ndarray, meas: np.ndarray) -> float:
    """The offset b >= 0 minimising mean |(pred + b) / meas - 1| (a weighted median: exact)."""
    return max(0.0, _weighted_median(meas - pred, 1.0 / meas))


def mape_scale(pred: np.ndarray, meas: np.ndarray) -> float:
    """The factor s > 0 minimising mean |s pred / meas - 1| (a weighted median: exact)."""
    return _weighted_median(meas / pred, pred / meas)


def leave_one_shape_out(fit: Callable[[np.ndarray, np.ndarray], float], apply, pred: np.ndarray,
                        meas: np.ndarray, shapes: np.ndarray) -> tuple[np.ndarray, dict[str, float]]:
    """Cross-validated predictions of a one-parameter correction: per shape, ``fit`` on the other
    shapes' finite rows, ``apply(pred, param)`` to this shape's rows. Returns them and the params."""
    out = np.full(len(pred), np.nan)
    params = {}
    ok = np.isfinite(pred) & np.isfinite(meas)
    for s in sorted(set(shapes)):
        test = shapes == s
        train = ok & ~test
        if not train.any():
            continue
        params[s] = p = fit(pred[train], meas[train])
        out[test] = apply(pred[test], p)
    return out, params
