"""The hardware twin's host side on a CPU: problems it cannot compute are refused with the rule's
one-line message before anything is launched; compile keys; the in-kernel span decode; the campaign's
plan, dry run, publishing and loader; GPU entry points say "needs a CUDA GPU" on a machine without one."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hw_kernels import records as R
from hw_kernels.host import Compiled, KernelConfig, Runner, problem_problems
from simulator.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def _fake_compiled(cfg=None, dtype="fp16"):
    return Compiled(cfg or KernelConfig(), dtype, fn=None, max_active_clusters=66, stages=4)


def _tensors(m, n, k, dtype="float16", dtype_b=None):
    torch = pytest.importorskip("torch")
    a = torch.zeros(m, k, dtype=getattr(torch, dtype))
    b = torch.zeros(n, k, dtype=getattr(torch, dtype_b or dtype))
    c = torch.zeros(m, n, dtype=getattr(torch, dtype))
    return a, b, c


@pytest.mark.parametrize("dtype,torch_dtype", [("fp16", "float16"), ("bf16", "bfloat16")])
def test_n_not_a_multiple_of_8_is_refused_with_the_rule(dtype, torch_dtype):
    # M=3001, N=17, K=4096: the kernel used to run and leave 2993 of 51017 outputs NaN
    a, b, c = _tensors(3001, 17, 4096, torch_dtype)
    with pytest.raises(ConfigError) as e:
        Runner(_fake_compiled(dtype=dtype)).prepare(a, b, c)
    msg = str(e.value)
    assert "\n" not in msg
    assert "n=17: must be a multiple of 8" in msg and "3001x17x4096" in msg


def test_every_broken_rule_is_named():
    torch = pytest.importorskip("torch")
    a, b, c = _tensors(256, 128, 100, "float16", "bfloat16")
    p = problem_problems(a, b, c, "fp16")
    assert any("b.dtype=torch.bfloat16" in x for x in p)
    assert any("k=100: must be a multiple of 8" in x for x in p)
    a, b, _ = _tensors(256, 128, 64)
    p = problem_problems(a, b, torch.zeros(128, 256, dtype=torch.float16), "fp16")
    assert any("c.shape=[128, 256]: c must be M x N = 256 x 128" in x for x in p)
    p = problem_problems(a.t(), b, torch.zeros(64, 128, dtype=torch.float16), "fp16")
    assert any("b.shape" in x for x in p) or any("stride" in x for x in p)
    # a valid problem on the CPU: only the device rule
    a, b, c = _tensors(256, 128, 64)
    assert problem_problems(a, b, c, "fp16") == ["devices ['cpu']: a, b and c must be on one CUDA device"]


def test_raster_and_swizzle_share_one_compile():
    base = KernelConfig(cluster_m=2, raster="m", swizzle=4, instrument=R.LEVEL_SPAN)
    assert base.compile_key() == KernelConfig(cluster_m=2, raster="n", swizzle=1, instrument=R.LEVEL_SPAN).compile_key()
    assert base.compile_key() != KernelConfig(cluster_m=1, raster="m", swizzle=4, instrument=R.LEVEL_SPAN).compile_key()
    Runner(_fake_compiled(KernelConfig(cluster_m=2)), config=KernelConfig(cluster_m=2, raster="n", swizzle=8))
    with pytest.raises(ConfigError, match="only raster and swizzle may differ"):
        Runner(_fake_compiled(KernelConfig(cluster_m=2)), config=KernelConfig(cluster_m=1))


def test_span_level_name_and_capacity():
    assert KernelConfig(instrument=R.LEVEL_SPAN).name().endswith("_trace-span")
    assert R.slice_capacity(10, 100, 8, R.LEVEL_SPAN) == R.FIRST_DATA_RECORD
    assert R.record_level(R.LEVEL_SPAN) == R.LEVEL_OFF and R.record_level(R.LEVEL_KBLOCK) == R.LEVEL_KBLOCK


def _span_buffer(ctas, starts, ends, ghz, cap=2):
    buf = np.zeros(ctas * R.ROLES_PER_CTA * cap * R.RECORD_WORDS, dtype=np.int64)
    for s in range(ctas * R.ROLES_PER_CTA):
        gt0, gt1 = starts[s], ends[s]
        clk0 = (1 << 32) - 100 + s  # the 64-bit clock crosses a 32-bit boundary
        clk1 = clk0 + int(round((gt1 - gt0) * ghz))
        off = s * cap * R.RECORD_WORDS
        buf[off:off + 8] = [R.HEADER, 0, clk0 & 0xFFFFFFFF, clk0 >> 32, gt0 & 0xFFFFFFFF, gt0 >> 32, 0, s // 3]
        buf[off + 8:off + 16] = [R.FOOTER, 2, clk1 & 0xFFFFFFFF, clk1 >> 32, gt1 & 0xFFFFFFFF, gt1 >> 32, 1, 0]
    return (buf & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def test_span_and_clock_from_headers_and_footers():
    from validation.timing import span_and_clock
    starts = [5_000_000_000 + 32 * s for s in range(6)]
    ends = [5_000_010_000 + 64 * s for s in range(6)]
    out = span_and_clock(_span_buffer(2, starts, ends, 1.5), 2, 2)
    assert out["slices"] == out["slices_expected"] == 6
    assert out["span_ns"] == max(ends) - min(starts)
    assert out["clock_ghz"] == pytest.approx(1.5, rel=1e-3)
    buf = _span_buffer(2, starts, ends, 1.5)
    buf[:16] = 0  # one slice never written
    assert span_and_clock(buf, 2, 2)["slices"] == 5


def test_campaign_plan_checks_and_compile_keys():
    from simulator.kernels.space import HW_DECOMPOSITIONS, hw_space
    from validation.campaign import check_plan, plan
    p = plan()
    keys = check_plan(p)
    assert len(p["space"]["configs"]) == len(hw_space(HW_DECOMPOSITIONS[:1])) == 96
    assert len({c.compile_key() for c in p["space"]["configs"]}) == 24  # raster x swizzle share a compile
    assert len(p["space"]["shapes"]) >= 12
    assert all(n % 8 == 0 and k % 8 == 0 for m, n, k in p["space"]["shapes"])
    assert all(c.instrument == R.LEVEL_SPAN for c in p["space"]["configs"] + p["bf16"]["configs"])
    assert len(keys["fp16"]) >= 24 and len(keys["bf16"]) >= 8


def test_campaign_dry_run_publishes_rows_the_loader_reads(tmp_path, capsys):
    from validation.campaign import main, plan, publish
    from validation.measurements import instrumentation_overhead, launch_path, load_h200_timings
    out = tmp_path / "run"
    assert main(["--dry-run", "--quick", "--out", str(out)]) == 0
    # nothing a dry run prints or writes can pass for a measurement
    printed = capsys.readouterr().out.splitlines()
    assert printed and all(line.startswith("[dry run] ") for line in printed), printed
    assert any("cuBLAS" in line and "best" in line for line in printed)
    assert [p.name for p in out.iterdir()] == ["campaign.dry_run.json"]
    with pytest.raises(SystemExit, match="dry-run"):
        publish(out, tmp_path / "res")
    assert main(["--dry-run", "--quick", "--out", str(tmp_path / "run2")]) == 0
    paths = publish(out, tmp_path / "res", repeat_dir=tmp_path / "run2", launches_npz=True, allow_dry_run=True)
    assert paths and all(".dry_run." in p.name for p in paths)
    assert paths[-1].read_text().startswith("# DRY RUN: synthetic timings")
    pj = next(p for p in paths if p.suffix == ".json")
    with pytest.raises(ValueError, match="dry-run"):
        load_h200_timings(pj)
    rows = load_h200_timings(pj, allow_dry_run=True, phase="space")
    q = plan(quick=True)["space"]
    assert len(rows) == len(q["shapes"]) * (len(q["configs"]) + 1)  # + cuBLAS per shape
    ours = [r for r in rows if r["kernel"] == "wsim_sm90_twin"]
    assert {r["config"] for r in ours} == {c.name() for c in q["configs"]}
    r = ours[0]
    assert r["fields"]["tile_m"] == 128 and r["fields"]["instrument"] == R.LEVEL_SPAN
    for key in ("event_us", "span_us", "clock_ghz", "n_launches", "vs_cublas", "ok", "env"):
        assert r[key] is not None, key
    launches = np.load(next(p for p in paths if p.suffix == ".npz"))
    assert launches["launches"].shape[1] == 8 and len(launches["row"]) == len(launches["launches"])
    # the overhead phase: every instrumented config of the quick plan against its uninstrumented twin, per problem
    over = instrumentation_overhead(pj)
    q_over = plan(quick=True)["overhead"]
    levels = {c.instrument for c in q_over["configs"] if c.instrument != R.LEVEL_OFF}
    assert {(o["m"], o["n"], o["k"]) for o in over} == set(q_over["shapes"])
    assert {o["level"] for o in over} == levels and all(o["rounds"] > 0 for o in over)
    assert all(isinstance(o["overhead_median_ratio"], float) and "_trace" not in o["config"] for o in over)
    assert launch_path(pj) == [{"dry_run": True}]      # a dry run times no host launch path
    md = next(p for p in paths if p.suffix == ".md").read_text()
    assert "H200 measurement campaign" in md and "Run to run" in md
    assert r["event_us_repeat"] is not None and r["clock_ghz_repeat"] is not None


@pytest.mark.parametrize("argv", [
    [sys.executable, "-m", "validation.collect", "--phase", "smoke"],
    [sys.executable, "benchmarks/hw_vs_cublas.py"],
    [sys.executable, "-m", "validation.campaign", "--quick"],
])
def test_gpu_entry_points_need_a_cuda_gpu(argv, tmp_path):
    from validation.timing import cuda_gpu_missing
    if cuda_gpu_missing() is None:
        pytest.skip("this machine has a CUDA GPU")
    r = subprocess.run([*argv, "--out", str(tmp_path / "o")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs a CUDA GPU" in lines[0], r.stderr
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_compare_to_reference_counts_unwritten_outputs_and_uses_cublas_error():
    torch = pytest.importorskip("torch")
    from validation.collect import MAX_ERR_VS_CUBLAS, compare_to_reference
    ref = torch.randn(64, 32)
    out = (ref + 0.01).half()
    ok = compare_to_reference(out, ref, cublas_max_abs=0.01)
    assert ok["nan"] == 0 and ok["ok"] and ok["err_vs_cublas"] <= MAX_ERR_VS_CUBLAS
    bad = compare_to_reference((ref + 0.05).half(), ref, cublas_max_abs=0.01)
    assert not bad["ok"] and bad["err_vs_cublas"] > MAX_ERR_VS_CUBLAS
    out[3, 5] = float("nan")
    nan = compare_to_reference(out, ref, cublas_max_abs=0.01)
    assert nan["nan"] == 1 and not nan["ok"]
    json.dumps(ok)


# ---------------------------------------------------------------------------- 64-row ping-pong (M <= 128)
def _problems(cfg):
    from hw_kernels.rules import config_problems
    return config_problems(cfg.tile_m, cfg.tile_n, cfg.tile_k, cfg.cluster_m, cfg.cluster_n, cfg.schedule, cfg.raster,
                           cfg.swizzle, cfg.epilogue_tile_n, cfg.epilogue_store_stages, cfg.instrument)


def test_64_row_tiles_take_every_wgmma_n_of_the_cooperative_in_both_schedules():
    for tn in (64, 128, 192, 256):
        assert _problems(KernelConfig(tile_m=64, tile_n=tn, schedule="pingpong")) == []
        assert _problems(KernelConfig(tile_m=64, tile_n=tn)) == []         # the one-warpgroup cooperative kernel
    assert any("tile_m=96: must be one of (64, 128) for cooperative" in p
               for p in _problems(KernelConfig(tile_m=96, tile_n=128)))
    assert any("tile_n=256" in p and "tile_m=128" in p for p in _problems(KernelConfig(tile_n=256, schedule="pingpong")))
    assert any("tile_m=32" in p for p in _problems(KernelConfig(tile_m=32, tile_n=64, schedule="pingpong")))


@pytest.mark.parametrize("tile_m,tile_n,schedule", [(64, 64, "pingpong"), (64, 128, "pingpong"), (64, 192, "pingpong"),
                                                    (64, 256, "pingpong"), (128, 64, "pingpong"),
                                                    (128, 128, "pingpong"), (128, 64, "cooperative"),
                                                    (128, 256, "cooperative"), (64, 128, "cooperative"),
                                                    (64, 256, "cooperative")])
def test_twin_names_map_to_the_model_kernel_with_the_same_stages(tile_m, tile_n, schedule):
    """A measured config's name -> KernelConfig -> the Sm90GemmConfig validation simulates: the same tile,
    a tile_m-row epilogue subtile, and the stage count the twin derives (hw_kernels.rules)."""
    from hw_kernels.rules import mainloop_stages_that_fit
    from validation.compare import sim_config_from_measured
    cfg = KernelConfig(tile_m=tile_m, tile_n=tile_n, schedule=schedule, cluster_m=1, cluster_n=2, raster="m")
    name = cfg.name()
    assert name.startswith(f"{tile_m}x{tile_n}x64{'_pp' if schedule == 'pingpong' else ''}_c1x2_rm_sw1_e32")
    assert KernelConfig.from_name(name) == cfg
    meta = {"config": cfg.asdict(), "problem": {"m": 100, "n": 4096, "k": 4104}, "dtype": "fp16"}
    model = sim_config_from_measured(meta).resolved()
    assert (model.tile_m, model.cta_tile_n, model.schedule, model.epi_tile) == (tile_m, tile_n, schedule, (tile_m, 32))
    assert model.mainloop_stages == mainloop_stages_that_fit(tile_m, tile_n, 64, 32, 4, 16, 16, model.smem_capacity())
    assert model.tiles_m == -(-100 // tile_m)


def test_small_m_plan_every_tile_cluster_and_raster_under_five_minutes():
    from validation.campaign import (
        EST_COMPILE_S,
        SMALL_M_SHAPES,
        check_plan,
        plan,
        small_m_configs,
        small_m_estimate_seconds,
    )
    p = plan()["small_m"]
    assert p["shapes"] == SMALL_M_SHAPES and all(m <= 128 for m, _, _ in p["shapes"])
    cfgs = small_m_configs()
    assert p["configs"] == cfgs and all(_problems(c) == [] for c in cfgs)
    pp64 = [c for c in cfgs if c.tile_m == 64]
    assert {c.tile_n for c in pp64} == {64, 128, 192, 256} and {c.schedule for c in pp64} == {"pingpong"}
    assert {(c.cluster_m, c.cluster_n) for c in cfgs} == {(1, 1), (1, 2), (2, 1)}
    assert {c.raster for c in cfgs} == {"m", "n"} and {c.swizzle for c in cfgs} == {1}
    assert all(c.decomposition == "data_parallel" and c.instrument == R.LEVEL_SPAN for c in cfgs)
    # 4 + 2 + 4 tiles x 3 clusters x 2 rasters; rasters share a compile
    assert len(cfgs) == 60 and len(pp64) == 24
    keys = check_plan({"small_m": p})["fp16"]
    assert len(keys) == 30
    assert small_m_estimate_seconds(p) + EST_COMPILE_S * len(keys) < 300


def test_small_m_dry_run_publishes_its_own_file(tmp_path, capsys):
    from validation.campaign import main, plan, publish
    from validation.measurements import load_h200_timings
    out = tmp_path / "run"
    assert main(["--dry-run", "--quick", "--phases", "small_m", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "small_m: 2 problems x" in printed and "estimated" in printed
    paths = publish(out, tmp_path / "res", allow_dry_run=True)
    assert sorted(p.name for p in paths) == ["h200_small_m.dry_run.json", "h200_small_m.dry_run.md"]
    rows = load_h200_timings(next(p for p in paths if p.suffix == ".json"), allow_dry_run=True, phase="small_m")
    q = plan(quick=True)["small_m"]
    assert len(rows) == len(q["shapes"]) * (len(q["configs"]) + 1)
    assert {r["fields"]["tile_m"] for r in rows if r["fields"]} == {64, 128}
    md = next(p for p in paths if p.suffix == ".md").read_text()
    assert md.startswith("# H200 M <= 128 campaign (DRY RUN") and "best 64-row ping-pong" in md
    assert md.count("\n| 64x8192x4096 |") == 1


@pytest.mark.parametrize("phase, field, value, suffix", [("streamk_nd", "reduction", "nondeterministic", "_nd"),
                                                         ("streamk_fv4", "fixup_vec", 4, "_fv4")])
def test_streamk_variant_plans_are_the_streamk_schedulers_candidates_with_one_field_changed(phase, field, value,
                                                                                             suffix):
    """``streamk_nd`` (the nondeterministic reduction) and ``streamk_fv4`` (the 16-byte fixup): the ``streamk``
    phase's stream-K scheduler candidates with ``field`` set to ``value``, named with ``suffix``."""
    from validation import campaign
    from validation.campaign import STREAMK_SHAPES, check_plan, plan, streamk_configs
    p = plan()
    cfgs = p[phase]["configs"]
    assert p[phase]["shapes"] == STREAMK_SHAPES and cfgs == getattr(campaign, f"{phase}_configs")()
    det = [c for c in streamk_configs() if c.decomposition != "data_parallel"]
    assert len(cfgs) == len(det) == 160
    assert [replace(c, **{field: getattr(KernelConfig(), field)}) for c in cfgs] == det
    assert all(getattr(c, field) == value and c.name().endswith(f"{suffix}_trace-span") for c in cfgs)
    assert all(KernelConfig.from_name(c.name().removesuffix("_trace-span")) == replace(c, instrument=0) for c in cfgs)
    # one compile per tile and cluster: every decomposition shares the stream-K kernel of its variant
    assert len(check_plan({phase: p[phase]})["fp16"]) == 16


