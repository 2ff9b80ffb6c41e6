"""validation.microbench.gemm_power on the CPU: its cases are campaign configs, and --compare puts the
shipped power model beside a measurement (held-out cases only when asked)."""

import json

import pytest

from simulator.machine.power import h200_power
from validation.microbench import gemm_power as gp


def test_every_case_is_a_campaign_config_with_its_instrumentation():
    from validation.campaign import space_configs
    names = {c.name() for c in space_configs()}
    for dtype, m, n, k, name, split in gp.CASES + gp.TILE_CASES:
        assert name in names and gp.twin_config(name).name() == name
        assert split in ("dev", "held_out")
        cfg = gp.sim_config({"dtype": dtype, "m": m, "n": n, "k": k, "config": name})
        assert (cfg.m, cfg.n, cfg.k) == (m, n, k)
    assert {c[5] for c in gp.CASES} == {"dev", "held_out"}
    with pytest.raises(ValueError, match="not a campaign config"):
        gp.twin_config("cublas")


def _result(split="dev", power=650.0, clock=1.5):
    d = {"settled": {"nvml": {"power_instant_w_median": power, "sm_mhz_median": 1700.0},
                     "last_launch": {"clock_ghz": clock}, "us_per_launch": 30.0},
         "rounds": {"median_clock_ghz": 1.7, "clock_ghz": [1.7]}}
    case = {"dtype": "fp16", "m": 2048, "n": 2048, "k": 2048, "config": "128x256x64_c2x1_rm_sw4_e32_trace-span",
            "split": split, "randn": d}
    return {"cases": [case], "settled_s": 1.2, "rounds": 8, "round_idle_s": 0.02, "round_ms": 1.5, "meta": {}}


def test_compare_gives_the_models_power_at_the_measured_clock():
    rows = gp.compare(_result())
    assert len(rows) == 1 and rows[0]["inputs"] == "randn"
    r, base = rows[0], h200_power().base_w.value
    assert r["model_power_w"] == pytest.approx(sum(r["model_breakdown"].values()))
    assert r["dynamic_ratio"] == pytest.approx((650.0 - base) / (r["model_power_w"] - base))
    # the model's own clocks: the power limit holds the settled run at or below the fast limit's clock
    assert 0.5 < r["model_settled_clock_ghz"] <= r["model_round_clock_ghz"] <= 1.8 + 1e-9
    md = gp.markdown(_result(), rows)
    assert "| fp16 2048x2048x2048 128x256x64_c2x1_rm_sw4_e32 | dev | randn |" in md


def test_effective_clock_summarises_every_launch_read():
    res = _result(clock=1.5)
    res["cases"][0]["randn"]["rounds"]["clock_ghz"] = [1.7, 1.9, None]
    assert gp.effective_clock(res) == {"median_ghz": 1.7, "min_ghz": 1.5, "max_ghz": 1.9, "launches": 3}
    assert "median 1.7 GHz, 1.5-1.9" in gp.markdown(res, None)
    assert gp.effective_clock({"cases": []}) == {"launches": 0}


def test_held_out_cases_are_compared_only_when_asked():
    assert gp.compare(_result("held_out")) == []
    assert len(gp.compare(_result("held_out"), held_out=True)) == 1


def test_compare_command_writes_beside_its_input_and_bad_files_are_one_line(tmp_path, capsys):
    p = tmp_path / "r.json"
    p.write_text(json.dumps(_result()))
    assert gp.main(["--compare", str(p)]) == 0
    assert json.loads(p.read_text())["model"][0]["split"] == "dev"
    assert (tmp_path / "r.md").read_text().startswith("# The twin GEMM")
    assert gp.main(["--compare", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err


def test_clock_errors_summarise_each_split_and_inputs():
    def row(split, inputs, settled, model_settled, rnd, model_rnd, ratio):
        return {"split": split, "inputs": inputs, "settled_clock_ghz": settled, "model_settled_clock_ghz": model_settled,
                "round_clock_ghz": rnd, "model_round_clock_ghz": model_rnd, "dynamic_ratio": ratio}
    rows = [row("dev", "randn", 1.0, 1.1, 2.0, 1.8, 1.1), row("dev", "randn", 1.0, 0.95, 2.0, 2.0, 0.9),
            row("dev", "randn", 1.0, 1.0, None, 1.0, None), row("held_out", "zeros", 1.5, 1.2, 1.8, 1.8, 0.3)]
    got = {(s["split"], s["inputs"]): s for s in gp.clock_errors(rows)}
    d = got[("dev", "randn")]
    assert d["cases"] == 3 and d["dynamic_ratio"] == "0.90-1.10"
    assert d["settled_median"] == pytest.approx(0.05) and d["settled_max"] == pytest.approx(0.1)
    assert d["settled_mean"] == pytest.approx(0.05 / 3)
    assert d["round_median"] == pytest.approx(0.05) and d["round_max"] == pytest.approx(0.1)   # the round-less row is left out
    assert d["round_mean"] == pytest.approx(-0.05)
    h = got[("held_out", "zeros")]
    assert h["settled_mean"] == pytest.approx(-0.2) and h["round_max"] == 0.0
    md = gp.markdown(_result(), gp.compare(_result()))
    assert "| dev | randn | 1 |" in md
