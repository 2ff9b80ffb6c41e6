"""The SM90 model's barrier protocol: pinned event orders, the ping-pong order barrier, deadlocks.

The tiny cases run on a pinned arch (round-number constants, one SM) so that the pinned times do not
move when a datasheet constant in ``simulator/machine/arch.py`` is refined. How the first times come about
(cooperative case): the K-block 0 loads of A (16 KB) and B (32 KB) take 8 + 16 cycles of the
2048 B/cycle HBM channel plus 400 (HBM) + 100 (TMA) latency -> 524; the consumers wake 10 cycles
later; one warpgroup's K-block is 4 wgmma m64n256k16 of 128 cycles = 512 on the shared tensor core,
so Consumer1's batch queues behind Consumer0's, and a warpgroup's issue stalls until the tensor core
takes its batch; the producer gets stage 0 back when both consumers have seen batch 0 complete
(wait_group(1) after issuing batch 1, which Consumer1 can do only at 2070): 2070 + 10.
"""

import numpy as np
import pytest

from simulator.engine import simulate
from simulator.errors import ConfigError
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm90_tma_ws import (
    MODULE_CONSTANTS,
    MathWarpGroupOrderBarrier,
    Sm90Timing,
)
from simulator.machine.arch import ArchSpec
from simulator.protocol.knobs import ProtocolKnobs

PINNED = ArchSpec.h200().with_overrides({
    "sm_count": 1, "clock_ghz": 2.0, "hbm_bytes_per_s": 2048 * 2e9, "hbm_latency_cycles": 400,
    "l2_bytes_per_s": 8192 * 2e9, "l2_latency_cycles": 200, "tma_issue_overhead_cycles": 100,
    "mbarrier_arrive_latency_cycles": 10, "remote_arrive_latency_cycles": 100, "mma_latency_cycles": 128,
    "mma_flops_per_clk_per_sm": 4096, "smem_read_bytes_per_clk": 128, "epilogue_convert_elems_per_clk": 128,
    "tma_load_bytes_per_clk_per_sm": 128,
}, origin="test_sm90_protocol")

# One CTA, 3 K-blocks through 2 mainloop stages, 2 epilogue subtiles of 2 store buffers.
TINY_COOP = dict(m=128, n=256, k=192, cluster_m=1, cluster_n=1, mainloop_stages=2, schedule="cooperative",
                 epilogue_tile_m=128, epilogue_tile_n=128, epilogue_store_stages=2)
# Two 128x128 tiles: Consumer0 takes the first, Consumer1 the second.
TINY_PINGPONG = dict(m=256, n=128, k=192, cluster_m=1, cluster_n=1, mainloop_stages=2, schedule="pingpong",
                     epilogue_tile_m=128, epilogue_tile_n=64, epilogue_store_stages=2)


def _log(trace):
    """(start, end, role, kind, k_block, stage, barrier) of every span but tiles, in time order."""
    c = trace.columns()
    order = np.lexsort((c["role"], c["end_cycle"], c["start_cycle"]))
    return [(round(float(c["start_cycle"][i]), 1), round(float(c["end_cycle"][i]), 1), str(c["role"][i]),
             str(c["kind"][i]),
             int(c["k_block"][i]), int(c["stage"][i]), str(c["barrier"][i]))
            for i in order if c["kind"][i] != "tile"]


PINNED_MODULE_CONSTANTS = {
    "wgmma_ss_latency_n64_cycles": 95.8, "wgmma_ss_latency_n128_cycles": 127.8,
    "wgmma_ss_latency_n192_cycles": 162.8, "wgmma_ss_latency_n256_cycles": 213.0, "tma_load_fixed_cycles": 443.5,
    "tma_miss_extra_cycles": 214.9, "tma_misaligned_cost": 2.223, "l2_misaligned_cost": 1.481,
    "tma_store_fixed_cycles": 150.5, "tma_store_bytes_per_clk": 31.75, "tma_store_write_after_read_cycles": 6.0,
    "zero_fill_box_cycles_1sm": 157.2, "zero_fill_box_cycles_8sm": 157.6, "zero_fill_box_cycles_16sm": 236.5,
    "zero_fill_box_cycles_32sm": 339.2, "zero_fill_box_cycles_64sm": 520.6, "zero_fill_box_cycles_96sm": 721.7,
    "zero_fill_box_cycles_132sm": 696.5,
}