def _dry_run_published(tmp_path, phase: str):
    """A quick dry run of ``phase``, published: the written paths and the Markdown's text."""
    from validation.campaign import main, publish
    out = tmp_path / "run"
    assert main(["--dry-run", "--quick", "--phases", phase, "--out", str(out)]) == 0
    paths = publish(out, tmp_path / "res", allow_dry_run=True)
    return paths, next(p for p in paths if p.suffix == ".md").read_text()


def test_streamk_nd_dry_run_publishes_its_own_file_and_scores_as_a_data_set(tmp_path):
    from validation.accuracy.datasets import DATASETS
    from validation.campaign import plan
    from validation.measurements import load_h200_timings
    paths, md = _dry_run_published(tmp_path, "streamk_nd")
    assert sorted(p.name for p in paths) == ["h200_streamk_nd.dry_run.json", "h200_streamk_nd.dry_run.md"]
    assert md.startswith("# H200 stream-K / split-K campaign, nondeterministic reduction (DRY RUN")
    assert md.count("\n| 512x512x32768 |") == 1 and "best split-K" in md
    pub = next(p for p in paths if p.suffix == ".json")
    rows = load_h200_timings(pub, allow_dry_run=True, phase="streamk_nd")
    q = plan(quick=True)["streamk_nd"]
    assert len(rows) == len(q["shapes"]) * (len(q["configs"]) + 1)
    assert {r["fields"]["reduction"] for r in rows if r["fields"]} == {"nondeterministic"}
    ds = DATASETS["h200-streamk-nd"](pub)          # the data set of these rows; a dry run is never scored
    assert ds.name == "h200-streamk-nd" and not ds.rows and "dry-run" in ds.skipped[0]


