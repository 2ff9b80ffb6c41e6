"""The workspace rates of the stream-K fixup: how the issue time is composed, and the SM90 twin's
rate curves re-derived from the committed traces of its C_FIXUP records."""

from pathlib import Path

import pytest

from simulator.kernels.fixup import WORKSPACE_BYTES_PER_CLK, RateCurve, WorkspaceRates
from simulator.kernels.sm90_tma_ws import (
    RED_STORE_RATIO_BUSY,
    RED_STORE_RATIO_QUIET,
    SM90_WORKSPACE_LOAD,
    SM90_WORKSPACE_RATES,
    SM90_WORKSPACE_RED,
    SM90_WORKSPACE_REDUCE,
    SM90_WORKSPACE_STORE,
)
from simulator.machine.constants import Constant

RAW = Path(__file__).resolve().parents[1] / "validation" / "results" / "fixup_traces"


def _k(name: str, value: float) -> Constant:
    return Constant(name, value, "B/clk/SM", "test", "estimate")


def test_a_rate_curve_is_linear_between_its_points_and_flat_past_them():
    c = RateCurve(((0, _k("q", 40.0)), (100, _k("b", 20.0))))
    assert (c.at(0), c.at(50), c.at(100), c.at(-3), c.at(132)) == (40.0, 30.0, 20.0, 40.0, 20.0)
    assert c.contended and not RateCurve.flat(_k("f", 9.0)).contended
    assert RateCurve.flat(_k("f", 9.0)).at(77) == 9.0


def test_issue_cycles_pick_the_op_s_curve_at_the_sms_loading():
    st, ld = RateCurve.flat(_k("s", 20.0)), RateCurve.flat(_k("l", 80.0))
    rmw = RateCurve(((0, _k("r0", 50.0)), (100, _k("r1", 25.0))))
    rates = WorkspaceRates(st, ld, reduce=rmw)
    assert rates.issue_cycles(8000, final=True, middle=False) == 100.0        # the final split reads
    assert rates.issue_cycles(8000, final=False, middle=False) == 400.0       # the first split stores
    assert rates.issue_cycles(8000, final=False, middle=True) == 320.0        # deterministic: read-add-write
    assert rates.issue_cycles(8000, final=False, middle=True, loading=100) == 640.0
    assert rates.issue_cycles(8000, final=False, middle=True, deterministic=False) == 400.0   # red: store rate
    red = WorkspaceRates(st, ld, reduce=rmw, red=RateCurve(((0, _k("a0", 10.0)), (100, _k("a1", 5.0)))))
    assert red.issue_cycles(8000, final=False, middle=True, deterministic=False, loading=100) == 1600.0
    assert red.issue_cycles(8000, final=False, middle=False, deterministic=False) == 400.0   # first split stores
    assert rates.contended and not WorkspaceRates().contended
    assert WorkspaceRates().constants() == (WORKSPACE_BYTES_PER_CLK,)
    assert [c.name for c in rates.constants()] == ["s", "l", "r0", "r1"]


def test_sm90_rate_curves_are_the_pooled_trace_points():
    """The SM90 curves' points equal what validation.fixup_contention derives from the committed raw dumps
    (the H200's records pooled: quiet and busy medians), and each falls as more SMs load."""
    pytest.importorskip("simpy")
    from validation.fixup_contention import curves

    raws = sorted(RAW.glob("raw_*.npz"))
    assert raws, "no committed fixup traces"
    cur = curves(raws)["NVIDIA H200"]
    for op, curve in (("fixup_store", SM90_WORKSPACE_STORE), ("fixup_load", SM90_WORKSPACE_LOAD),
                      ("fixup_reduce", SM90_WORKSPACE_REDUCE)):
        pts = [(round(cur[op][w]["loaders"]), cur[op][w]["rate"]) for w in ("quiet", "busy")]
        assert [(n, c.value) for n, c in curve.points] == pts
        assert curve.at(0) > curve.at(132)
    assert SM90_WORKSPACE_RATES.reduce is SM90_WORKSPACE_REDUCE and SM90_WORKSPACE_RATES.red is SM90_WORKSPACE_RED