def test_module_constants_are_pinned():
    # The pinned logs below depend on these measured constants (and on the epilogue phase table).
    assert {c.name: c.value for c in MODULE_CONSTANTS} == PINNED_MODULE_CONSTANTS
    t = Sm90Timing.derive(Sm90GemmConfig(**TINY_COOP).resolved(PINNED), PINNED)
    assert (round(t.epi_alu_cycles, 1), round(t.epi_wait_cycles, 1), round(t.epi_barrier_cycles, 1),
            round(t.epi_store_issue_cycles, 1)) == (357.5, 64.2, 59.4, 136.7)


def test_tiny_cooperative_exact_event_order():
    r = simulate(Sm90GemmConfig(**TINY_COOP), PINNED, trace=True)
    assert r.ok and round(r.cycles, 1) == 7177.8
    # The SM's TMA unit takes each K-block's 48 KiB at 128 B/clk (384 cycles) and the bytes land 443.5
    # later: K-block 1's loads queue behind K-block 0's. Consumer1's wgmma batches queue behind
    # Consumer0's on the tensor core; a batch completes 85.3 cycles (the N=256 latency beyond its issue)
    # after its last instruction. Epilogue per 128x128 subtile (phases extrapolated from the measured
    # 4/8/16 KiB subtiles): convert+stmatrix+fence 357.5 per warpgroup, the store thread's bulk wait
    # (64.2), the named barrier (Consumer0 waits for Consumer1) + 59.4, the TMA store issue blocks the
    # store thread 136.7. A 32 KiB store reads SMEM at 31.75 B/clk + 150.5; with 2 store buffers the
    # second subtile waits for the first store's read (epilogue.store_buffer); the kernel ends when the
    # last store is written, 6 cycles after its read.
    assert _log(r.trace) == [
        (0.0, 827.5, 'MainloopLoad', 'tma_load', 0, 0, ''),
        (0.0, 837.5, 'Consumer0', 'wait', 0, 0, 'mainloop.full'),
        (0.0, 837.5, 'Consumer1', 'wait', 0, 0, 'mainloop.full'),
        (0.0, 1211.5, 'MainloopLoad', 'tma_load', 1, 1, ''),
        (0.0, 2383.5, 'MainloopLoad', 'wait', 2, 0, 'mainloop.empty'),
        (837.5, 1221.5, 'Consumer0', 'wait', 1, 1, 'mainloop.full'),
        (837.5, 1434.8, 'Consumer0', 'mma', 0, 0, ''),
        (837.5, 1946.8, 'Consumer1', 'mma', 0, 0, ''),
        (1221.5, 2458.8, 'Consumer0', 'mma', 1, 1, ''),
        (1349.5, 2970.8, 'Consumer1', 'mma', 1, 1, ''),
        (1861.5, 3221.0, 'Consumer0', 'wait', 2, 0, 'mainloop.full'),
        (2373.5, 3221.0, 'Consumer1', 'wait', 2, 0, 'mainloop.full'),
        (2383.5, 3211.0, 'MainloopLoad', 'tma_load', 2, 0, ''),
        (2383.5, 3743.0, 'MainloopLoad', 'wait', -1, 1, 'mainloop.empty'),
        (3221.0, 3818.3, 'Consumer0', 'mma', 2, 0, ''),
        (3221.0, 3818.3, 'Consumer0', 'wait', 2, 0, 'mma.wait_group'),
        (3221.0, 4330.3, 'Consumer1', 'mma', 2, 0, ''),
        (3733.0, 4330.3, 'Consumer1', 'wait', 2, 0, 'mma.wait_group'),
        (3743.0, 4340.3, 'MainloopLoad', 'wait', -1, 0, 'mainloop.empty'),
        (3818.3, 3818.3, 'Consumer0', 'acc_handoff', -1, 0, ''),
        (3818.3, 4883.9, 'Consumer0', 'epilogue', 0, -1, ''),
        (4240.0, 4687.8, 'Consumer0', 'wait', 0, -1, 'epilogue.barrier'),
        (4330.3, 4330.3, 'Consumer1', 'acc_handoff', -1, 0, ''),
        (4330.3, 4747.2, 'Consumer1', 'epilogue', 0, -1, ''),
        (4747.2, 5935.8, 'Consumer0', 'tma_store', 0, 0, ''),
        (4747.2, 5989.2, 'Consumer1', 'epilogue', 1, -1, ''),
        (4883.9, 6125.9, 'Consumer0', 'epilogue', 1, -1, ''),
        (5104.7, 5929.8, 'Consumer1', 'wait', 1, -1, 'epilogue.barrier'),
        (5241.5, 5929.8, 'Consumer0', 'wait', 1, 1, 'epilogue.store_buffer'),
        (5989.2, 7177.8, 'Consumer0', 'tma_store', 1, 1, ''),
        (6125.9, 7177.8, 'Consumer0', 'wait', -1, -1, 'epilogue.store_drain'),
    ]


