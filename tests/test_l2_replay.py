"""benchmarks/l2_replay.py: the SM90 model's memory system replays the committed L2 microbenchmarks."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from benchmarks import l2_replay as R
from benchmarks.gpc_links import gpc_of_sm


def _share(group, what):
    rows = json.loads((R.RESULTS / "h200_microbench_v3.json").read_text())["results"]["l2share"]["share"]
    return next(r for r in rows if r["group"] == group and r["what"] == what)


@pytest.mark.parametrize("group,what", [(1, "lockstep"), (4, "spread"), (132, "spread")])
def test_streams_of_lines_no_one_else_reads_at_once_land_at_the_measured_l2_rate(group, what):
    r = _share(group, what)
    model = R.l2share(group, r["stagger"], r["clock_mhz"] / 1e3)
    assert model == pytest.approx(r["bytes_per_s"], rel=0.05)


def test_lockstep_readers_of_one_box_cost_one_read_each_in_the_model():
    """The model charges every L2 read, merged in time or not: g lockstep readers get no more than one."""
    assert R.l2share(4, 0, 1.976) == pytest.approx(R.l2share(1, 0, 1.976), rel=0.02)


@pytest.mark.parametrize("tile_n,cluster", [(128, "c1x2"), (256, "c2x1")])
def test_multicast_mainloop_loads_land_within_ten_percent_of_the_replay(tile_n, cluster):
    runs = json.loads((R.RESULTS / "h200_microbench_v3c.json").read_text())["results"]["mainloop_pace"]["runs"]
    r = next(x for x in runs if x["tile_n"] == tile_n and x["cluster"] == cluster and x["mode"] == "tma")
    model = R.mainloop_loads(4096, 4096, 4096, tile_n, cluster, r["stages"], r["clock_mhz"] / 1e3)
    assert model == pytest.approx(r["kblock_cycles"], rel=0.10)


def test_one_load_at_a_time_from_l2_is_the_later_of_the_l2_path_and_the_tma_unit():
    """One CTA, one box in flight, L2-resident: each box is the L2 channel's transfer plus its latency and TMA
    overhead, or the TMA unit's transfer plus its fixed latency, whichever ends later."""
    from simulator.kernels.sm90_tma_ws import TMA_LOAD_FIXED
    from simulator.machine.arch import ArchSpec
    a, box = ArchSpec.h200().with_overrides({"clock_ghz": 1.98}, origin="test"), 16384
    via_l2 = box / a.l2_bytes_per_clk + a.l2_latency_cycles.value + a.tma_issue_overhead_cycles.value
    via_tma = box / a.tma_load_bytes_per_clk_per_sm.value + TMA_LOAD_FIXED.value
    assert R.depth_stream(1, 1, box, 64, "l2", 1.98) == pytest.approx(max(via_l2, via_tma), rel=1e-9)


def test_many_deep_streams_from_hbm_run_at_the_hbm_rate():
    from simulator.machine.arch import ArchSpec
    a, box = ArchSpec.h200().with_overrides({"clock_ghz": 1.98}, origin="test"), 16384
    assert R.depth_stream(132, 8, box, 64, "hbm", 1.98) == pytest.approx(132 * box / a.hbm_bytes_per_clk, rel=0.05)


def test_more_loads_in_flight_never_slow_a_stream():
    for where in ("hbm", "l2"):
        per_box = [R.depth_stream(16, d, 32768, 32, where, 1.98) for d in (1, 2, 4, 6)]
        assert all(x >= y - 1e-6 for x, y in zip(per_box, per_box[1:], strict=False)), (where, per_box)


def test_stream_tables_list_every_run_and_summarise_by_ctas_and_depth(tmp_path):
    doc = {"meta": {"device": {"name": "NVIDIA GPU"}}, "results": {"tma_loaded": {"loaded": [
        {"where": "hbm", "box_rows": 128, "ctas": 16, "stages": 4, "count": 64, "cycles_per_box": 400.0,
         "clock_mhz": 1980.0},
        {"where": "l2", "box_rows": 256, "ctas": 1, "stages": 2, "count": 32, "cycles_per_box": 350.0,
         "clock_mhz": 1980.0}]}}}
    p = tmp_path / "gpu_microbench_v3j.json"
    p.write_text(json.dumps(doc))
    lines = R.stream_tables(R.stream_rows([p]))
    cut = lines.index("")
    assert [ln.split(" | ")[:6] for ln in lines[2:cut]] == [["| GPU", "hbm", "16", "16", "4", "1980"],
                                                            ["| GPU", "l2", "32", "1", "2", "1980"]]
    assert [ln.split(" | ")[1:5] for ln in lines[cut + 3:]] == [["hbm", "2-16", "3 or more", "1"],
                                                                ["l2", "1", "1-2", "1"]]


def test_shared_cap_rows_name_the_slowed_smis_and_their_summed_rate(tmp_path):
    box_rows, count = 128, 32
    cyc = lambda rate: count * box_rows * 128 / rate  # noqa: E731 - cycles of a CTA streaming at ``rate`` B/clk
    runs = [{"where": "l2", "ctas": 1, "box_rows": box_rows, "stages": 4, "count": count, "bytes_per_clk_per_sm": 100.0,
             "smids": [5], "cta_cycles": [cyc(100.0)]},
            {"where": "l2", "ctas": 8, "box_rows": box_rows, "stages": 4, "count": count, "bytes_per_clk_per_sm": 60.0,
             "smids": [7, 3, 9, 11, 2, 4, 6, 8], "cta_cycles": [cyc(v) for v in (62.5,) * 4 + (99.0,) * 4]}]
    p = tmp_path / "gpu_microbench_v3j.json"
    p.write_text(json.dumps({"meta": {"device": {"name": "NVIDIA GPU"}}, "results": {"tma_loaded": {"loaded": runs}}}))
    rows = R.shared_cap_rows([p])[2:]
    assert rows == ["| GPU (v3j) | 16 | 8 | 4 | 100 | 4 | 3 7 9 11 | 250 | 4 |"]


def test_every_16_sm_gpc_gives_four_sms_a_larger_share_of_its_link():
    """132 CTAs streaming their own lines, 4+ in flight, on every H100 run: 24 fast SMs, four in each 16-SM GPC,
    none in the two 18-SM GPCs; the GPCs' sums stay within 475-545 B/clk."""
    rows = [r for r in R.gpc_share_rows() if r.startswith("| H100")]
    deep = [r.split(" | ") for r in rows if int(r.split(" | ")[3]) >= 4 and not r.split(" | ")[6].startswith("0")]
    assert len(deep) >= 8
    gpc_of = gpc_of_sm()
    for cells in deep:
        assert cells[6].startswith("24 ")
        assert Counter(gpc_of[int(sm)] for sm in cells[7].rstrip(" |").split()) == dict.fromkeys(range(6), 4)
        assert all(475 <= float(x) <= 545 for x in cells[5].split())
