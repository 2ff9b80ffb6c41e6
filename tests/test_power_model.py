"""The H200 power model (simulator/machine/power.py) and the clock it predicts: its measured constants are
what validation.power_constants derives from the committed results, it reproduces the microbenchmark's
settled clocks it was not fitted to, the controller's stream averaging, the clock/simulation iteration
(simulator/engine/power_clock.py) and the campaign fit's vectorised stream (validation/power_fit.py)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from simulator.errors import ConfigError
from simulator.machine.power import Activity, h200_power, power_model_for
from validation import power_constants

RESULTS = Path(__file__).resolve().parent.parent / "validation" / "results"


@pytest.fixture(scope="module")
def q():
    return json.loads((RESULTS / "h200_power.json").read_text())["quantities"]


def test_measured_constants_are_what_the_results_give():
    m = h200_power()
    for name, val in power_constants.derive().items():
        c = getattr(m, name)
        assert c.value == pytest.approx(val, rel=2e-3), name
        assert c.kind == "measured-here" and "h200_power.json" in c.source, name
    assert power_constants.dram_fraction() == pytest.approx(1.0, abs=0.01)   # the paced 'hbm' load: all DRAM


def test_fitted_constants_say_so():
    m = h200_power()
    for c in m.constants():
        assert c.kind in ("measured-here", "fitted"), c.name
        if c.kind == "fitted":
            assert "[fitted]" in c.source and "h200_clock_fit.json" in c.source


def _act(q, name, sms=132, mem=None):
    l2 = q[f"{name}.mem_gb_per_s"]["value"] * 1e9 if mem == "l2" else 0.0
    return Activity(sms, q[f"{name}.tc_busy_fraction"]["value"], l2, 0.0)


def test_reproduces_settled_points_it_was_not_derived_from(q):
    m = h200_power().with_values(gemm_tc_scale=1.0, gemm_l2_scale=1.0, gemm_dram_scale=1.0)   # the microbenchmark's own activity
    # tensor cores plus L2 on all SMs (not used by any constant): the clock the controller settled on
    for name in ("settle.tc@1+l2@1 132sm", "settle.tc@0.5+l2@1 132sm"):
        f = m.settled_clock(_act(q, name, mem="l2"))
        assert f == pytest.approx(q[f"{name}.clock_mhz"]["value"] / 1000, rel=0.04), name
    # 33 and 66 SMs at full duty: not power-limited, at the tensor cap, and the power close to NVML's
    for n in (33, 66):
        name = f"settle.tc@1 {n}sm"
        a = _act(q, name, sms=n)
        assert m.settled_clock(a) == m.tensor_clock_cap_ghz.value
        assert m.power_w(q[f"{name}.clock_mhz"]["value"] / 1000, a) == pytest.approx(q[f"{name}.power_w"]["value"], rel=0.06)


def test_settled_clock_is_the_highest_within_the_limit():
    m = h200_power()
    heavy = Activity(132, 0.95, 8e12, 0.5e12)
    f = m.settled_clock(heavy)
    assert m.power_w(f, heavy) <= m.limit_w.value + 1e-6 < m.power_w(f + 0.002, heavy)
    light = Activity(132, 0.05, 0.1e12, 0.0)
    assert m.settled_clock(light) == m.tensor_clock_cap_ghz.value
    assert m.settled_clock(Activity(132, 0.0, 0.0, 0.0, tensor=False)) == m.max_clock_ghz.value
    assert m.transient_clock(heavy) > f                         # the fast limit lets a short launch run faster
    powers = [m.power_w(g, heavy) for g in (0.8, 1.2, 1.6, 1.9)]
    assert powers == sorted(powers)
    # a clock-independent load alone over the limit: the lowest clock, not a wrong answer above it
    assert m.settled_clock(Activity(132, 0.0, 20e12, 0.0)) == pytest.approx(0.05)


def test_fast_limit_mixes_the_busy_clock_with_the_cap():
    m = h200_power()
    cap = m.tensor_clock_cap_ghz.value
    full = Activity(132, 1.0, 0.0, 0.0)
    g = m.busy_clock(full)                     # fully busy tensor cores meet the fast limit exactly
    assert g < cap and m.power_w(g, full) == pytest.approx(m.fast_limit_w.value, rel=1e-9)
    assert m.fast_clock(full) == pytest.approx(g)
    half = Activity(132, 0.5, 0.0, 0.0)
    assert m.busy_clock(half) == pytest.approx(g) and m.fast_clock(half) == pytest.approx(0.5 * (g + cap))
    assert m.fast_clock(Activity(132, 0.0, 0.0, 0.0)) == cap
    assert m.busy_clock(Activity(33, 1.0, 0.0, 0.0)) == cap              # a quarter of the SMs: under the limit
    # memory traffic counts at fast_limit_mem_weight: the busy clock falls
    mem = Activity(132, 1.0, 9e12, 0.0)
    assert m.busy_clock(mem) < g
    room = m.fast_limit_w.value - m.fast_limit_mem_weight.value * m.breakdown(g, mem)["l2"]
    assert m.power_w(m.busy_clock(mem), replace(mem, l2_bytes_per_s=0.0)) == pytest.approx(room, rel=1e-9)
    # the settled kernel takes the lower limit and says which
    f, bound = m.steady_clock(full)
    assert f == pytest.approx(min(m.settled_clock(full), m.transient_clock(full))) and bound == "power limit"
    assert m.steady_clock(Activity(33, 0.5, 0.0, 0.0)) == (cap, "clock cap")
    f, bound = m.steady_clock(Activity(132, 0.6, 0.0, 0.0))
    assert bound == "fast limit" and f == pytest.approx(m.fast_clock(Activity(132, 0.6, 0.0, 0.0)), abs=2e-5)


def test_fast_clock_reproduces_the_bursts_it_was_not_derived_from():
    """The bursts plan's short rounds of tensor load (the memory weight used two of them only)."""
    q = json.loads((RESULTS / "h200_power_bursts.json").read_text())["quantities"]
    m = h200_power().with_values(gemm_tc_scale=1.0, gemm_l2_scale=1.0, gemm_dram_scale=1.0)
    errs = []
    for duty in ("0.3", "0.45", "0.6", "0.7", "0.8", "0.9", "1"):
        name = f"bursts.tc@{duty} 132sm"
        a = Activity(132, q[f"{name}.load_tc_busy_fraction"]["value"], 0.0, 0.0)
        errs.append(m.transient_clock(a) / (q[f"{name}.load_clock_mhz"]["value"] / 1000) - 1)
    assert max(abs(e) for e in errs) < 0.06 and abs(float(np.median(errs))) < 0.03, errs
    # the old rule (average power within the fast limit) runs every partial load at the cap
    assert sum(abs(e) < 0.004 for e in errs) <= 2


