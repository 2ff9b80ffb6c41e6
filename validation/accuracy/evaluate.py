"""One data set, scored: every row simulated at the constants it is scored with, beside the baselines.

A row is scored with the constants of its leave-one-shape-out fold (fitted or derived without its
shape), simulated for real at those constants; the same row at the shipped constants (what
``wsim simulate`` prints) is the development figure, since those were made on these rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from simulator.kernels.roofline import roofline

from .baselines import baseline_predictions
from .cache import SimCache, SimOutcome
from .clock import campaign_clocks
from .datasets import DataSet, Row
from .fitting import FoldPlan, Surrogate, plan_folds
from .scoring import common_rows
from .simulate import SimJob, simulate_jobs

FOLD_ORIGIN = "fitted or derived without this row's shape (leave-one-shape-out)"


def time_us(outcome: SimOutcome, arch) -> float:
    """The predicted time as ``simulate()`` computes it (cycles / clock + launch overhead), in us."""
    if not outcome.ok:
        return float("nan")
    return (outcome.cycles / arch.clock_ghz.value + arch.launch_overhead_ns.value) / 1e3


@dataclass
class ClockResult:
    """The rows scored with no measured clock: each at the clock the power model predicts for it in the
    campaign's conditions (``stream_ghz``), simulated there; ``alone_ghz``: each kernel's own clock."""

    measured_ghz: np.ndarray
    stream_ghz: np.ndarray
    alone_ghz: np.ndarray
    wsim_us: np.ndarray
    roofline_us: np.ndarray
    outcomes: list[SimOutcome]


@dataclass
class DataSetResult:
    ds: DataSet
    rows: list[Row]
    subset: str
    wsim_us: np.ndarray                   # scored: each row at its fold's constants
    dev_us: np.ndarray                    # at the shipped constants (a development figure)
    scored_arch: list                     # the arch each scored prediction was simulated at
    scored: list[SimOutcome]
    shipped: list[SimOutcome]
    baselines: dict[str, np.ndarray]
    plan: FoldPlan | None
    keep: np.ndarray                      # the rows every predictor is scored on
    left_out: list[str]
    notes: list[str] = field(default_factory=list)
    surrogate_runs: int = 0
    clock: ClockResult | None = None

    @property
    def measured_us(self) -> np.ndarray:
        return np.array([r.measured_us for r in self.rows])

    def predictors(self) -> dict[str, np.ndarray]:
        return {"wsim": self.wsim_us, **self.baselines}

    def fold_constants(self, i: int) -> dict[str, float]:
        """The overrides row ``i``'s scored prediction was simulated at (clock included)."""
        a = self.scored_arch[i]
        names = ["clock_ghz"] + (list(self.plan.all_rows) if self.plan else [])
        return {n: a.value(n) for n in names}


def _surrogate_jobs(ds: DataSet, rows: list[Row]) -> tuple[Surrogate | None, list[SimJob]]:
    in_model = tuple(c for c in ds.fitted if c.simulated)
    if not in_model:
        return None, []
    sur = Surrogate(in_model, np.empty(tuple(len(c.simulated) for c in in_model) + (len(rows),)))
    jobs = [SimJob(r.config, r.arch.with_overrides(corner, origin="a surrogate corner of the fit"), r.est_events)
            for corner in sur.corners() for r in rows]
    return sur, jobs