def test_streamk_fv4_dry_run_publishes_its_own_file_named_by_the_gpu(tmp_path):
    paths, md = _dry_run_published(tmp_path, "streamk_fv4")
    assert sorted(p.name for p in paths) == ["gpu_streamk_fv4.dry_run.json", "gpu_streamk_fv4.dry_run.md"]
    assert md.startswith("# GPU stream-K / split-K campaign, 16-byte fixup (DRY RUN")
    assert md.count("\n| 512x512x32768 |") == 1 and "best split-K" in md


# ---------------------------------------------------------------------------------------- ragged N
def test_cooperative_and_64_row_tiles_take_every_multiple_of_32_and_name_the_rule_otherwise():
    for tn in (96, 160, 224):
        assert _problems(KernelConfig(tile_n=tn)) == []
        assert _problems(KernelConfig(tile_m=64, tile_n=tn, schedule="pingpong")) == []
    for tn in (80, 288, 32):
        assert any(f"tile_n={tn}: must be one of (64, 96, 128, 160, 192, 224, 256)" in p
                   for p in _problems(KernelConfig(tile_n=tn)))
    assert any("tile_n=160" in p for p in _problems(KernelConfig(tile_n=160, schedule="pingpong")))
    # the epilogue subtile divides the tile: 64 columns do not divide 160
    assert any("epilogue_tile_n=64" in p for p in _problems(KernelConfig(tile_n=160, epilogue_tile_n=64)))