def test_stream_clocks_follow_the_neighbours():
    m = h200_power()
    heavy = (lambda g: Activity(132, 0.95, 8e12, 0.5e12), lambda g: 2.0 / g)      # ~1 ms each
    light = (lambda g: Activity(132, 0.10, 0.5e12, 0.0), lambda g: 0.2 / g)
    # a stream of one kernel repeated: its own settled clock
    alone = m.stream_clocks([heavy], cyclic=True)
    assert alone[0] == pytest.approx(m.settled_clock(heavy[0]), abs=2e-4)
    # a light kernel among heavy ones runs near their clock, not at its own cap
    mixed = m.stream_clocks([heavy] * 20 + [light], window_ms=33.0)
    assert mixed[-1] < m.settled_clock(light[0]) - 0.2 and abs(mixed[-1] - mixed[0]) < 0.05
    # with a short window it is nearly on its own
    short = m.stream_clocks([heavy] * 20 + [light], window_ms=0.05)
    assert short[-1] > mixed[-1] + 0.2
    with pytest.raises(ConfigError, match="window_ms"):
        m.stream_clocks([heavy], window_ms=0)


def test_activity_and_arch_errors_are_one_line():
    with pytest.raises(ConfigError, match="tc_busy"):
        Activity(132, 1.5, 0.0, 0.0)
    with pytest.raises(ConfigError, match="l2_bytes_per_s"):
        Activity(132, 0.5, -1.0, 0.0)
    with pytest.raises(ConfigError, match="GB300: no power model"):
        power_model_for("GB300")
    b = power_model_for("B200")      # published figures and the H200's constants: every one says so
    assert b.limit_w.value == 1000.0 and b.limit_w.kind == "datasheet"
    assert all(c.kind in ("estimate", "datasheet", "microbenchmark") for c in b.constants())
    assert all("H200" in c.source or c.kind != "estimate" or "estimate" in c.source for c in b.constants())
    with pytest.raises(ConfigError, match="unknown"):
        h200_power().with_values(volts=1.0)


# ----------------------------------------------------------------------- the campaign fit's arithmetic
def _arrays(tensor_w: float, l2_w: float, ms: float):
    from validation import power_fit as pf
    g = pf.GRID
    scale = (g / 1.793) ** 2.915
    return {"ms": np.full(g.size, ms), "kernel_ms": np.full(g.size, ms), "cap": 1.8,
            "tensor": tensor_w * scale, "l2": np.full(g.size, l2_w), "dram": np.zeros(g.size),
            "other": np.full(g.size, 128.84)}


