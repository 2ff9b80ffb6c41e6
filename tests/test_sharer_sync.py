"""benchmarks/sharer_sync.py: issue gaps of CTAs on one GPC that load the same slice, measured and modelled."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import sharer_sync as S
from validation import hw_trace as H


def test_gaps_pair_only_ctas_on_one_gpc_within_a_wave():
    loads = {("m0", 0): [(0.0, 1, True), (30.0, 1, True), (100.0, 2, True), (9000.0, 1, False)], ("m1", 0): [(5.0, 3, True)]}
    assert sorted(S.gaps(loads)) == [30.0]


def test_an_empty_set_of_pairs_reads_as_none():
    assert S._cells(np.array([])).startswith("0 | - |")


@pytest.mark.parametrize("operand", ["A", "B"])
def test_a_committed_h100_trace_has_sharers_on_one_gpc(operand):
    path = S.RESULTS / "sharer_traces_h100" / "raw_128x128x64_c1x1_rn_sw1_e32_trace-kblock_fp16_1536x1536x12288.npz"
    buf, meta = H.load_raw(path)
    loads = S.measured_loads(buf, meta)[operand]
    # 12 x 12 tiles of 128 x 128, 192 K-blocks: every (slice, K-block) is loaded by the CTAs of its row / column
    assert len(loads) == 12 * 192
    assert all(1 <= len(v) <= 12 for v in loads.values())
    assert S.gaps(loads).size > 1000


def test_spread_takes_first_tiles_only_and_needs_four_ctas():
    loads = {("m0", 0): [(0.0, 0, True), (10.0, 1, True), (20.0, 2, True), (30.0, 3, True), (5000.0, 4, False)],
             ("m0", 1): [(0.0, 0, True), (100.0, 1, True), (200.0, 2, True)]}
    assert S.spread(loads) == {0: pytest.approx(np.std([0.0, 10.0, 20.0, 30.0]))}


def test_the_committed_traces_drift_apart_over_the_first_k_blocks():
    """Measured: CTAs sharing A start within ~100 cycles (the prologue's loads) and are ~1000 apart 16 K-blocks in."""
    path = S.RESULTS / "sharer_traces_h100" / "raw_128x128x64_c1x1_rn_sw1_e32_trace-kblock_fp16_1536x1536x12288.npz"
    buf, meta = H.load_raw(path)
    sp = S.spread(S.measured_loads(buf, meta)["A"])
    assert sp[0] < 150 and sp[16] > 4 * sp[0]
