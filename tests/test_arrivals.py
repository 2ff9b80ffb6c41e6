"""Barrier arrival counts: hand-derived cases pinned (see simulator/protocol/arrivals.py for the CUTLASS lines)."""

from __future__ import annotations

import pytest

from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.protocol.arrivals import (
    BarrierCounts,
    KernelFacts,
    Sm90KernelFacts,
    sm90_arrival_counts,
    sm90_barrier_counts,
    sm100_arrival_counts,
    sm100_arrival_table,
    sm100_barrier_counts,
)


def test_clc_consumers():
    # 2x1 cluster, 2-SM, no C: Sched 32 + 2 x (MainloopLoad 32 + Epilogue 128 + MMA 32) = 32 + 2*192 = 416
    assert sm100_arrival_counts(KernelFacts(2, 1, True, False))["clc"] == BarrierCounts(1, 416)
    # with C: + 2 x EpilogueLoad 32 = 480
    assert sm100_arrival_counts(KernelFacts(2, 1, True, True))["clc"].consumer == 480
    # 1-SM 1x1: 32 + 192 = 224
    assert sm100_arrival_counts(KernelFacts(1, 1, False, False))["clc"].consumer == 224
    # 4x4 cluster with C: 32 + 16 x (192 + 32) = 3616
    assert sm100_arrival_counts(KernelFacts(4, 4, True, True))["clc"].consumer == 3616


def test_accumulator():
    assert sm100_arrival_counts(KernelFacts(2, 1, True))["accumulator"] == BarrierCounts(1, 256)
    assert sm100_arrival_counts(KernelFacts(1, 1, False))["accumulator"] == BarrierCounts(1, 128)


@pytest.mark.parametrize("cm,cn,two_sm,expect", [
    (2, 1, True, 1),   # 2/2 + 1 - 1
    (2, 2, False, 3),  # 2 + 2 - 1
    (4, 2, True, 3),   # 4/2 + 2 - 1
    (1, 1, False, 1),
    (4, 4, False, 7),
    (8, 1, True, 4),   # 8/2 + 1 - 1
])
def test_mainloop(cm, cn, two_sm, expect):
    assert sm100_arrival_counts(KernelFacts(cm, cn, two_sm))["mainloop"] == BarrierCounts(1, expect)


def test_throttle_and_epi_load():
    c = sm100_arrival_counts(KernelFacts(2, 1, True, True))
    assert c["clc_throttle"] == BarrierCounts(32, 32)
    assert c["epi_load"] == BarrierCounts(32, 128)  # PipelineTransactionAsync uses the params as given


def test_single_count_barriers():
    f = KernelFacts(2, 1, True, False)
    b0, b1 = sm100_barrier_counts(f, 0), sm100_barrier_counts(f, 1)
    assert b0["epilogue_throttle"] == 32 + 32 + 32  # MMA + Sched (CTA 0) + MainloopLoad
    assert b1["epilogue_throttle"] == 32 + 32
    assert sm100_barrier_counts(KernelFacts(2, 1, True, True), 0)["epilogue_throttle"] == 128  # + EpilogueLoad
    assert sm100_barrier_counts(KernelFacts(2, 1, True, True), 1)["epilogue_throttle"] == 96
    assert b0["tmem_alloc"] == 160
    assert b0["tmem_dealloc"] == 32  # MMA peer, not overlapping
    assert b0["load_order"] == 32
    assert sm100_barrier_counts(KernelFacts(1, 1, False))["tmem_dealloc"] == 0  # never initialised
    assert sm100_barrier_counts(KernelFacts(2, 1, True, overlapping_accum=True))["tmem_dealloc"] == 256
    assert sm100_barrier_counts(KernelFacts(1, 1, False, overlapping_accum=True))["tmem_dealloc"] == 128


def test_from_config():
    f = KernelFacts.from_config(Sm100GemmConfig(cluster_m=4, cluster_n=2, read_c=True))
    assert (f.cluster_m, f.cluster_n, f.use_2sm, f.read_c, f.cluster_size) == (4, 2, True, True, 8)


def test_facts_validation():
    with pytest.raises(ValueError, match="cluster_m=3"):
        KernelFacts(3, 1, True)


def test_arrival_table_matches_counts():
    f = KernelFacts(2, 1, True, True)
    rows = sm100_arrival_table(f)
    counts = sm100_arrival_counts(f)
    by = {(p, b): (n, who) for p, b, n, who in rows}
    for name, bc in counts.items():
        assert by[(name, "full")][0] == bc.producer
        assert by[(name, "empty")][0] == bc.consumer
    assert by[("clc", "empty")] == (480, "Sched x32 (CTA0) + per CTA (2): MainloopLoad x32, Epilogue x128, "
                                         "MMA x32, EpilogueLoad x32")
    assert all(isinstance(w, str) and w for *_, w in rows)


# ------------------------------------------------------------------------------------------ SM90
def test_sm90_mainloop_dsl_and_cpp():
    coop21 = Sm90KernelFacts(2, 1, "cooperative")
    # DSL: (2 + 1 - 1) peers x 2 warpgroups x 4 warps = 16; C++: 2 x ceil(256/128) = 4
    assert sm90_arrival_counts(coop21)["mainloop"] == BarrierCounts(1, 16)
    assert sm90_arrival_counts(coop21, "cpp")["mainloop"] == BarrierCounts(1, 4)
    coop11 = Sm90KernelFacts(1, 1, "cooperative")
    assert sm90_arrival_counts(coop11)["mainloop"].consumer == 8      # 1 x 2 x 4
    assert sm90_arrival_counts(coop11, "cpp")["mainloop"].consumer == 256  # every consumer thread
    pp22 = Sm90KernelFacts(2, 2, "pingpong")
    assert sm90_arrival_counts(pp22)["mainloop"].consumer == 12       # 3 x 1 warpgroup x 4
    assert sm90_arrival_counts(pp22, "cpp")["mainloop"].consumer == 3
    assert sm90_arrival_counts(Sm90KernelFacts(1, 1, "pingpong"), "cpp")["mainloop"].consumer == 128


def test_sm90_epi_load_and_order():
    assert sm90_arrival_counts(Sm90KernelFacts(2, 1, "cooperative", read_c=True))["epi_load"] == BarrierCounts(32, 256)
    pp = sm90_arrival_counts(Sm90KernelFacts(1, 1, "pingpong"))
    assert pp["epi_load"] == BarrierCounts(32, 128)
    assert pp["order"] == BarrierCounts(128, 128)
    assert "order" not in sm90_arrival_counts(Sm90KernelFacts())
    assert sm90_barrier_counts(Sm90KernelFacts(1, 1, "pingpong"))["math_wg_order"] == 128
    assert sm90_barrier_counts(Sm90KernelFacts())["load_order"] == 32


def test_sm90_from_config_and_validation():
    f = Sm90KernelFacts.from_config(Sm90GemmConfig(cluster_m=1, cluster_n=2, schedule="pingpong"))
    assert (f.cluster_m, f.cluster_n, f.schedule, f.mcast_size) == (1, 2, "pingpong", 2)
    with pytest.raises(ValueError, match="schedule='x'"):
        Sm90KernelFacts(schedule="x")
    with pytest.raises(ValueError, match="convention"):
        sm90_arrival_counts(Sm90KernelFacts(), "rust")