def test_ragged_n_plan_every_width_cluster_and_raster_of_the_cooperative_kernel():
    from validation.campaign import (
        RAGGED_N_HELD_OUT,
        RAGGED_N_SHAPES,
        check_plan,
        plan,
        ragged_n_configs,
    )
    p = plan()["ragged_n"]
    cfgs = ragged_n_configs()
    assert p["shapes"] == RAGGED_N_SHAPES and set(RAGGED_N_HELD_OUT) < set(RAGGED_N_SHAPES)
    assert all(n % 128 for _, n, _ in RAGGED_N_SHAPES)
    assert p["configs"] == cfgs and all(_problems(c) == [] for c in cfgs)
    assert {c.tile_n for c in cfgs} == {96, 128, 160, 192, 224, 256} and {c.schedule for c in cfgs} == {"cooperative"}
    assert {c.decomposition for c in cfgs} == {"data_parallel", "heuristic", "stream_k"}
    assert {c.reduction for c in cfgs} == {"deterministic"} and {c.swizzle for c in cfgs} == {1}
    # 6 widths x 4 clusters x 2 rasters x 3 decompositions; one compile per width, cluster and scheduler
    assert len(cfgs) == 144 and len(check_plan({"ragged_n": p})["fp16"]) == 48


def test_ragged_n_dry_run_publishes_a_file_named_by_its_gpu_with_the_held_out_problems_apart(tmp_path):
    from validation.campaign import RAGGED_N_BASE, gpu_tag, main, publish, ragged_n_markdown
    assert [gpu_tag({"device": d}) for d in ("NVIDIA H100 80GB HBM3", "NVIDIA H200", "cpu")] == ["h100", "h200", "gpu"]
    out = tmp_path / "run"
    assert main(["--dry-run", "--quick", "--phases", "ragged_n", "--out", str(out)]) == 0
    paths = publish(out, tmp_path / "res", allow_dry_run=True)
    assert sorted(p.name for p in paths) == [f"{RAGGED_N_BASE.format(gpu='gpu')}.dry_run.{x}" for x in ("json", "md")]
    pub = json.loads(next(p for p in paths if p.suffix == ".json").read_text())
    md = ragged_n_markdown(pub)
    assert "development problems" in md and "held-out problems" not in md and "best ragged-N width" in md
    # a row of a held-out problem goes to the held-out table only
    cols = pub["columns"]
    held = [dict(zip(cols, r, strict=True)) for r in pub["rows"]]
    for r in held:
        r.update(m=6144, n=3360, k=4096)
    both = ragged_n_markdown({**pub, "rows": pub["rows"] + [[r[c] for c in cols] for r in held]})
    dev, _, ho = both.partition("held-out problems")
    assert "| 6144x3360x4096 |" in ho and "| 6144x3360x4096 |" not in dev and "| 1000x800x520 |" in dev


