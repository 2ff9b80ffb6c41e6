"""The power model's fast limit beside the bursts microbenchmark it was built from: each short-round load
of validation/results/h200_power_bursts.json, its measured in-kernel clock and the clock
``PowerModel.transient_clock`` gives its activity (the microbenchmark's own, scales 1), as rows and as a plot.

    python -m validation.fast_limit        # prints the table
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from simulator.machine.power import Activity, PowerModel, h200_power

BURSTS = Path(__file__).resolve().parent / "results" / "h200_power_bursts.json"
#: Rows the model's constants were derived from (validation.power_constants.BURSTS_L2): not a check.
USED_BY_THE_MODEL = ("tc@1+l2@0.5 132sm", "tc@1+l2@1 132sm")


def _microbenchmark_model() -> PowerModel:
    return h200_power().with_values(gemm_tc_scale=1.0, gemm_l2_scale=1.0, gemm_dram_scale=1.0)


def bursts_rows(doc: dict | None = None, model: PowerModel | None = None) -> list[dict]:
    """One row per tensor load of the bursts plan: its name, SMs, busy fraction, memory kind and GB/s,
    the measured clock, the model's clock and their ratio - 1, and whether the model's constants used it."""
    q = (doc or json.loads(BURSTS.read_text()))["quantities"]
    model = model or _microbenchmark_model()
    names = sorted({k[len("bursts."):-len(".load_clock_mhz")] for k in q
                    if k.startswith("bursts.") and k.endswith(".load_clock_mhz")})
    out = []
    for name in names:
        busy = q.get(f"bursts.{name}.load_tc_busy_fraction", {}).get("value")
        if not busy:
            continue                                    # memory-only loads: no tensor work to limit
        m = re.search(r"\+(l2|hbm)@", name)
        mem = m.group(1) if m else None
        gbs = q.get(f"bursts.{name}.load_mem_gb_per_s", {}).get("value", 0.0) if mem else 0.0
        sms = int(re.search(r"(\d+)sm", name).group(1))
        # an HBM byte passes through L2 too (the model's L2 and DRAM terms both count it)
        act = Activity(sms, min(1.0, busy), gbs * 1e9, gbs * 1e9 if mem == "hbm" else 0.0)
        measured = q[f"bursts.{name}.load_clock_mhz"]["value"] / 1000
        predicted = model.transient_clock(act)
        out.append({"load": name, "sms": sms, "tc_busy": busy, "memory": mem or "-", "mem_gb_per_s": gbs,
                    "measured_ghz": measured, "model_ghz": predicted, "error": predicted / measured - 1,
                    "used_by_the_model": name in USED_BY_THE_MODEL})
    return out


def plot_fast_limit(rows: list[dict] | None = None, path: str | Path | None = None):
    """Measured and modelled in-kernel clock against the tensor busy fraction: one marker per load (filled:
    measured; open: the model), loads with memory traffic in their own colour."""
    import matplotlib.pyplot as plt
    rows = bursts_rows() if rows is None else rows
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    for mem, colour in (("-", "C0"), ("l2", "C1"), ("hbm", "C2")):
        sub = [r for r in rows if r["memory"] == mem]
        if not sub:
            continue
        label = "tensor only" if mem == "-" else f"tensor + {mem.upper()}"
        ax.scatter([r["tc_busy"] for r in sub], [r["measured_ghz"] for r in sub], color=colour,
                   label=f"{label}: measured")
        ax.scatter([r["tc_busy"] for r in sub], [r["model_ghz"] for r in sub], facecolors="none",
                   edgecolors=colour, label=f"{label}: model")
    ax.set_xlabel("tensor busy fraction")
    ax.set_ylabel("in-kernel GHz")
    ax.set_title("fast limit: short rounds of the wgmma load (h200_power_bursts.json)", fontsize=10)
    ax.legend(fontsize=8)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def main() -> int:
    rows = bursts_rows()
    print("| load | tensor busy | memory GB/s | measured GHz | model GHz | error | used by the model |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(f"| {r['load']} | {r['tc_busy']:.3f} | {r['mem_gb_per_s']:.0f} | {r['measured_ghz']:.3f} | "
              f"{r['model_ghz']:.3f} | {r['error']:+.1%} | {'yes' if r['used_by_the_model'] else '-'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
