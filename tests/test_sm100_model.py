"""The SM100 seed model: exact protocol order on a tiny case, invariants, determinism, deadlocks."""

import numpy as np
import pytest

from simulator.engine import simulate
from simulator.errors import ConfigError
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec
from simulator.protocol.knobs import ProtocolKnobs

TINY = dict(m=128, n=64, k=192, mma_tile_m=128, mma_tile_n=64, use_2sm=False, cluster_m=1, cluster_n=1,
            mainloop_stages=2)


def _events(trace, role):
    c = trace.where(role=role).columns()
    order = np.lexsort((c["end_cycle"], c["start_cycle"]))
    return [(str(c["kind"][i]), int(c["k_block"][i]), int(c["stage"][i]), str(c["barrier"][i])) for i in order]


def test_tiny_case_exact_protocol_order():
    """One CTA, one 128x64 tile, 3 K-blocks through 2 mainloop stages, 2 epilogue subtiles.

    The SM's TMA ingress rate is set to the SMEM rate (128 B/clk), at which it never binds here (each
    K-block's DRAM latency is longer), so that the order below depends only on the protocol and the
    DRAM latency, not on the fitted ingress rate. (An override of 0 is refused: B200 has the limit.) The
    fitted epilogue costs are pinned too (per-subtile sync 460 cycles, no per-tile tail), so that a refit
    does not move the epilogue's store waits."""
    arch = ArchSpec.b200().with_overrides({"tma_load_bytes_per_clk_per_sm": 128, "epilogue_subtile_sync_cycles": 460,
                                           "epilogue_tile_cycles": 0}, origin="protocol-order test")
    r = simulate(Sm100GemmConfig(**TINY), arch, trace=True)
    assert r.ok
    tr = r.trace
    # MainloopLoad: two stages free at start, the third K-block waits for stage 0's MMA commit,
    # then load_tail waits for both stages to be released again.
    assert [e for e in _events(tr, "MainloopLoad") if e[0] != "tile"] == [
        ("tma_load", 0, 0, ""), ("tma_load", 1, 1, ""),
        ("wait", 2, 0, "mainloop.empty"),
        # issued at the same cycle: the K-block-2 load and the start of load_tail's wait on stage 1
        # (spans sort by start, then end)
        ("wait", -1, 1, "mainloop.empty"), ("tma_load", 2, 0, ""),
        ("wait", -1, 0, "mainloop.empty"),
    ]
    # MMA: gets its next tile from CLC (none left), waits for each K-block, hands the accumulator off,
    # and in its tail waits for the epilogue to free the accumulator stage.
    mma = [e for e in _events(tr, "MMA") if e[0] != "tile"]
    assert mma == [
        ("wait", -1, 0, "clc.full"), ("wait", 0, 0, "mainloop.full"), ("mma", 0, 0, ""),
        ("wait", 2, 0, "mainloop.full"), ("mma", 1, 1, ""), ("mma", 2, 0, ""),
        ("wait", -1, 0, "accumulator.empty"), ("acc_handoff", -1, 0, ""),
    ]
    epi = [e for e in _events(tr, "Epilogue") if e[0] != "tile"]
    assert epi == [
        ("wait", -1, 0, "clc.full"), ("wait", -1, 0, "accumulator.full"),
        ("epilogue", 0, 0, ""), ("epilogue", 1, 0, ""), ("tma_store", 0, -1, ""), ("acc_handoff", -1, 0, ""),
        # store_tail waits from the last store's issue until it has read SMEM
        ("wait", -1, -1, "epi_store"), ("tma_store", 1, -1, ""),
    ]
    # Timing facts: the first MMA starts when its K-block lands; one K-block = 4 tcgen05.mma
    # 128x64x16 at 48 cycles (SMEM-operand bound) plus the completion latency beyond the issue.
    loads = tr.where(role="MainloopLoad", kind="tma_load").columns()
    mmas = tr.where(role="MMA", kind="mma").columns()
    assert mmas["start_cycle"][0] == pytest.approx(loads["end_cycle"][0] + r.arch.mbarrier_arrive_latency_cycles.value)
    assert mmas["end_cycle"][0] - mmas["start_cycle"][0] == pytest.approx(4 * 48 + 264 - 48)
    # The second K-block queues behind the first on the tensor core.
    assert mmas["start_cycle"][1] == pytest.approx(mmas["start_cycle"][0] + 4 * 48)