def test_ragged_n_data_set_scores_h200_rows_only_with_the_held_out_problems_as_a_class(tmp_path):
    from validation.accuracy.datasets import DATASETS
    from validation.campaign import main, publish
    out = tmp_path / "run"
    assert main(["--dry-run", "--quick", "--phases", "ragged_n", "--out", str(out)]) == 0
    pub = next(p for p in publish(out, tmp_path / "res", allow_dry_run=True) if p.suffix == ".json")
    assert "dry-run" in DATASETS["h200-ragged-n"](pub).skipped[0]   # a dry run is never scored
    d = json.loads(pub.read_text())
    cols = d["columns"]
    for device, n_rows in (("NVIDIA H100 80GB HBM3", 0), ("NVIDIA H200", None)):
        d["env"].update(device=device, dry_run=False)
        if n_rows is None:        # one twin row moved to a held-out problem
            i = next(i for i, r in enumerate(d["rows"]) if r[cols.index("kernel")] == "wsim_sm90_twin")
            d["rows"][i] = [{"m": 6144, "n": 3360, "k": 4096}.get(c, v) for c, v in zip(cols, d["rows"][i], strict=True)]
        fake = tmp_path / f"{device.split()[1]}.json"
        fake.write_text(json.dumps(d))
        ds = DATASETS["h200-ragged-n"](fake)
        if n_rows == 0:
            assert not ds.rows and "measured on 'NVIDIA H100 80GB HBM3'" in ds.skipped[0]
        else:
            assert ds.rows and {r.classes["problems"] for r in ds.rows} == {"development", "held out"}
            assert {r.classes["decomposition"] for r in ds.rows} >= {"data-parallel"}


