"""The SM90 model: invariants on small problems, determinism, timing derivation, throughput sanity."""

import os

import numpy as np
import pytest

from simulator.engine import simulate
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm90_tma_ws import (
    EPILOGUE_PHASES_1SM,
    MODULE_CONSTANTS,
    TMA_STORE_RATE,
    Sm90Timing,
    _epilogue_phases,
)
from simulator.machine.arch import ArchSpec
from simulator.protocol.arrivals import Sm90KernelFacts, sm90_arrival_counts

H200 = ArchSpec.h200()

# (schedule, cluster, read_c, (m, n, k), swizzle, raster): edges that do not divide the tile,
# K tails, multicast along M, N and both, padding clusters, swizzled rasters.
CASES = [
    ("cooperative", (1, 1), False, (1000, 1000, 520), 1, "heuristic"),
    ("cooperative", (2, 1), False, (1024, 1024, 512), 1, "heuristic"),
    ("cooperative", (2, 2), True, (1024, 2048, 512), 4, "n"),
    ("cooperative", (4, 1), False, (128, 4096, 1024), 1, "heuristic"),
    ("pingpong", (1, 2), True, (700, 1504, 256), 2, "m"),
    ("pingpong", (2, 2), False, (3000, 1000, 640), 1, "heuristic"),
    ("pingpong", (2, 1), False, (2048, 2048, 256), 2, "heuristic"),
]


@pytest.mark.parametrize("schedule,cluster,read_c,mnk,swizzle,raster", CASES)
def test_invariants_on_small_problems(schedule, cluster, read_c, mnk, swizzle, raster):
    m, n, k = mnk
    cfg = Sm90GemmConfig(m=m, n=n, k=k, cluster_m=cluster[0], cluster_n=cluster[1], schedule=schedule,
                         read_c=read_c, swizzle=swizzle, raster=raster)
    r = simulate(cfg)
    assert r.ok, r.deadlock.summary() if r.deadlock else r.violations
    once, more = r.tile_check()
    assert (once, more) == (r.tiles_expected, 0)          # every output tile exactly once
    assert r.tx_expected == r.tx_landed > 0               # every expected TMA byte landed
    assert r.hbm_bytes >= r.compulsory_bytes              # at least the compulsory traffic
    assert r.hbm_write_bytes == r.compulsory_bytes - _read_compulsory(r.config)
    assert 0 < r.tensor_core_utilization <= 1.0
    roles = {rt.role for rt in r.role_times}
    assert roles == {"MainloopLoad", "Consumer0", "Consumer1"} | ({"EpilogueLoad"} if read_c else set())


def _read_compulsory(cfg):
    c = cfg.m * cfg.n * cfg.l * cfg.bits_c // 8 if cfg.read_c else 0
    return cfg.m * cfg.k * cfg.bits_ab // 8 + cfg.n * cfg.k * cfg.bits_ab // 8 + c


def test_empty_arrivals_add_up_for_every_cluster_shape():
    """Per release, each consumer arrives once per warp on each multicast source CTA: the counts that
    arrivals.py derives are met exactly (no deadlock, no spill into the next phase)."""
    for schedule in ("cooperative", "pingpong"):
        for cm, cn in ((1, 1), (2, 1), (1, 2), (2, 2), (4, 2)):
            cfg = Sm90GemmConfig(m=1024, n=1024, k=256, cluster_m=cm, cluster_n=cn, schedule=schedule)
            r = simulate(cfg)
            assert r.ok, (schedule, cm, cn)
            c = sm90_arrival_counts(Sm90KernelFacts.from_config(cfg))["mainloop"]
            assert c.consumer == 4 * (cm + cn - 1) * (2 if schedule == "cooperative" else 1)


def test_determinism_same_config_same_trace():
    cfg = Sm90GemmConfig(m=768, n=1024, k=512, schedule="pingpong", read_c=True)
    a = simulate(cfg, trace=True)
    b = simulate(cfg, trace=True)
    assert a.cycles == b.cycles and a.hbm_bytes == b.hbm_bytes
    ca, cb = a.trace.columns(), b.trace.columns()
    assert len(a.trace) == len(b.trace) > 0
    for col in ("sm", "role", "kind", "tile_m", "tile_n", "k_block", "stage", "start_cycle", "end_cycle", "barrier"):
        assert np.array_equal(ca[col], cb[col]), col


