"""GPU side: build the hardware kernel's variants, check them, time them against cuBLAS, trace them.

    python -m validation.collect --out OUT [--phase smoke|smoke-pp|check|bench|overhead|trace|all]
                                 [--quick] [--no-pingpong | --only-pingpong]
    python -m validation.collect --publish RUN_DIR [RUN_DIR ...] --out validation/results \
                                 --trace-raw raw_*.npz ... [--trace-npz-for raw_*.npz ...]   (CPU)

Phases: ``check`` (correctness grid: fresh random-normal inputs, NaN-poisoned output, float32
reference, shapes that do not divide the tile, every schedule/cluster/raster/level; instrumented runs
also check each CTA's tile order and that no record was dropped), ``bench`` (kernel vs cuBLAS, launches
alternating, in-kernel clock from an instrumented twin; also ``benchmarks/hw_vs_cublas.py``),
``overhead`` (the instrumentation levels against the same kernel uninstrumented), ``trace`` (raw record
dumps of instrumented runs). Writes under OUT: ``results.json`` (environment, every table) and
``raw_<name>.npz`` (record buffer + metadata; ``python -m validation.hw_trace`` turns one into a
shared-format trace). ``--publish`` merges finished runs into validation/results (tables as md + json,
measured traces with their metadata).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from hw_kernels import records as R
from hw_kernels.host import KernelConfig, Runner, compile_sm90

RESULTS = "results.json"


def environment(command: str) -> dict:
    env = {"date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "command": command,
           "python": platform.python_version()}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
        name, drv, maxclk, plim = [x.strip() for x in q.split(",")]
        env.update(device=name, driver=drv, sm_clock_max=maxclk, power_limit=plim)
    except Exception as e:
        env["nvidia_smi_error"] = str(e)
    try:
        import torch
        env["torch"] = torch.__version__
        env["cuda_runtime_torch"] = torch.version.cuda
        env["sms"] = torch.cuda.get_device_properties(0).multi_processor_count
    except Exception:
        pass
    try:
        from importlib.metadata import version
        env["nvidia_cutlass_dsl"] = version("nvidia-cutlass-dsl")
    except Exception:
        try:
            import cutlass
            env["nvidia_cutlass_dsl"] = getattr(cutlass, "__version__", "unknown")
        except Exception:
            env["nvidia_cutlass_dsl"] = "unknown"
    return env


class Session:
    """Compiled kernels cached by (config, dtype); results accumulated into one JSON file."""

    def __init__(self, out: Path, command: str):
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        self.path = out / RESULTS
        self.res = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.res.setdefault("env", environment(command))
        self.res["env"]["command"] = command  # the latest phase run into this folder
        self.res.setdefault("commands", []).append(command)
        self._kernels: dict = {}

    def save(self):
        self.path.write_text(json.dumps(self.res, indent=1, default=str))

    def kernel(self, cfg: KernelConfig, dtype: str):
        """The compiled kernel that runs ``cfg`` (one compile per ``cfg.compile_key()``: raster and
        swizzle are run-time arguments); launch it with ``Runner(compiled, config=cfg)``."""
        key = (cfg.compile_key(), dtype)
        if key not in self._kernels:
            t0 = time.time()
            self._kernels[key] = compile_sm90(key[0], dtype)
            self.res.setdefault("compile_s", {})[f"{key[0].name()}_{dtype}"] = round(time.time() - t0, 2)
        return self._kernels[key]

    def runner(self, cfg: KernelConfig, dtype: str) -> Runner:
        return Runner(self.kernel(cfg, dtype), config=cfg)


def _inputs(m, n, k, dtype, seed):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    td = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    a = torch.randn(m, k, device="cuda", dtype=torch.float32, generator=g).to(td)
    b = torch.randn(n, k, device="cuda", dtype=torch.float32, generator=g).to(td)
    return a, b


#: Our max abs error against the float32 reference may be at most this many times cuBLAS's on the
#: same inputs (both round the same fp32 sums to fp16/bf16; a wrong tile or a race is off by far more).
MAX_ERR_VS_CUBLAS = 2.0


def reference_errors(a, b):
    """The float32 reference of ``a @ b.t()`` and cuBLAS's (torch.matmul's) max abs error against it.

    The reference is float32 on the GPU with TF32 off (a true float32 product of the 16-bit inputs)."""
    import torch
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        ref = a.float() @ b.float().t()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    cub = torch.matmul(a, b.t()).float()
    return ref, float((cub - ref).abs().max().item())


def compare_to_reference(out, ref, cublas_max_abs: float) -> dict:
    """Our output against the float32 reference: NaNs (unwritten outputs: the buffer was NaN-poisoned),
    max abs error, relative Frobenius error, and the max abs error over cuBLAS's on the same inputs."""
    import torch
    o = out.float()
    nan = int(torch.isnan(o).sum().item())
    if nan:
        return {"nan": nan, "max_abs_err": float("nan"), "rel_err": float("nan"),
                "cublas_max_abs_err": cublas_max_abs, "err_vs_cublas": float("nan"), "ok": False}
    d = o - ref
    mx = float(d.abs().max().item())
    rel = float((d.norm() / ref.norm()).item())
    ratio = mx / cublas_max_abs if cublas_max_abs > 0 else (0.0 if mx == 0 else float("inf"))
    return {"nan": 0, "max_abs_err": mx, "rel_err": rel, "cublas_max_abs_err": cublas_max_abs,
            "err_vs_cublas": ratio, "ok": ratio <= MAX_ERR_VS_CUBLAS}


