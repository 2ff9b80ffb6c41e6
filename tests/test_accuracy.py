"""wsim accuracy: metrics on common rows, constants made per fold (surrogate fit, derived ones),
the exact one-parameter fits, the cache key, a data set scored end to end at its fold's constants,
the command's checks, and (where the public data is present) the gemm-model B200 rows. CPU only."""

import math

import numpy as np
import pytest

from simulator.errors import ConfigError
from simulator.kernels.roofline import roofline
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec
from simulator.machine.clocks import SUSTAINED_CLOCKS, parse_clock, with_clock
from validation.accuracy import DataSet, Row, Score, quick_subset, spearman
from validation.accuracy.fitting import (
    DerivedConstant,
    FittedConstant,
    Surrogate,
    grid_fit,
    leave_one_shape_out,
    mape_offset,
    mape_scale,
    plan_folds,
)
from validation.accuracy.scoring import common_rows


# ------------------------------------------------------------------------------------ metrics
def test_spearman_and_score():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 2], [1, 1, 2]) == pytest.approx(1.0)        # ties averaged
    s = Score.of([110, 90, 100], [100, 100, 100])
    assert (s.n, s.mape, s.max_err, s.bias) == (3, pytest.approx(20 / 3), pytest.approx(10), pytest.approx(0))


def test_score_refuses_rows_a_predictor_lacks_and_common_rows_names_them():
    with pytest.raises(ValueError, match="common rows"):
        Score.of([np.nan, 100], [100, 100])
    keep, out = common_rows({"a": np.array([1.0, np.nan, 3.0]), "b": np.array([1.0, 2.0, np.nan])},
                            ["r0", "r1", "r2"], {"b": {2: "no estimate"}})
    assert keep.tolist() == [True, False, False]
    assert out == ["r1: a: no prediction", "r2: b: no estimate"]


# ------------------------------------------------------------------------- surrogate and folds
_TMA = FittedConstant("tma_load_bytes_per_clk_per_sm", "B/clk/SM", np.arange(60.0, 128.1, 4.0), "",
                      simulated=(72.0, 108.0), scale="inv")
_EPI = FittedConstant("epilogue_subtile_sync_cycles", "cycles", np.arange(200.0, 1400.1, 100.0), "",
                      simulated=(300.0, 1000.0))
_LAUNCH = FittedConstant("launch_overhead_ns", "ns", np.arange(0.0, 10_001.0, 500.0), "")


def _truth(bytes_, subtiles, tma, epi):
    """A kernel time exactly linear in 1/TMA rate and in the epilogue cost (what the surrogate assumes)."""
    return bytes_ / tma + subtiles * epi / 1e3


def _synthetic(shapes=6, per_shape=4, tma=90.0, epi=500.0, launch=3000.0):
    rng = np.random.default_rng(0)
    cfg, arch = Sm100GemmConfig(m=1024, n=1024, k=1024), ArchSpec.b200()
    b, s = rng.uniform(100, 5000, shapes * per_shape), rng.uniform(1, 50, shapes * per_shape)
    grid = np.array([[_truth(b, s, t, e) for e in _EPI.simulated] for t in _TMA.simulated])
    meas = _truth(b, s, tma, epi) + launch / 1e3
    rows = [Row("t", str(i), f"s{i // per_shape} c{i % per_shape}", f"s{i // per_shape}", "all", cfg, arch, float(m))
            for i, m in enumerate(meas)]
    return rows, Surrogate((_TMA, _EPI), grid)