def test_sm90_red_curve_is_the_store_curve_times_the_microbenchmark_s_red_to_store_ratio():
    """The nondeterministic split's atomic adds: at each end of the store curve, the store rate times the
    committed H100 v3i run's red / store rate at 0 and 124 SMs loading (in the traces' units, as
    validation.fixup_contention tables them); alone about the store rate, slower under load, and labelled
    ``chosen`` (added after the nondeterministic rows' errors were seen)."""
    from validation.fixup_contention import microbench_lines

    v3i = RAW.parent / "h100_microbench_v3i.json"
    rate = {}
    for line in microbench_lines([v3i]):
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 7 and cells[1] in ("store", "red") and cells[3] == "no":
            rate[(cells[1], int(cells[2]))] = float(cells[4])
    assert RED_STORE_RATIO_QUIET == (rate[("red", 0)], rate[("store", 0)])
    assert RED_STORE_RATIO_BUSY == (rate[("red", 124)], rate[("store", 124)])
    for (n, red), (m, st), (r, s) in zip(SM90_WORKSPACE_RED.points, SM90_WORKSPACE_STORE.points,
                                         (RED_STORE_RATIO_QUIET, RED_STORE_RATIO_BUSY), strict=True):
        assert n == m and red.value == round(st.value * r / s, 1) and red.kind == "chosen"
    assert SM90_WORKSPACE_RED.at(0) > SM90_WORKSPACE_STORE.at(0) and SM90_WORKSPACE_RED.at(131) < SM90_WORKSPACE_STORE.at(131)


def test_the_16_byte_fixup_traces_pair_with_the_one_word_ones_and_are_not_simulated_as_them():
    """The H100 traces of the same three launches with each fixup: rates grouped by fixup_vec, a pair per
    launch and op, and the 16-byte launches measured only (the model has the one-word fixup alone)."""
    pytest.importorskip("simpy")
    from validation.fixup_traces import compare, derived_rates, vec_pairs

    raws = sorted((RAW.parent / "fixup_traces_h100").glob("raw_*.npz"))
    rows = [compare(p) for p in raws]
    assert sorted(r["fixup_vec"] for r in rows) == [1, 1, 1, 4, 4, 4]
    for r in rows:
        assert (r["kernel_us_simulated"] is None) == (r["fixup_vec"] == 4)
        assert (r["model_refuses"] is not None) == (r["fixup_vec"] == 4)
        assert "fixup_vec" in (r["model_refuses"] or "fixup_vec")
    one, four = derived_rates(rows, 1), derived_rates(rows, 4)
    assert len(one["launches"]) == len(four["launches"]) == 3 and one["devices"] == ["NVIDIA H100 80GB HBM3"]
    pairs = [line for line in vec_pairs(rows) if line.startswith("| 128x")]
    assert len(pairs) == 9                                   # 3 launches x store, reduce, load
    assert all("_fv4" not in line.split("|")[1] for line in pairs)


def test_a_measured_config_the_model_lacks_is_refused_by_name():
    from simulator.errors import ConfigError
    from validation.compare import sim_config_from_measured

    cfg = {"tile_m": 128, "tile_n": 128, "tile_k": 64, "cluster_m": 1, "cluster_n": 1, "schedule": "cooperative",
           "mainloop_stages": None, "raster": "m", "swizzle": 1, "epilogue_tile_n": 32, "epilogue_store_stages": 4,
           "instrument": 1, "instrument_roles": "all", "decomposition": "split_k", "splits": 8,
           "reduction": "deterministic"}
    meta = {"problem": {"m": 512, "n": 512, "k": 32768}, "dtype": "fp16"}
    assert sim_config_from_measured({**meta, "config": {**cfg, "fixup_vec": 1}}).splits == 8
    with pytest.raises(ConfigError, match=r"\['fixup_vec'\] \(fixup_vec=4\): not in the SM90 model's hardware fields"):
        sim_config_from_measured({**meta, "config": {**cfg, "fixup_vec": 4}})


def test_fixup_contention_counts_other_sms_loading_during_each_record():
    """Every first-warpgroup fixup record of a committed trace is counted once, its loaders are other SMs
    (between 0 and 131 of 132) and its quiet/busy split adds up; the split-K 8 launch at 512x512x32768 stores
    while no SM loads (its stores come after every unit's mainloop)."""
    pytest.importorskip("simpy")
    from validation.fixup_contention import BUSY, QUIET, record_rates, summarise
    from validation.fixup_traces import load_raw, measured_ops

    raw = RAW / "raw_128x128x64_c1x1_rm_sw1_e32_ds8_trace-tile_fp16_512x512x32768.npz"
    meta, recs = record_rates(raw)
    ops = measured_ops(*load_raw(raw))
    for op, o in ops.items():
        assert 2 * sum(1 for k, _, _ in recs if k == op) == o["records"]      # both warpgroups, one counted
    assert all(0.0 <= lo <= 131.0 + 1e-9 and rate > 0 for _, lo, rate in recs)
    rows = summarise([raw])
    store = next(r for r in rows if r["op"] == "fixup_store")
    assert store["loaders_median"] < QUIET and store["quiet_records"] + store["busy_records"] <= store["records"]
    assert QUIET < BUSY


