"""The measured constants of simulator/machine/power.py, derived from the committed clock-control results
(validation/results/h200_power.json, h200_power_dram.json, h200_power_bursts.json) by the rule each
constant's source states.

    python -m validation.power_constants      # prints each constant beside the value the model holds

tests/test_power_model.py checks that the model holds what this derives.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
DUTIES = ("0.05", "0.1", "0.2", "0.3", "0.45", "0.6")
CAPPED = ("step.tc", "settle.tc@1 132sm", "settle.tc@1 99sm", "settle.tc@0.8 132sm")
UNCAPPED_TENSOR = tuple(f"settle.tc@{d} 132sm" for d in DUTIES) + ("settle.tc@1 33sm", "settle.tc@1 66sm",
                                                                  "settle.tc@0.5 66sm")
L2_RUNS = ("settle.none+l2@1 132sm", "settle.none+l2@1 66sm", "settle.none+l2@1 33sm", "settle.none+l2@0.5 132sm")
DRAM_RUN = "settle.none+hbm@0.5 132sm"
#: Short rounds of full tensor load with L2 traffic (the fast limit's memory weight).
BURSTS_L2 = ("bursts.tc@1+l2@0.5 132sm", "bursts.tc@1+l2@1 132sm")


def _sms(name: str) -> int:
    return 132 if name == "step.tc" else int(name.rsplit(" ", 1)[1].replace("sm", ""))


def derive(doc: dict | None = None, bursts: dict | None = None) -> dict[str, float]:
    """Every measured constant of the H200 power model from ``doc`` (h200_power.json) and ``bursts``
    (h200_power_bursts.json)."""
    doc = doc or json.loads((RESULTS / "h200_power.json").read_text())
    bursts = bursts or json.loads((RESULTS / "h200_power_bursts.json").read_text())
    q = doc["quantities"]

    def v(k):
        return float(q[k]["value"])

    u = np.array([v(f"settle.tc@{d} 132sm.tc_busy_fraction") for d in DUTIES])
    p = np.array([v(f"settle.tc@{d} 132sm.power_w") for d in DUTIES])
    base, slope = np.linalg.lstsq(np.vstack([np.ones_like(u), u]).T, p, rcond=None)[0]
    ref = statistics.median(v(f"settle.tc@{d} 132sm.clock_mhz") for d in DUTIES) / 1000
    tc_w = slope / 132
    alphas = []
    for name in CAPPED:
        f = v(f"{name}.clock_mhz") / 1000
        term = _sms(name) * v(f"{name}.tc_busy_fraction") * tc_w
        alphas.append(math.log((v(f"{name}.power_w") - base) / term) / math.log(f / ref))
    alpha = statistics.median(alphas)
    b = np.array([v(f"{n}.mem_gb_per_s") * 1e9 for n in L2_RUNS])
    pl = np.array([v(f"{n}.power_w") for n in L2_RUNS])
    l2_icpt, l2_slope = np.linalg.lstsq(np.vstack([np.ones_like(b), b]).T, pl, rcond=None)[0]
    bd = v(f"{DRAM_RUN}.mem_gb_per_s") * 1e9
    dram = (v(f"{DRAM_RUN}.power_w") - l2_icpt - l2_slope * bd) / bd
    cap = statistics.median(v(f"{n}.clock_mhz") for n in UNCAPPED_TENSOR) / 1000
    start = v("step.tc.fall.start_mhz") / 1000
    fast = base + 132 * v("step.tc.tc_busy_fraction") * tc_w * (start / ref) ** alpha
    weight = _fast_limit_mem_weight(bursts["quantities"], base, tc_w, ref, alpha, l2_slope, fast, cap)
    return {"limit_w": v("power.enforced_limit_w"), "base_w": float(base), "tc_w_per_sm": float(tc_w),
            "ref_clock_ghz": ref, "clock_exponent": alpha, "l2_j_per_byte": float(l2_slope),
            "dram_j_per_byte": float(dram), "tensor_clock_cap_ghz": cap,
            "max_clock_ghz": v("clock.nvml_max_sm_mhz") / 1000, "fast_limit_w": float(fast),
            "controller_delay_ms": v("step.tc.fall.t50_ms"), "fast_limit_mem_weight": weight}


def _fast_limit_mem_weight(q, base, tc_w, ref, alpha, l2_j, fast, cap) -> float:
    """Least squares through zero of (fast limit - base - full tensor power at the busy clock) against
    L2 power over :data:`BURSTS_L2`; the busy clock is the one whose mix with the cap by the busy
    fraction is the measured in-kernel clock (PowerModel.fast_clock)."""
    xs, ys = [], []
    for n in BURSTS_L2:
        f, b = q[f"{n}.load_clock_mhz"]["value"] / 1000, q[f"{n}.load_tc_busy_fraction"]["value"]
        busy = (f - (1 - b) * cap) / b
        ys.append(fast - base - 132 * tc_w * (busy / ref) ** alpha)
        xs.append(l2_j * q[f"{n}.load_mem_gb_per_s"]["value"] * 1e9)
    x, y = np.array(xs), np.array(ys)
    return float((x * y).sum() / (x * x).sum())


def dram_fraction(doc: dict | None = None) -> float:
    """The DRAM share of the paced 'hbm' load's bytes under Nsight Compute (h200_power_dram.json)."""
    doc = doc or json.loads((RESULTS / "h200_power_dram.json").read_text())
    row = next(r for r in doc["rows"] if r["load"] == "none+hbm@0.5 132sm")
    return float(row["dram_read_fraction"])


def main() -> int:
    from simulator.machine.power import h200_power
    m = h200_power()
    for k, val in derive().items():
        print(f"{k:22s} derived {val:.6g}   model {getattr(m, k).value:.6g} {getattr(m, k).unit}")
    print(f"DRAM share of the paced hbm load's bytes (ncu): {dram_fraction()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