def test_surrogate_is_exact_at_its_corners_and_linear_in_its_scales():
    rows, sur = _synthetic()
    allr = np.ones(len(rows), bool)
    for corner, (i, j) in zip(sur.corners(), [(0, 0), (0, 1), (1, 0), (1, 1)], strict=True):
        got = sur.kernel({k: np.array([v]) for k, v in corner.items()}, allr)[0]
        assert np.array_equal(got, sur.kernel_us[i, j])
    mid = sur.kernel({_TMA.name: np.array([90.0]), _EPI.name: np.array([650.0])}, allr)[0]
    b_over = (sur.kernel_us[1, 0] - sur.kernel_us[0, 0]) / (1 / 108 - 1 / 72)
    assert np.allclose(mid, sur.kernel_us[0, 0] + b_over * (1 / 90 - 1 / 72) + (sur.kernel_us[0, 1] - sur.kernel_us[0, 0]) / 2)


def test_grid_fit_recovers_the_constants_the_rows_were_made_with():
    rows, sur = _synthetic()
    meas = np.array([r.measured_us for r in rows])
    got = grid_fit((_LAUNCH, _TMA, _EPI), sur, None, meas, np.ones(len(rows), bool))
    assert got[_TMA.name] == pytest.approx(90.0, abs=0.5)
    assert got[_EPI.name] == pytest.approx(500.0, abs=15)
    assert got[_LAUNCH.name] == pytest.approx(3000.0, abs=100)


def test_every_fold_is_made_without_its_own_shape():
    """A derived constant (a median of a measured value) with one shape's values far off: the fold
    that holds that shape out never sees them, every other fold does."""
    rows, _ = _synthetic(shapes=4, per_shape=3)
    for r in rows:
        r.measured["x"] = 1000.0 if r.shape == "s0" else 1.0
    ds = DataSet("t", "t", "", rows, derived=(DerivedConstant("launch_overhead_ns", "ns",
                                                              lambda rs: max(r.measured["x"] for r in rs), ""),))
    plan = plan_folds(ds, rows, None)
    assert plan.all_rows["launch_overhead_ns"] == 1000.0
    assert plan.of("s0")["launch_overhead_ns"] == 1.0
    assert all(plan.of(s)["launch_overhead_ns"] == 1000.0 for s in ("s1", "s2", "s3"))


def test_one_parameter_fits_are_the_mape_optimum():
    rng = np.random.default_rng(1)
    pred, meas = rng.uniform(5, 100, 40), rng.uniform(5, 100, 40)
    b, s = mape_offset(pred, meas), mape_scale(pred, meas)

    def mape(p):
        return np.mean(np.abs(p / meas - 1))
    assert all(mape(pred + b) <= mape(pred + x) + 1e-12 for x in np.linspace(0, 100, 2001))
    assert all(mape(pred * s) <= mape(pred * x) + 1e-12 for x in np.linspace(0.1, 10, 2001))
    cv, params = leave_one_shape_out(mape_scale, lambda p, q: p * q, pred, meas, np.repeat(np.arange(8), 5))
    assert len(params) == 8 and np.isfinite(cv).all()
    assert params[0] == mape_scale(pred[5:], meas[5:])


def test_quick_subset_keeps_whole_shapes_within_budget_and_every_affordable_class():
    arch = ArchSpec.b200()
    cfg = Sm100GemmConfig(m=1024, n=1024, k=1024)
    rows = []
    for cls, costs in {"a": [5, 50], "b": [7, 9], "c": [500]}.items():
        for i, cost in enumerate(costs):
            for j in range(3):
                rows.append(Row("t", f"{cls}{i}{j}", "", f"{cls}{i}", cls, cfg, arch, 1.0, est_events=cost))
    q = quick_subset(rows, 70)       # shape costs: a0 15, a1 150, b0 21, b1 27, c0 1500
    shapes = {r.shape for r in q}
    assert shapes == {"a0", "b0", "b1"}                      # c0 alone exceeds the budget; a1 too
    assert all(sum(1 for r in q if r.shape == s) == 3 for s in shapes)


