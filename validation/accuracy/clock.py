"""Each H200 row's SM clock as the shipped power model predicts it, in the conditions the campaign
measured it in, so that a row can be scored with no measured clock at all.

The campaign ran a problem's configs in rounds, back to back in its plan's order (rotated each
round), cuBLAS last, after a short sleep; the power controller follows the power of that stream,
averaged over ``window_ms``. :func:`campaign_clocks` feeds the model (:mod:`simulator.machine.power`,
through :mod:`validation.power_fit`'s vectorised stream) each row's simulated activity at its
measured clock, held across clocks (same cycles and bytes: the compute-bound approximation), with
the problem's fastest config standing in for cuBLAS, each held at or below its fast clock. It also
returns each kernel's clock alone (what ``--clock predicted`` solves for one kernel run back to back).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from simulator.machine.power import PowerModel, h200_power

FIT_RESULT = Path(__file__).resolve().parents[1] / "results" / "h200_clock_fit.json"


def campaign_idle_ms() -> float:
    """The campaign's idle time per round ([fitted] with the power model: a property of the
    measurement, validation/results/h200_clock_fit.json)."""
    from validation.power_fit import SLEEP_MS
    try:
        return float(json.loads(FIT_RESULT.read_text())["fitted"]["idle_ms"])
    except (OSError, ValueError, KeyError):
        return SLEEP_MS


def _held(o) -> dict:
    a = {"cycles": o.cycles, "tc_busy": o.tc_busy, "sms": o.sms, "l2_bytes": o.l2_bytes, "hbm_bytes": o.hbm_bytes}
    return {1.0: a, 2.0: a}


def _config_name(row) -> tuple[str, str]:
    phase, _dtype, _shape, config = row.key.split(" ", 3)
    return phase, config


def campaign_clocks(rows, outcomes, plan: dict[str, list[str]], model: PowerModel | None = None,
                    launch_gap_ns: float = 4256.0) -> tuple[np.ndarray, np.ndarray]:
    """(clock in the campaign's stream, clock of the kernel alone) per row, GHz; NaN where its
    simulation failed or its config is not in the plan."""
    from validation.power_fit import clocks_from_terms, fast_clocks, l2_cost_of, row_arrays, stream_terms
    model = model or h200_power()
    groups: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for i, (r, o) in enumerate(zip(rows, outcomes, strict=True)):
        phase, config = _config_name(r)
        if o.ok and config in plan.get(phase, ()):
            groups.setdefault((phase, r.shape), []).append((plan[phase].index(config), i))
    stream, alone = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    gap_ms, idle = launch_gap_ns * 1e-6, campaign_idle_ms()
    scales = (model.gemm_tc_scale.value, model.gemm_l2_scale.value)
    for items in groups.values():
        idx = [i for _, i in sorted(items)]
        arrs = [row_arrays(_held(outcomes[i]), model, gap_ms, l2_cost_of(rows[i].config)) for i in idx]
        caps = np.array([a["cap"] for a in arrs])
        own = stream_terms(arrs, None)
        best = min(arrs, key=lambda a: float(np.interp(1.5, _grid(), a["kernel_ms"])))
        full = stream_terms(arrs + [best], model.window_ms.value, idle)
        terms = {k: v[:-1] for k, v in full.items()}
        fast = fast_clocks(arrs, model, *scales, model.gemm_dram_scale.value)
        stream[idx] = clocks_from_terms(terms, caps, *scales, model.limit_w.value, fast, model.gemm_dram_scale.value)
        alone[idx] = clocks_from_terms(own, caps, *scales, model.limit_w.value, fast, model.gemm_dram_scale.value)
    return stream, alone


def _grid() -> np.ndarray:
    from validation.power_fit import GRID
    return GRID