def evaluate_dataset(ds: DataSet, rows: list[Row], subset: str, *, cache: SimCache, engine: str = "fast",
                     procs: int = 0, log: Callable[[str], None] | None = None) -> DataSetResult:
    shipped_jobs = [SimJob(r.config, r.arch, r.est_events) for r in rows]
    sur, sur_jobs = _surrogate_jobs(ds, rows)
    out = simulate_jobs(shipped_jobs + sur_jobs, cache=cache, engine=engine, procs=procs, log=log)
    shipped = out[:len(rows)]
    kernel = np.array([o.kernel_us if o.ok else np.nan for o in shipped])
    if sur is not None:
        sur.kernel_us = np.array([o.kernel_us if o.ok else np.nan for o in out[len(rows):]]).reshape(
            sur.kernel_us.shape)
    plan = plan_folds(ds, rows, sur, kernel) if rows else None
    scored_arch = []
    reasons: dict[int, str] = {}
    for i, r in enumerate(rows):
        consts = plan.folds.get(r.shape) if plan else {}
        if plan and consts is None:
            reasons[i] = "no other shape to fit its constants on"
            consts = plan.all_rows
        scored_arch.append(r.arch.with_overrides(consts, origin=FOLD_ORIGIN) if consts else r.arch)
    # the cache answers rows whose fold differs from the shipped constants only after the run
    scored = simulate_jobs([SimJob(r.config, a, r.est_events) for r, a in zip(rows, scored_arch, strict=True)],
                           cache=cache, engine=engine, procs=procs, log=log)
    wsim = np.array([time_us(o, a) for o, a in zip(scored, scored_arch, strict=True)])
    wsim[list(reasons)] = np.nan
    dev = np.array([time_us(o, r.arch) for o, r in zip(shipped, rows, strict=True)])
    launch = np.array([a.launch_overhead_ns.value / 1e3 for a in scored_arch])
    base, base_reasons, notes = baseline_predictions(rows, launch, ds.baseline_names)
    for i, o in enumerate(scored):
        if not o.ok:
            reasons[i] = f"the simulation failed: {o.error}"
    clock = predicted_clock(ds, rows, scored, scored_arch, cache=cache, engine=engine, procs=procs, log=log) \
        if ds.campaign_plan else None
    labels = [r.label for r in rows]
    preds = {"wsim": wsim, **base}
    if clock is not None:
        preds["wsim at the predicted clock"] = clock.wsim_us
        reasons_clock = {i: "no predicted clock (its config is not in the campaign plan)"
                         for i in np.flatnonzero(~np.isfinite(clock.stream_ghz))}
        base_reasons["wsim at the predicted clock"] = reasons_clock
    keep, left_out = common_rows(preds, labels, {"wsim": reasons, **base_reasons})
    return DataSetResult(ds, rows, subset, wsim, dev, scored_arch, scored, shipped, base, plan, keep, left_out,
                         notes, len(sur_jobs), clock)


def predicted_clock(ds: DataSet, rows: list[Row], scored: list[SimOutcome], scored_arch: list, *, cache: SimCache,
                    engine: str, procs: int, log) -> ClockResult:
    """Every row at the clock the power model predicts for it in the campaign (its fold's launch term)."""
    stream, alone = campaign_clocks(rows, scored, ds.campaign_plan)
    archs = [a.with_overrides({"clock_ghz": round(float(c), 4)}, origin="predicted by the power model in the "
                              "campaign's conditions") if np.isfinite(c) else a for a, c in zip(scored_arch, stream,
                                                                                             strict=True)]
    todo = [i for i, c in enumerate(stream) if np.isfinite(c)]
    outs = iter(simulate_jobs([SimJob(rows[i].config, archs[i], rows[i].est_events) for i in todo], cache=cache,
                              engine=engine, procs=procs, log=log))
    got = dict(zip(todo, outs, strict=False))
    failed = SimOutcome(float("nan"), float("nan"), 0, 0.0, engine, False, "no predicted clock")
    outcomes = [got.get(i, failed) for i in range(len(rows))]
    wsim = np.array([time_us(o, a) for o, a in zip(outcomes, archs, strict=True)])
    roof = np.array([roofline(r.config, a).time_ns / 1e3 + a.launch_overhead_ns.value / 1e3 if np.isfinite(c)
                     else np.nan for r, a, c in zip(rows, archs, stream, strict=True)])
    measured = np.array([r.arch.clock_ghz.value for r in rows])
    return ClockResult(measured, stream, alone, wsim, roof, outcomes)