def check_one(s: Session, cfg: KernelConfig, dtype: str, m: int, n: int, k: int, seed: int) -> dict:
    """Fresh random inputs, NaN-poisoned output, compare with a float32 reference: every output
    written, and the max abs error at most MAX_ERR_VS_CUBLAS x cuBLAS's on the same inputs."""
    import torch
    a, b = _inputs(m, n, k, dtype, seed)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
    run = s.runner(cfg, dtype).prepare(a, b, c)
    run.launch()
    torch.cuda.synchronize()
    ref, cub = reference_errors(a, b)
    cmp = compare_to_reference(c, ref, cub)
    rec = {"config": cfg.name(), "dtype": dtype, "m": m, "n": n, "k": k, **cmp,
           "tol": f"max abs err <= {MAX_ERR_VS_CUBLAS} x cuBLAS's"}
    ok = cmp["ok"]
    if cfg.instrument:
        from validation.hw_trace import decode
        sl = decode(run.trace_buffer(), run.cap, run.grid_ctas(m, n))
        rec["slices"] = len(sl)
        rec["dropped"] = int(sum(x.dropped for x in sl.values()))
        rec["slices_expected"] = run.grid_ctas(m, n) * cfg.roles_per_cta
        if R.record_level(cfg.instrument) >= R.LEVEL_TILE:  # tile records: the order of every CTA
            rec["schedule_ok"] = schedule_matches(sl, cfg, m, n, run.c.max_active_clusters, k)
        else:  # the span level: every role of every CTA wrote its header and footer
            rec["schedule_ok"] = None
        ok = (ok and rec["schedule_ok"] is not False and rec["dropped"] == 0
              and rec["slices"] == rec["slices_expected"])
    rec["ok"] = ok
    return rec


