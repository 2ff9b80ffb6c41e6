"""Plots (simulator/views/plots.py) and the ``wsim plot`` command (simulator/views/plot_cli.py)."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_rgba
from trace_fixtures import make_sm90_trace, make_sm100_trace

from simulator.views import plots
from simulator.views.breakdown import SelectionError
from simulator.views.plot_cli import main as plot_main
from simulator.views.plot_cli import parse_window
from simulator.views.run_args import parse_sm_list


@pytest.fixture(scope="module")
def fx():
    return make_sm100_trace()


@pytest.fixture(scope="module")
def long_fx():
    return make_sm100_trace(tiles_per_sm=30)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    matplotlib.pyplot.close("all")


def _legend_texts(fig):
    out = []
    for leg in [*fig.legends, *(a.get_legend() for a in fig.get_axes())]:
        if leg is not None:
            out += [t.get_text() for t in leg.get_texts()]
    return out


def _ytick_texts(ax):
    return [t.get_text() for t in ax.get_yticklabels()]


def test_backend_is_agg():
    assert matplotlib.get_backend().lower() == "agg"


def test_timeline_axes_rows_and_legend(fx, tmp_path):
    tr, ex = fx
    fig = plots.plot_timeline(tr, path=tmp_path / "t.png")
    (ax,) = fig.get_axes()
    assert ax.get_xlabel() == "time (µs)"
    assert ax.get_xlim() == pytest.approx((0.0, ex.end_ns / 1e3))
    assert "window 0.00–3.18 µs" in ax.get_title(loc="left")
    rows = [t for t in _ytick_texts(ax) if not t.startswith("in flight")]
    assert rows == ["SM 0 · Sched", "SM 0 · MainloopLoad", "SM 0 · MMA", "SM 0 · Epilogue",
                    "SM 1 · MainloopLoad", "SM 1 · MMA", "SM 1 · Epilogue"]
    lanes = [t for t in _ytick_texts(ax) if t.startswith("in flight")]
    assert lanes == ["in flight: TMA load ×2", "in flight: TMA store ×2"] * 2
    legend = _legend_texts(fig)
    for want in ("TMA load (in flight)", "MMA K-block", "epilogue subtile", "TMA store (in flight)",
                 "CLC query", "accumulator hand-off", "wait mainloop.full", "wait mainloop.empty",
                 "wait accumulator.full", "wait clc_throttle.full"):
        assert want in legend
    # waits wide enough carry their barrier's name, K-blocks their index
    texts = [t.get_text() for t in ax.texts]
    assert "accumulator.full" in texts and "mainloop.empty" in texts and "k0" in texts
    png = (tmp_path / "t.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_timeline_colours_match_the_legend(fx):
    fig = plots.plot_timeline(fx[0])
    leg = fig.get_axes()[0].get_legend()
    by_label = {t.get_text(): h for t, h in zip(leg.get_texts(), leg.legend_handles, strict=True)}
    assert to_rgba(by_label["MMA K-block"].get_facecolor()) == to_rgba(plots.KIND_COLORS["mma"])
    assert by_label["wait mainloop.full"].get_hatch() == "////"
    assert by_label["wait mainloop.empty"].get_hatch() == "\\\\\\\\"
    # a wait takes its pipeline's colour, lightened
    face = np.array(to_rgba(by_label["wait mainloop.full"].get_facecolor())[:3])
    assert np.allclose(face, plots.barrier_style("mainloop.full")["facecolor"])
    assert face.mean() > np.mean(matplotlib.colors.to_rgb(plots.KIND_COLORS["tma_load"]))


def test_timeline_selection(fx):
    tr, _ = fx
    fig = plots.plot_timeline(tr, sms=[1], window_ns=(1000.0, 2000.0))
    ax = fig.get_axes()[0]
    assert all(t.startswith("SM 1") or t.startswith("in flight") for t in _ytick_texts(ax))
    assert ax.get_xlim() == pytest.approx((1.0, 2.0))
    with pytest.raises(SelectionError, match="SM 5"):
        plots.plot_timeline(tr, sms=[5])
    with pytest.raises(SelectionError, match="empty"):
        plots.plot_timeline(tr, window_ns=(2000.0, 1000.0))


def test_svg_output(fx, tmp_path):
    plots.plot_timeline(fx[0], path=tmp_path / "t.svg")
    assert (tmp_path / "t.svg").read_text().lstrip().startswith("<?xml")
    with pytest.raises(SelectionError, match=r"\.png, \.svg or \.pdf"):
        plots.plot_timeline(fx[0], path=tmp_path / "t.jpg")


def test_stage_occupancy(fx):
    fig = plots.plot_stage_occupancy(fx[0], "mainloop")
    axes = fig.get_axes()
    assert len(axes) == 2
    assert [a.get_ylabel() for a in axes] == ["SM 0", "SM 1"]
    assert axes[-1].get_xlabel() == "time (µs)"
    assert "mainloop.stages_full" in axes[0].get_title(loc="left")
    # the configured stage count is drawn as a dashed line
    assert any(tuple(line.get_ydata()) == (2, 2) for line in axes[0].get_lines())
    fig = plots.plot_stage_occupancy(fx[0], "accumulator", sms=[1])
    assert len(fig.get_axes()) == 1
    with pytest.raises(SelectionError, match="bogus"):
        plots.plot_stage_occupancy(fx[0], "bogus")


def test_stall_breakdown_bars(fx):
    fig = plots.plot_stall_breakdown(fx[0])
    (ax,) = fig.get_axes()
    assert _ytick_texts(ax) == ["Sched (1 SM)", "MainloopLoad", "MMA", "Epilogue"]
    assert ax.get_xlim() == (0.0, 100.0)
    assert ax.get_xlabel() == "share of the window (%)"
    legend = _legend_texts(fig)
    assert "wait mainloop.full" in legend and "idle (before first / after last span)" in legend
    # each role's main segments add up to 100 %
    widths = {}
    for p in ax.patches:
        y = round(p.get_y() + p.get_height() / 2, 2)
        if p.get_height() > 0.3:
            widths[y] = widths.get(y, 0.0) + p.get_width()
    assert len(widths) == 4 and all(w == pytest.approx(100.0) for w in widths.values())
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("work in flight") for t in texts)
    fig = plots.plot_stall_breakdown(fx[0], per_sm=True)
    assert _ytick_texts(fig.get_axes()[0])[0] == "SM 0 · Sched"


def test_compare_shares_the_time_axis(fx):
    tr, _ = fx
    tr3, _ = make_sm100_trace(stages=3)
    fig = plots.plot_compare(tr, tr3, labels=("2 stages", "3 stages"))
    a, b = fig.get_axes()
    assert a.get_shared_x_axes().joined(a, b)
    assert a.get_title(loc="left").startswith("2 stages") and b.get_title(loc="left").startswith("3 stages")
    assert a.get_xlim() == b.get_xlim()
    assert b.get_xlabel() == "time (µs)"
    assert "wait mainloop.full" in _legend_texts(fig)
    assert "2 stages vs 3 stages" in fig.get_suptitle()
    with pytest.raises(SelectionError, match="3 stages: SM 4"):
        plots.plot_compare(tr, make_sm100_trace(n_sms=5)[0], labels=("3 stages", "5 SMs"), sms=[4])


def test_default_windows_and_sms(fx, long_fx):
    tr, ex = fx
    assert plots.default_windows(tr) == {"whole run": (0.0, ex.end_ns)}
    assert plots.default_sms(tr) == [0, 1]
    lt, lex = long_fx
    w = plots.default_windows(lt)
    assert list(w) == ["start", "steady", "tail"]
    assert w["start"][0] == 0.0 and w["tail"][1] == pytest.approx(lex.end_ns)
    widths = {round(b - a, 6) for a, b in w.values()}
    assert len(widths) == 1 and widths.pop() < lex.end_ns / 3
    four = make_sm100_trace(n_sms=4, tiles_per_sm=2)[0]
    # first SM, its cluster peer, and the SM that finishes last (the slow-memory SM 3)
    assert plots.default_sms(four) == [0, 1, 3]


def test_overview_panels(long_fx, tmp_path):
    fig = plots.plot_overview(long_fx[0], tmp_path / "o.png")
    titles = [a.get_title(loc="left") for a in fig.get_axes()]
    assert [t.split(" · ")[0] for t in titles[:3]] == ["start", "steady", "tail"]
    assert any(t.startswith("mainloop stages full") for t in titles)
    assert any(t.startswith("accumulator stages full") for t in titles)
    assert any(t.startswith("HBM bandwidth") for t in titles)
    assert any(t.startswith("Where each role's time goes") for t in titles)
    assert (tmp_path / "o.png").stat().st_size > 50_000


def test_sm90_timeline():
    fig = plots.plot_timeline(make_sm90_trace())
    rows = [t for t in _ytick_texts(fig.get_axes()[0]) if not t.startswith("in flight")]
    assert rows == ["SM 0 · MainloopLoad", "SM 0 · EpilogueLoad", "SM 0 · Consumer0", "SM 0 · Consumer1"]


# -- CLI --------------------------------------------------------------------------------------
@pytest.fixture()
def saved(fx, tmp_path):
    p = tmp_path / "run.npz"
    fx[0].save(p)
    return p


@pytest.mark.parametrize("what, out", [("overview", "o.png"), ("timeline", "t.svg"), ("occupancy", "oc.png"),
                                       ("stalls", "s.png"), ("perfetto", "p.json")])
def test_cli_writes_each_kind(saved, tmp_path, capsys, what, out):
    rc = plot_main([str(saved), "--what", what, "-o", str(tmp_path / out), "--sms", "0,1"])
    assert rc == 0
    assert (tmp_path / out).stat().st_size > 0
    assert "wrote" in capsys.readouterr().out


def test_cli_compare_and_window(saved, tmp_path, capsys):
    rc = plot_main([str(saved), str(saved), "--labels", "a,b", "-o", str(tmp_path / "c.png")])
    assert rc == 0 and (tmp_path / "c.png").exists()
    rc = plot_main([str(saved), "--what", "timeline", "--window", "1:2us", "-o", str(tmp_path / "w.png")])
    assert rc == 0


@pytest.mark.parametrize("argv, needle", [
    (["{t}", "--what", "bogus"], "--what 'bogus'"),
    (["/nonexistent/run.npz"], "'/nonexistent/run.npz' does not exist"),
    (["{t}", "--sms", "0,9"], "SM 9 is not in the trace"),
    (["{t}", "--sms", "0,x"], "'x' is not an SM number"),
    (["{t}", "--what", "timeline", "--window", "5us:5us"], "is empty"),
    (["{t}", "--what", "timeline", "--window", "1ms:2ms"], "holds no spans"),
    (["{t}", "--what", "timeline", "--window", "soon"], "expected START:END"),
    (["{t}", "--what", "compare"], "needs two trace files"),
    (["{t}", "{t}", "--what", "timeline"], "takes one trace"),
    (["{t}", "--what", "perfetto", "-o", "x.png"], ".json or .json.gz"),
    (["{t}", "-o", "x.json"], ".png, .svg or .pdf"),
    (["{bad}"], "not a trace file"),
])
def test_cli_bad_input_is_one_line_and_exit_2(saved, tmp_path, capsys, argv, needle):
    bad = tmp_path / "bad.npz"
    bad.write_text("not numpy")
    argv = [a.format(t=saved, bad=bad) for a in argv]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "x.png")]
    rc = plot_main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and err.startswith("wsim plot: error:") and needle in err, err


def test_parse_helpers():
    assert parse_sm_list("0,2-4") == [0, 2, 3, 4]
    assert parse_sm_list("all") is None
    assert parse_window("2us:6us", (0, 1e4)) == (2000.0, 6000.0)
    assert parse_window("2:6us", (0, 1e4)) == (2000.0, 6000.0)
    assert parse_window(":500", (100.0, 1e4)) == (100.0, 500.0)
    assert parse_window("1.5µs:", (0, 1e4)) == (1500.0, 1e4)


def test_simulated_gemm_plots(tmp_path):
    from trace_fixtures import simulated

    tr = simulated().trace
    fig = plots.plot_timeline(tr)
    rows = [t for t in _ytick_texts(fig.get_axes()[0]) if not t.startswith("in flight")]
    assert rows[:4] == ["SM 0 · Sched", "SM 0 · MainloopLoad", "SM 0 · MMA", "SM 0 · Epilogue"]
    fig = plots.plot_overview(tr, tmp_path / "sim.png")
    assert (tmp_path / "sim.png").stat().st_size > 50_000
    fig = plots.plot_stage_occupancy(tr, "mainloop", sms=[0, 1])
    assert "derived from spans" in fig.get_axes()[0].get_title(loc="left") or \
        "stages_full" in fig.get_axes()[0].get_title(loc="left")


def test_sm_tiles_draws_every_tile_of_every_sm_and_shades_late_sms(tmp_path):
    from simulator import LateStart, simulate
    from simulator.kernels.sm100_config import Sm100GemmConfig
    from simulator.machine.arch import ArchSpec

    arch = ArchSpec.b200().with_overrides({"sm_count": 16})
    cfg = Sm100GemmConfig(m=2048, n=2048, k=512, tile_scheduler="static")   # 64 tiles, 2-SM: 8 halves per SM
    runs = [simulate(cfg, arch, trace=True), simulate(cfg, arch, trace=True, late_start=LateStart(4, 5_000.0))]
    fig = plots.plot_sm_tiles([r.trace for r in runs], ["on time", "late"], path=tmp_path / "tiles.png")
    assert (tmp_path / "tiles.png").stat().st_size > 10_000
    a, b = fig.get_axes()
    assert a.get_shared_x_axes().joined(a, b)
    assert a.get_title(loc="left") == "on time · 128 tiles of Epilogue, 8 per SM"
    assert b.get_title(loc="left").endswith("8 per SM · hatched: SMs busy elsewhere until 5.0 µs")
    assert len([p for p in a.patches if not p.get_hatch()]) == 128
    late = [p for p in b.patches if p.get_hatch()]
    assert sorted(round(p.get_y() + p.get_height() / 2) for p in late) == [12, 13, 14, 15]
    assert all(p.get_width() == pytest.approx(5.0) for p in late)
    ends = [max(p.get_x() + p.get_width() for p in ax.patches) for ax in (a, b)]
    assert ends[1] > ends[0] + 4.5            # static: the late SMs' tiles end about the delay later


def test_sm_tiles_refuses_what_it_cannot_draw(fx):
    tr, _ = fx
    with pytest.raises(SelectionError, match="1 label"):
        plots.plot_sm_tiles([tr, tr], ["only one"])
    with pytest.raises(SelectionError, match="no tile spans of role 'Consumer0'"):
        plots.plot_sm_tiles(tr, role="Consumer0")