def test_vectorised_stream_agrees_with_the_model():
    from validation import power_fit as pf
    m = h200_power().with_values(gemm_tc_scale=1.0, gemm_l2_scale=1.0, gemm_dram_scale=1.0)
    arrs = [_arrays(900.0, 250.0, 1.0)] * 5 + [_arrays(100.0, 20.0, 0.5)]
    got = pf.stream_clocks_grid(arrs, 1.0, 1.0, 4.0, 700.0, idle_ms=0.0)

    def kernel(a):
        tw, lw, ms = a["tensor"][-1] / (1.98 / 1.793) ** 2.915, a["l2"][0], a["ms"][0]
        return (lambda g: Activity(132, tw / (132 * m.tc_w_per_sm.value), lw / m.l2_j_per_byte.value, 0.0),
                lambda g: ms)
    ref = m.stream_clocks([kernel(a) for a in arrs], window_ms=4.0, cyclic=True)
    assert got == pytest.approx(ref, abs=0.003)
    own = pf.stream_terms(arrs, None)
    assert np.array_equal(own["tensor"][0], arrs[0]["tensor"])


def test_clocks_from_terms_takes_the_highest_feasible():
    from validation import power_fit as pf
    g = pf.GRID
    z = np.zeros((1, g.size))
    terms = {"other": np.array([100 + 400 * g]), "tensor": z, "l2": z, "dram": z}
    f = pf.clocks_from_terms(terms, np.array([1.8]), 1.0, 1.0, 700.0)[0]
    assert f == pytest.approx(1.5, abs=0.003) and 100 + 400 * f <= 700
    assert pf.clocks_from_terms(terms, np.array([1.2]), 1.0, 1.0, 700.0)[0] == pytest.approx(1.2)


def test_fast_clocks_grid_matches_the_model():
    from validation import power_fit as pf
    m = h200_power()
    sims = {1.0: {"cycles": 2e6, "tc_busy": 0.7, "sms": 132, "l2_bytes": 6e9, "hbm_bytes": 1e9},
            2.0: {"cycles": 2.2e6, "tc_busy": 0.65, "sms": 132, "l2_bytes": 6e9, "hbm_bytes": 1e9}}
    arrs = [pf.row_arrays(sims, m, 4256e-6, 1.48), pf.row_arrays({1.0: sims[1.0], 2.0: sims[1.0]}, m, 0.0)]
    got = pf.fast_clocks(arrs, m, 1.0, 1.0, 1.0)

    def activity(a, f):
        i = int(np.argmin(abs(pf.GRID - f)))
        return Activity(132, float(a["busy"][i]), float(a["l2_running"][i]) / m.l2_j_per_byte.value,
                        float(a["dram_running"][i]) / m.dram_j_per_byte.value)
    ref = [m.with_values(gemm_dram_scale=1.0).transient_clock(lambda f, a=a: activity(a, f)) for a in arrs]
    assert got == pytest.approx(ref, abs=0.003)
    assert got[0] < m.tensor_clock_cap_ghz.value


# ------------------------------------------------------------------------------ clock <-> simulation
def test_simulate_at_predicted_clock_converges():
    from functools import partial

    from simulator.engine import simulate
    from simulator.engine.power_clock import activity_of, simulate_at_predicted_clock
    from simulator.kernels.sm90_config import Sm90GemmConfig
    from simulator.machine.arch import ArchSpec
    simulate_at_predicted_clock = partial(simulate_at_predicted_clock, arch=ArchSpec.h200(), run=simulate)
    p = simulate_at_predicted_clock(Sm90GemmConfig(m=4096, n=4096, k=1024))
    m = p.model
    assert p.result.arch.clock_ghz.value == pytest.approx(p.clock_ghz)
    assert p.limited_by == "power limit" and p.clock_ghz < m.tensor_clock_cap_ghz.value
    assert p.power_w == pytest.approx(m.limit_w.value, rel=0.01)
    assert len(p.clocks_simulated) <= 5 and "predicted clock" in p.describe()
    a = activity_of(p.result)
    assert a.sms == 132 and 0 < a.tc_busy <= 1 and a.l2_bytes_per_s > a.dram_bytes_per_s > 0
    small = simulate_at_predicted_clock(Sm90GemmConfig(m=512, n=512, k=512))
    assert small.limited_by == "clock cap" and small.clock_ghz == pytest.approx(m.tensor_clock_cap_ghz.value, abs=1e-4)
    t = simulate_at_predicted_clock(Sm90GemmConfig(m=4096, n=4096, k=1024), transient=True)
    assert t.clock_ghz > p.clock_ghz and t.limited_by == "fast limit"
    assert t.clock_ghz == pytest.approx(m.fast_clock(activity_of(t.result)), rel=0.004)   # at its fixed point
    with pytest.raises(ConfigError, match="clock="):
        simulate_at_predicted_clock(Sm90GemmConfig(m=512, n=512, k=512), clock=1.5)
    assert math.isfinite(p.result.time_ns)


