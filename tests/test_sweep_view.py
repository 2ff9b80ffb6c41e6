"""Sweep and tune rows as a table and a ranking chart (simulator/views/sweep_view.py), and several runs
side by side (simulator.views.report.format_side_by_side)."""

from __future__ import annotations

from dataclasses import asdict

import matplotlib
import pytest

from simulator.engine.run import simulate
from simulator.engine.sweep import Row
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec
from simulator.views.report import format_side_by_side
from simulator.views.sweep_view import BOTTLENECK_COLORS, plot_ranking, rows_table


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    matplotlib.pyplot.close("all")


def _rows() -> list[Row]:
    def cfg(tn):
        return asdict(Sm100GemmConfig(mma_tile_n=tn))
    return [Row(0, cfg(128), "b200", time_us=30.0, tflops=100.0, bottleneck="L2"),
            Row(1, cfg(256), "b200", time_us=20.0, tflops=150.0, bottleneck="tensor core"),
            Row(2, cfg(64), "b200", status="error", error="can_implement: no"),
            Row(3, cfg(192), "b200", time_us=25.0, tflops=120.0, bottleneck="latency")]


def test_rows_table_in_input_order_or_by_time_with_errors_last():
    text = rows_table(_rows())
    assert [ln.split()[0] for ln in text.splitlines()[1:]] == ["0", "1", "2", "3"]
    ranked = rows_table(_rows(), by_time=True).splitlines()
    assert [ln.split()[0] for ln in ranked[1:]] == ["1", "3", "0", "2"]
    assert "256x256" in ranked[1] and ranked[4].endswith("can_implement: no")
    assert len(rows_table(_rows(), by_time=True, top=2).splitlines()) == 3


def test_ranking_bars_fastest_first_coloured_by_bottleneck(tmp_path):
    fig = plot_ranking(_rows(), path=tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 5_000
    ax = fig.get_axes()[0]
    bars = ax.patches
    assert [b.get_width() for b in bars] == [20.0, 25.0, 30.0]
    want = [BOTTLENECK_COLORS[w] for w in ("tensor core", "latency", "L2")]
    assert [matplotlib.colors.to_hex(b.get_facecolor()) for b in bars] == [w.lower() for w in want]
    assert "(1 without a time: errors or pruned)" in ax.get_title(loc="left")
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["tensor core", "latency", "L2"]
    assert len(plot_ranking(_rows(), top=1).get_axes()[0].patches) == 1


def test_ranking_refuses_rows_without_a_time():
    with pytest.raises(ValueError, match="none of the 1 row"):
        plot_ranking([_rows()[2]])


def test_side_by_side_has_one_column_per_run_with_its_numbers():
    b200 = ArchSpec.b200().with_overrides({"sm_count": 16})
    h200 = ArchSpec.h200().with_overrides({"sm_count": 16})
    p = dict(m=1024, n=1024, k=512)
    runs = {"B200": simulate(Sm100GemmConfig(**p), b200), "H200": simulate(Sm90GemmConfig(**p), h200)}
    text = format_side_by_side(runs)
    lines = text.splitlines()
    assert lines[0].split() == ["B200", "H200"]
    row = {ln[:20].strip(): ln[20:].split("  ") for ln in lines[1:11]}
    times = [c.strip() for c in row["predicted time"] if c.strip()]
    assert times == [f"{r.time_ns / 1e3:.2f} us" for r in runs.values()]
    from simulator.engine.bottleneck import classify
    assert f"  B200: {classify(runs['B200']).detail}" in lines
    assert any(ln.startswith("  H200: coop 128x256") for ln in lines)
    assert "predicted power" not in text
    runs["H200 predicted"] = simulate(Sm90GemmConfig(**p), h200, clock="predicted")
    power = next(ln for ln in format_side_by_side(runs).splitlines() if ln.startswith("predicted power"))
    pred = runs["H200 predicted"].clock_prediction
    assert power.split()[2:4] == ["-", "-"] and power.endswith(f"{pred['power_w']:.0f} W, {pred['limited_by']}")