def test_microbenchmark_rows_sit_beside_the_model_curve_in_the_trace_s_units(tmp_path):
    """A v3i result (here a made-up one) is tabled in the traces' terms (bytes over the round to the fence less
    the model's fixed part; a read-add-write moves its slice twice) beside its issue rate and the model's curve
    at the same SMs loading; rows of other slices or SM counts are left out; no run, no table."""
    import json

    from validation.fixup_contention import microbench_lines
    from validation.fixup_traces import fixed_cycles

    assert microbench_lines([]) == []
    fixed = fixed_cycles()
    row = {"n_ws": 8, "nacc": 64, "footprint": "l2", "pace": 0, "slice_bytes_per_sm": 65536,
           "cycles_fenced_median": fixed + 4096, "cycles_issued_median": 1024}
    doc = {"meta": {"command": "python -m validation.microbench.run --suite v3i", "device": {"name": "GPU"},
                    "date_utc": "today"},
           "results": {"fixup_l2": {"rows": [{**row, "op": "rmw", "n_load": 64},
                                             {**row, "op": "red", "n_load": 0, "pace": 340},
                                             {**row, "op": "store", "n_load": 0, "nacc": 128}]}}}
    path = tmp_path / "gpu_microbench_v3i.json"
    path.write_text(json.dumps(doc))
    lines = microbench_lines([path])
    assert any(line.startswith("`python -m validation.microbench.run --suite v3i` on the GPU") for line in lines)
    assert [line for line in lines if line.startswith("| GPU | r")] == [
        f"| GPU | rmw | 64 | no | 32.0 | 128.0 | {SM90_WORKSPACE_REDUCE.at(64):.1f} |",
        f"| GPU | red | 0 | every 340 clk | 16.0 | 64.0 | {SM90_WORKSPACE_RED.at(0):.1f} |"]


def test_a_launch_s_phases_are_its_load_ends_and_its_last_consumer_tile():
    """Loads end: the load warp's tile records (median and last); span: the last consumer tile's end; tail: the
    span after the median loads end; all from the launch's first record. Other roles' and kinds' records count
    only for the first record."""
    import numpy as np

    from simulator.engine.trace import COLUMNS, Trace
    from validation.fixup_traces import phases

    def trace(cols):
        n = len(cols["role"])
        full = {c: np.asarray(cols[c]) if c in cols else np.zeros(n) for c in COLUMNS}
        return Trace.from_columns({}, full)

    rows = [("MainloopLoad", "tile", 1000.0, 11000.0), ("MainloopLoad", "tile", 1000.0, 13000.0),
            ("MainloopLoad", "tile", 1000.0, 21000.0), ("Consumer0", "tile", 1000.0, 30000.0),
            ("Consumer1", "tile", 1000.0, 31000.0), ("Consumer0", "fixup_load", 25000.0, 40000.0),
            ("MainloopLoad", "prologue", 0.0, 500.0)]
    cols = {"role": [r[0] for r in rows], "kind": [r[1] for r in rows], "start_ns": [r[2] for r in rows],
            "end_ns": [r[3] for r in rows]}
    got = phases(trace(cols))
    assert got == {"loads_end_median_us": 13.0, "loads_end_last_us": 21.0, "span_us": 31.0, "tail_us": 18.0}
    assert phases(trace({k: v[-2:] for k, v in cols.items()})) == {}


def test_a_handoff_counts_only_a_split_that_was_waiting_when_its_peer_added_to_the_flag():
    """Per tile and warpgroup, in the order the flag waits ended: the reduce waited from before the store's end to
    after it (a handoff: its wait end minus the store's end, in cycles); the load started after the reduce had
    ended (no wait on it: not a handoff); another tile's record never pairs with these."""
    import numpy as np

    from simulator.engine.trace import COLUMNS, Trace
    from validation.fixup_traces import handoffs

    rows = [  # (tile_m, kind, barrier, start ns, end ns)
        (0, "fixup_store", "", 0.0, 1000.0), (0, "fixup_reduce", "", 500.0, 2000.0), (0, "wait", "fixup", 500.0, 1300.0),
        (0, "fixup_load", "", 2500.0, 3000.0), (0, "wait", "fixup", 2500.0, 2600.0), (1, "fixup_load", "", 900.0, 5000.0),
        (1, "wait", "fixup", 900.0, 4000.0)]
    cols = {"tile_m": [r[0] for r in rows], "kind": [r[1] for r in rows], "barrier": [r[2] for r in rows],
            "start_ns": [r[3] for r in rows], "end_ns": [r[4] for r in rows], "role": ["Consumer0"] * len(rows)}
    full = {c: np.asarray(cols[c]) if c in cols else np.zeros(len(rows), int) for c in COLUMNS}
    assert handoffs(Trace.from_columns({}, full), clock_ghz=2.0) == [600.0]
