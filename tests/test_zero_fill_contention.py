"""Zero fill against the CTAs filling at once (SM90 model): the measured per-SM rate and its use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.engine import simulate
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm90_tma_ws import (
    ZERO_FILL_BOX_CYCLES,
    ZERO_FILL_BOX_IN_BOUNDS,
    ZERO_FILL_BOX_ROWS,
    ZERO_FILL_ROW_BYTES,
    _partial_box_zeros,
    zero_fill_rates,
)
from simulator.machine.arch import ArchSpec

RESULTS = Path(__file__).resolve().parent.parent / "validation" / "results"

RATE = 106.3


def test_rates_reproduce_the_measured_box_times():
    rates = zero_fill_rates(RATE)
    zero = (ZERO_FILL_BOX_ROWS - ZERO_FILL_BOX_IN_BOUNDS) * ZERO_FILL_ROW_BYTES
    read = ZERO_FILL_BOX_IN_BOUNDS * ZERO_FILL_ROW_BYTES / RATE
    for n, c in ZERO_FILL_BOX_CYCLES:
        assert read + zero / rates[n] == pytest.approx(c.value)
    assert rates[0] == rates[1]
    # Up to 96 SMs (the measured range before the two runs part), more SMs filling never fill faster.
    assert all(a >= b for a, b in zip(rates[:97], rates[1:97], strict=False))


@pytest.mark.parametrize("left,want", [(32, 12288), (128, 0), (0, 0), (-64, 0), (100, 3584)])
def test_only_boxes_partly_in_bounds_count(left, want):
    assert _partial_box_zeros(16384, left, 128, 1) == want


def test_multicast_slices_count_each_partial_box_once():
    # A 128-row tile in two 64-row slices with 32 rows left: slice 0 half in bounds, slice 1 wholly past.
    assert _partial_box_zeros(8192, 32, 64, 2) == 4096


def _kblock_cycles(m: int, n: int) -> float:
    """Cycles per K-block of an fp16 M x N x 8192 GEMM, 128 x 128 tiles (N / 128 CTAs), with the L2 side of
    zero fill (``tma_zero_fill_l2_cost``) off, so that only the TMA unit's rate can make zeros cost more."""
    cfg = Sm90GemmConfig(m=m, n=n, k=8192, dtype_ab="f16", dtype_c="f16", dtype_d="f16", tile_m=128, tile_n=128,
                         tile_k=64, cluster_m=1, schedule="cooperative")
    arch = ArchSpec.h200().with_overrides({"tma_zero_fill_l2_cost": 0.0}, origin="test")
    return simulate(cfg, arch).cycles / (8192 // 64)


def test_zero_fill_costs_more_with_more_ctas_filling():
    # 8 CTAs zero-fill at the TMA rate: no dearer than full boxes. 64 CTAs land their zeros at 26 B/clk each
    # (v3e lockstep boxes): the K-block's 12 KiB of zeros alone take 470 cycles of the TMA unit.
    assert _kblock_cycles(32, 1024) == pytest.approx(_kblock_cycles(128, 1024), rel=0.03)
    assert _kblock_cycles(32, 8192) > 1.15 * _kblock_cycles(128, 8192)


@pytest.mark.parametrize("run", ["h100_microbench_v3g", "h100_microbench_v3g_run2"])
@pytest.mark.parametrize("height", [64, 96])
def test_the_per_byte_rate_predicts_other_zero_fractions(height, run):
    """v3g (two runs, measured after the rates were set, not used for them): boxes with 64 and 32 of 128
    rows zero-filled take the in-bounds rows at the TMA rate plus the zeros at the per-SM rate of the v3e
    boxes (96 rows zero), within 12% on 64 and 96 SMs. Where contention starts differs between runs (16 SMs
    in the first, 32-64 in the second: 16- and 32-SM boxes run at the TMA rate there); at 132 SMs the runs
    part by 10-40%; boxes wholly past the tensor are not modelled by this rate (about as the 96-row ones)."""
    q = json.loads((RESULTS / f"{run}.json").read_text())["quantities"]
    rates = zero_fill_rates(RATE)
    zero = (ZERO_FILL_BOX_ROWS - height) * ZERO_FILL_ROW_BYTES
    for n in (64, 96):
        model = (ZERO_FILL_BOX_ROWS * ZERO_FILL_ROW_BYTES - zero) / RATE + zero / rates[n]
        measured = q[f"tma_oob_scaling.h{height}.box128.lockstep.{n}sm.cycles_per_box"]["value"]
        assert model == pytest.approx(measured, rel=0.12), (height, n)