def schedule_matches(slices: dict, cfg: KernelConfig, m: int, n: int, max_clusters: int, k: int = 0) -> bool:
    """The tiles each CTA recorded are, in order, those hw_kernels/schedule.py assigns it: the static tile
    order, or for the stream-K scheduler each segment of its cluster's row of the work table (needs ``k``)."""
    from hw_kernels import records as RR
    from hw_kernels.schedule import stream_k_tile_order, tile_order
    if cfg.stream_k:
        order = stream_k_tile_order(cfg.stream_k_for(m, n, k), cfg.cluster_m, cfg.cluster_n)
    else:
        order = tile_order(m, n, cfg.tile_m, cfg.tile_n, cfg.cluster_m, cfg.cluster_n, cfg.raster, cfg.swizzle,
                           num_clusters=max_clusters)
    csize = cfg.cluster_m * cfg.cluster_n
    for (cta, role), sl in slices.items():
        if role == "MainloopLoad":
            continue
        d = sl.data
        tiles = [RR.unpack_tile(int(w)) for w in d[RR.unpack_w0(d[:, 0])[0] == RR.C_TILE][:, 1]]
        want = order.get((cta // csize, sl.cta_rank), [])
        if cfg.schedule == "pingpong":  # the two consumer warpgroups alternate tiles
            want = want[(0 if role == "Consumer0" else 1)::2]
        if tiles != want:
            return False
    return True


#: The configuration the benchmark calls "tuned": cluster 2x1, max swizzle 4, heuristic raster.
TUNED = KernelConfig(cluster_m=2, swizzle=4)
#: Mirrors simulator.kernels.sm90_config.Sm90GemmConfig's defaults (cluster 2x1, heuristic raster, swizzle 1).
DEFAULT = KernelConfig()
#: Ping-pong: each consumer warpgroup owns a 128x128 tile, mainloops and epilogues alternate.
PINGPONG = KernelConfig(schedule="pingpong", tile_n=128, cluster_m=2, swizzle=4)


NO_PINGPONG = False
ONLY_PINGPONG = False  # ping-pong configs plus the cooperative TUNED and DEFAULT as baselines


def _keep(cfgs):
    if ONLY_PINGPONG:
        return [c for c in cfgs if c.schedule == "pingpong" or c in (TUNED, DEFAULT)
                or c == replace(TUNED, instrument=R.LEVEL_TILE)]
    return [c for c in cfgs if not (NO_PINGPONG and c.schedule == "pingpong")]


def phase_check(s: Session, quick: bool):
    grid = [(128, 256, 64), (1000, 1032, 520), (129, 264, 72), (64, 8, 8), (4096, 4096, 4096),
            (3000, 5000, 1000), (777, 1536, 4104)]
    configs = [DEFAULT, TUNED, KernelConfig(cluster_m=1), KernelConfig(cluster_m=1, cluster_n=2, raster="m", swizzle=2),
               KernelConfig(tile_n=128, cluster_m=2, cluster_n=2, swizzle=8),
               KernelConfig(cluster_m=2, swizzle=4, epilogue_tile_n=64, epilogue_store_stages=2),
               KernelConfig(tile_n=192, cluster_m=1, raster="n"),
               KernelConfig(cluster_m=1, instrument=R.LEVEL_EPILOGUE),
               replace(TUNED, instrument=R.LEVEL_KBLOCK), replace(TUNED, instrument=R.LEVEL_TILE),
               replace(TUNED, instrument=R.LEVEL_EPILOGUE),
               PINGPONG, replace(PINGPONG, cluster_m=1, swizzle=1), replace(PINGPONG, tile_n=64, cluster_n=2),
               replace(PINGPONG, instrument=R.LEVEL_EPILOGUE), replace(PINGPONG, instrument=R.LEVEL_TILE)]
    configs = _keep(configs)
    if quick:
        configs = configs[:2]
    rows = []
    seed = 1
    for cfg in configs:
        for dtype in ("fp16", "bf16"):
            shapes = grid if cfg in (DEFAULT, TUNED) or dtype == "fp16" else grid[:4]
            for (m, n, k) in shapes:
                seed += 1
                try:
                    r = check_one(s, cfg, dtype, m, n, k, seed)
                except Exception as e:
                    r = {"config": cfg.name(), "dtype": dtype, "m": m, "n": n, "k": k, "ok": False,
                         "error": f"{type(e).__name__}: {e}"[:500]}
                rows.append(r)
                print(("PASS" if r["ok"] else "FAIL"), r["config"], dtype, (m, n, k),
                      f"max abs err {r.get('max_abs_err', float('nan')):.3g} = "
                      f"{r.get('err_vs_cublas', float('nan')):.2f} x cuBLAS's", r.get("error", ""), flush=True)
        s.res["check"] = rows
        s.save()
    # A problem the kernel cannot compute is refused before launch (N=17: not a multiple of 8).
    for dtype in ("fp16", "bf16"):
        rows.append(check_refused(s, DEFAULT, dtype, 3001, 17, 4096))
    s.res["check"] = rows
    s.save()
    bad = [r for r in rows if not r["ok"]]
    print(f"[check] {len(rows) - len(bad)}/{len(rows)} passed", flush=True)


def check_refused(s: Session, cfg: KernelConfig, dtype: str, m: int, n: int, k: int) -> dict:
    """A problem the kernel must refuse: ``Runner.prepare`` raises ConfigError and launches nothing."""
    import torch

    from simulator.errors import ConfigError
    td = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    a = torch.randn(m, k, device="cuda").to(td)
    b = torch.randn(n, k, device="cuda").to(td)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=td)
    try:
        s.runner(cfg, dtype).prepare(a, b, c)
        msg, ok = "launched: not refused", False
    except ConfigError as e:
        msg, ok = str(e), "\n" not in str(e)
    print(("PASS" if ok else "FAIL"), "refused", cfg.name(), dtype, (m, n, k), msg, flush=True)
    return {"config": cfg.name(), "dtype": dtype, "m": m, "n": n, "k": k, "expect": "refused",
            "message": msg, "ok": ok}


def timing_rows(s: Session, shapes, configs, dtypes, iters=50, label="timing"):
    """Kernel(s) vs cuBLAS on the same inputs, alternating launch by launch; the in-kernel clock comes
    from the instrumented twin(s) in the same alternation, NVML samples cover the whole alternation."""
    import torch

    from validation.hw_trace import decode, effective_clock_ghz
    from validation.timing import alternating, tflops
    rows = []
    for dtype in dtypes:
        for (m, n, k) in shapes:
            a, b = _inputs(m, n, k, dtype, 1234)
            bt = b.t()
            c_ref = torch.empty(m, n, device="cuda", dtype=a.dtype)
            fns = {"cublas": lambda a=a, bt=bt, c_ref=c_ref: torch.matmul(a, bt, out=c_ref)}
            runners = {}
            for cfg in configs:
                c = torch.empty(m, n, device="cuda", dtype=a.dtype)
                r = s.runner(cfg, dtype).prepare(a, b, c)
                runners[cfg.name()] = r
                fns[cfg.name()] = r.launch
            flop = 2.0 * m * n * k
            it = max(iters, min(400, int(iters * (8192 ** 3 * 2.0) / flop)))
            t = alternating(fns, it)
            clock = t.pop("_clock")
            kclk = None
            for name, r in runners.items():
                if r.c.config.instrument:
                    sl = decode(r.trace_buffer(), r.cap, r.grid_ctas(m, n))
                    t[name]["in_kernel_clock"] = effective_clock_ghz(sl)
                    kclk = kclk or t[name]["in_kernel_clock"]
            cb = t["cublas"]["ms_median"]
            for v in t.values():
                v["tflops"] = tflops(m, n, k, v["ms_median"])
                v["ratio_vs_cublas"] = cb / v["ms_median"]
            row = {"dtype": dtype, "m": m, "n": n, "k": k, "iters": it, "results": t, "nvml": clock,
                   "in_kernel_clock": kclk}
            rows.append(row)
            best = max((x for x in t if x != "cublas"), key=lambda x: t[x]["tflops"])
            kc = kclk.get("median_ghz") if kclk else None
            print(f"[{label}] {dtype} {m}x{n}x{k}: cublas {t['cublas']['tflops']:.0f} TF/s; best {best} "
                  f"{t[best]['tflops']:.0f} TF/s ({t[best]['ratio_vs_cublas']:.3f}x); clock in-kernel {kc} GHz, "
                  f"NVML {clock.get('nvml_sm_clock_mhz_median')} MHz", flush=True)
            s.res.setdefault(label, []).append(row)
            s.save()
    return rows


def phase_bench(s: Session, quick: bool):
    """The benchmark table (benchmarks/hw_vs_cublas.py): kernel vs cuBLAS at several shapes."""
    main = [(8192, 8192, 8192)]
    others = [(4096, 4096, 4096), (8192, 8192, 2048), (16384, 16384, 4096), (2048, 2048, 2048),
              (6144, 6144, 6144), (3000, 5000, 1000)]
    big = _keep([TUNED, DEFAULT, KernelConfig(cluster_m=2, raster="m", swizzle=4), KernelConfig(cluster_m=1),
                 replace(TUNED, epilogue_tile_n=64, epilogue_store_stages=2), PINGPONG,
                 replace(PINGPONG, tile_n=64), replace(TUNED, instrument=R.LEVEL_TILE)])
    small = _keep([TUNED, DEFAULT, replace(TUNED, tile_n=128), PINGPONG, replace(TUNED, instrument=R.LEVEL_TILE)])
    if quick:
        others, big = others[:1], big[:2]
    timing_rows(s, main, big, ("fp16", "bf16"), iters=100, label="bench")
    timing_rows(s, others[:1], small, ("fp16", "bf16"), iters=100, label="bench")
    timing_rows(s, others[1:], small, ("fp16",), iters=60, label="bench")
    s.res["bench_markdown"] = bench_markdown(s.res["bench"], s.res["env"])
    s.save()


def phase_overhead(s: Session, quick: bool):
    """Instrumentation overhead: the same config at levels 0, 1, 2, interleaved, same inputs."""
    cfgs = _keep([TUNED, replace(TUNED, instrument=R.LEVEL_TILE), replace(TUNED, instrument=R.LEVEL_KBLOCK),
                  replace(TUNED, instrument=R.LEVEL_EPILOGUE),
                  replace(TUNED, instrument=R.LEVEL_KBLOCK, instrument_roles="producer"),
                  replace(TUNED, instrument=R.LEVEL_KBLOCK, instrument_roles="consumers"),
                  PINGPONG, replace(PINGPONG, instrument=R.LEVEL_TILE), replace(PINGPONG, instrument=R.LEVEL_KBLOCK),
                  replace(PINGPONG, instrument=R.LEVEL_EPILOGUE)])
    rows = timing_rows(s, [(8192, 8192, 8192)], cfgs, ("fp16", "bf16"), iters=120, label="overhead")
    for row in rows:
        t = row["results"]
        for c in cfgs:
            if c.instrument == R.LEVEL_OFF:
                continue
            base = t[replace(c, instrument=R.LEVEL_OFF, instrument_roles="all").name()]["ms_median"]
            t[c.name()]["overhead_vs_off"] = t[c.name()]["ms_median"] / base - 1.0
            print(f"[overhead] {row['dtype']} {c.name()}: {100 * t[c.name()]['overhead_vs_off']:+.2f}%", flush=True)
    s.save()


def bench_markdown(rows: list, env: dict) -> str:
    """The timing table as markdown: one line per (shape, dtype, kernel)."""
    lines = [f"Device: {env.get('device')}, driver {env.get('driver')}, nvidia-cutlass-dsl "
             f"{env.get('nvidia_cutlass_dsl')}, torch {env.get('torch')} (cuBLAS through torch.matmul(a, b.t())), "
             f"{env.get('date_utc')}.", "",
             "Per row group: the same random-normal inputs for every kernel, warm-up, then launches alternating "
             "kernel by kernel (order rotating) `iters` times; per-launch CUDA-event times, median (p10-p90). "
             "`clock in-kernel`: clock64 ticks over %globaltimer ns, median over CTAs, read by our instrumented "
             "twin (`_trace-tile`) launched in the same alternation, so it is the clock every kernel of the "
             "group ran at. `NVML`: SM clock sampled every 5 ms over the whole alternation (it reads higher than "
             "the in-kernel clock under power capping; the in-kernel one is what turns cycles into time).", "",
             "| dtype | M x N x K | kernel | ms median (p10-p90) | TFLOP/s | vs cuBLAS | clock in-kernel GHz | NVML MHz | iters |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        shape = f"{row['m']}x{row['n']}x{row['k']}"
        kc = (row.get("in_kernel_clock") or {}).get("median_ghz")
        nv = (row.get("nvml") or {}).get("nvml_sm_clock_mhz_median")
        kc_s = f"{kc:.3f}" if kc else ""
        nv_s = f"{nv:.0f}" if nv else ""
        for name, v in sorted(row["results"].items(), key=lambda kv: -kv[1]["tflops"]):
            spread = f"{v['ms_median']:.3f} ({v.get('ms_p10', v['ms_median']):.3f}-{v.get('ms_p90', v['ms_median']):.3f})"
            lines.append(f"| {row['dtype']} | {shape} | {name} | {spread} | {v['tflops']:.0f} | "
                         f"{v['ratio_vs_cublas']:.3f} | {kc_s} | {nv_s} | {row.get('iters', '')} |")
    return "\n".join(lines) + "\n"


def phase_trace(s: Session, cfg: KernelConfig, shape, dtype="fp16", tag=None, save_trace=False):
    """One instrumented run: raw dump + shared-format trace."""
    import numpy as np
    import torch

    from validation.hw_trace import summarize, to_trace
    m, n, k = shape
    a, b = _inputs(m, n, k, dtype, 99)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
    r = s.runner(cfg, dtype).prepare(a, b, c)
    for _ in range(3):
        r.launch()
    torch.cuda.synchronize()
    r._trace.zero_()
    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    st.record()
    r.launch()
    en.record()
    torch.cuda.synchronize()
    ms = st.elapsed_time(en)
    meta = {"source": "measured", "arch": "sm90", "kernel": "hw_kernels.sm90_gemm.Sm90TmaWsGemm",
            "config": cfg.asdict(), "config_name": cfg.name(), "dtype": dtype,
            "problem": {"m": m, "n": n, "k": k, "l": 1}, "capacity": r.cap, "ctas": r.grid_ctas(m, n),
            "max_active_clusters": r.c.max_active_clusters, "mainloop_stages": r.c.stages,
            "kernel_ms_events": ms, **{f"env_{k2}": v for k2, v in s.res["env"].items()}}
    meta["device"] = s.res["env"].get("device")
    meta["driver"] = s.res["env"].get("driver")
    meta["dsl_version"] = s.res["env"].get("nvidia_cutlass_dsl")
    tag = tag or f"{cfg.name()}_{dtype}_{m}x{n}x{k}"
    buf = r.trace_buffer()
    np.savez_compressed(s.out / f"raw_{tag}.npz", buf=buf, meta=np.asarray(json.dumps(meta, default=str)))
    tr = to_trace(buf, meta)
    tr.meta["summary"] = summarize(tr)
    if save_trace:
        tr.save(s.out / f"trace_{tag}.npz")
    info = {"tag": tag, "spans": len(tr), "kernel_ms": ms, "effective_clock": tr.meta["effective_clock"],
            "dropped": tr.meta["dropped_records"], "trace_duration_us": tr.duration_ns / 1e3}
    s.res.setdefault("traces", []).append(info)
    s.save()
    print("[trace]", json.dumps(info, default=str), flush=True)
    return tr


def publish(run_dirs: list[Path], dest: Path, trace_raws: list[str] | None = None,
            min_wait_cycles: int = 0, npz_for: list[str] | None = None) -> list[Path]:
    """Write finished GPU runs' results into ``dest`` (validation/results): the benchmark table
    (md + json), the overhead and correctness tables, and measured traces (.npz, shared format) with
    their metadata (json + md). Runs on a CPU from what collect wrote; several runs are merged (each
    row group of the benchmark has its own cuBLAS baseline). ``trace_raws``: raw dumps, looked up in
    the run folders; each is copied (renamed after the current naming code), and summarized (json +
    md); the converted trace (.npz) is written only for those in ``npz_for`` (default: all) to keep the
    repository small."""
    import numpy as np

    from validation.hw_trace import load_raw, summarize, to_trace
    runs = [json.loads((Path(d) / RESULTS).read_text()) for d in run_dirs]
    res = {"env": runs[-1]["env"], "bench": [], "overhead": [], "check": [],
           "commands": [c for r in runs for c in r.get("commands", [])]}
    # The benchmark rows of every run are kept (each row group has its own cuBLAS baseline); the
    # correctness grid and the overhead table come from the latest run that has them.
    for r in runs:
        res["bench"] += r.get("bench", [])
        for key in ("overhead", "check"):
            if r.get(key):
                res[key] = r[key]
    env = dict(res["env"])
    env["command"] = " ; ".join(c for c in res["commands"] if "--phase all" in c or "bench" in c) or env["command"]
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    if res.get("bench"):
        (dest / "hw_vs_cublas.md").write_text("# Hardware kernel vs cuBLAS (H200)\n\n" + bench_markdown(res["bench"], env)
                                              + "\nCommand: `python benchmarks/hw_vs_cublas.py --out OUT` "
                                              "(or `python -m validation.collect --phase bench`).\n")
        (dest / "hw_vs_cublas.json").write_text(json.dumps({"env": env, "bench": res["bench"]}, indent=1))
        out += [dest / "hw_vs_cublas.md", dest / "hw_vs_cublas.json"]
    if res.get("overhead") or res.get("check"):
        summary = {"env": env, "commands": res["commands"], "overhead": res.get("overhead"),
                   "check": {"passed": sum(r["ok"] for r in res.get("check", [])),
                             "total": len(res.get("check", [])), "rows": res.get("check")}}
        (dest / "hw_checks_and_overhead.json").write_text(json.dumps(summary, indent=1))
        out.append(dest / "hw_checks_and_overhead.json")
        lines = ["# Correctness grid and instrumentation overhead (H200)", "",
                 f"Correctness: {summary['check']['passed']}/{summary['check']['total']} runs passed "
                 "(fresh random-normal inputs per run, output NaN-poisoned before the launch, every element "
                 "written, max abs error against a float32 torch reference (TF32 off) at most "
                 f"{MAX_ERR_VS_CUBLAS} x cuBLAS's on the same inputs; instrumented runs also check that every "
                 "CTA recorded exactly the tiles hw_kernels/schedule.py assigns it, in order, with no record "
                 "dropped; a problem the kernel cannot compute must be refused before launch).", "",
                 "| config | dtype | shapes (M x N x K) | passed |", "| --- | --- | --- | --- |"]
        groups: dict = {}
        for r in res.get("check", []):
            g = groups.setdefault((r["config"], r["dtype"]), [[], 0])
            g[0].append(f"{r['m']}x{r['n']}x{r['k']}")
            g[1] += bool(r["ok"])
        for (cfg, dt), (shapes, ok) in groups.items():
            lines.append(f"| {cfg} | {dt} | {', '.join(shapes)} | {ok}/{len(shapes)} |")
        lines += ["", "Overhead of the instrumentation switch: the same config at each level, launches "
                  "alternating with the uninstrumented kernel (and cuBLAS), 8192^3, same inputs; median "
                  "time ratio - 1.", "", "| dtype | config | level | overhead |", "| --- | --- | --- | ---: |"]
        for row in res.get("overhead", []):
            for name, v in row["results"].items():
                if "overhead_vs_off" in v:
                    lvl = name.split("_trace-")[-1]
                    lines.append(f"| {row['dtype']} | {name.split('_trace-')[0]} | {lvl} | "
                                 f"{100 * v['overhead_vs_off']:+.2f}% |")
        (dest / "hw_checks_and_overhead.md").write_text("\n".join(lines) + "\n")
        out.append(dest / "hw_checks_and_overhead.md")
    for trace_raw in trace_raws or []:
        run_dir = next(Path(d) for d in reversed(run_dirs) if (Path(d) / trace_raw).exists())  # latest wins
        buf, meta = load_raw(run_dir / trace_raw)
        tr = to_trace(buf, meta, min_wait_cycles=min_wait_cycles)
        tr.meta["summary"] = summarize(tr)
        tr.meta["min_wait_cycles"] = min_wait_cycles
        tr.meta["collect_command"] = env.get("command")
        # Names from the current naming code (KernelConfig.name), not from the dump's file name.
        p = meta["problem"]
        tag = f"{KernelConfig(**meta['config']).name()}_{meta['dtype']}_{p['m']}x{p['n']}x{p['k']}"
        meta["config_name"] = tr.meta["config_name"] = KernelConfig(**meta["config"]).name()
        name = "measured_" + tag
        raw_out = dest / f"raw_{tag}.npz"
        np.savez_compressed(raw_out, buf=buf, meta=np.asarray(json.dumps(meta, default=str)))
        out.append(raw_out)
        if npz_for is None or trace_raw in npz_for:
            tr.save(dest / f"{name}.npz")
            out.append(dest / f"{name}.npz")
            how = f"`{name}.npz` here"
        else:
            how = (f"not stored; rebuild it with `python -m validation.hw_trace validation/results/{raw_out.name} "
                   f"{name}.npz`")
        info = {k: v for k, v in tr.meta.items()}
        (dest / f"{name}.json").write_text(json.dumps(info, indent=1, default=str))
        s = tr.meta["summary"]
        clk = tr.meta["effective_clock"]
        p = meta["problem"]
        lines = [f"# Measured run: {meta['config_name']} {meta['dtype']} {p['m']}x{p['n']}x{p['k']}", "",
                 f"- device: {meta.get('device')}, driver {meta.get('driver')}, nvidia-cutlass-dsl {meta.get('dsl_version')}",
                 f"- date: {meta.get('env_date_utc')}; command: `{meta.get('env_command')}` (its trace phase; "
                 f"converted with `python -m validation.collect --publish ... --min-wait-cycles {min_wait_cycles}`)",
                 f"- kernel time (CUDA events, one launch after 3 warm-ups): {meta['kernel_ms_events'] * 1e3:.1f} us",
                 f"- effective SM clock (clock64 / globaltimer, median over {clk.get('slices')} role slices): "
                 f"{clk.get('median_ghz'):.3f} GHz (min {clk.get('min_ghz'):.3f}, max {clk.get('max_ghz'):.3f})",
                 f"- CTAs: {meta['ctas']}, mainloop stages: {meta['mainloop_stages']}, "
                 f"instrumentation level: {meta['config']['instrument']}, records dropped: {tr.meta['dropped_records']}",
                 f"- spans: {len(tr)} (waits shorter than {min_wait_cycles} cycles dropped); trace duration "
                 f"{s['duration_ns'] / 1e3:.1f} us", "", "| role | tile median us | wait fraction | waits (us, summed over CTAs) |",
                 "| --- | ---: | ---: | --- |"]
        for role, r in s.get("roles", {}).items():
            tile = r.get("tile_ns", {}).get("median")
            waits = ", ".join(f"{b}: {v / 1e3:.0f}" for b, v in r["wait_ns_by_barrier"].items())
            wf = r.get("wait_fraction")
            lines.append(f"| {role} | {tile / 1e3 if tile else float('nan'):.2f} | {wf if wf is not None else float('nan'):.3f} | {waits} |")
        lines += ["", f"Raw record dump: `{raw_out.name}`; shared-format trace: {how}.",
                  "Span meanings: see `span_semantics` in the JSON and validation/hw_trace.py."]
        (dest / f"{name}.md").write_text("\n".join(lines) + "\n")
        out += [dest / f"{name}.json", dest / f"{name}.md"]
    return out


def _is_shape(text: str) -> bool:
    parts = text.lower().split("x")
    return len(parts) == 3 and all(p.isdigit() and int(p) > 0 for p in parts)


def traced_kernels(trace: list[str] | None, trace_config: str | None, shape: str, level: int) -> list:
    """The (config at ``level``, (m, n, k)) pairs that ``--trace NAME@MxNxK ...`` or ``--trace-config NAME
    --shape MxNxK`` ask for; a malformed one exits with one line naming it."""
    items = [(f"--trace {t!r}", t) for t in trace or []]
    if trace_config:
        items.append((f"--trace-config {trace_config!r} --shape {shape!r}", f"{trace_config}@{shape}"))
    out = []
    for what, item in items:
        name, _, mnk = item.partition("@")
        named = KernelConfig.from_name(name)
        if named is None or not _is_shape(mnk):
            raise SystemExit(f"{what}: not a kernel name like 128x256x64_c2x1_rh_sw4_e32 with a problem MxNxK "
                             "of three positive integers")
        out.append((replace(named, instrument=level), tuple(int(x) for x in mnk.lower().split("x"))))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.collect", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT", "collect_out"), help="output folder")
    ap.add_argument("--phase", default="all", choices=["smoke", "smoke-pp", "check", "bench", "overhead", "trace", "all"])
    ap.add_argument("--no-pingpong", action="store_true", help="leave the ping-pong schedule out")
    ap.add_argument("--only-pingpong", action="store_true",
                    help="only ping-pong configs (plus cooperative baselines)")
    ap.add_argument("--quick", action="store_true", help="fewer configs and shapes")
    ap.add_argument("--publish", metavar="RUN_DIR", nargs="+", help="(CPU) write these runs' results "
                    "into --out (e.g. validation/results) instead of running anything")
    ap.add_argument("--trace-raw", nargs="*", help="with --publish: raw_*.npz dumps to convert and commit")
    ap.add_argument("--min-wait-cycles", type=int, default=0, help="with --publish: drop shorter waits")
    ap.add_argument("--trace-npz-for", nargs="*", help="with --publish: write converted traces only for these raws")
    ap.add_argument("--trace-config", metavar="NAME", help="trace one kernel given by its name (as in "
                    "hw_vs_cublas.md, e.g. 128x64x64_pp_c2x1_rh_sw4_e32) instead of the default trace set")
    ap.add_argument("--shape", default="4096x4096x2048", help="with --trace-config: MxNxK")
    ap.add_argument("--level", type=int, default=R.LEVEL_KBLOCK, help="with --trace-config: instrumentation level")
    ap.add_argument("--trace", metavar="NAME@MxNxK", nargs="+", help="trace several kernels in one process, "
                    "each given as its name and problem (e.g. 128x128x64_c1x1_rm_sw1_e32_ds8@512x512x32768), "
                    "at --level")
    a = ap.parse_args(argv)
    traced = traced_kernels(a.trace, a.trace_config, a.shape, a.level)   # bad names fail here, before the GPU check
    if not a.publish:
        from validation.timing import require_cuda_gpu
        require_cuda_gpu("python -m validation.collect")
    if a.publish:
        for p in publish([Path(d) for d in a.publish], Path(a.out), a.trace_raw, a.min_wait_cycles,
                         a.trace_npz_for):
            print(f"wrote {p} ({p.stat().st_size / 1e6:.2f} MB)")
        return 0
    s = Session(Path(a.out), " ".join(["python -m validation.collect", *(argv or sys.argv[1:])]))
    print("env:", json.dumps(s.res["env"]), flush=True)
    global NO_PINGPONG, ONLY_PINGPONG
    NO_PINGPONG, ONLY_PINGPONG = a.no_pingpong, a.only_pingpong
    if traced:
        for cfg, shape in traced:
            phase_trace(s, cfg, shape)
        return 0
    if a.phase == "smoke-pp":
        for cfg, shape in ((replace(PINGPONG, instrument=R.LEVEL_EPILOGUE), (1000, 1032, 520)),
                           (replace(PINGPONG, cluster_m=1), (129, 264, 72)), (PINGPONG, (4096, 4096, 256)),
                           (replace(PINGPONG, cluster_m=1, instrument=R.LEVEL_TILE), (4096, 2048, 1024))):
            r = check_one(s, cfg, "fp16", *shape, 11)
            print("smoke-pp", json.dumps(r), flush=True)
            s.res.setdefault("smoke", []).append(r)
        s.save()
        return 0 if all(r["ok"] for r in s.res["smoke"]) else 1
    if a.phase == "smoke":
        for cfg in (replace(TUNED, instrument=R.LEVEL_EPILOGUE), DEFAULT, replace(TUNED, instrument=R.LEVEL_SPAN)):
            r = check_one(s, cfg, "fp16", 1000, 1032, 520, 7)
            print("smoke", json.dumps(r), flush=True)
            s.res.setdefault("smoke", []).append(r)
        s.res["smoke"].append(check_refused(s, DEFAULT, "fp16", 3001, 17, 4096))
        s.save()
        return 0 if all(r["ok"] for r in s.res["smoke"]) else 1
    if a.phase in ("check", "all"):
        phase_check(s, a.quick)
    if a.phase in ("bench", "all"):
        phase_bench(s, a.quick)
    if a.phase in ("overhead", "all"):
        phase_overhead(s, a.quick)
    if a.phase in ("trace", "all"):
        if not ONLY_PINGPONG:
            phase_trace(s, replace(TUNED, instrument=R.LEVEL_EPILOGUE), (4096, 4096, 2048))
            phase_trace(s, replace(TUNED, instrument=R.LEVEL_TILE), (8192, 8192, 8192))
        if not NO_PINGPONG:
            phase_trace(s, replace(PINGPONG, instrument=R.LEVEL_EPILOGUE), (4096, 4096, 2048))
    s.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
