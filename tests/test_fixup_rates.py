"""The workspace rates of the stream-K fixup: how the issue time is composed, and the SM90 twin's
rates re-derived from the committed traces of its C_FIXUP records."""

import statistics
from pathlib import Path

import pytest

from simulator.kernels.fixup import WORKSPACE_BYTES_PER_CLK, WorkspaceRates
from simulator.kernels.sm90_tma_ws import SM90_WORKSPACE_LOAD, SM90_WORKSPACE_RATES, SM90_WORKSPACE_STORE
from simulator.machine.constants import Constant

RAW = Path(__file__).resolve().parents[1] / "validation" / "results" / "fixup_traces"


def test_issue_cycles_store_load_and_read_modify_write():
    st = Constant("s", 20.0, "B/clk/SM", "test", "estimate")
    ld = Constant("l", 80.0, "B/clk/SM", "test", "estimate")
    rmw = WorkspaceRates(st, ld, read_modify_write=True)
    assert rmw.issue_cycles(8000, final=True, middle=False) == 100.0       # the final split reads
    assert rmw.issue_cycles(8000, final=False, middle=False) == 400.0      # the first split stores
    assert rmw.issue_cycles(8000, final=False, middle=True) == 500.0       # a middle split reads and writes
    atomics = WorkspaceRates(st, ld)
    assert atomics.issue_cycles(8000, final=False, middle=True) == 400.0   # red.global.add: one pass
    assert WorkspaceRates().constants() == (WORKSPACE_BYTES_PER_CLK,)
    assert rmw.constants() == (st, ld)


def test_sm90_rates_are_the_traces_medians():
    """The SM90 constants equal what validation.fixup_traces derives from the committed raw dumps."""
    pytest.importorskip("simpy")
    from validation.fixup_traces import load_raw, measured_ops

    raws = sorted(RAW.glob("raw_*.npz"))
    assert raws, "no committed fixup traces"
    rates = {"fixup_store": [], "fixup_load": []}
    for p in raws:
        ops = measured_ops(*load_raw(p))
        for op in rates:
            if op in ops:
                rates[op].append(ops[op]["measured_bytes_per_clk_per_sm"])
    assert len(rates["fixup_store"]) == len(rates["fixup_load"]) == 6      # the six launches with splits
    assert round(statistics.median(rates["fixup_store"]), 1) == SM90_WORKSPACE_STORE.value
    assert round(statistics.median(rates["fixup_load"]), 1) == SM90_WORKSPACE_LOAD.value
    assert SM90_WORKSPACE_RATES.read_modify_write