def test_stream_k_tile_order_is_the_work_tables_segments_for_every_cta():
    """The tile-level check of a stream-K run (validation.collect.schedule_matches) expects each CTA's
    tiles from its cluster's row of the work table, not the static order (which only matches unsplit)."""
    from hw_kernels.schedule import stream_k_tile_order, tile_order
    cfg = KernelConfig(tile_n=224, cluster_m=2, cluster_n=2, decomposition="stream_k")
    sk = cfg.stream_k_for(1000, 800, 520)
    order = stream_k_tile_order(sk, 2, 2)
    assert set(order) == {(p, r) for p in range(sk.clusters) for r in range(4)}
    assert all(len(order[(p, r)]) == sk.table[p][0] for p, r in order)
    # every CTA tile of the 8 x 4 grid (M 1000 / 128, N 800 / 224, rounded to the 2 x 2 cluster) is computed
    assert {t for ts in order.values() for t in ts} == {(x, y) for x in range(8) for y in range(4)}
    # 9 stream-K units over 8 cluster tiles on 30 persistent clusters: not the static order (cluster 1 gets none)
    assert order[(1, 0)] == [] and sum(map(len, order.values())) == 32
    assert order != tile_order(1000, 800, 128, 224, 2, 2, "heuristic", 1, num_clusters=sk.clusters)


