"""Predictions against the two roofline bounds, in the same run.

For each shape the simulator's predicted time is compared with
  * the tensor-core bound: FLOPs / (SMs x FLOP/clk/SM x clock), and
  * the HBM bound: compulsory bytes (A and B read once, D written once, C read once if used) / HBM bandwidth,
both from the same ArchSpec constants the simulation used. Tensor-core-bound shapes should land
near the first (minus wave quantisation and pipeline fill), memory-bound shapes near the second.

    python benchmarks/bounds.py            # SM100 (B200) shapes
    python benchmarks/bounds.py --arch h200  # the Hopper twin (needs the SM90 model)
"""

from __future__ import annotations

import argparse

from simulator.engine import simulate
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import get_arch

SM100_SHAPES = [
    # (label, config kwargs)
    ("compute 8192^3", dict(m=8192, n=8192, k=8192)),
    ("compute 4096^3", dict(m=4096, n=4096, k=4096)),
    ("compute 9472x8192x4096 (full waves)", dict(m=9472, n=8192, k=4096)),
    ("memory M=128 N=K=16384", dict(m=128, n=16384, k=16384, use_2sm=False, mma_tile_m=128, mma_tile_n=256,
                                    cluster_m=1, cluster_n=1)),
    ("memory M=256 N=K=16384", dict(m=256, n=16384, k=16384)),
    ("memory M=N=16384 K=128", dict(m=16384, n=16384, k=128)),
]
SM90_SHAPES = [
    ("compute 8192^3 cooperative", dict(m=8192, n=8192, k=8192, schedule="cooperative")),
    ("compute 8192^3 pingpong", dict(m=8192, n=8192, k=8192, schedule="pingpong")),
    ("memory M=128 N=K=16384", dict(m=128, n=16384, k=16384, tile_n=128, schedule="pingpong")),
    ("memory M=N=16384 K=128", dict(m=16384, n=16384, k=128)),
]


def row(label: str, res) -> str:
    arch, cfg = res.arch, res.config
    fp8 = arch.mma_fp8_factor.value if cfg.bits_ab == 8 else 1.0
    t_tc = cfg.flops / (arch.peak_flops * fp8) * 1e9
    t_hbm = cfg.compulsory_bytes / arch.hbm_bytes_per_s.value * 1e9
    t = res.time_ns - res.launch_overhead_ns
    bound = max(t_tc, t_hbm)
    which = "tensor" if t_tc >= t_hbm else "HBM"
    return (f"{label:<38} {t / 1e3:10.1f} {t_tc / 1e3:10.1f} {t_hbm / 1e3:10.1f}  {which:>6} "
            f"{t / bound:8.3f} {t_tc / t:9.3f} {t_hbm / t:9.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="b200")
    args = ap.parse_args()
    arch = get_arch(args.arch)
    shapes, cls = (SM100_SHAPES, Sm100GemmConfig) if arch.sm_version == 100 else (SM90_SHAPES, Sm90GemmConfig)
    print(f"arch {arch.name}: {arch.sm_count.value:g} SMs at {arch.clock_ghz.value} GHz, "
          f"{arch.mma_flops_per_clk_per_sm.value:g} FLOP/clk/SM -> {arch.peak_flops / 1e12:.0f} TFLOP/s; "
          f"HBM {arch.hbm_bytes_per_s.value / 1e12:.2f} TB/s")
    print("times in us, kernel time without launch overhead; ratios: predicted/bound, tensor-bound/predicted, "
          "HBM-bound/predicted")
    print(f"{'shape':<38} {'predicted':>10} {'TC bound':>10} {'HBM bound':>10}  {'binds':>6} "
          f"{'pred/bnd':>8} {'TC frac':>9} {'HBM frac':>9}")
    for label, kw in shapes:
        res = simulate(cls(**kw), arch)
        print(row(label, res))
    print("\nconstants: " + "; ".join(f"{c.name}={c.value:g} {c.unit} [{c.label}]" for c in arch.constants()))


if __name__ == "__main__":
    main()
