"""Architecture specs: the per-chip numbers the model turns work into time with.

Every field of :class:`ArchSpec` except ``name`` and ``sm_version`` is a
:class:`~simulator.machine.constants.Constant` carrying its unit and its source. Two chips are described:

- ``ArchSpec.b200()`` -- Blackwell B200 (SM100): the chip the seed kernel targets. Nobody here has
  one; its numbers are published microbenchmarks, datasheet values, CUTLASS constants, estimates,
  constants fitted to gemm-model's measured rows, or chosen while looking at them (said so in ``kind``).
- ``ArchSpec.h200()`` -- Hopper H200 (SM90): the GPU available for validation. Its latencies and
  bandwidths are our own microbenchmarks (``validation/microbench``, results in
  ``validation/results/h200_microbench_v2.json``, each source naming its key there); where a
  published figure (Luo et al., H800) differs, the source gives it too. Two are taken from the
  campaign rows that ``wsim accuracy`` scores (kind ``chosen``): the launch overhead and which
  measured L2 rate the model uses.

Each source names a public document or a committed measurement (a file of ``validation/results``
and its key): SemiAnalysis microbench-blackwell (github.com/SemiAnalysisAI/microbench-blackwell),
Luo et al. (arXiv 2402.13499, 2501.12084), pytorch/ao PR #4002 (github.com/pytorch/ao/pull/4002),
markdewing/AI_kernels (github.com/markdewing/AI_kernels), hbarclay/gemm-model
(github.com/hbarclay/gemm-model), CUTLASS (github.com/NVIDIA/cutlass), NVIDIA's datasheets and
whitepapers, the CUDA C++ Programming Guide.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from simulator.errors import ConfigError
from simulator.machine.constants import Constant

# Short names of the documents cited below.
_SEMI = "SemiAnalysis microbench-blackwell"
_LUO = "Luo et al. IPDPS'24 (arXiv 2402.13499)"
_LUO_EXT = "Luo et al. extended (arXiv 2501.12084)"
#: Where the B200 constants fitted to hbarclay/gemm-model's fp16 rows come from (wsim accuracy).
_FIT = ("fitted by `wsim accuracy` to hbarclay/gemm-model's B200 fp16 rows (the 464 rows of 29 of its 40 shapes "
        "that `--quick --budget b200=150` scores; validation/results/accuracy.md), all four fitted together, "
        "leave-one-shape-out cross-validated MAPE 8.5%")
_SEMI_MCAST = "SemiAnalysis microbench-blackwell tma2dmcast_throughput/tma2dmcast_sweep_results.csv"
#: The rows ``wsim accuracy`` scores, named by the constants chosen while looking at them (kind ``chosen``).
_B200_ROWS = ("hbarclay/gemm-model's B200 fp16 rows (640 rows, the B200 rows `wsim accuracy` scores, "
              "validation/results/accuracy.md)")
_H200_ROWS = ("the H200 campaign rows (validation/results/h200_campaign.json, 1424 timed configs x problems: "
              "the H200 rows `wsim accuracy` scores, validation/results/accuracy.md)")
_MICRO = "validation/results/h200_microbench.json (python -m validation.microbench, 2026-11-29)"
#: The v2 microbenchmarks (one per SM90 timing constant); a source names the key in its "quantities".
_MICRO2 = "validation/results/h200_microbench_v2.json (python -m validation.microbench.run, 2026-12-01)"
_CUDA_GUIDE_CLUSTERS = "CUDA C++ Programming Guide, Thread Block Clusters (8 portable, 16 non-portable opt-in)"
#: The v3 microbenchmarks (issue 17's mechanisms) and their second run; a source names the key in its "quantities".
_MICRO3 = "validation/results/h200_microbench_v3.json (python -m validation.microbench.run --suite v3, 2026-12-01)"
_MICRO3B = "validation/results/h200_microbench_v3b.json (--suite v3b, 2026-12-01)"

# Constants that may be zero (the feature does not exist on that architecture); all others must be > 0.
_MAY_BE_ZERO = frozenset({
    "tmem_columns", "tmem_lanes", "clc_query_latency_cycles", "tmem_load_bytes_per_clk",
    "launch_overhead_ns", "mbarrier_arrive_latency_cycles", "tma_load_bytes_per_clk_per_sm",
    "epilogue_subtile_sync_cycles", "tma_zero_fill_l2_cost", "epilogue_tile_cycles",
})


# Constants that count whole things (SMs, CTAs, bytes, TMEM lanes/columns): overrides must be integers.
_COUNTS = frozenset({"sm_count", "max_cluster_size", "smem_bytes_per_cta", "l2_bytes", "tmem_columns",
                     "tmem_lanes", "gpc_count"})
#: The largest count an override may give: CUDA reports a device's counts and sizes (SMs, SMEM per
#: block, L2 bytes, cluster size) as 32-bit ints (cudaDeviceGetAttribute's ``int *value``).
MAX_COUNT = 2**31 - 1
#: Bandwidths whose 0 marks a feature the arch lacks (the model then applies no limit): an override
#: may set 0 only where the arch itself has 0.
_RATE_ZERO_MEANS_ABSENT = frozenset({"tmem_load_bytes_per_clk", "tma_load_bytes_per_clk_per_sm"})


@dataclass(frozen=True)
class ArchSpec:
    """One GPU's model constants. Each field below ``sm_version`` is a :class:`Constant`."""

    name: str
    sm_version: int  # 100 (Blackwell) or 90 (Hopper)
    sm_count: Constant
    clock_ghz: Constant
    mma_flops_per_clk_per_sm: Constant
    mma_fp8_factor: Constant
    mma_latency_cycles: Constant
    smem_read_bytes_per_clk: Constant
    smem_bytes_per_cta: Constant
    tmem_columns: Constant
    tmem_lanes: Constant
    hbm_bytes_per_s: Constant
    hbm_latency_cycles: Constant
    l2_bytes: Constant
    l2_bytes_per_s: Constant
    l2_latency_cycles: Constant
    tma_issue_overhead_cycles: Constant
    mbarrier_arrive_latency_cycles: Constant
    remote_arrive_latency_cycles: Constant
    clc_query_latency_cycles: Constant
    tmem_load_bytes_per_clk: Constant
    epilogue_convert_elems_per_clk: Constant
    launch_overhead_ns: Constant
    max_cluster_size: Constant
    tma_load_bytes_per_clk_per_sm: Constant
    gpc_count: Constant
    epilogue_subtile_sync_cycles: Constant
    tma_zero_fill_l2_cost: Constant
    epilogue_tile_cycles: Constant

    def __post_init__(self) -> None:
        for name in self.constant_names():
            c = getattr(self, name)
            if not isinstance(c, Constant):
                raise TypeError(f"ArchSpec.{name} must be a Constant, got {type(c).__name__}")
            if c.name != name:
                raise ValueError(f"ArchSpec.{name} holds a Constant named {c.name!r}")

    # ------------------------------------------------------------------ introspection
    @classmethod
    def constant_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if f.name not in ("name", "sm_version"))

    def constants(self) -> tuple[Constant, ...]:
        """All constants, in field order (for printing with a result)."""
        return tuple(getattr(self, n) for n in self.constant_names())

    def value(self, name: str) -> float:
        return getattr(self, name).value

    def with_overrides(self, mapping: dict[str, float], origin: str = "user override") -> ArchSpec:
        """A copy with some constants replaced; each replaced constant records ``origin``.

        Values are numbers (int or float; not bools, not strings: the CLI parses its text first),
        finite, > 0 (>= 0 where the feature may be absent; a bandwidth only where the arch lacks it),
        and whole numbers up to :data:`MAX_COUNT` where the constant is a count (SMs, CTAs, bytes, TMEM
        lanes and columns, GPCs: at most one per TPC of 2 SMs).
        """
        if not isinstance(mapping, Mapping):
            raise ConfigError(f"arch overrides {mapping!r} ({origin}): expected a mapping of constant name -> "
                              f"number, e.g. {{'clock_ghz': 1.3}}, got {type(mapping).__name__}")
        valid = self.constant_names()
        changes: dict[str, Constant] = {}
        for key, val in mapping.items():
            if key not in valid:
                raise ConfigError(
                    f"arch override {key!r}={val!r} ({origin}): unknown constant; valid names: {', '.join(valid)}")
            if isinstance(val, bool) or not isinstance(val, numbers.Real):
                raise ConfigError(f"arch override {key}={val!r} ({origin}): expected a number, got "
                                  f"{type(val).__name__}")
            fval = float(val)
            if fval != fval or fval in (float("inf"), float("-inf")):
                raise ConfigError(f"arch override {key}={val!r} ({origin}): must be a finite number")
            if key in _COUNTS and not isinstance(val, numbers.Integral):
                raise ConfigError(f"arch override {key}={val!r} ({origin}): {key} is a count "
                                  f"({getattr(self, key).unit}): expected an integer")
            if key in _COUNTS and val > MAX_COUNT:
                raise ConfigError(f"arch override {key}={val!r} ({origin}): at most 2^31 - 1 = {MAX_COUNT:,} "
                                  "(CUDA reports device counts and sizes as 32-bit ints)")
            if key in _MAY_BE_ZERO:
                if fval < 0:
                    raise ConfigError(f"arch override {key}={val!r} ({origin}): must be >= 0")
                own = getattr(self, key)
                if fval == 0 and key in _RATE_ZERO_MEANS_ABSENT and own.value > 0:
                    raise ConfigError(f"arch override {key}={val!r} ({origin}): a bandwidth of 0 marks a feature "
                                      f"the arch lacks (the model then applies no limit), but {self.name} has it "
                                      f"({own.value:g} {own.unit}); give a rate > 0")
            elif fval <= 0:
                raise ConfigError(f"arch override {key}={val!r} ({origin}): must be > 0")
            changes[key] = getattr(self, key).overridden(fval, origin)
        out = replace(self, **changes)
        if "gpc_count" in changes:
            out._check_gpc_count(origin)
        return out

    def _check_gpc_count(self, origin: str) -> None:
        """A GPC holds whole TPCs of 2 SMs: at most one GPC per TPC."""
        sms, gpcs = int(self.sm_count.value), int(self.gpc_count.value)
        tpcs = max(1, sms // 2)
        if gpcs > tpcs:
            raise ConfigError(f"arch override gpc_count={gpcs} ({origin}): more GPCs than the {tpcs} TPC(s) of "
                              f"{self.name}'s {sms} SMs (2 SMs per TPC; a GPC holds whole TPCs)")

    # ------------------------------------------------------------------ convenience
    def cycles_to_ns(self, cycles: float) -> float:
        return cycles / self.clock_ghz.value

    @property
    def hbm_bytes_per_clk(self) -> float:
        """Whole-chip HBM bandwidth in bytes per SM clock."""
        return self.hbm_bytes_per_s.value / (self.clock_ghz.value * 1e9)

    @property
    def l2_bytes_per_clk(self) -> float:
        """Whole-chip L2 hit bandwidth in bytes per SM clock."""
        return self.l2_bytes_per_s.value / (self.clock_ghz.value * 1e9)

    @property
    def peak_flops(self) -> float:
        """Dense 16-bit tensor peak, FLOP/s, at ``clock_ghz``."""
        return self.sm_count.value * self.mma_flops_per_clk_per_sm.value * self.clock_ghz.value * 1e9

    # ------------------------------------------------------------------ factories
    @classmethod
    def b200(cls) -> ArchSpec:
        """NVIDIA B200 (SM100)."""
        C = Constant
        return cls(
            name="B200",
            sm_version=100,
            sm_count=C("sm_count", 148, "SMs", "B200 device query quoted in pytorch/ao PR #4002", "datasheet"),
            clock_ghz=C("clock_ghz", 1.965, "GHz",
                        f"{_SEMI} (SM clock used for its cycle figures; 1.98 GHz boost in spec databases)",
                        "microbenchmark"),
            mma_flops_per_clk_per_sm=C(
                "mma_flops_per_clk_per_sm", 8192, "FLOP/clk/SM",
                f"{_SEMI} umma_throughput (bf16 1-SM 128x256x16 issue 128 clk: 2*128*256*16/128 = 8192)",
                "microbenchmark"),
            mma_fp8_factor=C("mma_fp8_factor", 2.0, "x",
                             f"{_SEMI} (E4M3 K=32 at the bf16 cycle counts); datasheet 4.5 vs 2.25 PFLOP/s",
                             "microbenchmark"),
            mma_latency_cycles=C("mma_latency_cycles", 264, "cycles",
                                 f"{_SEMI} umma_latency fit (bf16 1-SM SS 128x256x16 completion)",
                                 "microbenchmark"),
            smem_read_bytes_per_clk=C("smem_read_bytes_per_clk", 128, "B/clk/SM",
                                      f"{_SEMI} (SS MMA N=64 issue 48 clk: SMEM-operand bound ~128 B/clk)",
                                      "microbenchmark"),
            smem_bytes_per_cta=C("smem_bytes_per_cta", 232448, "B",
                                 "CUTLASS arch.h sm100_smem_capacity_bytes", "cutlass"),
            tmem_columns=C("tmem_columns", 512, "columns",
                           "CUTLASS tmem_allocator_sm100.hpp Sm100TmemCapacityColumns", "cutlass"),
            tmem_lanes=C("tmem_lanes", 128, "lanes", "CUTLASS / PTX ISA tcgen05 (128 lanes x 512 cols x 32 b)",
                         "cutlass"),
            hbm_bytes_per_s=C("hbm_bytes_per_s", 7.29e12, "B/s",
                              f"{_SEMI_MCAST} no_sharing: 7.29 TB/s DRAM read (dram__bytes_read / GPU time; "
                              "tma2d_throughput: 7.26), 95% of the 7.67 TB/s bus figure (7680 bit x 3996 MHz x 2, "
                              "pytorch/ao PR #4002)", "microbenchmark"),
            hbm_latency_cycles=C("hbm_latency_cycles", 860, "cycles",
                                 "markdewing/AI_kernels latency/README.md (B200 DRAM pointer chase)",
                                 "microbenchmark"),
            l2_bytes=C("l2_bytes", 126.5 * 1024 * 1024, "B",
                       "B200 device query (126.5 MB) quoted in pytorch/ao PR #4002", "datasheet"),
            l2_bytes_per_s=C("l2_bytes_per_s", 19.0e12, "B/s",
                             "no measured B200 L2 bandwidth: SemiAnalysis's TMA microbenchmark reached 14.2 TB/s of "
                             f"L2 reads ({_SEMI_MCAST}, implicit_l2_cross; one CTA per SM, a lower bound); 19 TB/s "
                             f"because {_B200_ROWS} read up to ~19 TB/s of A and B tiles from L2 (2x1 clusters, MMA "
                             "256x64, K=7168), so it is at least that; not scaled with the SM clock", "chosen"),
            l2_latency_cycles=C("l2_latency_cycles", 295, "cycles",
                                "markdewing/AI_kernels latency/README.md (B200 L2 pointer chase)",
                                "microbenchmark"),
            tma_issue_overhead_cycles=C("tma_issue_overhead_cycles", 1413 - 860, "cycles",
                                        f"{_SEMI} tma2d_latency: a 1 KiB cold-DRAM TMA load of 148 CTAs "
                                        "lands after 1413 clk; minus the 860-clk DRAM latency above "
                                        "(the larger loads are checked in benchmarks/published_b200.py)",
                                        "microbenchmark"),
            mbarrier_arrive_latency_cycles=C("mbarrier_arrive_latency_cycles", 20, "cycles",
                                             "not published: ~ shared-memory atomic latency", "estimate"),
            remote_arrive_latency_cycles=C("remote_arrive_latency_cycles", 180, "cycles",
                                           f"{_LUO_EXT} (Hopper H800 DSMEM SM-to-SM latency)", "paper"),
            clc_query_latency_cycles=C("clc_query_latency_cycles", 400, "cycles",
                                       "not published (try_cancel round trip ~ an L2 round trip + response)",
                                       "estimate"),
            tmem_load_bytes_per_clk=C(
                "tmem_load_bytes_per_clk", 512, "B/clk/SM",
                "not published: 4 sub-partitions (one per epilogue warp) x 32 lanes x 4 B per clk",
                "estimate"),
            epilogue_convert_elems_per_clk=C(
                "epilogue_convert_elems_per_clk", 128, "elems/clk/SM",
                "not published: 4 epilogue warps (one per scheduler) x 32 lanes x ~1 element/clk "
                "(packed cvt = 2 elems/instr, shared with scale and st.shared issue)",
                "estimate"),
            launch_overhead_ns=C("launch_overhead_ns", 7000, "ns",
                                 f"{_FIT}; GPU time per launch the simulation does not cover (grid launch, "
                                 "barrier init, TMEM alloc, teardown, gap between back-to-back kernels)",
                                 "fitted"),
            max_cluster_size=C("max_cluster_size", 16, "CTAs", _CUDA_GUIDE_CLUSTERS + "; non-portable max",
                               "datasheet"),
            tma_load_bytes_per_clk_per_sm=C(
                "tma_load_bytes_per_clk_per_sm", 86.4, "B/clk/SM",
                f"{_FIT}; TMA bytes landing in one SM's SMEM per cycle under full load (not published: "
                f"{_SEMI_MCAST} reached 58, one CTA per SM; gemm-model's 256x256 rows at 98% of peak need >= 64)",
                "fitted"),
            gpc_count=C("gpc_count", 8, "GPCs",
                        "2 dies x 4 GPCs of 10 TPCs (80 SMs per die, chipsandcheese 'Nvidia's B200'); the spread "
                        "of the 74 enabled TPCs is not published: taken as even as possible (2 GPCs of 10 TPCs, 6 "
                        "of 9; simulator.kernels.scheduler.gpc_sm_counts), which fits 34 clusters of 4 CTAs at "
                        f"once, as the 2x2-cluster rows of {_B200_ROWS} show", "chosen"),
            epilogue_subtile_sync_cycles=C(
                "epilogue_subtile_sync_cycles", 400, "cycles",
                f"{_FIT}; per epilogue subtile, the fence, two named-barrier syncs and TMA-store issue/wait of "
                "the CuTe-DSL epilogue beyond the modelled TMEM load, conversion and SMEM write (not published)",
                "fitted"),
            tma_zero_fill_l2_cost=C(
                "tma_zero_fill_l2_cost", 0, "x",
                "not modelled on SM100 (0: zero fill costs only the SM's TMA ingress, as a landed byte): the "
                f"H200's cost ({_MICRO3} tma_oob.*, mainloop.*) is of Hopper's TMA and L2, nothing published "
                "measures Blackwell's", "estimate"),
            epilogue_tile_cycles=C(
                "epilogue_tile_cycles", 350, "cycles",
                f"{_FIT}; per output tile, what the CuTe-DSL epilogue spends beyond its subtiles (the barrier "
                "after the last subtile, the accumulator stage's release, the scheduler's advance, the next "
                "hand-off's wake: dense_gemm_persistent.py's epilogue loop); not published (gemm-model's own "
                "model charges 1000 cycles a tile, config/config.yaml epilogue_min_latency)", "fitted"),
        )


    @classmethod
    def h200(cls) -> ArchSpec:
        """NVIDIA H200 SXM (SM90)."""
        C = Constant
        return cls(
            name="H200",
            sm_version=90,
            sm_count=C("sm_count", 132, "SMs", "NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SXM5: 132 "
                       "SMs; the H200 has the same GH100 die); our H200's device query: "
                       "validation/results/h200_campaign.json env 'sms'", "datasheet"),
            clock_ghz=C("clock_ghz", 1.98, "GHz",
                        "nvidia-smi's max SM clock of our H200, 1980 MHz (the spec maximum, not a clock under "
                        "load: validation/results/h200_campaign.json env 'sm_clock_max'; our GEMMs ran at "
                        "1.28-1.32 GHz in-kernel, validation/results/hw_vs_cublas.md: override with the run's "
                        "effective clock)", "datasheet"),
            mma_flops_per_clk_per_sm=C(
                "mma_flops_per_clk_per_sm", 4096, "FLOP/clk/SM",
                "NVIDIA H100/H200 SXM datasheet 989 TFLOP/s bf16 dense / (132 SMs x 1.83 GHz) = 4094 ~ 4096",
                "datasheet"),
            mma_fp8_factor=C("mma_fp8_factor", 2.0, "x", "NVIDIA datasheet (FP8 1979 vs BF16 989 TFLOP/s)",
                             "datasheet"),
            mma_latency_cycles=C("mma_latency_cycles", 128, "cycles",
                                 f"{_MICRO2} wgmma.ss.f16.n128.latency_cycles (127.8): fence + one wgmma m64n128k16 "
                                 "SS + commit + wait_group 0. Per N it is 95.8/127.8/162.8/213.0 for N=64/128/192/256 "
                                 "(issue interval + 63-84): the SM90 model uses that table "
                                 "(sm90_tma_ws.WGMMA_SS_LATENCY), scaled by this value / 127.8. (Luo et al.'s "
                                 "128 cycles for m64n256k16 is that shape's issue interval, measured 128.9.)",
                                 "measured-here"),
            smem_read_bytes_per_clk=C("smem_read_bytes_per_clk", 128, "B/clk/SM",
                                      "NVIDIA Hopper tuning guide / CUDA guide: 32 banks x 4 B per clk",
                                      "datasheet"),
            smem_bytes_per_cta=C("smem_bytes_per_cta", 232448, "B",
                                 "CUTLASS sm90_common.inl sm90_smem_capacity_bytes (227 KB)", "cutlass"),
            tmem_columns=C("tmem_columns", 0, "columns", "SM90 has no tensor memory", "datasheet"),
            tmem_lanes=C("tmem_lanes", 0, "lanes", "SM90 has no tensor memory", "datasheet"),
            hbm_bytes_per_s=C("hbm_bytes_per_s", 4.279e12, "B/s",
                              f"{_MICRO}: 4 GiB device-to-device copy, read+write bytes over time, SM at "
                              "1980 MHz (datasheet: 4.8 TB/s)", "measured-here"),
            hbm_latency_cycles=C("hbm_latency_cycles", 699.6, "cycles",
                                 f"{_MICRO2} load_latency.hbm.f1024MiB.1sm: dependent ld.global.cg chain, 4 KiB "
                                 "slots over 1 GiB after an L2 flush (Luo et al., H800 PCIe: 478.8)", "measured-here"),
            l2_bytes=C("l2_bytes", 62914560, "B",
                       f"{_MICRO}: cudaDeviceProp.l2CacheSize of the H200 (60 MiB)", "measured-here"),
            l2_bytes_per_s=C("l2_bytes_per_s", 9.164e12, "B/s",
                             f"{_MICRO2} l2_to_sm.f16MiB.132sm.bytes_per_s: TMA loads (32 KiB boxes, 6 in "
                             "flight per SM) from all 132 SMs over a 16 MiB L2-resident footprint, SM at 1980 MHz "
                             "(9.1-9.2 TB/s at 16-48 MiB, 6.7 at 64, 19.9 at 8 MiB; plain loads read 21.4 TB/s at "
                             f"16 MiB in {_MICRO}). One rate for every footprint, this one, chosen on {_H200_ROWS}: "
                             "an L2 serving slices re-read within 4-12 MiB of traffic at the 8 MiB rate scored "
                             "worse on them (MAPE 11.2-11.6%, bias -9%, against 6.8%)", "chosen"),
            l2_latency_cycles=C("l2_latency_cycles", 281.0, "cycles",
                                f"{_MICRO2} load_latency.l2.f4MiB.1sm: dependent ld.global.cg chain over 4 MiB "
                                "(32 MiB and all 132 SMs at once: 280, range 271-294; Luo et al., H800: 263)",
                                "measured-here"),
            tma_issue_overhead_cycles=C("tma_issue_overhead_cycles", 178, "cycles",
                                        f"{_MICRO2} tma_load.latency.l2.p8192.1KiB.1sm (459: arrive.expect_tx + "
                                        "a 1 KiB TMA load that hits L2 -> mbarrier phase complete) minus "
                                        "load_latency.l2.f4MiB.1sm (281) (Luo et al. extended, H800: ~170)",
                                        "measured-here"),
            mbarrier_arrive_latency_cycles=C("mbarrier_arrive_latency_cycles", 56.25, "cycles",
                                             f"{_MICRO2} mbarrier.local.try_wait.one_way_cycles.1sm: arrive in one "
                                             "warp -> try_wait returns in another warp of the CTA (same SM clock)",
                                             "measured-here"),
            remote_arrive_latency_cycles=C("remote_arrive_latency_cycles", 208.3, "cycles",
                                           f"{_MICRO2} mbarrier.remote.relaxed.try_wait.c2_peer1.half_round_trip_cycles"
                                           ": mbarrier.arrive.relaxed.cluster on the peer CTA's barrier (mapa), "
                                           "try_wait there, and back, / 2; with .release.cluster: 481 (the twin's "
                                           "CTA-scoped arrive was not measured; Luo et al. DSMEM: 180)",
                                           "measured-here"),
            clc_query_latency_cycles=C("clc_query_latency_cycles", 0, "cycles",
                                       "SM90 has no cluster launch control", "datasheet"),
            tmem_load_bytes_per_clk=C("tmem_load_bytes_per_clk", 0, "B/clk/SM",
                                      "SM90 has no tensor memory (accumulators live in registers)", "datasheet"),
            epilogue_convert_elems_per_clk=C(
                "epilogue_convert_elems_per_clk", 128, "elems/clk/SM",
                "not used by the SM90 model (its epilogue per subtile is measured: sm90_tma_ws.EPILOGUE_PHASES_1SM); "
                "not published: 4 warp schedulers x 32 lanes x ~1 element/clk", "estimate"),
            launch_overhead_ns=C("launch_overhead_ns", 4256, "ns",
                                 f"derived from {_H200_ROWS}: the median over them of the CUDA-event time minus "
                                 "the in-kernel span (launches queued behind a busy kernel: the GPU-side launch, "
                                 "prologue before the first role starts, and drain; row medians 3.1-5.2 us; back "
                                 "to back in a CUDA graph 1.0 us)", "chosen"),
            max_cluster_size=C("max_cluster_size", 16, "CTAs",
                               f"{_MICRO2} cluster.c16.max_active_clusters.twin_smem: 7 clusters of 16 CTAs "
                               "(non-portable opt-in) resident at once; " + _CUDA_GUIDE_CLUSTERS, "measured-here"),
            tma_load_bytes_per_clk_per_sm=C("tma_load_bytes_per_clk_per_sm", 106.3, "B/clk/SM",
                                            f"{_MICRO2} tma_stream.depth4.1sm.bytes_per_clk_per_sm: one SM streaming "
                                            "32 KiB TMA loads from L2, 4 in flight (6: 106.0; l2_to_sm.f*.1sm: "
                                            "105.6-107.0); rows of a pitch that is not a multiple of 128 B: 47.8 "
                                            "(tma_stream.l2.p8208.1sm.bytes_per_clk_per_sm)", "measured-here"),
            gpc_count=C("gpc_count", 8, "GPCs", "NVIDIA H100 whitepaper: GH100 has 8 GPCs (H200: same die); "
                        "the SM90 model places clusters over the 12 measured placement domains instead "
                        "(simulator.kernels.scheduler.H200_PLACEMENT_DOMAINS)", "datasheet"),
            epilogue_subtile_sync_cycles=C("epilogue_subtile_sync_cycles", 0, "cycles",
                                           "not modelled on SM90 (0)", "estimate"),
            tma_zero_fill_l2_cost=C(
                "tma_zero_fill_l2_cost", 2.12, "x",
                f"derived from {_MICRO3} and {_MICRO3B}: the twin's mainloop replayed with A boxes past M "
                "(fp16 N=28672, K=4096, 128x64 tiles, 132 SMs): per K-block each SM lands 8 KiB of A, 8 KiB of B "
                "and 8 KiB of zeros in 873 cycles at 1.747 GHz (v3b mainloop.fp16_64x28672x4096.n64.c1x1.wgmma."
                "grid132.first_tile_kblock_cycles; A 128 rows high, no zero fill, ...a_full.grid132...: 489), 2 KiB, "
                "8 KiB and 14 KiB at M = 16 in 1049 (v3 mainloop.fp16_16x28672x4096.n64.c1x1.wgmma, its 3-tile "
                "CTAs), and a 2x1 cluster at M = 64 (the second CTA's A box wholly past M) in 830 (v3b "
                "mainloop.fp16_64x28672x4096.n64.c2x1.wgmma.first_tile_kblock_cycles): at l2_bytes_per_s a zero-"
                "filled byte holds the L2 -> SM path 2.23, 2.14 and 2.00 times as long as a read one; their mean. "
                "Streams of 128-row boxes of an R-row tensor give 1.2-1.5 when every SM zero-fills other rows "
                "(tma_oob.h*.box128.132sm against .box_r.132sm), more when all fill the same rows at once "
                "(v3b tma_oob_shared.h*.lockstep: 701-744 cycles per box against 561-615), 2.05 for boxes wholly "
                "past the tensor; one SM alone zero-fills at its TMA rate (tma_oob.h*.box128.1sm: 157 cycles per "
                "16 KiB box, as a full one; the replay on 1 ... 8 SMs, v3b mainloop.*.grid1/grid8: no cost)",
                "measured-here"),
            epilogue_tile_cycles=C("epilogue_tile_cycles", 0, "cycles",
                                   "not modelled on SM90 (0): the SM90 model's epilogue is the twin's measured "
                                   "per-subtile sequence (sm90_tma_ws.EPILOGUE_PHASES_1SM)", "estimate"),
        )


_ALIASES = {"b200": ArchSpec.b200, "sm100": ArchSpec.b200, "sm_100": ArchSpec.b200, "sm100a": ArchSpec.b200,
            "h200": ArchSpec.h200, "sm90": ArchSpec.h200, "sm_90": ArchSpec.h200, "sm90a": ArchSpec.h200}


def get_arch(name: str) -> ArchSpec:
    """``"b200"``/``"sm100"`` or ``"h200"``/``"sm90"`` (case-insensitive)."""
    key = str(name).strip().lower()
    if key not in _ALIASES:
        raise ConfigError(f"arch={name!r}: unknown architecture; valid names: b200, sm100, h200, sm90")
    return _ALIASES[key]()


def as_arch(arch, what: str = "arch") -> ArchSpec:
    """An :class:`ArchSpec`, or a name :func:`get_arch` knows, as an ArchSpec (what ``simulate``,
    ``run_sweep`` and ``tune`` take); anything else is a ConfigError naming ``what``."""
    if isinstance(arch, ArchSpec):
        return arch
    if isinstance(arch, str):
        return get_arch(arch)
    raise ConfigError(f"{what}={arch!r}: expected an ArchSpec or an arch name (b200, sm100, h200, sm90), "
                      f"got {type(arch).__name__}")