def test_tiny_pingpong_exact_event_order():
    r = simulate(Sm90GemmConfig(**TINY_PINGPONG), PINNED, trace=True)
    assert r.ok and round(r.cycles, 1) == 6390.8
    # Consumer1's mainloop waits until Consumer0 has issued its last K-block (math_order); the producer
    # runs on into Consumer1's tile; Consumer0's epilogue (two 128x64 subtiles) overlaps Consumer1's
    # mainloop; store_tail (bulk wait_group.read 0) before math_order.arrive, since the store buffers
    # are shared; each consumer's final wait_group 0 waits for its last store to be written.
    assert _log(r.trace) == [
        (0.0, 730.9, 'MainloopLoad', 'tma_load', 0, 0, ''),
        (0.0, 740.9, 'Consumer0', 'wait', 0, 0, 'mainloop.full'),
        (0.0, 955.5, 'MainloopLoad', 'tma_load', 1, 1, ''),
        (0.0, 1326.9, 'MainloopLoad', 'wait', 2, 0, 'mainloop.empty'),
        (0.0, 2077.8, 'Consumer1', 'wait', -1, 0, 'math_order'),
        (740.9, 965.5, 'Consumer0', 'wait', 1, 1, 'mainloop.full'),
        (740.9, 1316.9, 'Consumer0', 'mma', 0, 0, ''),
        (965.5, 1828.9, 'Consumer0', 'mma', 1, 1, ''),
        (1252.9, 1316.9, 'Consumer0', 'wait', 0, 0, 'mma.wait_group'),
        (1316.9, 2067.8, 'Consumer0', 'wait', 2, 0, 'mainloop.full'),
        (1326.9, 2057.8, 'MainloopLoad', 'tma_load', 2, 0, ''),
        (1326.9, 2077.8, 'MainloopLoad', 'wait', 0, 1, 'mainloop.empty'),
        (2067.8, 2643.8, 'Consumer0', 'mma', 2, 0, ''),
        (2067.8, 2643.8, 'Consumer0', 'wait', 2, 0, 'mma.wait_group'),
        (2077.8, 2653.8, 'MainloopLoad', 'wait', 1, 0, 'mainloop.empty'),
        (2077.8, 2800.7, 'MainloopLoad', 'tma_load', 0, 1, ''),
        (2077.8, 2810.7, 'Consumer1', 'wait', 0, 1, 'mainloop.full'),
        (2643.8, 2643.8, 'Consumer0', 'acc_handoff', -1, 0, ''),
        (2643.8, 3003.9, 'Consumer0', 'epilogue', 0, -1, ''),
        (2653.8, 3376.7, 'MainloopLoad', 'tma_load', 1, 0, ''),
        (2653.8, 3396.7, 'MainloopLoad', 'wait', 2, 1, 'mainloop.empty'),
        (2810.7, 3386.7, 'Consumer1', 'mma', 0, 1, ''),
        (2810.7, 3386.7, 'Consumer1', 'wait', 1, 0, 'mainloop.full'),
        (2937.9, 3610.4, 'Consumer0', 'tma_store', 0, 0, ''),
        (3003.9, 3722.4, 'Consumer0', 'epilogue', 1, -1, ''),
        (3181.3, 3604.4, 'Consumer0', 'wait', 1, 1, 'epilogue.store_buffer'),
        (3386.7, 3962.7, 'Consumer1', 'mma', 1, 0, ''),
        (3386.7, 4129.6, 'Consumer1', 'wait', 2, 1, 'mainloop.full'),
        (3396.7, 4119.6, 'MainloopLoad', 'tma_load', 2, 1, ''),
        (3396.7, 4139.6, 'MainloopLoad', 'wait', -1, 0, 'mainloop.empty'),
        (3656.4, 4329.0, 'Consumer0', 'tma_store', 1, 1, ''),
        (3722.4, 4323.0, 'Consumer0', 'wait', -1, -1, 'epilogue.store_buffer'),
        (4129.6, 4705.6, 'Consumer1', 'mma', 2, 1, ''),
        (4129.6, 4705.6, 'Consumer1', 'wait', 2, 1, 'mma.wait_group'),
        (4139.6, 4715.6, 'MainloopLoad', 'wait', -1, 1, 'mainloop.empty'),
        (4323.0, 4329.0, 'Consumer0', 'wait', -1, -1, 'epilogue.store_drain'),
        (4705.6, 4705.6, 'Consumer1', 'acc_handoff', -1, 1, ''),
        (4705.6, 5065.7, 'Consumer1', 'epilogue', 0, -1, ''),
        (4999.7, 5672.2, 'Consumer1', 'tma_store', 0, 0, ''),
        (5065.7, 5784.2, 'Consumer1', 'epilogue', 1, -1, ''),
        (5243.1, 5666.2, 'Consumer1', 'wait', 1, 1, 'epilogue.store_buffer'),
        (5718.2, 6390.8, 'Consumer1', 'tma_store', 1, 1, ''),
        (5784.2, 6384.8, 'Consumer1', 'wait', -1, -1, 'epilogue.store_buffer'),
        (6384.8, 6390.8, 'Consumer1', 'wait', -1, -1, 'epilogue.store_drain'),
    ]