def test_fixup_vec_is_named_round_trips_and_stays_out_of_the_model_fields():
    """fixup_vec=4 (the 16-byte fixup) is named ``_fv4`` after the decomposition and parses back; the default
    one-word fixup keeps the campaigns' names and fields, and the SM90 model, which knows only that one,
    refuses a 16-byte config by name instead of simulating it as the other."""
    from simulator.errors import ConfigError as ModelConfigError
    from simulator.kernels.space import sm90_config_from_hw
    one = KernelConfig(tile_n=128, cluster_m=1, decomposition="split_k", splits=8, reduction="nondeterministic")
    vec = replace(one, fixup_vec=4)
    assert one.name() == "128x128x64_c1x1_rh_sw1_e32_ds8_nd" and vec.name() == one.name() + "_fv4"
    assert KernelConfig.from_name(vec.name()) == vec and KernelConfig.from_name(one.name()) == one
    assert "fixup_vec" not in one.asdict() and vec.asdict()["fixup_vec"] == 4
    assert vec.compile_key() != one.compile_key()
    sm90_config_from_hw(one.asdict(), 512, 512, 32768)
    with pytest.raises(ModelConfigError, match=r"\['fixup_vec'\]: unknown"):
        sm90_config_from_hw(vec.asdict(), 512, 512, 32768)


def test_fixup_vec_rule_names_the_value():
    pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
    from hw_kernels.sm90_gemm import Sm90TmaWsGemm
    with pytest.raises(ValueError, match=r"fixup_vec=2: must be one of \(1, 4\)"):
        Sm90TmaWsGemm(tile_n=128, cluster_m=1, decomposition="split_k", splits=2, fixup_vec=2)


# ---------------------------------------------------------------------------------------- tune's picks
def test_tune_picks_problems_are_the_issue_18_phases_problems_once_each_in_phase_order():
    from validation.campaign import COOP64_SHAPES, RAGGED_N_SHAPES, SMALL_M_SHAPES, STREAMK_SHAPES
    from validation.tune_picks import problems
    p = problems()
    assert len(p) == len(set(p))
    assert set(p) == {tuple(s) for s in (*STREAMK_SHAPES, *SMALL_M_SHAPES, *RAGGED_N_SHAPES, *COOP64_SHAPES)}
    assert p[:len(STREAMK_SHAPES)] == [tuple(s) for s in STREAMK_SHAPES]


def test_tune_picks_reference_is_each_files_fastest_correct_row_of_our_kernel(tmp_path):
    from validation.tune_picks import measured_bests
    cols = ["m", "n", "k", "kernel", "config", "event_us", "ok"]
    rows = [[64, 64, 64, "wsim_sm90_twin", "128x64x64_c1x1_rm_sw1_e32_trace-span", 10.0, True],
            [64, 64, 64, "wsim_sm90_twin", "128x128x64_c1x1_rm_sw1_e32_trace-span", 8.0, False],   # wrong output
            [64, 64, 64, "wsim_sm90_twin", "128x256x64_c1x1_rm_sw1_e32_trace-span", 9.0, True],
            [64, 64, 64, "cublas", "cublas", 5.0, True]]
    (tmp_path / "h200_streamk.json").write_text(json.dumps({"columns": cols, "rows": rows, "env": {"device": "X"}}))
    assert measured_bests(tmp_path) == {(64, 64, 64): [{"file": "h200_streamk.json", "event_us": 9.0, "device": "X",
                                                         "config": "128x256x64_c1x1_rm_sw1_e32"}]}


