"""The wide H200 campaign on the CPU: its problems and their dev / held-out split, the run order, the NVML
windows per row, the dry run through --publish (held-out rows only in their own file, never in the
Markdown), the loaders, and the plan's size against the GPU time it is given."""

from __future__ import annotations

import json

import pytest

from hw_kernels.rules import can_implement
from validation import campaign_wide as W
from validation import nvml_sampler as ns


def test_problems_are_new_valid_and_span_the_asked_ranges():
    probs = W.WIDE_PROBLEMS
    keys = [p.key() for p in probs]
    assert len(keys) == len(set(keys))
    assert all(not can_implement(p.m, p.n, p.k) and p.n % 8 == 0 and p.k % 8 == 0 for p in probs)
    assert {p.dtype for p in probs} == {"fp16", "bf16"}
    assert {16, 32, 64, 96, 128, 256, 512} <= {p.m for p in probs} and max(p.m for p in probs) >= 16384
    assert max(p.n for p in probs) == 57344
    assert min(p.k for p in probs) == 256 and max(p.k for p in probs) == 65536
    # none of the committed campaign's problems again
    from validation.campaign import BF16_SHAPES, SMALL_SHAPES, SPACE_SHAPES
    assert not {p.shape for p in probs} & set(SPACE_SHAPES + BF16_SHAPES + SMALL_SHAPES)


def test_held_out_is_about_a_third_of_every_class_and_both_dtypes():
    share = W.held_out_share()
    assert set(share) == set(W.CLASSES)
    for cls, (held, total) in share.items():
        assert 1 <= held < total and 0.2 <= held / total <= 0.45, (cls, held, total)
    held = [p for p in W.WIDE_PROBLEMS if p.held_out]
    assert 0.28 <= len(held) / len(W.WIDE_PROBLEMS) <= 0.38
    assert {p.dtype for p in held} == {"fp16", "bf16"}
    assert {p.split for p in W.WIDE_PROBLEMS} == {"dev", "held_out"}


def test_run_order_is_round_robin_over_classes():
    order = W.run_order()
    assert sorted(p.key() for p in order) == sorted(p.key() for p in W.WIDE_PROBLEMS)
    assert [p.cls for p in order[:len(W.CLASSES)]] == list(W.CLASSES)
    assert order == W.run_order()
    with pytest.raises(ValueError, match="unknown"):
        W.run_order([W.WideProblem(128, 128, 128, "fp16", "tiny")])


def test_covering_subset_keeps_every_tile_schedule_and_cluster():
    from validation.campaign import space_configs
    full = space_configs()
    half = W.covering_subset(full)
    assert len(half) == len(full) // 2
    part = {(c.schedule, c.tile_n, c.cluster_m, c.cluster_n) for c in half}
    assert part == {(c.schedule, c.tile_n, c.cluster_m, c.cluster_n) for c in full}
    assert {c.raster for c in half} == {"m", "n"} and {c.swizzle for c in half} == {1, 4}


def _sample(t, w, mhz=1980, reasons=0):
    return (t, w, w + 1, None, mhz, reasons, None, None)


def test_summarize_windows_takes_only_samples_inside_the_windows():
    rows = [_sample(0.005 * i, 100.0 + i, 1500 + i, 0x4 if i % 2 else 0) for i in range(100)]
    s = ns.summarize_windows(rows, [(0.0999, 0.1101), (0.2999, 0.3001), (0.1, 0.105)])
    # samples 20, 21, 22 (first window, the third overlaps it) and 60
    assert s["samples"] == 4
    assert s["power_w_median"] == pytest.approx(statistics_median([120, 121, 122, 160]))
    assert s["sm_mhz_min"] == 1520 and s["sm_mhz_max"] == 1560
    assert s["reasons"] == {"sw_power_cap": 0.25}
    assert ns.summarize_windows(rows, [(5.0, 6.0)])["samples"] == 0
    assert ns.summarize_windows(rows, [(5.0, 6.0)])["power_w_median"] is None


def statistics_median(xs):
    import statistics
    return statistics.median(xs)


def test_row_power_uses_each_launch_window():
    rows = [_sample(0.001 * i, float(i)) for i in range(1000)]
    launches = [{"t0_host": 0.1005, "t1_host": 0.1025}, {"t0_host": 0.5, "t1_host": 0.5},
                {"event_us": 3.0}]  # a launch without host times is left out
    r = W.row_power(rows, launches)
    assert r["nvml_samples"] == 3 and r["nvml_power_w"] == pytest.approx(102.0)  # median of samples 101, 102, 500
    assert set(W.ROW_COLUMNS) >= {k for k in r}