CONFIGS = [
    dict(m=1024, n=1024, k=512),                                                   # 2-SM 256x256, cluster 2x1
    dict(m=1000, n=1000, k=512),                                                   # ragged edges
    dict(m=1024, n=768, k=256, tile_scheduler="static"),
    dict(m=1024, n=1024, k=256, swizzle=4, raster="m"),
    dict(m=512, n=1024, k=256, cluster_m=2, cluster_n=2),                          # multicast A and B
    dict(m=512, n=512, k=256, use_2sm=False, mma_tile_m=128, mma_tile_n=128, cluster_m=1, cluster_n=1),
    dict(m=512, n=512, k=256, use_2sm=False, mma_tile_m=128, mma_tile_n=256, cluster_m=2, cluster_n=2),
    dict(m=1024, n=1024, k=256, read_c=True),
    dict(m=1024, n=512, k=256, overlapping_accum=True, accumulator_stages=1, use_2sm=False, mma_tile_m=128,
         cluster_m=1, cluster_n=2),
    dict(m=512, n=512, k=512, dtype_ab="fp8e4m3", dtype_d="bf16"),
    dict(m=2048, n=256, k=256, cluster_m=4, cluster_n=1, mainloop_stages=3, scheduler_stages=3),
]


@pytest.mark.parametrize("kw", CONFIGS, ids=[str(i) for i in range(len(CONFIGS))])
def test_invariants(kw):
    r = simulate(Sm100GemmConfig(**kw))
    assert r.deadlock is None and r.violation_count == 0
    once, more = r.tile_check()
    assert more == 0, "a tile was computed twice"
    assert once == r.tiles_expected, "every output tile (half) computed exactly once"
    assert r.tx_expected == r.tx_landed, "TMA bytes expected equal bytes landed"
    assert r.hbm_read_bytes + r.hbm_write_bytes >= r.compulsory_bytes * 0.999
    cfg = r.config
    assert r.hbm_write_bytes == cfg.m * cfg.n * cfg.l * cfg.bits_d // 8 or cfg.m % 128 or cfg.n % 32
    assert 0 < r.tensor_core_utilization <= 1.0 + 1e-9


def test_determinism_identical_traces():
    cfg = Sm100GemmConfig(m=512, n=512, k=256)
    a = simulate(cfg, trace=True).trace.columns()
    b = simulate(cfg, trace=True).trace.columns()
    for col in a:
        assert np.array_equal(a[col], b[col]), col


def test_seed_counts_never_deadlock_on_a_grid():
    """The seed's own arrival counts complete on an explicit grid of valid configs."""
    for use_2sm, tile_m, cm in ((True, 256, 2), (False, 128, 1), (False, 128, 2)):
        for cn in (1, 2):
            for sched in ("clc", "static"):
                for read_c in (False, True):
                    cfg = Sm100GemmConfig(m=768, n=640, k=256, use_2sm=use_2sm, mma_tile_m=tile_m, mma_tile_n=128,
                                          cluster_m=cm, cluster_n=cn, tile_scheduler=sched, read_c=read_c)
                    r = simulate(cfg)
                    assert r.deadlock is None and r.violation_count == 0, cfg
                    assert r.tile_check() == (r.tiles_expected, 0), cfg