# ------------------------------------------------------------------------------------ roofline
def test_roofline_quantises_waves_and_takes_the_larger_bound():
    arch = ArchSpec.b200().with_overrides({"clock_ghz": 1.0})
    cfg = Sm100GemmConfig(m=256 * 74, n=256, k=4096, tile_scheduler="static")   # one full wave of 2x1 clusters
    one = roofline(cfg, arch)
    assert one.waves == 1 and one.bound == "compute"
    tile_ns = 2 * 128 * 256 * 4096 / (8192 * 1.0)
    assert one.compute_ns == pytest.approx(tile_ns)
    two = roofline(Sm100GemmConfig(m=256 * 74 + 256, n=256, k=4096, tile_scheduler="static"), arch)
    assert two.waves == 2 and two.compute_ns == pytest.approx(2 * tile_ns)
    mem = roofline(Sm100GemmConfig(m=8192, n=8192, k=64, tile_scheduler="static"), arch)
    assert mem.bound == "memory"
    assert mem.memory_ns == pytest.approx(Sm100GemmConfig(m=8192, n=8192, k=64).compulsory_bytes
                                          / arch.hbm_bytes_per_s.value * 1e9)
    sm90 = roofline(Sm90GemmConfig(m=4096, n=4096, k=4096), ArchSpec.h200())
    assert sm90.time_ns > 0 and sm90.waves >= 1


# -------------------------------------------------------------------------------------- clock
def test_clock_is_an_input():
    b = ArchSpec.b200()
    assert parse_clock("1.3") == 1.3 and parse_clock("1300MHz") == pytest.approx(1.3)
    assert parse_clock("max") == "max" and parse_clock(None) is None
    assert with_clock(b, "max") is b
    s = with_clock(b, "sustained")
    assert s.clock_ghz.value == SUSTAINED_CLOCKS["B200"].value
    assert "gemm-model" in s.clock_ghz.source and s.clock_ghz.kind == "override"
    h = with_clock(ArchSpec.h200(), "sustained")
    assert 1.2 < h.clock_ghz.value < 1.4 and "in-kernel" in h.clock_ghz.source
    assert with_clock(b, 1.5).clock_ghz.value == 1.5
    for bad in ("fast", "0", "-1", "nan", "20"):
        with pytest.raises(ConfigError, match="clock"):
            parse_clock(bad)


# ------------------------------------------------------------------------- gemm-model B200 rows
@pytest.fixture(scope="module")
def b200_rows():
    from validation.b200_data import GemmModelDataMissing, load_rows
    try:
        return load_rows()
    except GemmModelDataMissing as e:
        pytest.skip(f"gemm-model data absent (scripts/fetch_gemm_model.sh fetches it): {e}")


def test_gemm_model_rows_map_to_implementable_configs(b200_rows):
    assert len(b200_rows) == 640
    arch = ArchSpec.b200().with_overrides({"clock_ghz": 1.3})
    for r in b200_rows:
        cfg = r.config()
        cfg.can_implement(arch)
        assert cfg.use_2sm and cfg.tile_scheduler == "static" and cfg.accumulator_stages == 2
        assert (cfg.mma_tile_m, cfg.mma_tile_n) == (r.mma_m, r.mma_n)
        assert cfg.k % 8 == 0 and cfg.n % 8 == 0 and cfg.k >= r.k
    padded = [r for r in b200_rows if r.k == 257]
    assert padded and all(r.config().k == 264 for r in padded)
    big = next(r for r in b200_rows if (r.mma_m, r.mma_n) == (256, 256))
    assert big.stage_counts() == (6, 4)          # 32 KiB stages; leftover SMEM -> 2 more C stages


def test_gemm_model_own_predictions_reproduce_its_published_error(b200_rows):
    from validation.b200_data import load_predictions
    pred = load_predictions("l2hit")
    err = [abs(pred[r.index] / r.runtime_us - 1) for r in b200_rows]
    assert 100 * np.mean(err) == pytest.approx(15.0, abs=0.1)     # gemm-model's own model: 15.0% on all 640 rows
    assert math.isfinite(max(err))


