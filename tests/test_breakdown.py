"""Busy / wait / idle breakdown per role, lanes and selection helpers (simulator/views/breakdown.py)."""

from __future__ import annotations

import numpy as np
import pytest
from trace_fixtures import make_sm90_trace, make_sm100_trace

from simulator.engine.trace import COLUMNS, Trace
from simulator.views.breakdown import (
    ROLE_ORDER,
    SelectionError,
    assign_lanes,
    check_sms,
    check_window,
    nests,
    occupancy_series,
    overlapping_pairs,
    role_breakdown,
    role_tracks,
    sorted_roles,
)


@pytest.fixture(scope="module")
def fx():
    return make_sm100_trace()


def test_fixture_waits_never_overlap_per_role(fx):
    tr, _ = fx
    c = tr.columns()
    for sm in np.unique(c["sm"]):
        for role in np.unique(c["role"]):
            m = (c["sm"] == sm) & (c["role"] == role) & (c["kind"] == "wait")
            assert overlapping_pairs(c["start_ns"][m], c["end_ns"][m]) == 0, (sm, role)


def test_per_sm_waits_match_the_schedule(fx):
    tr, ex = fx
    bd = role_breakdown(tr, per_sm=True)
    assert {(r.sm, r.role) for r in bd.rows} == set(ex.extent)
    for r in bd.rows:
        expected = {b: v for (sm, role, b), v in ex.waits.items() if sm == r.sm and role == r.role}
        assert r.waits.keys() == expected.keys()
        for b, v in expected.items():
            assert r.waits[b] == pytest.approx(v, abs=1e-6)
        first, last = ex.extent[(r.sm, r.role)]
        assert r.active_ns == pytest.approx(last - first)
        assert r.busy_ns == pytest.approx(last - first - sum(expected.values()))
        assert r.overlap_ns == 0


def test_parts_add_up_to_the_window(fx):
    tr, _ = fx
    for per_sm in (True, False):
        for window in (None, (400.0, 1900.0)):
            bd = role_breakdown(tr, per_sm=per_sm, window_ns=window)
            for r in bd.rows:
                assert r.busy_ns + r.wait_ns + r.idle_ns == pytest.approx(r.window_ns)
                assert min(r.busy_ns, r.wait_ns, r.idle_ns) >= -1e-9
                assert r.fraction("busy") + r.fraction("wait") + r.fraction("idle") == pytest.approx(1.0)


def test_summed_rows_follow_role_order_and_count_sms(fx):
    tr, ex = fx
    bd = role_breakdown(tr)
    assert [r.role for r in bd.rows] == ["Sched", "MainloopLoad", "MMA", "Epilogue"]
    n = {r.role: r.n_sms for r in bd.rows}
    assert n == {"Sched": 1, "MainloopLoad": 2, "MMA": 2, "Epilogue": 2}
    mma = bd.row("MMA")
    assert mma.window_ns == pytest.approx(2 * ex.end_ns)
    assert mma.waits["mainloop.full"] == pytest.approx(ex.waits[(0, "MMA", "mainloop.full")]
                                                       + ex.waits[(1, "MMA", "mainloop.full")])
    # the MMA warp's work in flight is its K-blocks and its prologue (none overlap in the fixture)
    assert mma.work_ns == pytest.approx(ex.counts["mma"] * 100.0 + 2 * 50.0)
    text = bd.to_text()
    assert "mainloop.full%" in text and text.count("\n") == 1 + len(bd.rows)


def test_window_clips_waits(fx):
    tr, _ = fx
    bd = role_breakdown(tr, sms=[0], window_ns=(0.0, 300.0), per_sm=True)
    ld = bd.row("MainloopLoad", 0)
    # In [0, 300) the loader waits on mainloop.empty from 70 ns (after two issues) to 300.
    assert ld.waits["mainloop.empty"] == pytest.approx(300.0 - 70.0)
    assert ld.window_ns == 300.0


def test_overlapping_waits_are_not_counted_twice():
    tr = Trace(meta={"source": "measured"})
    tr.add_ns(0, 0, 0, "MMA", "wait", 0, 100, barrier="mainloop.full")
    tr.add_ns(0, 0, 0, "MMA", "wait", 90, 150, barrier="accumulator.empty")   # 10 ns clock noise
    tr.add_ns(0, 0, 0, "MMA", "mma", 150, 200, k_block=0)
    r = role_breakdown(tr, per_sm=True).row("MMA", 0)
    assert r.wait_ns == pytest.approx(150.0)
    assert r.overlap_ns == pytest.approx(10.0)
    assert r.waits == pytest.approx({"mainloop.full": 100.0, "accumulator.empty": 50.0})
    assert r.busy_ns == pytest.approx(50.0)


def test_selection_errors_name_the_value(fx):
    tr, _ = fx
    with pytest.raises(SelectionError, match="SM 7 is not in the trace"):
        check_sms(tr, [0, 7])
    with pytest.raises(SelectionError, match="empty"):
        check_window(tr, (500.0, 500.0))
    with pytest.raises(SelectionError, match="holds no spans"):
        check_window(tr, (1e6, 2e6))
    assert check_sms(tr, [1, 0, 1]) == [1, 0]


def test_role_order_sm100_and_sm90():
    assert sorted_roles(["Epilogue", "MMA", "Sched", "EpilogueLoad", "MainloopLoad"]) == list(ROLE_ORDER[:5])
    tr = make_sm90_trace()
    assert sorted_roles(tr.columns()["role"].tolist()) == ["MainloopLoad", "EpilogueLoad", "Consumer0",
                                                           "Consumer1"]
    assert sorted_roles(["Zeta", "MMA", "Alpha"]) == ["MMA", "Alpha", "Zeta"]