def test_picks_phase_measures_each_problems_own_configs_and_publishes_the_pick_against_cublas(tmp_path):
    from validation.campaign import check_plan, plan
    from validation.tune_picks import PLAN, load_plan
    if not PLAN.is_file():
        pytest.skip("no committed tune picks plan")
    full = plan()["picks"]
    committed = load_plan()["problems"]
    assert full["shapes"] == [(p["m"], p["n"], p["k"]) for p in committed]
    for p in committed:
        cfgs = full["per_shape"][(p["m"], p["n"], p["k"])]
        assert [c.name() for c in cfgs] == [f"{c}_trace-span" for c in p["configs"]] and p["configs"][0] == p["pick"]
    assert {c.name() for c in full["configs"]} == {c.name() for cs in full["per_shape"].values() for c in cs}
    check_plan({"picks": full})                                      # every config passes the kernel's rules
    paths, md = _dry_run_published(tmp_path, "picks")
    assert sorted(p.name for p in paths) == ["gpu_picks.dry_run.json", "gpu_picks.dry_run.md"]
    q = plan(quick=True)["picks"]
    pick = q["per_shape"][(200, 256, 8192)][0].name()
    assert md.startswith("# GPU wsim tune's picks against cuBLAS (DRY RUN")
    assert md.count("\n| 200x256x8192 |") == 1 and f"| {pick} |" in md
    assert "the pick >= 0.95x cuBLAS on" in md


def test_picks_phase_without_a_plan_file_measures_nothing(monkeypatch, tmp_path):
    from validation import campaign, tune_picks
    monkeypatch.setattr(campaign, "TUNE_PICKS_PLAN", tmp_path / "none.json")
    assert campaign.picks_plan() == {"shapes": [], "configs": [], "per_shape": {}, "dtype": "fp16"}
    assert tune_picks.PLAN == Path(campaign.__file__).parent / "results" / "h200_tune_picks_plan.json"
    with pytest.raises(SystemExit, match="none.json: missing; write it with python -m validation.tune_picks"):
        tune_picks.load_plan(tmp_path / "none.json")


def test_tune_picks_earlier_finds_the_exact_pick_and_tallies_h200_runs_only(tmp_path):
    from validation.tune_picks import campaign_rows, earlier_markdown
    cols = ["m", "n", "k", "kernel", "config", "event_us", "ok"]
    pick = "128x128x64_c1x2_rm_sw1_e32_dh"
    for name, dev, us in (("h200_streamk.json", "NVIDIA H200", 10.0), ("h100_coop64.json", "NVIDIA H100 80GB HBM3", 30.0)):
        rows = [[64, 64, 4096, "wsim_sm90_twin", f"{pick}_trace-span", us, True],
                [64, 64, 4096, "wsim_sm90_twin", "128x64x64_c1x2_rm_sw1_e32_trace-span", 8.0, True],
                [64, 64, 4096, "cublas", "cublas", 9.6, True]]
        (tmp_path / name).write_text(json.dumps({"columns": cols, "rows": rows, "env": {"device": dev}}))
    plan = {"command": "c", "model_hash": "h", "tune": "t", "problems": [
        {"m": 64, "n": 64, "k": 4096, "held_out": False, "pick": pick, "pick_predicted_us": 9.0},
        {"m": 128, "n": 64, "k": 4096, "held_out": True, "pick": pick, "pick_predicted_us": 9.0}]}
    md = earlier_markdown(plan, campaign_rows(tmp_path), "cmd")
    assert f"| 64x64x4096 | {pick} | 9.0 | h200_streamk.json | NVIDIA H200 | 10.0 | 0.96 | 1.250 |" in md
    assert f"| 64x64x4096 | {pick} | 9.0 | h100_coop64.json | NVIDIA H100 80GB HBM3 | 30.0 | 0.32 | 3.750 |" in md
    assert f"| 128x64x4096 (held out) | {pick} | 9.0 | not measured |" in md
    assert "the pick >= 0.95x cuBLAS on 1 of the 1 problems" in md and "1 of 2 problems have no H200 timing" in md
