"""benchmarks/tune_check.py: picks, regrets and ties; the candidates are ``--space hw``'s 96 and each has
a measured row; the default config maps to a measured twin config; the report formats (no simulation)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from simulator.machine.arch import ArchSpec

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("tune_check", ROOT / "benchmarks" / "tune_check.py")
tc = importlib.util.module_from_spec(_spec)
sys.modules["tune_check"] = tc
_spec.loader.exec_module(tc)


def test_pick_regret_and_ties():
    pred = [3.0, 1.0, 1.0, 2.0]
    meas = [10.0, 12.0, 11.0, 10.5]
    assert tc.pick(pred) == 1                      # first of the equal ones
    assert tc.ties(pred, 1) == 2
    assert tc.regret(meas, 1) == pytest.approx(1.2)
    assert tc.regret(meas, tc.pick(meas)) == 1.0


def test_every_hw_candidate_has_a_measured_row_and_the_default_maps_to_one():
    from hw_kernels.host import KernelConfig
    from simulator.kernels.space import (
        HW_DECOMPOSITIONS,
        HW_RAGGED_TILE_N,
        hw_kernel_fields,
        hw_space,
        make_space,
    )
    h200 = ArchSpec.h200()
    shapes = {k[1:]: v for k, v in tc.h200_shapes().items()}
    assert len(shapes) == 13
    names_hw = {KernelConfig(**{**f, "mainloop_stages": None}).name() for f in hw_space(HW_DECOMPOSITIONS[:1])}
    for (m, n, k), rows in shapes.items():
        measured = {r["config"].removesuffix(tc.SPAN_SUFFIX) for r in rows if r["kernel"] != "cublas"}
        cands = [c for c in make_space("hw", 90, m, n, k, "fp16", None).all_candidates(h200)
                 if c.decomposition == "data_parallel"      # the stream-K ones: the streamk phase's problems
                 and c.cta_tile_n not in HW_RAGGED_TILE_N]  # the ragged-N widths: the ragged_n phase's
        names = [KernelConfig(**hw_kernel_fields(c)).name() for c in cands]
        assert len(names) == len(set(names)) == 96 and set(names) == names_hw
        assert set(names) <= measured, (m, n, k)
        default, note = tc.default_twin_name(m, n, k, h200)
        assert default in names and "Sm90GemmConfig()" in note
        assert any(r["kernel"] == "cublas" for r in rows)


def test_report_formats():
    r = tc.ShapeResult("64x64x64", ["a", "b", "c"], [10.0, 11.0, 12.0],
                       {"wsim": [1.0, 2.0, 3.0], "roofline": [1.0, 1.0, 2.0]}, [100.0, 110.0, 120.0],
                       [10.0, 20.0, 30.0], clock=1.5, default=2, default_note="d", cublas_us=10.5, repeat_regret=1.001)
    text = "\n".join(tc.format_h200([r]))
    assert "| 64x64x64 | 1.500 | a | 0.00% (1) | 0.00% (2) | 20.00% | 1.050 | 0.875 | 1.050 | 1.000 |" in text
    assert "wsim tune's pick (wsim) is at least as fast as cuBLAS on 1 of 1 problems; the default config on 0" in text
    b = tc.ShapeResult("s", ["x", "y"], [5.0, 4.0], {"wsim": [2.0, 1.0], "wsim, shipped constants": [1.0, 2.0],
                                                      "gemm-model": [1.0, 2.0]})
    text = "\n".join(tc.format_b200([b]))
    assert "| s | y | 0.00% | 25.00% | 25.00% | 1.000 |" in text
