"""The bottleneck word (simulator.engine.bottleneck) on results constructed to sit on each side of
each threshold: one small real run, with the fields the rules read replaced."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulator.engine import bottleneck as B
from simulator.engine import simulate
from simulator.engine.run import RoleTime
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import get_arch

B200 = get_arch("b200")
H200 = get_arch("h200")
# 2-SM 256x256, cluster 2x1: one cluster per MMA tile, 74 resident clusters on 148 SMs.
MANY = Sm100GemmConfig(m=256 * 16, n=256 * 20, k=4096).resolved(B200)       # 320 units: 5 waves, 320/370
TWO_WAVES = Sm100GemmConfig(m=256 * 8, n=256 * 10, k=4096).resolved(B200)   # 80 units: 2 waves, 80/148


@pytest.fixture(scope="module")
def base():
    return simulate(Sm100GemmConfig(m=512, n=512, k=512), B200)


def l2_us(cfg):
    """Microseconds ``cfg``'s L2 traffic takes at the arch's L2 bandwidth."""
    return B.l2_load_bytes(cfg) / B200.l2_bytes_per_s.value * 1e6


def make(base, cfg=MANY, *, kernel_us=None, launch_us=4.0, tc=0.3, hbm_frac=0.1, roles=None):
    """A result of ``cfg`` whose kernel took ``kernel_us`` (default: L2 busy 30% of it) with these scores."""
    kernel_us = l2_us(cfg) / 0.3 if kernel_us is None else kernel_us
    kernel_s = kernel_us * 1e-6
    hbm = int(hbm_frac * B200.hbm_bytes_per_s.value * kernel_s)
    return replace(base, config=cfg, time_ns=(kernel_us + launch_us) * 1e3, launch_overhead_ns=launch_us * 1e3,
                   tensor_core_utilization=tc, hbm_read_bytes=hbm, hbm_write_bytes=0,
                   role_times=roles if roles is not None else [RoleTime("MMA", 74, 1.0, {"mainloop.full": 0.5})])


def test_wave_efficiency_counts_units_over_full_waves():
    assert B.resident_clusters(MANY, B200) == 74
    assert B.waves(MANY, B200) == 5
    assert B.wave_efficiency(MANY, B200) == pytest.approx(320 / 370)
    assert B.wave_efficiency(TWO_WAVES, B200) == pytest.approx(80 / 148)


def test_launch(base):
    k = l2_us(MANY) / 0.3
    r = make(base, kernel_us=k, launch_us=k, tc=0.95)          # launch is half the time, wins over tc
    assert B.classify(r).name == "launch"
    r = make(base, kernel_us=k, launch_us=0.99 * k, tc=0.95)
    assert B.classify(r).name == "tensor core"


def test_tensor_core_threshold(base):
    wave = 320 / 370   # MANY's last wave is short, but not by WAVE_LOSS_BOUND: the word stays "tensor core"
    assert B.classify(make(base, tc=B.TENSOR_CORE_BOUND * wave + 1e-6)).name == "tensor core"
    assert B.classify(make(base, tc=B.TENSOR_CORE_BOUND * wave - 0.01)).name == "latency"


def test_hbm(base):
    r = make(base, tc=0.3, hbm_frac=B.MEMORY_BOUND + 0.01)
    b = B.classify(r)
    assert b.name == "HBM" and b.scores["hbm"] == pytest.approx(B.MEMORY_BOUND + 0.01, rel=1e-6)
    assert B.classify(make(base, tc=0.3, hbm_frac=B.MEMORY_BOUND - 0.01)).name != "HBM"


def test_l2(base):
    # kernel time at which MANY's L2 traffic needs 80% of the L2 bandwidth
    r = make(base, kernel_us=l2_us(MANY) / 0.8, tc=0.3, hbm_frac=0.2)
    assert B.classify(r).name == "L2"
    r = make(base, kernel_us=l2_us(MANY) / 0.6, tc=0.3, hbm_frac=0.2)
    assert B.classify(r).name != "L2"


def test_l2_bytes_count_multicast():
    # A (256 rows) shared by cluster_n tiles, B (256 cols) by the cluster's MMA tiles along M.
    one = Sm100GemmConfig(m=512, n=512, k=64, cluster_m=2, cluster_n=1).resolved(B200)
    two = Sm100GemmConfig(m=512, n=512, k=64, cluster_m=2, cluster_n=2).resolved(B200)
    assert B.l2_load_bytes(one) == 4 * (256 * 64 * 2 + 256 * 64 * 2)
    assert B.l2_load_bytes(two) == 4 * (256 * 64 * 2 // 2 + 256 * 64 * 2)


def test_wave_quantisation(base):
    eff = 80 / 148
    r = make(base, TWO_WAVES, tc=0.9 * eff)           # busy while there is work, the last wave idle
    assert B.classify(r).name == "wave quantisation"
    r = make(base, TWO_WAVES, tc=0.5 * eff)           # not busy even while there is work
    assert B.classify(r).name != "wave quantisation"
    r = make(base, MANY, tc=0.75)                     # waves 86% full: not the reason
    assert B.classify(r).name == "tensor core"


def test_epilogue_sm100(base):
    hold = [RoleTime("MMA", 74, 1.0, {"accumulator.empty": B.EPILOGUE_BOUND + 0.05})]
    assert B.classify(make(base, tc=0.5, roles=hold)).name == "epilogue"
    # A single wave: the MMA's wait for the epilogue is the tail, not a bottleneck.
    single = Sm100GemmConfig(m=512, n=512, k=4096).resolved(B200)
    assert B.classify(make(base, single, kernel_us=50.0, tc=0.5, roles=hold)).name == "latency"
    low = [RoleTime("MMA", 74, 1.0, {"accumulator.empty": B.EPILOGUE_BOUND - 0.05})]
    assert B.classify(make(base, tc=0.5, roles=low)).name == "latency"


def test_epilogue_sm90():
    base = simulate(Sm90GemmConfig(m=512, n=512, k=512), H200)
    cfg = Sm90GemmConfig(m=8192, n=8192, k=1024).resolved(H200)
    waits = {"epilogue.store_buffer": 0.1, "epilogue.barrier": 0.1, "mainloop.full": 0.3}
    roles = [RoleTime("Consumer0", 132, 1.0, waits), RoleTime("Consumer1", 132, 1.0, {"mainloop.full": 0.3})]
    r = replace(base, config=cfg, time_ns=1e6, launch_overhead_ns=4e3, tensor_core_utilization=0.5,
                hbm_read_bytes=0, hbm_write_bytes=0, role_times=roles)
    b = B.classify(r)
    assert b.scores["epilogue"] == pytest.approx(0.1)   # (0.2 + 0) / 2 consumers
    assert b.name == "latency"
    roles[1] = RoleTime("Consumer1", 132, 1.0, {"epilogue.store_drain": 0.2})
    r = replace(r, role_times=roles)
    assert B.classify(r).name == "epilogue"


def test_real_runs_get_a_word(base):
    for res in (base, simulate(Sm100GemmConfig(m=4096, n=4096, k=2048), B200),
                simulate(Sm90GemmConfig(m=2048, n=2048, k=1024), H200)):
        b = B.classify(res)
        assert b.name in B.WORDS and b.detail
        assert b.scores["tensor_core"] == res.tensor_core_utilization
        assert 0 < b.scores["wave_efficiency"] <= 1