def test_trace_uses_the_shared_kinds_and_roles():
    r = simulate(Sm90GemmConfig(m=512, n=512, k=256, read_c=True), trace=True, trace_sms=[0, 1])
    c = r.trace.columns()
    assert set(np.unique(c["sm"])) == {0, 1}
    assert set(np.unique(c["role"])) == {"MainloopLoad", "EpilogueLoad", "Consumer0", "Consumer1"}
    assert {"tma_load", "mma", "epi_load", "epilogue", "tma_store", "wait", "tile", "acc_handoff"} <= set(
        np.unique(c["kind"]))
    barriers = set(np.unique(c["barrier"][c["kind"] == "wait"]))
    assert barriers <= {"mainloop.full", "mainloop.empty", "epi_load.full", "epi_load.empty", "load_order",
                        "mma.wait_group", "epilogue.barrier", "epilogue.store_buffer", "epilogue.store_drain",
                        "math_order"}
    # The consumers' mma spans: one per K-block per warpgroup (cooperative: both warpgroups).
    mma = r.trace.where(kind="mma", sm=0).columns()
    assert len(mma["start_cycle"]) == 2 * r.config.k_tiles * len(set(zip(mma["tile_m"], mma["tile_n"], strict=True)))


def test_timing_derivation_follows_wgmma_shapes():
    coop = Sm90Timing.derive(Sm90GemmConfig().resolved(H200), H200)
    # 128x256 cooperative: each warpgroup issues m64n256k16 x (64/16) per K-block, 2*64*256*16/4096 = 128 cycles.
    assert (coop.wgmma_instr_cycles, coop.wgmma_per_kblock, coop.kblock_wg_cycles) == (128, 4, 512)
    # Measured latency at N=256: 213.0 (issue interval + 84), scaled by mma_latency 128 / the N=128 127.8.
    assert coop.wgmma_drain_cycles == pytest.approx(213.0 * 128 / 127.8 - 128)
    pp = Sm90Timing.derive(Sm90GemmConfig(schedule="pingpong").resolved(H200), H200)
    # 128x128 ping-pong: one warpgroup owns the tile: 2 (M) x 4 (K) m64n128k16 of 64 cycles.
    assert (pp.wgmma_instr_cycles, pp.wgmma_per_kblock, pp.wgmma_drain_cycles) == (64, 8, 64)
    narrow = Sm90Timing.derive(Sm90GemmConfig(tile_n=32).resolved(H200), H200)
    # m64n32k16: 16 cycles of math; SS wgmma runs at the math rate at every measured N (no SMEM bound);
    # below N=64 the latency is the N=64 one.
    assert narrow.wgmma_instr_cycles == 16 and "math rate" in narrow.notes[0]
    assert narrow.wgmma_drain_cycles == pytest.approx(95.8 * 128 / 127.8 - 16)
    fp8 = Sm90Timing.derive(Sm90GemmConfig(dtype_ab="fp8e4m3", dtype_c="fp16", dtype_d="fp16").resolved(H200), H200)
    assert fp8.wgmma_instr_cycles == 128 and fp8.wgmma_per_kblock == 4   # k32 at twice the rate, tile_k 128


def test_latency_scales_with_the_arch_constant():
    base = Sm90Timing.derive(Sm90GemmConfig().resolved(H200), H200)
    slow = Sm90Timing.derive(Sm90GemmConfig().resolved(H200), H200.with_overrides({"mma_latency_cycles": 256}))
    assert slow.wgmma_drain_cycles + 128 == pytest.approx(2 * (base.wgmma_drain_cycles + 128))


def test_epilogue_phases_reproduce_the_one_sm_measurement():
    """The per-subtile phases (scaled) add up to the measured uninstrumented subtile time on one SM where
    the store engine does not bind (e16, e32), and the store engine's time is the e64 subtile."""
    for sched in ("cooperative", "pingpong"):
        for en in (16, 32, 64):
            alu, wait, bar, issue = _epilogue_phases(sched, 128 * en * 2)
            total = EPILOGUE_PHASES_1SM[sched][en][-1]
            store_engine = 128 * en * 2 / TMA_STORE_RATE.value
            if en < 64:
                assert alu + wait + bar + issue == pytest.approx(total)
            else:
                assert store_engine == pytest.approx(total, rel=0.04)   # 516 vs 521.5 / 531.2
    # In between, linear in bytes; beyond, extrapolated from the nearest two.
    mid = _epilogue_phases("cooperative", 128 * 24 * 2)
    lo, hi = _epilogue_phases("cooperative", 128 * 16 * 2), _epilogue_phases("cooperative", 128 * 32 * 2)
    assert mid == pytest.approx(tuple((a + b) / 2 for a, b in zip(lo, hi, strict=True)))


def test_constants_used_are_named():
    names = set(ArchSpec.constant_names()) | {c.name for c in MODULE_CONSTANTS}
    assert set(Sm90Timing.constants_used()) <= names
    r = simulate(Sm90GemmConfig(m=256, n=256, k=128))
    assert any("tma_store_bytes_per_clk" in n and "measured-here" in n for n in r.timing_notes)
    assert not any("estimate" in n for n in r.timing_notes)