def test_compute_bound_near_peak_and_memory_bound_near_hbm():
    cfg = Sm100GemmConfig(m=4096, n=4096, k=4096)
    big = simulate(cfg)
    # The tensor-core bound with wave quantisation: 256 MMA tiles on 74 SM pairs -> 4 waves.
    pairs = 148 // 2
    waves = -(-big.config.num_output_tiles // pairs)
    kblock = 4 * 128  # 4 tcgen05.mma 256x256x16 per K-block at 128 cycles each
    bound = waves * big.config.k_tiles * kblock
    assert bound <= big.cycles < 1.1 * bound
    # M=128 with N=K=16384: 64 one-SM tiles stream 512 MiB of B once; the time is the HBM bound
    # (compulsory bytes / bandwidth) plus the pipeline's fill and drain.
    thin = simulate(Sm100GemmConfig(m=128, n=16384, k=16384, use_2sm=False, mma_tile_m=128, mma_tile_n=256,
                                    cluster_m=1, cluster_n=1))
    hbm_bound_ns = thin.compulsory_bytes / thin.arch.hbm_bytes_per_s.value * 1e9
    kernel_ns = thin.time_ns - thin.launch_overhead_ns
    assert hbm_bound_ns <= kernel_ns < 1.15 * hbm_bound_ns


def test_producer_wrong_phase_deadlocks_with_cycle():
    r = simulate(Sm100GemmConfig(m=512, n=512, k=256), knobs=ProtocolKnobs.make(producer_start_phase={"mainloop": 0}))
    d = r.deadlock
    assert d is not None
    assert "mainloop.empty" in d.pipelines and "MainloopLoad" in d.roles
    assert "mainloop.full" in d.pipelines and "MMA" in d.roles
    assert d.cycle and {w.split("/")[1] for w in d.cycle} == {"MMA", "MainloopLoad"}
    assert "DEADLOCK" in d.summary()


RACE_SHAPES = [(4096, 4096, 512), (4096, 4096, 1024), (8192, 4096, 512), (4096, 8192, 256)]


def test_clc_count_without_cluster_factor():
    """32 + 1 x 192 instead of 32 + 2 x 192 in a 2x1 cluster: the CLC empty barrier completes
    phases early, so the Sched warp overwrites responses before every CTA has read them (reported
    as protocol violations on clc.empty in every run) and, depending on timing, finally waits for
    a phase nobody will complete (a deadlock whose likely cause is clc.empty, with Sched blocked)."""
    deadlocks = 0
    for m, n, k in RACE_SHAPES:
        r = simulate(Sm100GemmConfig(m=m, n=n, k=k), knobs=ProtocolKnobs.make(arrival_counts={"clc.empty": 224}))
        assert r.violation_count > 0 and all("clc.empty" in v for v in r.violations)
        if r.deadlock is not None:
            deadlocks += 1
            assert r.deadlock.suspects == ["clc.empty"]
            assert "Sched" in r.deadlock.roles
    assert deadlocks >= 2
    r = simulate(Sm100GemmConfig(m=4096, n=4096, k=1024), knobs=ProtocolKnobs.make(arrival_counts={"clc.empty": 224}))
    assert r.deadlock.pipelines == ["clc.empty"] and r.deadlock.roles == ["Sched"]


def test_accumulator_count_without_2sm_factor():
    """128 instead of 2 x 128 epilogue arrivals on the 2-SM leader's accumulator empty barrier.

    Whether the race deadlocks depends on how the epilogue's timing interleaves with the MMA's; the
    fitted epilogue sync cost is set to 0 here so that the shapes below keep racing the way this
    test was written for (with it, most of them finish with violations instead)."""
    deadlocks = 0
    arch = ArchSpec.b200().with_overrides({"epilogue_subtile_sync_cycles": 0}, origin="race test")
    for m, n, k in RACE_SHAPES:
        r = simulate(Sm100GemmConfig(m=m, n=n, k=k), arch,
                     knobs=ProtocolKnobs.make(arrival_counts={"accumulator.empty": 128}))
        assert r.violation_count > 0 and all("accumulator.empty" in v for v in r.violations)
        if r.deadlock is not None:
            deadlocks += 1
            assert "accumulator.empty" in r.deadlock.suspects
            assert "MMA" in r.deadlock.roles
    assert deadlocks >= 2


def test_small_count_is_a_race_even_without_deadlock():
    """On a small problem the same wrong count finishes, but the violations are still reported."""
    r = simulate(Sm100GemmConfig(m=1024, n=1024, k=256),
                 knobs=ProtocolKnobs.make(arrival_counts={"accumulator.empty": 128}))
    assert r.deadlock is None and r.violation_count > 0 and not r.ok


def test_skipped_release_names_exited_owers():
    r = simulate(Sm100GemmConfig(m=1024, n=1024, k=256), knobs=ProtocolKnobs.make(skip_release=("accumulator",)))
    d = r.deadlock
    assert d is not None and "accumulator.empty" in d.pipelines
    assert any("Epilogue, which has already exited" in e for e in d.exited_owers)


def test_one_stage_mainloop_does_not_deadlock_but_serialises():
    """CUTLASS rejects Stages < 2 (static_assert); the protocol itself still completes with one
    stage, because each acquire waits only for the previous K-block's MMA commit, which needs
    nothing from the producer: the loads and MMAs just stop overlapping."""
    with pytest.raises(ConfigError, match="mainloop_stages=1"):
        simulate(Sm100GemmConfig(m=1024, n=1024, k=512, mainloop_stages=1))
    one = simulate(Sm100GemmConfig(m=1024, n=1024, k=512, mainloop_stages=1), allow_protocol_experiments=True)
    two = simulate(Sm100GemmConfig(m=1024, n=1024, k=512, mainloop_stages=2))
    assert one.ok and one.tile_check() == (one.tiles_expected, 0)
    assert one.cycles > 1.2 * two.cycles


def test_clc_throttle_limits_queries_in_flight():
    on = simulate(Sm100GemmConfig(m=2048, n=2048, k=256), trace=True)
    off = simulate(Sm100GemmConfig(m=2048, n=2048, k=256), knobs=ProtocolKnobs.make(clc_throttle=False), trace=True)
    assert on.ok and off.ok
    # Without the throttle the Sched warp queries as soon as a stage is free: earlier queries.
    q_on = on.trace.where(kind="clc_query").columns()["start_cycle"]
    q_off = off.trace.where(kind="clc_query").columns()["start_cycle"]
    assert len(q_on) == len(q_off)
    assert np.median(q_off) < np.median(q_on)


def test_no_clc_throttle_takes_both_sides_out():
    """With the throttle off neither CTA 0's MainloopLoad nor Sched uses the throttle pipeline: a
    problem with several tiles per cluster (512 cluster tiles over 74 resident clusters) completes,
    every tile once, with the same CLC queries as the throttled run (MainloopLoad used to acquire
    the throttle on every tile while nobody released it: a deadlock from the third tile on)."""
    cfg = Sm100GemmConfig(m=8192, n=8192, k=256)
    on = simulate(cfg, trace=True)
    off = simulate(cfg, knobs=ProtocolKnobs.make(clc_throttle=False), trace=True)
    from simulator.kernels.scheduler import max_resident_clusters
    c = off.config
    assert c.cluster_tiles_m * c.cluster_tiles_n * c.l >= 3 * max_resident_clusters(c, off.arch)
    for r in (on, off):
        assert r.ok and r.deadlock is None and r.violation_count == 0
        assert r.tile_check() == (r.tiles_expected, 0)
    waits = off.trace.where(kind="wait").columns()["barrier"]
    assert not any(b.startswith("clc_throttle") for b in waits)
    assert len(off.trace.where(kind="clc_query")) == len(on.trace.where(kind="clc_query"))


def test_knobs_on_the_throttle_need_the_throttle():
    """With the throttle off its pipeline is unused, so a knob aimed at it would change nothing."""
    cfg = Sm100GemmConfig(m=1024, n=1024, k=256)
    for kw in ({"skip_release": ["clc_throttle"]}, {"producer_start_phase": {"clc_throttle": 0}},
               {"arrival_counts": {"clc_throttle.full": 1}}):
        with pytest.raises(ConfigError, match="clc_throttle.*cannot apply to this run: --no-clc-throttle"):
            simulate(cfg, knobs=ProtocolKnobs.make(clc_throttle=False, **kw))


def test_clc_runs_use_the_clc_tile_mapping():
    """Each resident cluster's first tile is the one CUTLASS's CLC scheduler maps its launch id to
    (the static scheduler's swizzle maps some of them elsewhere)."""
    from simulator.kernels.scheduler import TileRaster, cta_tile_coord

    cfg = Sm100GemmConfig(m=3072, n=3072, k=128, swizzle=8)
    r = simulate(cfg, trace=True)
    clc, static = TileRaster(r.config, "clc"), TileRaster(r.config, "static")
    c = r.trace.where(role="MMA", kind="tile", cta=0).columns()
    first: dict[int, tuple] = {}
    for i in np.argsort(c["start_cycle"], kind="stable"):
        first.setdefault(int(c["cluster"][i]), (int(c["tile_m"][i]), int(c["tile_n"][i]), int(c["tile_l"][i])))
    assert first and all(t == cta_tile_coord(clc.work(ci), 0, r.config) for ci, t in first.items())
    assert any(cta_tile_coord(static.work(ci), 0, r.config) != t for ci, t in first.items())


def test_row_pitch_cost_is_per_line_alignment():
    from simulator.kernels.tma_alignment import L2_MISALIGNED_COST, TMA_MISALIGNED_COST, RowPitchCost
    assert RowPitchCost.of(4096, 16).aligned and RowPitchCost.of(4096, 16).tma_cost == 1.0
    assert RowPitchCost.of(64, 16).aligned                       # 128 B: one line
    c = RowPitchCost.of(264, 16)                                 # 528 B: gemm-model's padded K=257
    assert not c.aligned and c.pitch == 528
    assert (c.tma_cost, c.l2_cost) == (TMA_MISALIGNED_COST.value, L2_MISALIGNED_COST.value)
    assert RowPitchCost.of(264, 8).pitch == 264 and not RowPitchCost.of(264, 8).aligned
    assert "not a multiple of 128 B" in c.note() and "a multiple of 128 B" in RowPitchCost.of(4096, 16).note()


def test_misaligned_rows_slow_a_load_bound_sm100_kernel():
    """Same tiles, same K-block count: K=4104 (8208-B rows) loads slower per K-block than K=4096
    when the TMA ingress binds (2-SM 256x64 tiles: many bytes per FLOP); the timing notes say so."""
    from simulator.kernels.sm100_tma_ws import Sm100Timing
    arch = ArchSpec.b200()
    base = dict(m=2048, n=2048, mma_tile_n=64, swizzle=1)
    ok = Sm100GemmConfig(k=4096, **base).resolved(arch)
    off = Sm100GemmConfig(k=4104, **base).resolved(arch)
    t_ok, t_off = Sm100Timing.derive(ok, arch), Sm100Timing.derive(off, arch)
    assert t_ok.tma_row_cost == 1.0 and t_off.tma_row_cost > 2.0 and t_off.l2_row_cost > 1.4
    assert any("not a multiple of 128 B" in n for n in t_off.notes)
    r_ok, r_off = simulate(ok, arch), simulate(off, arch)
    per_kb_ok = r_ok.cycles / ok.k_tiles
    per_kb_off = r_off.cycles / off.k_tiles        # one more (partial) K-block: compare per K-block
    assert per_kb_off > 1.3 * per_kb_ok


def test_epilogue_tile_cycles_lengthen_each_epilogue_tile():
    """arch.epilogue_tile_cycles is the epilogue's fixed tail per output tile: every Epilogue tile span
    grows by it, and a many-tile launch whose epilogue bounds it slows by about tiles per SM x the cost."""
    cfg = Sm100GemmConfig(m=1024, n=1024, k=128, use_2sm=False, mma_tile_m=128, mma_tile_n=64)
    base = ArchSpec.b200().with_overrides({"epilogue_tile_cycles": 0}, origin="test")
    cost = 1500
    plus = ArchSpec.b200().with_overrides({"epilogue_tile_cycles": cost}, origin="test")
    r0, r1 = simulate(cfg, base, trace=True), simulate(cfg, plus, trace=True)

    def epi_tiles(r):
        t = r.trace
        c = t.columns() if callable(t.columns) else t.columns
        sel = (np.asarray(c["role"]) == "Epilogue") & (np.asarray(c["kind"]) == "tile")
        return np.asarray(c["end_cycle"], float)[sel] - np.asarray(c["start_cycle"], float)[sel]

    d0, d1 = epi_tiles(r0), epi_tiles(r1)
    assert len(d0) == len(d1) > 0
    assert np.median(d1) >= np.median(d0) + cost - 1
    tiles_per_sm = cfg.num_output_tiles / min(cfg.num_output_tiles, base.sm_count.value)
    assert r1.cycles > r0.cycles + 0.5 * cost * (tiles_per_sm - 1)
    for r in (r0, r1):                                                  # every tile once, deadlock-free
        once, more = r.tile_check()
        assert r.deadlock is None and more == 0 and once == r.tiles_expected
