"""How close is the SM90 model to the H200? Every measured kernel time we have, against the model.

For each uninstrumented hardware-kernel timing in ``validation/results/hw_vs_cublas.json`` (median
of many launches, alternating with cuBLAS on the same random-normal inputs), the SM90 model is run
for the same config with ``clock_ghz`` set to the effective SM clock read inside the kernel in the
same alternation (clock64 over %globaltimer); every other constant is the published or
microbenchmarked one. Printed: simulated / measured kernel time per row, and the spread.

    python benchmarks/model_accuracy.py            # all rows (8192^3 rows take ~20 s each to simulate)
    python benchmarks/model_accuracy.py --quick    # only problems up to 4096^3
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from hw_kernels.host import KernelConfig
from simulator.engine import simulate
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.machine.arch import ArchSpec
from validation.compare import sim_config_from_measured

RESULTS = Path(__file__).resolve().parent.parent / "validation" / "results" / "hw_vs_cublas.json"
def config_of(name: str, dtype: str, m: int, n: int, k: int) -> Sm90GemmConfig | None:
    """The Sm90GemmConfig of a hardware-kernel name (KernelConfig.name()), or None for names that
    are not plain kernel timings (cuBLAS, instrumented variants)."""
    kc = KernelConfig.from_name(name)
    if kc is None:
        return None
    return sim_config_from_measured({"config": kc.asdict(), "dtype": dtype,
                                     "problem": {"m": m, "n": n, "k": k, "l": 1}})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip problems larger than 4096^3")
    args = ap.parse_args()
    data = json.loads(RESULTS.read_text())
    env = data["env"]
    print(f"measured: {env.get('device')}, driver {env.get('driver')}, nvidia-cutlass-dsl "
          f"{env.get('nvidia_cutlass_dsl')}, {env.get('date_utc')}")
    print(f"{'dtype':<5} {'M x N x K':<18} {'kernel':<32} {'clock':>6} {'measured us':>12} {'simulated us':>13} "
          f"{'sim/meas':>9}")
    ratios = []
    seen = set()
    for row in data["bench"]:
        m, n, k, dtype = row["m"], row["n"], row["k"], row["dtype"]
        if args.quick and m * n * k > 4096 ** 3:
            continue
        clk = (row.get("in_kernel_clock") or {}).get("median_ghz")
        if not clk:
            continue
        arch = ArchSpec.h200().with_overrides({"clock_ghz": clk}, origin="in-kernel clock of this measurement")
        for name, res in row["results"].items():
            cfg = config_of(name, dtype, m, n, k)
            if cfg is None or (name, dtype, m, n, k) in seen:
                continue
            seen.add((name, dtype, m, n, k))
            sim = simulate(cfg, arch)
            meas_us = res["ms_median"] * 1e3
            ratio = sim.time_ns / 1e3 / meas_us
            ratios.append(ratio)
            print(f"{dtype:<5} {f'{m}x{n}x{k}':<18} {name:<32} {clk:6.3f} {meas_us:12.1f} {sim.time_ns / 1e3:13.1f} "
                  f"{ratio:9.3f}")
    if ratios:
        print(f"\n{len(ratios)} timings: sim/meas median {statistics.median(ratios):.3f}, "
              f"min {min(ratios):.3f}, max {max(ratios):.3f}")
    print("constants: H200 spec as printed by `wsim simulate --arch h200`, clock_ghz overridden per row; "
          "launch overhead estimate included in the simulated time")


if __name__ == "__main__":
    main()