def test_compute_bound_throughput_is_a_sensible_fraction_of_peak():
    """Two waves of 128x256 tiles over all 132 SMs (a proxy for 8192^3, which the slow test runs)."""
    r = simulate(Sm90GemmConfig(m=2048, n=4096, k=4096, dtype_ab="fp16", dtype_c="fp16", dtype_d="fp16"))
    print(f"\n2048x4096x4096 fp16 cooperative on H200: {r.tflops:.0f} TFLOP/s = {r.peak_fraction:.3f} of "
          f"{r.peak_tflops:.0f} peak, tensor cores {r.tensor_core_utilization:.3f} busy")
    assert r.ok and 0.75 < r.peak_fraction < 1.0


def test_memory_bound_shape_runs_near_hbm_bandwidth():
    """M = 128: one row of 128x128 ping-pong tiles, B streamed once from HBM."""
    r = simulate(Sm90GemmConfig(m=128, n=16384, k=8192, schedule="pingpong", cluster_m=1,
                                dtype_ab="fp16", dtype_c="fp16", dtype_d="fp16"))
    bw = r.hbm_bytes / (r.cycles / (H200.clock_ghz.value * 1e9))
    frac = bw / H200.hbm_bytes_per_s.value
    print(f"\n128x16384x8192 fp16 ping-pong: {bw / 1e12:.2f} TB/s over the kernel's cycles = {frac:.3f} of HBM; "
          f"{r.tflops:.0f} TFLOP/s with launch overhead")
    assert r.ok and r.hbm_bytes / r.compulsory_bytes < 1.05
    assert 0.8 < frac <= 1.0


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("WSIM_SLOW"), reason="set WSIM_SLOW=1: ~15-30 s per schedule")
@pytest.mark.parametrize("schedule", ["cooperative", "pingpong"])
def test_8192_cubed_fp16_on_h200(schedule):
    r = simulate(Sm90GemmConfig(m=8192, n=8192, k=8192, schedule=schedule, dtype_ab="fp16", dtype_c="fp16",
                                dtype_d="fp16"))
    print(f"\n8192^3 fp16 {schedule}: {r.tflops:.0f} TFLOP/s = {r.peak_fraction:.3f} of peak")
    assert r.ok and r.tile_check() == (r.tiles_expected, 0)
    assert 0.8 < r.peak_fraction < 1.0


def _run_with_launcher(cfg, arch, launcher):
    """simulate(), with the kernel built for ``launcher`` (simulate() always uses the twin's grid)."""
    from simulator.engine.fast_env import FastEnv
    from simulator.kernels.sm90_tma_ws import Sm90GemmTmaWarpSpecialized
    from simulator.machine.memory import MemorySystem, MemoryTiming
    cfg = cfg.resolved(arch)
    env = FastEnv()
    mem = MemorySystem(MemoryTiming(arch.hbm_bytes_per_clk, arch.l2_bytes_per_clk, arch.hbm_latency_cycles.value,
                                    arch.l2_latency_cycles.value, arch.tma_issue_overhead_cycles.value,
                                    int(arch.l2_bytes.value)))
    k = Sm90GemmTmaWarpSpecialized(env, cfg, arch, mem, launcher=launcher)
    env.run()
    return k


def test_cutlass_heuristic_grid_larger_than_what_fits_runs_in_two_launch_waves():
    # 100 SMs over 8 GPCs (14/14/12 x 6 SMs): 8 clusters of 8 fit at once; CUTLASS's heuristic (18 SMs per
    # GPC) asks for 11. The 3 extra clusters start as resident ones exit; every tile is still done once.
    arch = H200.with_overrides({"sm_count": 100})
    cfg = Sm90GemmConfig(m=8192, n=2048, k=512, cluster_m=8, cluster_n=1, dtype_ab="fp16", dtype_c="fp16",
                         dtype_d="fp16")
    dsl = _run_with_launcher(cfg, arch, "dsl")
    cut = _run_with_launcher(cfg, arch, "cutlass")
    assert (len(dsl.clusters), dsl.resident_clusters) == (8, 8)
    assert (len(cut.clusters), cut.resident_clusters) == (11, 8)
    for k in (dsl, cut):
        assert not k.unfinished_roles()
        done = [t for t in k.stats.tiles_done]
        assert len(done) == len(set(done)) == cfg.tiles_m * cfg.resolved(arch).tiles_n
    late = [r.start_cycle for r in cut.roles if r.cta.cluster.index >= 8]
    assert min(late) > 0                       # they waited for a slot
    assert cut.stats.end_cycle > dsl.stats.end_cycle    # 11 clusters on 8 slots: a ragged second wave
