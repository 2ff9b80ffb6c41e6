"""wsim accuracy: the harness model, the metrics, the fit and its cross-validation, the roofline, the
clock input, and (when the public data is present) the gemm-model B200 rows. CPU only."""

import math

import numpy as np
import pytest

from simulator.errors import ConfigError
from simulator.kernels.roofline import roofline
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec
from simulator.machine.clocks import SUSTAINED_CLOCKS, parse_clock, with_clock
from validation.accuracy import (
    DataSet,
    Row,
    Score,
    SimOutcome,
    evaluate,
    fit_and_cross_validate,
    harness_time,
    quick_subset,
    spearman,
)


# ------------------------------------------------------------------------------------ harness
def test_harness_host_bound_measures_the_launch_interval():
    # GPU 5 us per launch, host 18 us per launch: the GPU idles between launches.
    assert harness_time(5.0, 18.0, warmup=2, iters=5) == pytest.approx(18.0)


def test_harness_gpu_bound_measures_the_kernel():
    assert harness_time(200.0, 18.0, warmup=2, iters=5) == pytest.approx(200.0)


def test_harness_is_monotone_and_vectorised():
    g = np.array([1.0, 10.0, 17.0, 19.0, 25.0, 100.0])
    t = harness_time(g, 18.0)
    assert np.all(np.diff(t) >= 0)
    assert np.all(t >= np.maximum(g, 18.0) - 1e-9)


# ------------------------------------------------------------------------------------ metrics
def test_spearman_and_score():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 1, 2], [1, 1, 2]) == pytest.approx(1.0)        # ties averaged
    s = Score.of([110, 90, 100], [100, 100, 100])
    assert (s.n, s.mape, s.max_err, s.bias) == (3, pytest.approx(20 / 3), pytest.approx(10), pytest.approx(0))
    assert Score.of([np.nan, 100], [100, 100]).n == 1


# ---------------------------------------------------------------------------- fit and its CV
def _synthetic(shapes=6, per_shape=4, h=18.0, o=3.0):
    arch = ArchSpec.b200()
    cfg = Sm100GemmConfig(m=1024, n=1024, k=1024)
    rows, gpu = [], []
    rng = np.random.default_rng(0)
    for s in range(shapes):
        for c in range(per_shape):
            g = float(rng.uniform(2, 200))
            gpu.append(g)
            meas = float(harness_time(g + o, h))
            rows.append(Row("t", f"{s}-{c}", f"s{s} c{c}", f"s{s}", "all", cfg, arch, meas))
    ds = DataSet("t", "synthetic", "", rows, harness=lambda g, c: harness_time(g + c["o"], c["h"]),
                 fit_grid={"h": np.arange(10.0, 30.01, 0.5), "o": np.arange(0.0, 10.01, 0.5)})
    return ds, np.array(gpu)


def test_fit_recovers_the_harness_constants_and_cross_validates():
    ds, gpu = _synthetic()
    fit = fit_and_cross_validate(ds, ds.rows, gpu)
    assert fit.constants["h"] == pytest.approx(18.0, abs=0.1)
    assert fit.constants["o"] == pytest.approx(3.0, abs=0.1)
    assert fit.cv_score.n == len(ds.rows) and fit.cv_score.mape < 0.5


def test_cross_validated_rows_never_see_their_own_shape():
    """A shape whose measurement is off by 2x cannot pull its own prediction: LOSO predicts it
    with constants fitted on the others, so its error stays ~50% while the fit on all rows is bent."""
    ds, gpu = _synthetic()
    for r in ds.rows:
        if r.shape == "s0":
            r.measured_us *= 2.0
    fit = fit_and_cross_validate(ds, ds.rows, gpu)
    s0 = np.array([r.shape == "s0" for r in ds.rows])
    meas = np.array([r.measured_us for r in ds.rows])
    cv_err = np.abs(fit.cv_pred_us[s0] / meas[s0] - 1)
    assert np.all(cv_err > 0.4)


def test_evaluate_scores_model_roofline_and_baselines_side_by_side():
    ds, gpu = _synthetic(shapes=3, per_shape=2)
    for r in ds.rows:
        r.baselines["pub"] = r.measured_us * 1.1
    ds.baseline_names = ("pub",)
    sim = [SimOutcome(1.0, g, g + 4, 10, 0.0, "reference", True) for g in gpu]
    res = evaluate(ds, ds.rows, sim, "all")
    preds = res.predictors()
    assert set(preds) == {"wsim", "roofline", "pub"}
    assert Score.of(preds["pub"], res.measured_us).mape == pytest.approx(10.0)


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
    assert 100 * np.mean(err) == pytest.approx(15.0, abs=0.1)     # issue 10: 15.0% on all 640 rows
    assert math.isfinite(max(err))


def test_simulate_and_cli_take_the_clock(capsys):
    from simulator.engine import simulate
    from simulator.views.cli import main
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


def test_cache_key_of_one_kernel_ignores_the_other_kernels_modules(tmp_path, monkeypatch):
    """A change to sm90_tma_ws.py re-simulates SM90 rows only; a shared module re-simulates both."""
    import shutil

    import validation.accuracy as acc
    root = tmp_path / "repo"
    for folder in acc.MODEL_SOURCES:
        shutil.copytree(acc.ROOT / folder, root / folder, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    monkeypatch.setattr(acc, "ROOT", root)
    before = {sm: acc.model_hash(sm) for sm in (100, 90)}
    assert before[100] != before[90]
    with (root / "simulator/kernels/sm90_tma_ws.py").open("a") as f:
        f.write("\n# changed\n")
    assert acc.model_hash(100) == before[100] and acc.model_hash(90) != before[90]
    with (root / "simulator/protocol/mbarrier.py").open("a") as f:
        f.write("\n# changed\n")
    assert acc.model_hash(100) != before[100]


def test_sim_cache_writes_each_kernels_rows_to_its_own_file(tmp_path):
    from validation.accuracy import SimCache
    c = SimCache(tmp_path)
    c.put("k100", {"cycles": 1.0}, 100)
    c.put("k90", {"cycles": 2.0}, 90)
    again = SimCache(tmp_path)
    assert again.get("k100") == {"cycles": 1.0} and again.get("k90") == {"cycles": 2.0}
    assert sorted(p.name.split("-")[0] for p in tmp_path.iterdir()) == ["sm100", "sm90"]
