"""The SM100 model against published Blackwell (B200) figures.

No Blackwell GPU is available here, so the SM100 model is checked against what others measured
(SemiAnalysis microbench-blackwell, github.com/SemiAnalysisAI/microbench-blackwell, and the others
``simulator/machine/arch.py`` cites). Three checks, each printed as model / published:

1. tcgen05.mma issue intervals: the model's per-instruction cost (FLOPs at the tensor-core rate or
   SMEM operand bytes at the SMEM rate, whichever is slower) for the shapes SemiAnalysis measured.
   The rate constants come from two of these numbers; the others are genuine checks.
2. TMA loads from cold DRAM: 148 CTAs each issue one 2D TMA load at once (SemiAnalysis
   tma2d_latency); the model's memory system replays that experiment. The 1 KiB point is where the
   B200's TMA overhead constant comes from (``tma_issue_overhead_cycles`` = its 1413 cycles minus
   the 860-cycle DRAM latency), so it is not a check. The replay lands it a little later than 1413
   cycles: it also sends the 148 KiB of the 148 loads through HBM at ``hbm_bytes_per_s``, which
   that subtraction leaves out (the script prints how many cycles that is). The larger loads are
   the checks (of the bandwidth part).
3. A whole GEMM: the model's prediction for the shape of the published cuBLAS "MAMF" result
   (BF16 1792x16128x3072, 1745 TFLOP/s), and the SM clock that would make the two agree (the
   published run's clock was not reported; B200s lower their clock under load).
"""

from __future__ import annotations

from simulator.engine import simulate
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.kernels.sm100_tma_ws import Sm100Timing
from simulator.machine.arch import ArchSpec
from simulator.machine.memory import MemorySystem, MemoryTiming

SOURCE_MMA = "SemiAnalysis microbench-blackwell umma_throughput/tput_results_max.csv"
SOURCE_TMA = "SemiAnalysis microbench-blackwell tma2d_latency/tma2d_lat_results.csv"
SOURCE_GEMM = "stas00/ml-engineering compute/accelerator/README.md (MAMF, torch/cuBLAS)"

# (M, N, use_2sm, published issue interval in cycles, or None for a FLOP/clk figure)
MMA_CASES = [
    ("1-SM SS 128x256x16", dict(mma_tile_m=128, mma_tile_n=256, use_2sm=False, cluster_m=1), 128.0),
    ("1-SM SS 128x128x16", dict(mma_tile_m=128, mma_tile_n=128, use_2sm=False, cluster_m=1), 64.0),
    ("1-SM SS 128x64x16", dict(mma_tile_m=128, mma_tile_n=64, use_2sm=False, cluster_m=1), 48.0),
]
# SemiAnalysis microbench-blackwell tma2d_latency/tma2d_lat_results.csv: 1413-2088 cycles over 1-8 KiB (1 KiB lowest, 8 KiB highest), 5405 at 64 KiB, 9559 at 128 KiB
TMA_CASES = [(1024, (1413, 1413)), (8192, (2088, 2088)), (65536, (5405, 5405)), (131072, (9559, 9559))]


def main() -> None:
    arch = ArchSpec.b200()
    print(f"B200 model constants: {arch.mma_flops_per_clk_per_sm.value:g} FLOP/clk/SM, "
          f"{arch.smem_read_bytes_per_clk.value:g} B/clk SMEM operands, HBM {arch.hbm_bytes_per_s.value / 1e12:.2f} TB/s, "
          f"DRAM latency {arch.hbm_latency_cycles.value:g} + TMA {arch.tma_issue_overhead_cycles.value:g} cycles\n")

    print(f"1. tcgen05.mma issue interval (cycles)   [{SOURCE_MMA}]")
    for label, kw, published in MMA_CASES:
        cfg = Sm100GemmConfig(m=1024, n=1024, k=1024, **kw).resolved(arch)
        t = Sm100Timing.derive(cfg, arch)
        print(f"   {label:<22} model {t.mma_instr_cycles:6.1f}  published {published:6.1f}  "
              f"ratio {t.mma_instr_cycles / published:5.2f}")
    cfg = Sm100GemmConfig(m=1024, n=1024, k=1024).resolved(arch)
    t = Sm100Timing.derive(cfg, arch)
    pair_rate = 2 * 256 * 256 * 16 / t.mma_instr_cycles
    print(f"   {'2-SM SS 256x256x16':<22} model {pair_rate:6.0f} FLOP/clk per pair  published 16289  "
          f"ratio {pair_rate / 16289:5.2f}")

    print(f"\n2. TMA 2D load from cold DRAM, 148 CTAs at once (cycles until the last lands)   [{SOURCE_TMA}]")
    clk = arch.clock_ghz.value
    for nbytes, (lo, hi) in TMA_CASES:
        mem = MemorySystem(MemoryTiming(arch.hbm_bytes_per_clk, arch.l2_bytes_per_clk, arch.hbm_latency_cycles.value,
                                        arch.l2_latency_cycles.value, arch.tma_issue_overhead_cycles.value,
                                        int(arch.l2_bytes.value)))
        land = max(mem.load(0.0, ("x", i), nbytes) for i in range(int(arch.sm_count.value)))
        pub = (lo + hi) / 2
        rng = f"{lo}-{hi}" if lo != hi else f"{lo}"
        note = ""
        if nbytes == 1024:
            hbm_cycles = arch.sm_count.value * nbytes / arch.hbm_bytes_per_clk
            note = (f"  (not a check: tma_issue_overhead_cycles = 1413 - {arch.hbm_latency_cycles.value:g} DRAM "
                    f"latency comes from this point; the model adds {hbm_cycles:.0f} cycles for "
                    f"{int(arch.sm_count.value)} KiB through HBM at {arch.hbm_bytes_per_s.value / 1e12:.2f} TB/s)")
        print(f"   {nbytes // 1024:4d} KiB   model {land:7.0f}  published {rng:>9}  ratio {land / pub:5.2f}{note}")

    print(f"\n3. whole GEMM, BF16 1792x16128x3072   [{SOURCE_GEMM}]")
    res = simulate(Sm100GemmConfig(m=1792, n=16128, k=3072), arch)
    published = 1745.0
    print(f"   model {res.tflops:7.1f} TFLOP/s at {clk} GHz ({res.time_ns / 1e3:.1f} us incl. "
          f"{res.launch_overhead_ns / 1e3:.0f} us launch); published {published} TFLOP/s; ratio {res.tflops / published:.2f}")
    kernel_ns = res.time_ns - res.launch_overhead_ns
    needed_ns = res.flops / (published * 1e3) - res.launch_overhead_ns
    print(f"   the published figure matches the model at an SM clock of {clk * kernel_ns / needed_ns:.2f} GHz "
          f"(if everything scales with the clock; HBM does not, so this is a lower bound)")
    print("   datasheet dense BF16 peak: 2250 TFLOP/s (HGX B200, 1000 W) = "
          f"{2250e12 / (arch.sm_count.value * arch.mma_flops_per_clk_per_sm.value) / 1e9:.3f} GHz at 8192 FLOP/clk/SM")


if __name__ == "__main__":
    main()