def test_fitted_constants_are_the_committed_fit():
    fit = json.loads((RESULTS / "h200_clock_fit.json").read_text())
    f = fit["fitted"]
    m = h200_power()
    assert m.gemm_tc_scale.value == pytest.approx(f["tc_scale"])
    assert m.gemm_l2_scale.value == pytest.approx(f["l2_scale"])
    assert m.gemm_dram_scale.value == pytest.approx(f["dram_scale"])
    assert m.window_ms.value == pytest.approx(f["window_ms"])
    assert fit["command"].startswith("python -m validation.power_fit")
    lopo = fit["scores"]["model, leave-one-problem-out"]
    assert lopo["rows"] == len(fit["row_clocks"]) and lopo["rows"] >= 1000
    # the written report is the command's
    from validation import power_fit
    assert (RESULTS / "h200_clock_fit.md").read_text() == power_fit.markdown(fit, fit["command"])


def test_fold_fits_in_processes_are_the_serial_fits():
    from simulator.kernels.sm90_config import Sm90GemmConfig
    from simulator.machine.arch import ArchSpec
    from validation import power_fit as pf

    class Row:
        def __init__(self, ghz, key):
            self.arch = ArchSpec.h200().with_overrides({"clock_ghz": ghz}, origin="test")
            self.key, self.config = key, Sm90GemmConfig(m=4096, n=4096, k=4096)
    groups = {}
    for p in range(3):
        rows = [Row(1.3 + 0.03 * i + 0.05 * p, f"p{p} r{i}") for i in range(6)]
        sims = []
        for i in range(6):
            a = {"cycles": 2e5 * (1 + i), "tc_busy": 0.5 + 0.08 * i, "sms": 132, "l2_bytes": 1e9 * (1 + i),
                 "hbm_bytes": 1e8 * (1 + i)}
            sims.append({1.2: a, 1.8: dict(a, cycles=a["cycles"] * 1.1)})
        groups[("space", f"p{p}")] = {"rows": rows, "sims": sims}
    keys = list(groups)
    folds = [[x for x in keys if x != k] for k in keys]
    serial = pf._fit_folds(groups, h200_power(), folds, pf.FITTABLE, 1)
    assert pf._fit_folds(groups, h200_power(), folds, pf.FITTABLE, 2) == serial
    assert all(isinstance(p, pf.Params) for p in serial) and len(serial) == 3


def test_fast_limit_report_covers_every_tensor_load_of_the_bursts(tmp_path):
    from validation import fast_limit as fl
    rows = fl.bursts_rows()
    q = json.loads((RESULTS / "h200_power_bursts.json").read_text())["quantities"]
    suffix = ".load_tc_busy_fraction"
    tensor_loads = {k[len("bursts."):-len(suffix)] for k in q if k.endswith(suffix) and q[k]["value"] > 0}
    assert {r["load"] for r in rows} == tensor_loads and len(rows) >= 20
    assert sum(r["used_by_the_model"] for r in rows) == len(fl.USED_BY_THE_MODEL)
    m = h200_power().with_values(gemm_tc_scale=1.0, gemm_l2_scale=1.0, gemm_dram_scale=1.0)
    r = next(r for r in rows if r["load"] == "tc@0.6+hbm@0.5 132sm")      # HBM bytes are L2 bytes too
    a = Activity(132, r["tc_busy"], r["mem_gb_per_s"] * 1e9, r["mem_gb_per_s"] * 1e9)
    assert r["model_ghz"] == pytest.approx(m.transient_clock(a)) and r["memory"] == "hbm"
    assert r["error"] == pytest.approx(r["model_ghz"] / r["measured_ghz"] - 1)
    # random operands: within 6%; zero operands run faster than the model, which does not see the data
    assert all(abs(r["error"]) < 0.06 for r in rows if "zero" not in r["load"])
    assert all(r["error"] < 0 for r in rows if "zero" in r["load"])
    fig = fl.plot_fast_limit(rows, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 5_000
    assert sum(len(c.get_offsets()) for c in fig.axes[0].collections) == 2 * len(rows)
