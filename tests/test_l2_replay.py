"""benchmarks/l2_replay.py: the SM90 model's memory system replays the committed L2 microbenchmarks."""

from __future__ import annotations

import json

import pytest

from benchmarks import l2_replay as R


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
