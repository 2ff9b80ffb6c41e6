"""``wsim check``: the race detectors, the mutations and their classes, the grids, the catalogue.

Exact outcomes of a handful of mutations on small configs (class, what was found, which roles are
blocked on which barrier), zero findings on the unmutated protocol, the quick grid (CI), the
CuTe-DSL twins' counts against the model's, and the committed catalogue re-run on a slice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.engine.check import (
    CLASSES,
    Case,
    check_arch,
    check_change,
    full_grid,
    model_counts,
    quick_grid,
    run_case,
    run_check,
    sm90_one_stage,
)
from simulator.engine.run import simulate
from simulator.errors import ConfigError
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.protocol.knobs import ProtocolKnobs
from simulator.protocol.mutations import factor_table, mutations_for
from simulator.views.check_report import compact
from simulator.views.cli import main

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "validation" / "results" / "check_catalogue.json"
GRID = {c.id: c for c in full_grid()}


def _change(case_id: str, **knobs):
    case = GRID[case_id]
    base, out = check_change(case.config, case.resolved_arch(), ProtocolKnobs.make(**knobs))
    assert base.cls == "no effect", base.detail
    return out


# ------------------------------------------------------------------------------------ detectors
def test_detectors_are_off_by_default_and_change_no_result():
    cfg = Sm100GemmConfig(m=1024, n=1024, k=512, read_c=True)
    off = simulate(cfg)
    on = simulate(cfg, race_check=True)
    assert not off.race_check and on.race_check and on.race_count == 0 and on.ok
    assert on.fingerprint() == off.fingerprint()
    sm90 = Sm90GemmConfig(m=1024, n=1024, k=512, read_c=True, schedule="pingpong", tile_n=128)
    assert simulate(sm90, race_check=True).fingerprint() == simulate(sm90).fingerprint()


def test_mutated_runs_agree_on_both_engines():
    cfg = GRID["sm100-2sm-2x1"].config
    arch = check_arch("b200")
    knobs = ProtocolKnobs.make(expect_tx={"mainloop": cfg.resolved(arch).tma_transaction_bytes // 2},
                               skip_wait=["tmem_dealloc"])
    ref = simulate(cfg, arch, knobs=knobs, engine="reference", allow_protocol_experiments=True)
    fast = simulate(cfg, arch, knobs=knobs, engine="fast", allow_protocol_experiments=True)
    assert ref.race_count > 0 and fast.fingerprint() == ref.fingerprint()


# ------------------------------------------------------------------------------------ exact outcomes
def test_clc_empty_count_minus_one_races_then_deadlocks_on_clc():
    # 1-SM 1x1 with 1024 tiles on one SM: the count 223 (seed 224) lets each phase complete one arrival
    # early; the surplus drifts until the Sched warp waits on a phase that has already passed.
    o = _change("sm100-1sm-1x1-long", arrival_counts={"clc.empty": 223})
    assert o.cls == "race+deadlock"
    assert set(o.race_kinds) == {"wrong-phase arrival"}
    assert o.cycle < o.deadlock_cycle
    assert o.blocked == ["Epilogue on clc.full (1 CTA)", "MMA on clc.full (1 CTA)",
                         "MainloopLoad on clc.full (1 CTA)", "Sched on clc.empty (1 CTA)"]
    assert "CTA0.0/Sched" in o.wait_for
    assert "arrived for phase 0" in o.detail and "clc.empty" in o.detail


def test_clc_empty_count_minus_one_is_a_race_on_a_short_run():
    o = _change("sm100-2sm-2x1", arrival_counts={"clc.empty": 415})
    assert o.cls == "race" and set(o.race_kinds) == {"wrong-phase arrival"} and o.deadlock_cycle is None


def test_expect_tx_too_few_is_a_read_before_the_bytes_landed():
    # Without the 2-SM factor the leader expects its own CTA's half: the phase completes before the
    # peer's half has landed, and the MMA reads it.
    case = GRID["sm100-2sm-2x1"]
    tx = case.config.resolved(case.resolved_arch()).tma_transaction_bytes
    o = _change("sm100-2sm-2x1", expect_tx={"mainloop": tx // 2})
    assert o.cls in ("race", "race+deadlock")
    assert "read before landed" in o.race_kinds
    assert o.detail.split(";")[0].split(": ")[1].startswith("read before landed")
    assert "MMA read round" in o.detail and "landed only at cycle" in o.detail


def test_expect_tx_one_byte_short_never_completes_the_phase():
    case = GRID["sm100-1sm-1x1"]
    tx = case.config.resolved(case.resolved_arch()).tma_transaction_bytes
    o = _change("sm100-1sm-1x1", expect_tx={"mainloop": tx - 1})
    assert o.cls == "deadlock"
    assert "MMA on mainloop.full (16 CTAs)" in o.blocked
    assert "1 transaction bytes landed beyond those expected" in o.detail


def test_skipped_mainloop_release_deadlocks_mainloop_load_on_mainloop_empty():
    o = _change("sm100-1sm-1x1", skip_release=["mainloop"])
    assert o.cls == "deadlock" and not o.race_kinds
    assert "MainloopLoad on mainloop.empty (16 CTAs)" in o.blocked
    assert "e.g. CTA0.0/MainloopLoad blocked since cycle" in o.detail
    assert "owed by MMA commits" in o.detail
    assert o.wait_for == ["CTA0.0/MMA", "CTA0.0/MainloopLoad"]


def test_skipped_producer_wait_overwrites_a_stage_the_mma_still_reads():
    o = _change("sm100-1sm-1x1", skip_wait=["mainloop.empty"])
    assert o.cls == "race+deadlock" and "overwrite" in o.race_kinds


def test_skipped_accumulator_wait_reads_before_the_mma_finished():
    o = _change("sm100-2sm-2x1", skip_wait=["accumulator.full"])
    assert "read before landed" in o.race_kinds
    assert "accumulator[0]: read before landed" in o.detail and "Epilogue read round 0" in o.detail


def test_dropped_tmem_dealloc_handshake_is_a_use_after_free():
    o = _change("sm100-2sm-2x1", skip_wait=["tmem_dealloc"])
    assert o.cls == "race" and set(o.race_kinds) == {"TMEM use after free"}
    assert "/tmem: TMEM use after free" in o.detail


def test_sm90_mainloop_mutations():
    o = _change("sm90-coop-2x1", arrival_counts={"mainloop.empty": 15})
    assert o.cls in ("race", "race+deadlock") and "wrong-phase arrival" in o.race_kinds
    o = _change("sm90-coop-2x1", skip_wait=["mainloop.full"])
    assert "read before landed" in o.race_kinds


def test_no_effect_is_explained():
    o = _change("sm100-2sm-2x1", skip_wait=["tmem_alloc"])
    assert o.cls == "no effect" and "never blocked" in o.why and "epilogue-throttle barrier" in o.why
    ms = {m.id: m for m in mutations_for(GRID["sm100-1sm-1x1"].config.resolved(check_arch("b200")))}
    m = ms["clc.empty count without the cluster factor"]
    assert m.knobs is None and m.skip_class == "no effect" and "only matters with clusters" in m.skip_why
    m = ms["tmem_dealloc count +1"]
    assert m.skip_class == "n/a" and "never initialises the TMEM deallocation barrier" in m.skip_why


def test_sm90_one_mainloop_stage_deadlocks_unmutated():
    r = run_case(sm90_one_stage(), only=lambda m: False)
    assert r.baseline.cls == "deadlock" and "MainloopLoad on mainloop.empty" in " ".join(r.baseline.blocked)


# ------------------------------------------------------------------------------------ mutations, knobs
def test_factors_come_from_the_arrival_formulas():
    t = factor_table(sm90=False)
    assert t["clc.empty"] == ("cluster factor", "C-read term", "epilogue-threads factor")
    assert t["mainloop.empty"] == ("cluster factor", "2-SM peer factor")
    assert t["accumulator.empty"] == ("2-SM peer factor", "epilogue-threads factor")
    ms = {m.id: m for m in mutations_for(GRID["sm100-2sm-2x1"].config.resolved(check_arch("b200")))}
    assert ms["clc.empty count without the cluster factor"].knobs.arrival_counts == (("clc.empty", 224),)
    assert ms["accumulator.empty count without the 2-SM peer factor"].knobs.arrival_counts == (
        ("accumulator.empty", 128),)


@pytest.mark.parametrize("kw,match", [
    (dict(skip_wait=["mainloop.middle"]), "not a barrier a role waits on"),
    (dict(wrong_parity=["tmem_alloc"]), "named barrier"),
    (dict(expect_tx={"accumulator": 5}), "expect_tx 'accumulator'"),
    (dict(expect_tx={"mainloop": -1}), r"0 \.\. 2\^20 - 1"),
    (dict(arrival_counts={"tmem_alloc": 159}), "multiple of 32"),
    (dict(skip_wait=["clc.full"], wrong_parity=["clc.full"]), "not both"),
])
def test_new_knobs_name_the_broken_rule(kw, match):
    with pytest.raises(ConfigError, match=match):
        ProtocolKnobs.make(**kw)


def test_knobs_that_cannot_act_say_why():
    cfg = Sm100GemmConfig(m=512, n=512, k=256, use_2sm=False, mma_tile_m=128, cluster_m=1)
    for kw, match in ((dict(arrival_counts={"tmem_dealloc": 3}), "never initialises"),
                      (dict(arrival_counts={"epilogue_throttle.peer": 3}), "no CTA other than CTA 0"),
                      (dict(skip_wait=["load_order"]), "read_c=False"),
                      (dict(skip_wait=["math_order"]), "SM90")):
        with pytest.raises(ConfigError, match=match):
            simulate(cfg, knobs=ProtocolKnobs.make(**kw))


# ------------------------------------------------------------------------------------ grids
def test_quick_grid_finds_nothing_unmutated_and_explains_every_no_effect():
    rep = run_check(quick_grid())
    assert rep.baseline_findings == []
    assert rep.unexplained() == []
    for kernel in ("sm100", "sm90"):
        counts = rep.counts(kernel)
        assert all(counts[c] > 0 for c in CLASSES), (kernel, counts)


def test_twins_counts_are_the_models_unmutated_row():
    from hw_kernels.static_counts import SM90_TO_MODEL, SM100_TO_MODEL, sm90_twin_counts, sm100_twin_counts
    for cid in ("sm100-2sm-2x1", "sm100-1sm-1x1", "sm100-2sm-4x4", "sm100-1sm-2x4"):
        cfg = GRID[cid].config
        model = model_counts(GRID[cid])
        twin = sm100_twin_counts(cfg.use_2sm, cfg.cluster_m, cfg.cluster_n)
        for k, v in twin.items():
            if k == "tmem_dealloc" and v == 0:
                assert "tmem_dealloc" not in model      # the seed never initialises it in 1-SM mode
            elif k == "epilogue_throttle.peer" and cfg.cluster_m * cfg.cluster_n == 1:
                continue
            else:
                assert model[SM100_TO_MODEL[k]] == v, (cid, k)
    for cid in ("sm90-coop-2x1", "sm90-pp-1x1", "sm90-pp-2x2"):
        cfg = GRID[cid].config
        model = model_counts(GRID[cid])
        for k, v in sm90_twin_counts(cfg.cluster_m, cfg.cluster_n, cfg.schedule).items():
            if k == "order" and cfg.schedule != "pingpong":
                continue
            assert model[SM90_TO_MODEL[k]] == v, (cid, k)


def test_a_wrong_twin_count_would_be_seen():
    from hw_kernels.static_counts import sm100_twin_counts
    model = model_counts(Case("x", Sm100GemmConfig(m=512, n=512, k=256, cluster_m=4), "b200"))
    assert sm100_twin_counts(True, 2, 1)["clc.consumer"] != model["clc.empty"]


def test_committed_catalogue_reproduces_on_a_slice():
    cat = json.loads(CATALOGUE.read_text())
    want = ("sm100-2sm-2x2-c-ld1", "sm90-pp-1x1-c")
    committed = [o for o in cat["outcomes"] if o["config"] in want]
    rep = run_check([GRID[w] for w in want])
    assert [compact(o.to_dict()) for o in rep.outcomes] == committed
    assert cat["baseline"] and all(b["class"] == "no effect" for b in cat["baseline"])
    assert cat["twins"] and all(t["equal"] for t in cat["twins"])


# ------------------------------------------------------------------------------------ CLI
def test_cli_checks_a_users_change_with_the_simulate_exit_codes(tmp_path, capsys):
    toml = tmp_path / "my.toml"
    toml.write_text("[config]\nm = 1024\nn = 1024\nk = 512\n")
    assert main(["check", "--config", str(toml), "--arrival-count", "clc.empty=415"]) == 4
    assert "RACE" in capsys.readouterr().out
    assert main(["check", "--config", str(toml), "--skip-release", "mainloop"]) == 3
    assert "MainloopLoad on mainloop.empty" in capsys.readouterr().out
    assert main(["check", "--config", str(toml), "--skip-wait", "epilogue_throttle"]) == 0
    assert "performance throttle" in capsys.readouterr().out
    assert main(["check", "--config", str(toml), "--grid", "full"]) == 2
    assert main(["check", "--skip-wait", "nope"]) == 2


def test_cli_simulate_reports_races(capsys):
    code = main(["simulate", "--m", "1024", "--n", "1024", "--k", "512", "--skip-wait", "tmem_dealloc"])
    assert code == 4
    assert "RACES:" in capsys.readouterr().out


def test_a_catalogue_row_reads_back_and_says_why():
    from simulator.views.check_report import format_mutation_row, load_catalogue, mutation_row
    cat = load_catalogue(CATALOGUE)
    mid = "clc.empty count without the cluster factor"
    row = mutation_row(cat, mid)
    assert [o["config"] for o in row] == [b["config"] for b in cat["baseline"] if b["config"].startswith("sm100")]
    text = format_mutation_row(cat, mid)
    counts = {c: sum(o["cls"] == c for o in row) for c in CLASSES}
    for c, n in counts.items():
        assert (f"  {c:<14}{n:>3} config(s)" in text) == (n > 0)
    assert "why: the cluster factor is 1 here" in text and "Triton ConSan" in text
    with pytest.raises(KeyError, match="not in the catalogue's sm90 rows"):
        mutation_row(cat, mid, "sm90")


def test_load_catalogue_refuses_other_json(tmp_path):
    from simulator.views.check_report import load_catalogue
    p = tmp_path / "x.json"
    p.write_text('{"rows": []}')
    with pytest.raises(ValueError, match="not a wsim check catalogue"):
        load_catalogue(p)