def test_simulate_and_cli_take_the_clock(capsys):
    from simulator.engine import simulate
    from wsim.cli import main
    cfg = Sm100GemmConfig(m=512, n=512, k=512)
    a = simulate(cfg, clock="max")
    b = simulate(cfg, clock=1.0)
    assert b.arch.clock_ghz.value == 1.0
    # the model counts cycles; the clock only converts them (HBM/L2 are bytes per second, so a
    # slower SM clock can only take fewer or equal cycles)
    assert b.cycles <= a.cycles * 1.0001
    assert b.time_ns - b.launch_overhead_ns == pytest.approx(b.cycles / 1.0)
    assert main(["simulate", "--m", "512", "--n", "512", "--k", "512", "--clock", "sustained"]) == 0
    out = capsys.readouterr().out
    assert "clock              1.3 GHz (sustained:" in out
    assert main(["simulate", "--m", "512", "--clock", "warp9"]) == 2
    assert "clock='warp9'" in capsys.readouterr().err


def test_accuracy_scatter_writes_a_log_log_png(tmp_path):
    from simulator.views.accuracy_plot import accuracy_scatter
    p = tmp_path / "acc.png"
    fig = accuracy_scatter([("a", [10, 100, 1000], [11, 90, 1000]), ("b", [5, 50], [5, np.nan])], p)
    assert p.stat().st_size > 1000
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [t.get_text().split(":")[0] for t in ax.get_legend().get_texts()][:2] == ["a", "b"]