def _windows(trace, role, kind):
    """Per tile of ``role``: (first start, last start, last end) of its ``kind`` spans."""
    c = trace.where(role=role, kind=kind).columns()
    out = {}
    for tm, tn, s, e in zip(c["tile_m"], c["tile_n"], c["start_cycle"], c["end_cycle"], strict=True):
        a, b, z = out.get((tm, tn), (s, s, e))
        out[(tm, tn)] = (min(a, s), max(b, s), max(z, e))
    return sorted(out.values())


def test_pingpong_order_barrier_alternates_mainloops_and_overlaps_epilogues():
    """One SM, six tiles: mainloops (wgmma issue windows) never overlap, epilogues never overlap,
    and each consumer's epilogue overlaps the other consumer's mainloop."""
    cfg = Sm90GemmConfig(m=768, n=128, k=512, cluster_m=1, cluster_n=1, schedule="pingpong")
    r = simulate(cfg, PINNED, trace=True)
    assert r.ok and r.tile_check() == (6, 0)
    tr = r.trace
    issue = sorted([(a, b, "Consumer0") for a, b, _ in _windows(tr, "Consumer0", "mma")]
                   + [(a, b, "Consumer1") for a, b, _ in _windows(tr, "Consumer1", "mma")])
    assert [w[2] for w in issue] == ["Consumer0", "Consumer1"] * 3
    for (_, last, _), (first, _, _) in zip(issue, issue[1:], strict=False):
        assert first >= last          # the next mainloop issues after the previous one's last batch
    epis = sorted([(a, z, "Consumer0") for a, _, z in _windows(tr, "Consumer0", "epilogue")]
                  + [(a, z, "Consumer1") for a, _, z in _windows(tr, "Consumer1", "epilogue")])
    assert [w[2] for w in epis] == ["Consumer0", "Consumer1"] * 3
    for (_, end, _), (start, _, _) in zip(epis, epis[1:], strict=False):
        assert start >= end
    overlaps = 0
    for a, z, who in epis:
        other = "Consumer1" if who == "Consumer0" else "Consumer0"
        m = tr.where(role=other, kind="mma").columns()
        overlaps += int(np.any((m["start_cycle"] < z) & (m["end_cycle"] > a)))
    assert overlaps >= 4


def test_math_order_barrier_matches_cutlass_ordered_sequence_barrier():
    """OrderedSequenceBarrier<2, 2>: group 0 passes its first wait; each arrive unlocks the other group."""
    import simpy
    env = simpy.Environment()
    ob = MathWarpGroupOrderBarrier(env, "math_order", 0, depth=2, length=2, group_size=128)
    s0, s1 = ob.start_state(0), ob.start_state(1)
    assert ob.wait(s0, 0, "g0") is None                    # mainloop turn of tile 0
    assert ob.wait(s1, 1, "g1") is not None                # group 1 waits for group 0's arrive
    ob.arrive(s0, 0, "g0", 128)                            # -> barrier [0][1]
    assert ob.barriers[1].phase == 1 and s0.index == 1
    assert ob.wait(s0, 0, "g0") is None                    # epilogue turn of tile 0 (fresh barrier [1][0])
    ob.arrive(s0, 0, "g0", 128)                            # -> barrier [1][1]; stage wraps, phase flips
    assert (s0.index, s0.phase) == (0, 0)
    assert ob.wait(s0, 0, "g0") is not None                # tile 2's mainloop waits for group 1's arrive
    assert all(b.violation_count == 0 for b in ob.barriers)


