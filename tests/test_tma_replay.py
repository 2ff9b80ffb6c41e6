"""validation.tma_replay: measured TMA streams replayed through the model's memory system."""
import json

import pytest

from simulator.kernels.sm90_tma_ws import TMA_LOAD_FIXED
from simulator.machine.arch import ArchSpec
from validation import tma_replay as tr


def _arch():
    return ArchSpec.h200().with_overrides({"clock_ghz": 1.98}, origin="test")


def test_one_load_at_a_time_from_l2_is_the_latency_plus_the_transfer():
    """One CTA, one box in flight, L2-resident: each box is the L2 channel's transfer, its latency and TMA
    overhead, or the TMA unit's transfer and fixed latency, whichever is later."""
    a, box = _arch(), 16384
    via_l2 = box / a.l2_bytes_per_clk + a.l2_latency_cycles.value + a.tma_issue_overhead_cycles.value
    via_tma = box / a.tma_load_bytes_per_clk_per_sm.value + TMA_LOAD_FIXED.value
    assert tr.replay(a, 1, 1, box, 64, "l2") == pytest.approx(max(via_l2, via_tma), rel=1e-9)


def test_many_deep_streams_from_hbm_run_at_the_hbm_rate():
    """132 CTAs with 8 loads in flight each saturate HBM: every box costs 132 boxes at the HBM channel's rate."""
    a, box = _arch(), 16384
    got = tr.replay(a, 132, 8, box, 64, "hbm")
    assert got == pytest.approx(132 * box / a.hbm_bytes_per_clk, rel=0.05)


def test_more_loads_in_flight_never_slow_a_stream():
    a = _arch()
    for where in ("hbm", "l2"):
        per_box = [tr.replay(a, 16, d, 32768, 32, where) for d in (1, 2, 4, 6)]
        assert all(x >= y - 1e-6 for x, y in zip(per_box, per_box[1:], strict=False)), (where, per_box)


def test_compare_tables_every_stream_row(tmp_path):
    doc = {"meta": {"device": {"name": "GPU"}}, "results": {"tma_loaded": {"loaded": [
        {"where": "hbm", "box_rows": 128, "ctas": 16, "stages": 4, "count": 64, "cycles_per_box": 400.0,
         "clock_mhz": 1980.0},
        {"where": "l2", "box_rows": 256, "ctas": 1, "stages": 2, "count": 32, "cycles_per_box": 350.0,
         "clock_mhz": 1980.0}]}}}
    p = tmp_path / "gpu_microbench_v3j.json"
    p.write_text(json.dumps(doc))
    lines = tr.compare(p)
    first = lines[: lines.index("", 3)]          # the per-run table, up to the summary
    body = [ln for ln in first if ln.startswith(("| hbm", "| l2"))]
    assert len(body) == 2
    assert body[0].startswith("| hbm | 16 | 16 | 4 | 1980 | 400 |")
    summary = [ln for ln in lines[len(first):] if ln.startswith(("| hbm", "| l2"))]
    assert [ln.split(" | ")[:4] for ln in summary] == [["| hbm", "2-16", "3 or more", "1"], ["| l2", "1", "1-2", "1"]]
