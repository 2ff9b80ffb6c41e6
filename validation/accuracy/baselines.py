"""The baselines every wsim figure stands beside, on the same rows and with the same launch term.

* ``roofline``: the wave-quantised roofline (:mod:`simulator.kernels.roofline`) at the row's clock,
  plus the launch overhead wsim's own prediction of that row carries;
* ``roofline, own intercept``: the same roofline plus an offset fitted leave-one-shape-out (the
  MAPE-optimal one on the other shapes);
* ``nvMatmulHeuristics`` (:mod:`.nvmh`): its estimate as a user gets it, and scaled by a factor
  fitted leave-one-shape-out (its clock and efficiency assumptions are its own);
* a published model's predictions shipped with the data set (gemm-model for the B200 rows).
"""

from __future__ import annotations

import numpy as np

from simulator.kernels.roofline import roofline

from . import nvmh
from .fitting import leave_one_shape_out, mape_offset, mape_scale


def roofline_kernel_us(rows) -> np.ndarray:
    return np.array([roofline(r.config, r.arch).time_ns / 1e3 for r in rows])


def nvmh_estimates(rows) -> tuple[np.ndarray | None, str]:
    """nvMatmulHeuristics's estimate per row (NaN where it gives none), or (None, why not run)."""
    why = nvmh.unavailable()
    if why:
        return None, why
    out = np.full(len(rows), np.nan)
    for i, r in enumerate(rows):
        if r.arch.name in nvmh.GPUS:
            out[i] = nvmh.heuristics(r.arch.name).estimate_us(r.config.resolved(r.arch))
    return out, f"nvidia-matmul-heuristics {nvmh.version()}, CUTLASS3 target"


def baseline_predictions(rows, launch_us: np.ndarray, published: tuple[str, ...]) -> tuple[dict, dict, list[str]]:
    """(name -> predictions in us, name -> {row: why no value}, notes) for ``rows``; ``launch_us``
    is the launch overhead of wsim's scored prediction of each row."""
    meas = np.array([r.measured_us for r in rows])
    shapes = np.array([r.shape for r in rows])
    roof = roofline_kernel_us(rows)
    out = {"roofline": roof + launch_us}
    out["roofline, own intercept"], _ = leave_one_shape_out(mape_offset, lambda p, b: p + b, roof, meas, shapes)
    reasons: dict[str, dict[int, str]] = {}
    notes = []
    est, how = nvmh_estimates(rows)
    if est is None:
        notes.append(f"nvMatmulHeuristics not run: {how}")
    else:
        out["nvMatmulHeuristics"] = est
        out["nvMatmulHeuristics, own scale"], _ = leave_one_shape_out(mape_scale, lambda p, s: p * s, est, meas,
                                                                        shapes)
        reasons["nvMatmulHeuristics"] = {int(i): "the library returned no estimate" for i in np.flatnonzero(~np.isfinite(est))}
        notes.append(f"nvMatmulHeuristics: {how}")
    for b in published:
        out[b] = np.array([r.baselines.get(b, np.nan) for r in rows])
    return out, reasons, notes
