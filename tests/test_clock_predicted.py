"""``--clock predicted``: the clock the power model settles on, through simulate(), the CLI (the H200's
default), sweep and tune (each config at its own clock), with the power and constants printed."""

from __future__ import annotations

import pytest

from simulator import simulate, tune
from simulator.errors import ConfigError
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec
from simulator.machine.clocks import default_clock, with_clock
from simulator.machine.power import h200_power
from wsim.cli import main

H = dict(m=2048, n=2048, k=2048, dtype_ab="fp16", dtype_c="fp16", dtype_d="fp16")


def test_simulate_predicted_is_a_run_at_the_solved_clock():
    cfg = Sm90GemmConfig(**H)
    r = simulate(cfg, "h200", clock="predicted")
    p = r.clock_prediction
    assert p["model"] == "H200" and r.arch.clock_ghz.value == p["clock_ghz"] == p["clocks_simulated"][-1]
    assert p["clock_ghz"] <= h200_power().tensor_clock_cap_ghz.value
    assert p["limited_by"] in ("clock cap", "power limit")
    assert p["power_w"] <= h200_power().limit_w.value * 1.01
    assert {c["name"] for c in p["constants"]} >= {"limit_w", "tc_w_per_sm", "window_ms"}
    again = simulate(cfg, ArchSpec.h200().with_overrides({"clock_ghz": p["clock_ghz"]}))
    assert again.cycles == r.cycles and again.time_ns == r.time_ns and again.clock_prediction is None


def test_a_heavy_kernel_is_held_below_the_cap_by_the_power_limit():
    r = simulate(Sm90GemmConfig(m=8192, n=8192, k=8192), "h200", clock="predicted")
    assert r.clock_prediction["limited_by"] == "power limit"
    assert 1.1 < r.clock_prediction["clock_ghz"] < 1.6


def test_the_default_clock_is_predicted_on_the_h200_only_and_never_when_one_is_given():
    assert default_clock(ArchSpec.h200()) == "predicted"
    assert default_clock(ArchSpec.b200()) == "max"
    assert default_clock(ArchSpec.h200().with_overrides({"clock_ghz": 1.4})) == "max"
    with pytest.raises(ConfigError, match="predicted"):
        with_clock(ArchSpec.h200(), "predicted")


def test_cli_simulate_prints_the_predicted_clock_power_and_constants(capsys):
    assert main(["simulate", "--arch", "h200", "--m", "2048", "--n", "2048", "--k", "2048"]) == 0
    out = capsys.readouterr().out
    assert "(predicted by the H200 power model)" in out and "\npower  " in out
    assert "power model constants (H200; --clock predicted)" in out and "[fitted]" in out
    assert main(["simulate", "--arch", "h200", "--m", "2048", "--n", "2048", "--k", "2048", "--clock", "max"]) == 0
    out = capsys.readouterr().out
    assert "clock              1.98 GHz (max" in out and "power model constants" not in out
    assert main(["simulate", "--arch", "h200", "--m", "2048", "--n", "2048", "--k", "2048",
                 "--arch-set", "clock_ghz=1.5"]) == 0
    assert "power model constants" not in capsys.readouterr().out
    assert main(["simulate", "--m", "1024", "--n", "1024", "--k", "1024"]) == 0      # B200: the spec clock
    assert "power model constants" not in capsys.readouterr().out


def test_tune_ranks_each_candidate_at_its_own_predicted_clock():
    res = tune(512, 2048, 1024, dtype="fp16", arch="h200", space="hw", search="exhaustive", prune=False,
               workers=1, progress=False, clock="predicted")
    ok = [r for r in res.rows if r.ok]
    # the twin's 96 data-parallel configs and its stream-K / split-K decompositions, all simulated
    assert len(ok) == len(res.rows) > 96 and all(0.9 < r.clock_ghz <= 1.8 and r.power_w for r in ok)
    assert len({round(r.clock_ghz, 3) for r in ok}) > 3          # the clock differs between configs
    assert res.constants["clock_ghz"] is None and "power model" in res.constants["clock"]
    assert any(c["name"] == "window_ms" for c in res.constants["fitted"])
    for r in ok:     # the exact bound holds at any clock up to the spec maximum
        assert r.extra["bound_us"] <= r.time_us * (1 + 1e-9)


def test_b200_has_a_power_model_of_estimates():
    r = simulate(Sm100GemmConfig(m=2048, n=2048, k=2048), "b200", clock="predicted")
    assert r.clock_prediction["model"] == "B200" and r.arch.clock_ghz.value <= 1.965