# -------------------------------------------------------------------------------- cache key
def test_cache_key_covers_every_model_source_the_engine_and_the_versions(tmp_path, monkeypatch):
    import shutil

    from validation.accuracy import cache
    src = tmp_path / "simulator"
    shutil.copytree(cache.SOURCE_DIR, src, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    monkeypatch.setattr(cache, "SOURCE_DIR", src)
    monkeypatch.setattr(cache, "ROOT", tmp_path)
    base = cache.model_hash("fast")
    assert cache.model_hash("reference") != base
    for f in ("machine/arch.py", "kernels/sm100_tma_ws.pxd", "protocol/mbarrier.py", "views/report.py"):
        before = cache.model_hash("fast")
        with (src / f).open("a") as fh:
            fh.write("\n# changed\n")
        assert cache.model_hash("fast") != before, f
    parts = cache.key_parts("fast")
    assert {"python", "numpy", "simpy", "core", "cython", "engine"} <= set(parts)


def test_cache_key_changes_with_a_dependency_version(monkeypatch):
    from validation.accuracy import cache
    before = cache.model_hash("fast")
    real = cache._versions
    monkeypatch.setattr(cache, "_versions", lambda: {**real(), "simpy": "0.0"})
    assert cache.model_hash("fast") != before


def test_sim_cache_round_trips_and_skips_a_cut_line(tmp_path):
    from validation.accuracy.cache import SimCache, SimOutcome
    c = SimCache(tmp_path)
    c.put("k", SimOutcome(1.0, 2.0, 3, 0.1, "fast", True))
    with c.path.open("a") as f:
        f.write('["cut", {"cyc')
    again = SimCache(tmp_path)
    assert again.get("k") == SimOutcome(1.0, 2.0, 3, 0.1, "fast", True) and again.get("cut") is None


# ------------------------------------------------------------------- a data set end to end
def _tiny_h200(tmp_path):
    """Two small shapes x two configs of the SM90 model, 'measured' 10% above a launch of 3 us."""
    from validation.accuracy.datasets import H200_DERIVED
    rows = []
    base = ArchSpec.h200().with_overrides({"clock_ghz": 1.5}, origin="test clock")
    for m, n, k in ((256, 256, 512), (512, 256, 256)):
        for tile_n in (64, 128):
            cfg = Sm90GemmConfig(m=m, n=n, k=k, tile_n=tile_n, cluster_m=1, dtype_ab="fp16", dtype_c="fp16",
                                 dtype_d="fp16")
            shape = f"fp16 {m}x{n}x{k}"
            rows.append(Row("h200", f"{shape} {tile_n}", f"{shape} {tile_n}", shape, f"t{tile_n}", cfg, base,
                            20.0 + tile_n / 64, measured={"event_minus_span_us": 3.0 + (m == 512)}))
    return DataSet("h200", "tiny", "test", rows, derived=H200_DERIVED)


def test_a_data_set_is_scored_at_each_folds_constants_by_real_simulations(tmp_path):
    from simulator.engine import simulate
    from validation.accuracy import evaluate_dataset
    from validation.accuracy.cache import SimCache
    ds = _tiny_h200(tmp_path)
    res = evaluate_dataset(ds, ds.rows, "all", cache=SimCache(tmp_path), procs=1)
    assert res.keep.all() and res.left_out == []
    for i, r in enumerate(ds.rows):
        c = res.fold_constants(i)
        other = 4000.0 if r.shape.startswith("fp16 256") else 3000.0     # the other shape's median, in ns
        assert c == {"clock_ghz": 1.5, "launch_overhead_ns": other}
        sim = simulate(r.config, ArchSpec.h200().with_overrides(c))
        assert res.wsim_us[i] == sim.time_ns / 1e3                      # bit for bit
        roof = roofline(r.config, r.arch).time_ns / 1e3
        assert res.baselines["roofline"][i] == roof + other / 1e3        # the same launch term
    assert set(res.predictors()) >= {"wsim", "roofline", "roofline, own intercept"}
    assert res.plan.all_rows == {"launch_overhead_ns": 3500.0}


def test_a_failed_simulation_leaves_the_row_out_of_every_score(tmp_path, monkeypatch):
    from validation.accuracy import evaluate_dataset
    from validation.accuracy import simulate as simmod
    from validation.accuracy.cache import SimCache, SimOutcome
    ds = _tiny_h200(tmp_path)
    real = simmod._simulate_one

    def fail_first(args):
        key, job, engine = args
        if job.config.tile_n == 64 and job.config.m == 256:
            return key, SimOutcome(float("nan"), float("nan"), 0, 0.0, engine, False, "boom")
        return real(args)
    monkeypatch.setattr(simmod, "_simulate_one", fail_first)
    res = evaluate_dataset(ds, ds.rows, "all", cache=SimCache(tmp_path), procs=1)
    assert res.keep.tolist() == [False, True, True, True]
    assert res.left_out == ["fp16 256x256x512 64: wsim: the simulation failed: boom"]
    from validation.accuracy.report import scores
    assert {s.n for s in scores(res).values()} == {3}


def test_rows_a_baseline_cannot_predict_are_still_scored_for_wsim_apart(tmp_path):
    from dataclasses import replace as dc_replace

    from validation.accuracy import evaluate_dataset
    from validation.accuracy.cache import SimCache
    from validation.accuracy.report import _left_out_scored, format_dataset
    ds = _tiny_h200(tmp_path)
    res = evaluate_dataset(ds, ds.rows, "all", cache=SimCache(tmp_path), procs=1)
    assert _left_out_scored(res) == []                   # nothing left out: no section
    roof = res.baselines["roofline"].copy()
    roof[[0, 2]] = np.nan                                 # a baseline without a value for two rows
    cut = dc_replace(res, baselines={**res.baselines, "roofline": roof}, keep=np.array([False, True, False, True]))
    lines = _left_out_scored(cut)
    assert lines[0].startswith("wsim on the 2 rows left out") and "wave-quantised roofline" not in lines[2]
    e = np.abs(res.wsim_us[[0, 2]] / res.measured_us[[0, 2]] - 1).mean() * 100
    assert lines[-2].startswith("| all | 2 | ") and f"{e:.1f}%" in lines[-2]
    assert any(x.startswith("wsim on the 2 rows") for x in format_dataset(cut))


# ------------------------------------------------------------------------------- the command
@pytest.mark.parametrize("argv, message", [
    (["--budget", "5"], "--budget 5: applies to --quick"),
    (["--quick", "--data", "h200", "--budget", "b200=5"], "not being scored"),
    (["--quick", "--budget", "inf"], "finite number > 0"),
    (["--quick", "--jobs", "-1"], "--jobs -1: must be >= 0 (0 = every core)"),
    (["--data", "b200", "--gemm-model", "/nonexistent/dir"], "no such directory"),
    (["--data", "b200", "--gemm-model", "/nonexistent/dir"], "/nonexistent/dir"),
])
def test_accuracy_flags_are_checked_before_anything_runs(argv, message, capsys):
    from validation.accuracy import main
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_accuracy_out_is_checked_before_the_run(tmp_path, capsys):
    from validation.accuracy import main
    f = tmp_path / "afile"
    f.write_text("x")
    assert main(["--quick", "--out", str(f)]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert main(["--quick", "--out", str(f / "sub")]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err


def test_accuracy_fails_when_the_only_data_set_asked_for_cannot_run(tmp_path, capsys):
    from validation.accuracy import main
    assert main(["--quick", "--data", "b200", "--gemm-model", str(tmp_path)]) == 2
    assert "no data set asked for can be scored" in capsys.readouterr().err


# ---------------------------------------------------------------- what ships is what is scored
RESULTS = __import__("pathlib").Path(__file__).resolve().parent.parent / "validation" / "results"


def _committed(name: str):
    import json
    p = RESULTS / "accuracy.json"
    data = json.loads(p.read_text())["datasets"].get(name) or {}
    if not data.get("rows"):
        pytest.skip(f"no {name} rows in {p}")
    return data["rows"]


def _resimulated(row: dict, cfg, arch) -> float:
    from simulator.engine import simulate
    return simulate(cfg, arch.with_overrides(row["constants"])).time_ns / 1e3


def test_committed_h200_predictions_are_simulate_at_their_printed_constants():
    from validation.accuracy.datasets import load_h200
    rows = {r.key: r for r in load_h200().rows}
    sample = [r for r in _committed("h200") if r["scored"]]
    sample = sorted(sample, key=lambda r: rows[r["key"]].est_events)[:: max(1, len(sample) // 12)][:12]
    for row in sample:
        assert _resimulated(row, rows[row["key"]].config, ArchSpec.h200()) == row["wsim_us"], row["label"]


def test_committed_b200_predictions_are_simulate_at_their_printed_constants():
    from validation.b200_data import row_from_label
    sample = [r for r in _committed("b200") if r["scored"]]
    cheap = sorted(sample, key=lambda r: r["cycles"])[:: max(1, len(sample) // 40)][:8]
    for row in cheap:
        cfg = row_from_label(row["label"]).config()
        assert _resimulated(row, cfg, ArchSpec.b200()) == row["wsim_us"], row["label"]


@pytest.mark.slow
def test_quick_figures_come_out_identical_from_an_empty_cache(tmp_path):
    """CI re-runs the committed quick H200 figures from nothing: every score and every row."""
    import json

    from validation.accuracy import main
    from validation.accuracy.baselines import nvmh
    committed_path = RESULTS / "quick" / "accuracy.json"
    committed = json.loads(committed_path.read_text())
    cmd = committed["command"].split()
    assert cmd[:2] == ["wsim", "accuracy"] and "--out" in cmd
    argv = cmd[2:cmd.index("--out")] + ["--out", str(tmp_path), "--no-cache"]
    assert main(argv) == 0
    fresh = json.loads((tmp_path / "accuracy.json").read_text())
    got, want = fresh["datasets"]["h200"], committed["datasets"]["h200"]
    if nvmh.unavailable():      # the optional baseline: compare everything else
        for d in (got, want):
            d["scores"] = {k: v for k, v in d["scores"].items() if not k.startswith("nvMatmul")}
            d["by_class"] = {dim: {c: {k: v for k, v in s.items() if not k.startswith("nvMatmul")}
                                   for c, s in classes.items()} for dim, classes in d["by_class"].items()}
            d["rows"] = [{k: v for k, v in r.items() if not k.startswith("nvMatmul")} for r in d["rows"]]
            d["notes"] = [n for n in d["notes"] if "nvMatmul" not in n]
    assert got["scores"] == want["scores"]
    assert got["by_class"] == want["by_class"]
    assert got["rows"] == want["rows"]
    assert got["constants"] == want["constants"]


# ------------------------------------------------------------------------- results read back
def test_ratio_by_class_plots_every_row_of_every_predictor(tmp_path):
    from simulator.views.accuracy_plot import accuracy_ratio_by_class
    ratios = {"wsim": [1.0, 1.1, 0.9, 1.2], "roofline": [0.5, 0.6, 0.7, 0.4]}
    fig = accuracy_ratio_by_class(ratios, ["a", "a", "b", "b"], path=tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 5_000
    ax = fig.axes[0]
    assert sum(len(c.get_offsets()) for c in ax.collections if hasattr(c, "get_offsets")) >= 8
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a\n2 rows\n5% / 45%", "b\n2 rows\n15% / 45%"]
    with pytest.raises(ValueError, match="roofline has 1 ratios for 2 classes"):
        accuracy_ratio_by_class({"wsim": [1, 1], "roofline": [1]}, ["a", "b"])


def test_results_read_back_as_scored_whatever_the_layout(tmp_path):
    """A fresh result and the accuracy.json written from it give the same rows; the older layout
    (data sets at the top, rows with ``<predictor>_us`` or ``_ratio``) reads the same way."""
    import json

    from validation.accuracy import evaluate_dataset
    from validation.accuracy.cache import SimCache
    from validation.accuracy.report import results_json, scores
    from validation.accuracy.results import from_result, load_results
    ds = _tiny_h200(tmp_path)
    ds.class_title = "tile"
    res = evaluate_dataset(ds, ds.rows, "all", cache=SimCache(tmp_path), procs=1)
    p = tmp_path / "accuracy.json"
    p.write_text(json.dumps(results_json([res], command="test", engine="fast"), default=float))
    now, read = from_result(res), load_results(p)["h200"]
    assert read.labels == now.labels and list(read.ratios) == list(now.ratios)
    for name in now.ratios:
        assert np.allclose(read.ratios[name], now.ratios[name])
        assert read.scores()[name].mape == pytest.approx(scores(res)[name].mape)
    assert list(read.classes) == list(now.classes) == ["tile"]
    assert (read.row_class == now.row_class).all()
    old = {"h200": {"title": "t", "rows": [{"label": "r0", "class": "c0", "measured_us": 10.0, "wsim_us": 11.0,
                                            "kernel_us": 7.0, "roofline_us": 5.0},
                                           {"label": "r1", "class": "c1", "measured_us": 20.0, "wsim_us": 19.0,
                                            "kernel_us": 15.0, "roofline_us": 10.0}]},
           "b200": {"rows": [{"label": "x", "class": "k", "wsim_ratio": 1.2, "gemm-model_ratio": 0.8}]}}
    (tmp_path / "old.json").write_text(json.dumps(old))
    o = load_results(tmp_path / "old.json")
    assert list(o["h200"].ratios) == ["wsim", "roofline"] and o["h200"].ratios["wsim"].tolist() == [1.1, 0.95]
    assert o["h200"].class_table().splitlines()[-1].split() == ["all", "rows", "2", "7.5%", "50.0%"]
    assert o["b200"].measured_us is None and o["b200"].mape() == {"wsim": pytest.approx(20.0),
                                                                   "gemm-model": pytest.approx(20.0)}
    assert math.isnan(o["b200"].scores()["wsim"].spearman)
    with pytest.raises(ValueError, match="only ratios"):
        o["b200"].scatter_series()
    with pytest.raises(KeyError, match="classes its rows by row class"):
        o["h200"].class_table("tile")


def test_committed_accuracy_json_reads_back_to_its_own_scores():
    import json

    from validation.accuracy.results import RESULTS_JSON, load_results
    data = json.loads(RESULTS_JSON.read_text())
    stored = data.get("datasets", data)
    for name, sr in load_results().items():
        for pred, s in stored[name]["scores"].items():
            got = sr.scores()[pred]
            assert (got.n, got.mape, got.max_err) == (s["n"], pytest.approx(s["mape"]), pytest.approx(s["max_err"]))


# --------------------------------------------------------------------------- the predicted clock
def _outcome(cycles, tc_busy, sms=132, l2=0, hbm=0):
    from validation.accuracy.cache import SimOutcome
    return SimOutcome(cycles, cycles / 1.5 / 1e3, 0, 0.0, "fast", True, "", tc_busy, sms, l2, hbm)


def _plan_rows(n_heavy: int, light: bool = True):
    cfg, arch = Sm90GemmConfig(m=4096, n=4096, k=4096), ArchSpec.h200()
    rows, outs = [], []
    for i in range(n_heavy):
        rows.append(Row("h200", f"space fp16 4096x4096x4096 heavy{i}", "", "fp16 4096x4096x4096", "c", cfg, arch, 1.0))
        outs.append(_outcome(2.0e7, 0.97, l2=20_000_000_000))    # ~12 ms each: the round's idle is small
    if light:
        rows.append(Row("h200", "space fp16 4096x4096x4096 light", "", "fp16 4096x4096x4096", "c", cfg, arch, 1.0))
        outs.append(_outcome(2.0e7, 0.05))
    return rows, outs


def test_the_predicted_clock_follows_the_stream_a_kernel_runs_in():
    """A light kernel alone runs near the tensor clock cap (the fast limit slows only its busy 5%); among
    heavy neighbours the controller holds it lower. A heavy kernel alone is power-limited; light neighbours let it run faster; an all-heavy
    stream is the slowest."""
    from simulator.machine.power import h200_power
    from validation.accuracy.clock import campaign_clocks
    rows, outs = _plan_rows(6)
    plan = {"space": [r.key.split(" ", 3)[3] for r in rows]}
    stream, alone = campaign_clocks(rows, outs, plan)
    cap = h200_power().tensor_clock_cap_ghz.value
    assert np.all(stream <= cap + 1e-9) and np.all(alone <= cap + 1e-9)
    assert cap - 0.01 < alone[-1] < cap and stream[-1] < alone[-1] - 0.05
    assert alone[0] < cap and np.all(stream[:6] >= alone[:6])
    rows2, outs2 = _plan_rows(6, light=False)
    plan2 = {"space": [r.key.split(" ", 3)[3] for r in rows2]}
    assert np.all(campaign_clocks(rows2, outs2, plan2)[0] <= stream[:6].min() + 1e-9)


def test_a_row_outside_the_plan_gets_no_predicted_clock():
    from validation.accuracy.clock import campaign_clocks
    rows, outs = _plan_rows(2)
    stream, alone = campaign_clocks(rows, outs, {"space": ["heavy0", "heavy1"]})
    assert np.isfinite(stream[:2]).all() and np.isnan(stream[2]) and np.isnan(alone[2])


def test_streamk_campaign_rows_are_simulated_with_their_decomposition():
    """The stream-K campaign's rows keep the decomposition the twin ran (not data-parallel for all)."""
    from collections import Counter

    from validation.accuracy.datasets import DATASETS, DEFAULT_DATASETS
    ds = DATASETS["h200-streamk"](None)
    got = Counter((r.config.decomposition, r.config.splits) for r in ds.rows)
    assert got[("data_parallel", 1)] == 432 and got[("stream_k", 1)] == 288 and got[("split_k", 8)] == 288
    assert {r.classes["decomposition"] for r in ds.rows} == {
        "data-parallel", "heuristic", "stream-K", "split-K 2", "split-K 4", "split-K 8"}
    assert "h200-streamk" not in DEFAULT_DATASETS