def test_the_full_wide_plan_fits_its_gpu_time():
    from validation.campaign import EST_COMPILE_S, check_plan, estimate_seconds, plan
    p = plan()["wide"]
    keys = check_plan({"wide": p})
    assert set(keys) == {"fp16", "bf16"} and all(len(v) == 24 for v in keys.values())
    assert len(p["configs"]) == 96 and len(p["problems"]) == len(W.WIDE_PROBLEMS)
    est = sum(estimate_seconds(x.shape, p["configs"], budget_s=W.WIDE_BUDGET_S, max_rounds=W.WIDE_MAX_ROUNDS,
                               min_rounds=W.WIDE_MIN_ROUNDS)[0] for x in p["problems"])
    est += EST_COMPILE_S * sum(len(v) for v in keys.values())
    assert 200 < est < 400   # the campaign runs under --time-limit 470 (~480 s of GPU time with its start)


def test_wide_dry_run_publishes_held_out_rows_apart(tmp_path, capsys):
    from validation.campaign import main, plan, publish
    from validation.measurements import load_h200_timings, load_h200_wide, wide_problems
    out = tmp_path / "run"
    assert main(["--dry-run", "--quick", "--phases", "wide", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed and all(line.startswith("[dry run] ") for line in printed)
    q = plan(quick=True)["wide"]
    held = [x for x in q["problems"] if x.held_out]
    assert held and len(held) < len(q["problems"])
    for x in held:  # a held-out problem's lines carry no timing
        lines = [ln for ln in printed if f"{x.m}x{x.n}x{x.k}" in ln]
        assert lines and not any(" us" in ln or "cuBLAS" in ln or "GHz" in ln for ln in lines), lines
    res = json.loads((out / "campaign.dry_run.json").read_text())
    assert res["plan"]["wide"]["problems"][0]["split"] in ("dev", "held_out")
    paths = publish(out, tmp_path / "res", launches_npz=True, allow_dry_run=True)
    names = sorted(p.name for p in paths)
    assert not any(n.startswith("h200_campaign.") for n in names)          # the main campaign untouched
    assert "h200_campaign_wide.dry_run.json" in names and "h200_campaign_wide_heldout.dry_run.json" in names
    assert not any("heldout" in n and n.endswith(".md") for n in names)
    dev_json = tmp_path / "res" / "h200_campaign_wide.dry_run.json"
    held_json = tmp_path / "res" / "h200_campaign_wide_heldout.dry_run.json"
    dev = load_h200_wide(path=dev_json, allow_dry_run=True)
    hel = load_h200_wide("held_out", path=held_json, allow_dry_run=True)
    per = len(q["configs"]) + 1
    assert len(hel) == len(held) * per and len(dev) == (len(q["problems"]) - len(held)) * per
    assert {r["split"] for r in dev} == {"dev"} and {r["split"] for r in hel} == {"held_out"}
    with pytest.raises(ValueError, match="held-out"):
        load_h200_timings(held_json, allow_dry_run=True)
    with pytest.raises(ValueError, match="split="):
        load_h200_wide("test", path=dev_json, allow_dry_run=True)
    # every row: its power and clock over its own launches, its problem's place in the run
    ours = [r for r in dev if r["kernel"] == "wsim_sm90_twin"]
    assert all(r["clock_ghz"] and r["event_us"] and r["ok"] for r in ours)
    assert all("nvml_power_w" in r and "nvml_samples" in r for r in dev)
    assert any(r["nvml_samples"] and r["nvml_power_w"] for r in dev)
    probs = wide_problems(path=dev_json)
    assert set(probs) == {f"wide|{r['dtype']}|{r['m']}x{r['n']}x{r['k']}" for r in dev}
    order = sorted(probs.values(), key=lambda v: v["order"])
    assert all(v["nvml"]["samples"] >= 0 and v["rounds"] > 0 for v in order)
    assert {r["problem_order"] for r in dev} == {v["order"] for v in order}
    # the Markdown: dev numbers; of the held-out part only the count and the problems
    md = (tmp_path / "res" / "h200_campaign_wide.dry_run.md").read_text()
    assert md.startswith("# DRY RUN") and f"held out: {len(hel)} rows of {len(held)} problems" in md
    for x in held:
        shape = f"{x.m}x{x.n}x{x.k}"
        assert not any(shape in ln for ln in md.splitlines() if ln.startswith("|")), shape
    pub_dev = json.loads(dev_json.read_text())
    assert not any(k in pub_dev["problems"] for k in (x.key() for x in held))
    import numpy as np
    z = np.load(tmp_path / "res" / "h200_campaign_wide_launches.dry_run.npz")
    assert z["launches"].shape[1] == 8 and set(z["keys"]) == {f"wide|{r['dtype']}|{r['m']}x{r['n']}x{r['k']}|"
                                                              f"{r['config']}" for r in dev}




def test_accuracy_scores_the_wide_parts_only_when_named(tmp_path):
    from validation.accuracy import datasets as D
    assert {"h200-wide", "h200-wide-heldout"} <= set(D.DATASETS)
    assert not {"h200-wide", "h200-wide-heldout"} & set(D.DEFAULT_DATASETS)
    ds = D.DATASETS["h200-wide"](tmp_path / "missing.json")
    assert ds.name == "h200-wide" and not ds.rows and "no H200 campaign" in ds.skipped[0]