def test_read_c_epilogue_load_waits_for_first_mainloop_tile():
    cfg = Sm90GemmConfig(m=256, n=256, k=512, cluster_m=1, cluster_n=1, read_c=True)
    r = simulate(cfg, PINNED, trace=True)
    assert r.ok and r.tile_check() == (2, 0) and r.tx_expected == r.tx_landed
    tr = r.trace
    ml = tr.where(role="MainloopLoad", kind="tma_load").columns()
    first_tile = ml["tile_m"] == ml["tile_m"][0]
    c_loads = tr.where(role="EpilogueLoad", kind="epi_load").columns()
    assert len(c_loads["start_cycle"]) == 2 * cfg.resolved(PINNED).epi_subtiles
    assert c_loads["start_cycle"].min() >= ml["start_cycle"][first_tile].max()
    # Each consumer subtile of C waits for its load (or finds it landed).
    for role in ("Consumer0", "Consumer1"):
        epi = tr.where(role=role, kind="epilogue").columns()
        assert len(epi["start_cycle"]) == 2 * cfg.resolved(PINNED).epi_subtiles


# ------------------------------------------------------------------------------------- deadlocks
SMALL = dict(m=512, n=512, k=512)


@pytest.mark.parametrize("schedule", ["cooperative", "pingpong"])
def test_producer_start_phase_zero_deadlocks_on_mainloop_empty(schedule):
    r = simulate(Sm90GemmConfig(**SMALL, schedule=schedule),
                 knobs=ProtocolKnobs.make(producer_start_phase={"mainloop": 0}))
    d = r.deadlock
    assert d is not None and not r.ok
    ml = [b for b in d.blocked if b.role == "MainloopLoad"]
    assert ml and all(b.pipeline == "mainloop.empty" and b.stage == 0 and b.since_cycle == 0 for b in ml)
    assert {b.pipeline for b in d.blocked if b.role.startswith("Consumer")} == {"mainloop.full"}
    assert "MainloopLoad" in " ".join(d.cycle)
    assert "MainloopLoad on mainloop.empty" in d.summary()


@pytest.mark.parametrize("schedule", ["cooperative", "pingpong"])
def test_skipped_mainloop_release_deadlocks(schedule):
    r = simulate(Sm90GemmConfig(**SMALL, schedule=schedule), knobs=ProtocolKnobs.make(skip_release=["mainloop"]))
    d = r.deadlock
    assert d is not None
    by_role = {(b.role, b.pipeline) for b in d.blocked}
    assert ("MainloopLoad", "mainloop.empty") in by_role
    assert ("Consumer0", "mainloop.full") in by_role
    if schedule == "cooperative":
        assert ("Consumer1", "mainloop.full") in by_role
    assert set(d.cycle) >= {"CTA0.0/MainloopLoad", "CTA0.0/Consumer0"}


def test_skipped_epi_load_release_deadlocks_the_epilogue_load():
    r = simulate(Sm90GemmConfig(**SMALL, read_c=True), knobs=ProtocolKnobs.make(skip_release=["epi_load"]))
    d = r.deadlock
    assert d is not None
    by_role = {(b.role, b.pipeline) for b in d.blocked}
    assert ("EpilogueLoad", "epi_load.empty") in by_role
    assert {("Consumer0", "epi_load.full"), ("Consumer1", "epi_load.full")} <= by_role


def test_too_small_empty_count_is_a_protocol_violation():
    r = simulate(Sm90GemmConfig(**SMALL), knobs=ProtocolKnobs.make(arrival_counts={"mainloop.empty": 4}))
    assert not r.ok and r.violation_count > 0
    assert "mainloop.empty" in r.violations[0]


def test_too_large_empty_count_deadlocks():
    r = simulate(Sm90GemmConfig(**SMALL), knobs=ProtocolKnobs.make(arrival_counts={"mainloop.empty": 32}))
    assert r.deadlock is not None
    b = next(b for b in r.deadlock.blocked if b.role == "MainloopLoad")
    assert b.expected_arrivals == 32 and b.missing_arrivals == 16


def test_knobs_of_other_kernels_are_rejected():
    with pytest.raises(ConfigError, match="accumulator"):
        simulate(Sm90GemmConfig(**SMALL), knobs=ProtocolKnobs.make(skip_release=["accumulator"]))
    with pytest.raises(ConfigError, match="clc"):
        simulate(Sm90GemmConfig(**SMALL), knobs=ProtocolKnobs.make(arrival_counts={"clc.empty": 3}))
