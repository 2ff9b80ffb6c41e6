"""Chrome/Perfetto JSON export (simulator/views/perfetto.py)."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest
from trace_fixtures import make_sm90_trace, make_sm100_trace

from simulator.engine.trace import COLUMNS, Trace
from simulator.views.breakdown import SelectionError
from simulator.views.perfetto import (
    DEVICE_PID,
    event_name,
    merge_perfetto,
    to_perfetto,
    validate_chrome_trace,
    write_perfetto,
)


@pytest.fixture(scope="module")
def fx():
    return make_sm100_trace()


@pytest.fixture(scope="module")
def doc(fx):
    return to_perfetto(fx[0])


def _spans(doc):
    return [e for e in doc["traceEvents"] if e["ph"] in ("X", "i")]


def _names(doc, what):
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
            if e["ph"] == "M" and e["name"] == what}


def test_valid_and_json_roundtrip(doc):
    assert validate_chrome_trace(doc) == []
    again = json.loads(json.dumps(doc, allow_nan=False))
    assert validate_chrome_trace(again) == []


def test_one_event_per_span_with_the_simulated_counts(fx, doc):
    _, ex = fx
    got = Counter(e["cat"] for e in _spans(doc))
    assert got == ex.counts
    assert sum(ex.counts.values()) == len(fx[0])
    # instants for hand-offs, complete events for everything else
    assert {e["ph"] for e in _spans(doc) if e["cat"] == "acc_handoff"} == {"i"}
    assert {e["ph"] for e in _spans(doc) if e["cat"] != "acc_handoff"} == {"X"}


def test_names_args_and_units(fx, doc):
    tr, _ = fx
    loads = [e for e in _spans(doc) if e["cat"] == "tma_load" and e["pid"] == 0]
    first = min(loads, key=lambda e: e["ts"])
    assert first["name"] == "TMA load k=0 [stage 0]"
    assert first["args"]["tile"] == [0, 0, 0] and first["args"]["k_block"] == 0
    assert first["ts"] == pytest.approx(0.05)                   # 50 ns prologue -> 0.05 us
    assert first["dur"] == pytest.approx(0.3)                   # 300 ns TMA latency on SM 0
    assert first["args"]["cycles"] == pytest.approx(600.0)      # at 2 GHz
    mma = [e["name"] for e in _spans(doc) if e["cat"] == "mma"]
    assert "MMA k=3 [stage 1]" in mma
    waits = {e["name"] for e in _spans(doc) if e["cat"] == "wait"}
    assert "wait mainloop.full[0]" in waits and "wait accumulator.full[0]" in waits
    assert all(e["args"]["barrier"] for e in _spans(doc) if e["cat"] == "wait")
    assert event_name("wait", -1, -1, "tmem_dealloc", (-1, -1, -1)) == "wait tmem_dealloc"
    assert event_name("epilogue", 2, 0, "", (1, 2, 0)) == "Epilogue sub=2 [stage 0]"


def test_processes_threads_and_sort_order(doc):
    procs = _names(doc, "process_name")
    assert procs[(0, 0)] == "SM 0 (cluster 0, CTA 0)"
    assert procs[(1, 0)] == "SM 1 (cluster 0, CTA 1)"
    assert procs[(DEVICE_PID, 0)] == "Device"
    threads = _names(doc, "thread_name")
    sm0 = [name for (pid, tid), name in sorted(threads.items()) if pid == 0]
    warps = [n for n in sm0 if " · " not in n]
    assert warps == ["Sched", "MainloopLoad", "MMA", "Epilogue"]
    assert "MainloopLoad · tma_load stage 0" in sm0 and "Epilogue · tma_store stage 1" in sm0
    sort = {(e["pid"], e["tid"]): e["args"]["sort_index"] for e in doc["traceEvents"]
            if e["ph"] == "M" and e["name"] == "thread_sort_index"}
    order = [threads[k] for k in sorted((k for k in sort if k[0] == 0), key=lambda k: sort[k])]
    assert order == sm0


def test_no_two_events_overlap_on_a_thread(doc):
    per = {}
    for e in _spans(doc):
        if e["ph"] == "X":
            per.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for key, spans in per.items():
        spans.sort()
        for (_, e0), (s1, _) in zip(spans, spans[1:], strict=False):
            assert s1 >= e0 - 1e-9, key


def test_counters(fx, doc):
    _, ex = fx
    c = Counter(e["name"] for e in doc["traceEvents"] if e["ph"] == "C")
    assert c == ex.n_counters
    hbm = [e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "hbm_gbps"]
    assert {e["pid"] for e in hbm} == {DEVICE_PID}
    occ = [e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "mainloop.stages_full"]
    assert {e["pid"] for e in occ} == {0, 1}
    assert max(e["args"]["value"] for e in occ) <= 2


def test_occupancy_is_derived_when_the_trace_has_no_counter(fx):
    tr, _ = fx
    bare = Trace(tr.meta)
    cols = tr.columns()
    bare.extend_rows(zip(*(cols[k].tolist() for k in COLUMNS), strict=True))
    d = to_perfetto(bare)
    assert validate_chrome_trace(d) == []
    occ = [e for e in d["traceEvents"] if e["ph"] == "C"]
    assert {e["name"] for e in occ} == {"mainloop.stages_held (derived)"}
    assert {e["pid"] for e in occ} == {0, 1}
    assert max(e["args"]["value"] for e in occ) == 2 and occ[-1]["args"]["value"] == 0


def test_select_sms_and_window(fx):
    tr, ex = fx
    d = to_perfetto(tr, sms=[1])
    assert validate_chrome_trace(d) == []
    assert {e["pid"] for e in _spans(d)} == {1}
    assert Counter(e["cat"] for e in _spans(d)) == Counter(
        {k: v for (sm, k), v in ex.counts_by_sm.items() if sm == 1})
    assert not [e for e in d["traceEvents"] if e["ph"] == "C" and e["pid"] == 0]
    d = to_perfetto(tr, t_window_ns=(1000.0, 1500.0))
    assert validate_chrome_trace(d) == []
    assert _spans(d) and all(e["ts"] <= 1.5 and e["ts"] + e.get("dur", 0) >= 1.0 for e in _spans(d))
    occ = [e for e in d["traceEvents"] if e["ph"] == "C" and e["name"] == "mainloop.stages_full"]
    assert min(e["ts"] for e in occ) == pytest.approx(1.0)   # value carried into the window
    with pytest.raises(SelectionError, match="SM 9"):
        to_perfetto(tr, sms=[9])
    with pytest.raises(SelectionError, match="empty"):
        to_perfetto(tr, t_window_ns=(10.0, 5.0))
    with pytest.raises(SelectionError, match="max_events"):
        to_perfetto(tr, max_events=10)


def test_write_plain_and_gzip(fx, tmp_path):
    tr, ex = fx
    p = write_perfetto(tr, tmp_path / "t.json", sms=[0])
    d = json.loads(p.read_text())
    assert validate_chrome_trace(d) == [] and {e["pid"] for e in _spans(d)} == {0}
    g = write_perfetto(tr, tmp_path / "t.json.gz")
    with gzip.open(g, "rt") as f:
        d2 = json.load(f)
    assert len(_spans(d2)) == sum(ex.counts.values())


def test_merge_two_runs_side_by_side(fx):
    tr, _ = fx
    tr2, _ = make_sm100_trace(stages=3)
    d = merge_perfetto((tr, "simulated"), (tr2, "measured"))
    assert validate_chrome_trace(d) == []
    procs = set(_names(d, "process_name").values())
    assert "simulated: SM 0 (cluster 0, CTA 0)" in procs and "measured: SM 0 (cluster 0, CTA 0)" in procs


def test_sm90_role_order():
    d = to_perfetto(make_sm90_trace())
    assert validate_chrome_trace(d) == []
    warps = [n for (_, _), n in sorted(_names(d, "thread_name").items()) if " · " not in n]
    assert warps == ["MainloopLoad", "EpilogueLoad", "Consumer0", "Consumer1"]


@pytest.mark.parametrize("bad, msg", [
    ([], "top level"),
    ({"events": []}, "traceEvents"),
    ({"traceEvents": [{"ph": "Q", "name": "x", "pid": 0, "tid": 0, "ts": 0}]}, "unknown ph"),
    ({"traceEvents": [{"ph": "X", "name": "x", "pid": "0", "tid": 0, "ts": 0, "dur": 1}]}, "integers"),
    ({"traceEvents": [{"ph": "X", "name": "x", "pid": 0, "tid": 0, "ts": 0, "dur": -1}]}, "dur"),
    ({"traceEvents": [{"ph": "C", "name": "c", "pid": 0, "tid": 0, "ts": 0, "args": {"v": "a"}}]}, "numbers"),
    ({"traceEvents": [{"ph": "X", "name": "x", "pid": 0, "tid": 0, "ts": 0, "dur": 1}]}, "no process_name"),
    ({"traceEvents": [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "p"}},
                      {"ph": "M", "name": "thread_name", "pid": 0, "tid": 0, "args": {"name": "t"}},
                      {"ph": "X", "name": "a", "pid": 0, "tid": 0, "ts": 0, "dur": 2},
                      {"ph": "X", "name": "b", "pid": 0, "tid": 0, "ts": 1, "dur": 2}]}, "without nesting"),
])
def test_validator_rejects(bad, msg):
    errs = validate_chrome_trace(bad)
    assert errs and any(msg in e for e in errs), errs


# -- a small simulated GEMM (the lead's engine) ----------------------------------------------
SIM_CONFIGS = [
    {},                                                                  # 512x512x256, 2-SM MMA, 2x1 cluster
    dict(m=2048, n=2048, k=256, use_2sm=False, cluster_m=1, mma_tile_m=128, mma_tile_n=128),
]


@pytest.mark.parametrize("kw", SIM_CONFIGS, ids=["2sm-512", "1sm-2048"])
def test_simulated_gemm_span_counts_match_the_work(kw):
    from trace_fixtures import simulated

    res = simulated(**kw)
    assert res.ok
    cfg = res.config
    d = to_perfetto(res.trace)
    assert validate_chrome_trace(d) == []      # includes: no partial overlap on any thread
    got = Counter(e["cat"] for e in _spans(d))
    tiles, k_tiles, pair = cfg.num_output_tiles, cfg.k_tiles, cfg.atom_thr_m
    assert got["mma"] == tiles * k_tiles                         # MMA K-blocks on the leader CTAs
    assert got["tma_load"] == tiles * pair * k_tiles             # each CTA of a pair loads its half
    assert got["epilogue"] == tiles * pair * cfg.epi_subtiles    # every CTA stores its rows
    assert got["tma_store"] == got["epilogue"]
    assert got["clc_query"] == res.clc_queries
    assert got == Counter(res.trace.columns()["kind"].tolist())
    # every MMA K-block names its k and stage, every wait its barrier
    mma = [e for e in _spans(d) if e["cat"] == "mma"]
    assert {e["args"]["k_block"] for e in mma} == set(range(k_tiles))
    assert all(e["name"].startswith("MMA k=") and "[stage " in e["name"] for e in mma)
    assert all(e["name"].startswith("wait ") and e["args"]["barrier"] for e in _spans(d) if e["cat"] == "wait")
    hbm = [e for e in d["traceEvents"] if e["ph"] == "C" and e["name"] == "hbm_gbps"]
    assert hbm and {e["pid"] for e in hbm} == {DEVICE_PID}
    # stage occupancy per SM: the model's counter, or derived from the spans; never above the stages
    occ = [e for e in d["traceEvents"] if e["ph"] == "C" and e["name"].startswith("mainloop.stages")]
    assert {e["pid"] for e in occ} == {int(s) for s in set(res.trace.columns()["sm"].tolist())}
    assert 0 <= min(e["args"]["value"] for e in occ) and max(e["args"]["value"] for e in occ) <= cfg.mainloop_stages