def test_assign_lanes_never_overlaps():
    rng = np.random.default_rng(3)
    s = np.sort(rng.uniform(0, 1000, 300))
    e = s + rng.uniform(1, 80, 300)
    lanes = assign_lanes(s, e)
    for ln in np.unique(lanes):
        assert overlapping_pairs(s[lanes == ln], e[lanes == ln]) == 0
    # stage lanes are used when each stage's spans are disjoint
    s2 = np.array([0.0, 5, 25])
    e2 = np.array([10.0, 20, 30])
    assert assign_lanes(s2, e2, np.array([4, 7, 7])).tolist() == [0, 1, 1]   # stage 7 -> lane 1
    assert assign_lanes(s2, e2).tolist() == [0, 1, 0]                        # greedy: first free lane
    # stages whose own spans overlap fall back to greedy packing
    assert assign_lanes(s2, np.array([10.0, 30, 40]), np.array([0, 1, 1])).tolist() == [0, 1, 0]


def test_role_tracks_put_sync_work_on_the_warp_and_async_work_on_lanes(fx):
    tr, _ = fx
    c = tr.columns()
    for role, main_kinds, lane_kinds in (("MMA", {"wait", "prologue", "mma", "acc_handoff"}, set()),
                                         ("Epilogue", {"wait", "prologue", "epilogue"}, {"tma_store"}),
                                         ("MainloopLoad", {"wait", "prologue"}, {"tma_load"})):
        m = (c["sm"] == 0) & (c["role"] == role)
        track, names = role_tracks(c["start_ns"][m], c["end_ns"][m], c["kind"][m], c["stage"][m])
        kinds = c["kind"][m]
        assert set(kinds[track == 0].tolist()) == main_kinds
        lane_names = [n for n in names[1:] if not n.startswith("tiles")]
        assert {n.split(" ")[0] for n in lane_names} == lane_kinds
        for t in range(len(names)):
            sel = (track == t) & (kinds != "acc_handoff")
            assert overlapping_pairs(c["start_ns"][m][sel], c["end_ns"][m][sel]) == 0
            assert nests(c["start_ns"][m][sel], c["end_ns"][m][sel])
    m = (c["sm"] == 0) & (c["role"] == "MainloopLoad")
    _, names = role_tracks(c["start_ns"][m], c["end_ns"][m], c["kind"][m], c["stage"][m])
    assert names == ["", "tma_load stage 0", "tma_load stage 1"]


def test_nests_and_a_wait_inside_a_subtile():
    assert nests(np.array([0.0, 10, 40]), np.array([50.0, 20, 50]))      # contained, touching the end
    assert not nests(np.array([0.0, 10]), np.array([20.0, 30]))          # partial overlap
    s = np.array([0.0, 30, 100, 130])
    e = np.array([100.0, 50, 200, 300])
    kinds = np.array(["epilogue", "wait", "epilogue", "tma_store"])
    track, names = role_tracks(s, e, kinds, np.array([0, 0, 1, 0]))
    assert track.tolist() == [0, 0, 0, 1] and names == ["", "tma_store"]


def test_occupancy_from_counters_and_from_spans(fx):
    tr, ex = fx
    series, src = occupancy_series(tr, "mainloop")
    assert src == "mainloop.stages_full" and set(series) == {0, 1}
    t, v = series[0]
    assert v.max() <= 2 and v.min() >= 0 and np.all(np.diff(t) >= 0)
    # Without counters the occupancy is derived: issue -> release, never above the stage count.
    bare = Trace(tr.meta)   # same spans, no counters (like a measured trace)
    cols = tr.columns()
    bare.extend_rows(zip(*(cols[k].tolist() for k in COLUMNS), strict=True))
    series2, src2 = occupancy_series(bare, "mainloop")
    assert src2 == "derived from spans"
    for _sm, (_t, v2) in series2.items():
        assert v2.max() == 2 and v2[-1] == 0
    assert occupancy_series(bare, "bogus") == ({}, "")


@pytest.mark.parametrize("kw", [{}, dict(m=2048, n=2048, k=256, use_2sm=False, cluster_m=1, mma_tile_m=128,
                                         mma_tile_n=128)], ids=["2sm-512", "1sm-2048"])
def test_simulated_gemm_roles_never_do_two_things_at_once(kw):
    from trace_fixtures import simulated

    tr = simulated(**kw).trace
    c = tr.columns()
    keys = set(zip(c["sm"].tolist(), c["role"].tolist(), strict=True))
    for sm, role in keys:
        m = (c["sm"] == sm) & (c["role"] == role)
        w = m & (c["kind"] == "wait")
        assert overlapping_pairs(c["start_ns"][w], c["end_ns"][w]) == 0, (sm, role)   # one barrier at a time
        track, names = role_tracks(c["start_ns"][m], c["end_ns"][m], c["kind"][m], c["stage"][m])
        for t in range(len(names)):
            # a track's spans nest (a wait inside an epilogue subtile) and never partially overlap
            sel = (track == t) & (c["kind"][m] != "acc_handoff")
            assert nests(c["start_ns"][m][sel], c["end_ns"][m][sel]), (sm, role, names[t])
            if t > 0:
                assert overlapping_pairs(c["start_ns"][m][sel], c["end_ns"][m][sel]) == 0, (sm, role, names[t])
    bd = role_breakdown(tr, per_sm=True)
    assert len(bd.rows) == len(keys)
    for r in bd.rows:
        assert r.overlap_ns == 0
        assert r.busy_ns + r.wait_ns + r.idle_ns == pytest.approx(r.window_ns)
