"""``wsim tune`` checked against measured times, from committed measurements only (CPU).

H200 (``validation/results/h200_campaign.json``, the ``space`` phase: every one of the 96 ``--space
hw`` candidates of 13 fp16 problems, timed alternately with cuBLAS; ``--data h200-wide``: the wide
campaign's dev problems, fp16 and bf16): per problem, wsim predicts all 96 candidates twice, by real
simulations: as ``wsim tune --arch h200 --space hw`` ranks them, each at its own predicted clock
(``simulator.tune(..., clock="predicted", search="exhaustive", prune=False)``: no measured clock),
and at the problem's median measured in-kernel clock (the cycles model alone, given the clock). Per
problem:

* Spearman between predicted and measured times, and the regret of each predictor's pick (measured
  time of its pick / measured best): wsim, the wave-quantised roofline (ties broken by candidate
  order), nvMatmulHeuristics's estimates of the same 96 configs, and the project's default config;
* wsim's pick against cuBLAS and against the default config first, then the measured best of 96 (an
  oracle: no tool picks it) against cuBLAS; nvMatmulHeuristics's own top config's estimate beside
  our measured best;
* the run-to-run floor: run 1's best measured in the repeat run, over the repeat's best.

B200 (hbarclay/gemm-model's fp16 rows, read from outside git): per problem (40), the regret of each
predictor's pick among the 16 measured configs: wsim ranked by ``wsim accuracy``'s scored
predictions (each shape's configs simulated at the constants fitted without that shape), wsim at the
shipped constants (as ``wsim tune`` runs; those constants were fitted on these rows: development),
gemm-model's own model, and nvMatmulHeuristics.

    python benchmarks/tune_check.py --out validation/results/tune_check.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from simulator.engine.run import estimate_events  # noqa: E402
from simulator.kernels.roofline import roofline  # noqa: E402
from simulator.kernels.scheduler import raster_for  # noqa: E402
from simulator.kernels.sm90_config import Sm90GemmConfig  # noqa: E402
from simulator.kernels.space import HW_RAGGED_TILE_N, hw_kernel_fields, make_space  # noqa: E402
from simulator.machine.arch import ArchSpec  # noqa: E402
from validation.accuracy import (  # noqa: E402
    DATASETS,
    evaluate_dataset,
    nvmh,  # noqa: E402
    quick_subset,
    spearman,
)
from validation.accuracy.cache import SimCache, model_hash  # noqa: E402
from validation.accuracy.evaluate import time_us  # noqa: E402
from validation.accuracy.simulate import SimJob, simulate_jobs  # noqa: E402

#: The span-level instrumentation suffix of the campaign's config names.
SPAN_SUFFIX = "_trace-span"


# ======================================================================================= metrics
def pick(pred: list[float]) -> int:
    """Index of the smallest prediction (the first of equal ones: candidate order breaks ties)."""
    best = 0
    for i, p in enumerate(pred):
        if p < pred[best]:
            best = i
    return best


def regret(meas: list[float], i: int) -> float:
    """Measured time of candidate ``i`` over the best measured time (1.0: the true best)."""
    return meas[i] / min(meas)


def ties(pred: list[float], i: int) -> int:
    """How many candidates share the picked prediction (a roofline often ties many)."""
    return sum(1 for p in pred if p == pred[i])


@dataclass
class ShapeResult:
    shape: str
    names: list[str]
    meas: list[float]                                   # measured us
    preds: dict[str, list[float]]                       # predictor -> predicted us per candidate
    cycles: list[float] = field(default_factory=list)   # measured span x clock (H200)
    pred_cycles: list[float] = field(default_factory=list)
    clock: float = 0.0
    default: int | None = None
    default_note: str = ""
    cublas_us: float | None = None
    repeat_regret: float | None = None
    nvmh_top: tuple[str, float] | None = None           # its own first config and its estimate
    extra: dict = field(default_factory=dict)

    def pick_of(self, name: str) -> int:
        return pick(self.preds[name])

    @property
    def best(self) -> int:
        return pick(self.meas)


def nvmh_preds(arch_name: str, cfgs) -> list[float] | None:
    if nvmh.unavailable():
        return None
    h = nvmh.heuristics(arch_name)
    return [h.estimate_us(c) for c in cfgs]


# ========================================================================================= H200
def h200_shapes(source: str = "h200") -> dict[tuple[str, int, int, int], list[dict]]:
    """Per problem (dtype, M, N, K): the campaign's rows of our kernel's 96 candidates, and cuBLAS's row.
    ``source`` "h200": the committed campaign's ``space`` phase (fp16); "h200-wide": the wide campaign's
    dev problems (its held-out problems are never read here)."""
    from validation.measurements import load_h200_timings, load_h200_wide
    rows = (load_h200_timings(None, phase="space", dtype="fp16", ok_only=False) if source == "h200"
            else load_h200_wide("dev", phase="wide", ok_only=False))
    out: dict[tuple[str, int, int, int], list[dict]] = {}
    for r in rows:
        out.setdefault((r["dtype"], r["m"], r["n"], r["k"]), []).append(r)
    return out


def default_twin_name(m: int, n: int, k: int, arch: ArchSpec, dtype: str = "fp16") -> tuple[str, str]:
    """The twin config name of the project's default SM90 config for this problem, and a note."""
    from hw_kernels.host import KernelConfig
    cfg = Sm90GemmConfig(m=m, n=n, k=k, dtype_ab=dtype, dtype_c=dtype, dtype_d=dtype).resolved(arch)
    f = hw_kernel_fields(cfg)
    f["raster"] = raster_for(cfg)
    note = f"Sm90GemmConfig() = {KernelConfig(**hw_kernel_fields(cfg)).name()}"
    f["mainloop_stages"] = None
    f["epilogue_store_stages"] = 4
    return KernelConfig(**f).name(), note + " -> the twin's raster (heuristic resolved) and 4 store buffers"


def predicted_clock_times(m: int, n: int, k: int, dtype: str, names: list[str], jobs: int) -> tuple[list, list]:
    """Each candidate's time and clock as ``wsim tune --arch h200 --space hw`` predicts them (each at its
    own predicted clock), in the order of ``names``: the hw space narrowed to the measured candidates
    (the stream-K ones were measured only on the streamk phase's problems)."""
    from hw_kernels.host import KernelConfig
    from simulator.engine.tune import tune
    sp = make_space("hw", 90, m, n, k, dtype, None)
    wanted, inner = set(names), sp.member
    sp = replace(sp, member=lambda c: (inner is None or inner(c)) and KernelConfig(**hw_kernel_fields(c)).name() in wanted)
    res = tune(m, n, k, dtype=dtype, arch="h200", space=sp, search="exhaustive", prune=False, clock="predicted",
               workers=jobs or None, progress=False)
    by = {}
    for r in res.rows:
        if r.ok:
            by[KernelConfig(**hw_kernel_fields(res.config_of(r))).name()] = (r.time_us, r.clock_ghz)
    return ([by.get(nm, (float("inf"), None))[0] for nm in names], [by.get(nm, (None, None))[1] for nm in names])


def h200_results(*, jobs: int = 0, cache: SimCache, log=None, source: str = "h200",
                 predicted: bool = True) -> list[ShapeResult]:
    from hw_kernels.host import KernelConfig
    base = ArchSpec.h200()
    todo = []
    for (dtype, m, n, k), rows in sorted(h200_shapes(source).items()):
        ours = {r["config"].removesuffix(SPAN_SUFFIX): r for r in rows
                if r["kernel"] != "cublas" and r.get("event_us") and r.get("clock_ghz")}
        if not ours:
            continue
        clock = statistics.median(r["clock_ghz"] for r in ours.values())
        arch = base.with_overrides({"clock_ghz": round(clock, 4)},
                                   origin="median in-kernel clock of this problem's measured candidates")
        cands = make_space("hw", 90, m, n, k, dtype, None).all_candidates(arch)
        names = [KernelConfig(**hw_kernel_fields(c)).name() for c in cands]
        # The stream-K candidates were measured only on the streamk phase's problems, the 64-row tiles (M <= 128)
        # only on the small_m phase's, the ragged-N widths only on the ragged_n phase's: rank what was measured.
        missing = [nm for nm, c in zip(names, cands, strict=True)
                   if nm not in ours and c.decomposition == "data_parallel" and c.tile_m != 64
                   and c.cta_tile_n not in HW_RAGGED_TILE_N]
        if missing:
            raise ValueError(f"{dtype} {m}x{n}x{k}: candidate {missing[0]} has no measured row")
        keep = [i for i, nm in enumerate(names) if nm in ours]
        cands, names = [cands[i] for i in keep], [names[i] for i in keep]
        cub = [r for r in rows if r["kernel"] == "cublas" and r.get("event_us")]
        todo.append(((dtype, m, n, k), cands, names, arch, ours, cub[0]["event_us"] if cub else None))
    jobs_ = [SimJob(c, arch, estimate_events(c.resolved(arch))) for _, cands, _, arch, _, _ in todo for c in cands]
    sims = iter(simulate_jobs(jobs_, cache=cache, procs=jobs, log=log))
    out = []
    for (dtype, m, n, k), cands, names, arch, ours, cublas in todo:
        outs = [next(sims) for _ in cands]
        preds = {"wsim": [time_us(o, arch) if o.ok else float("inf") for o in outs],
                 "roofline": [roofline(c, arch).time_ns / 1e3 for c in cands]}
        if predicted:
            if log:
                log(f"{dtype} {m}x{n}x{k}: wsim tune --clock predicted over the 96 candidates")
            preds["wsim, predicted clocks"], clocks = predicted_clock_times(m, n, k, dtype, names, jobs)
        est = nvmh_preds("H200", [c.resolved(arch) for c in cands])
        if est is not None:
            preds["nvMatmulHeuristics"] = [e if np.isfinite(e) else float("inf") for e in est]
        shape = f"{m}x{n}x{k}" if dtype == "fp16" and source == "h200" else f"{dtype} {m}x{n}x{k}"
        res = ShapeResult(shape, names, [float(ours[nm]["event_us"]) for nm in names], preds,
                          [ours[nm]["span_us"] * ours[nm]["clock_ghz"] * 1e3 for nm in names],
                          [o.cycles if o.ok else float("inf") for o in outs], clock=arch.clock_ghz.value,
                          cublas_us=cublas)
        if est is not None:
            res.nvmh_top = nvmh.heuristics("H200").top_pick(m, n, k, dtype)
        dname, res.default_note = default_twin_name(m, n, k, arch, dtype)
        res.default = names.index(dname) if dname in names else None
        res.extra["clocks"] = [ours[nm]["clock_ghz"] for nm in names]
        res.extra["clocks_repeat"] = [ours[nm].get("clock_ghz_repeat") for nm in names]
        if predicted:
            res.extra["predicted_clocks"] = clocks
        rep = [ours[nm].get("event_us_repeat") for nm in names]
        if all(rep):
            res.repeat_regret = regret(rep, res.best)
        out.append(res)
    return out


# ========================================================================================= B200
def b200_results(*, jobs: int = 0, cache: SimCache, log=None, path=None,
                 budget_mevents: float | None = None) -> list[ShapeResult]:
    """Per gemm-model shape, its 16 configs ranked by ``wsim accuracy``'s scored predictions (real
    simulations at the constants fitted without that shape) and at the shipped constants; with
    ``budget_mevents``, on the shapes ``wsim accuracy --quick --budget b200=MEVENTS`` scores (the
    constants fitted over that subset, as there)."""
    ds = DATASETS["b200"](path)
    if not ds.rows:
        from validation.b200_data import GemmModelDataMissing
        raise GemmModelDataMissing("; ".join(ds.skipped))
    rows = ds.rows if budget_mevents is None else quick_subset(ds.rows, int(budget_mevents * 1e6))
    res = evaluate_dataset(ds, rows, "all rows" if budget_mevents is None else f"--budget b200={budget_mevents:g}",
                           cache=cache, procs=jobs, log=log)
    est = res.baselines.get("nvMatmulHeuristics")
    by: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by.setdefault(r.shape, []).append(i)
    out = []
    for s, idx in by.items():
        preds = {"wsim": [float(res.wsim_us[i]) for i in idx], "wsim, shipped constants": [float(res.dev_us[i]) for i in idx],
                 "gemm-model": [rows[i].baselines["gemm-model"] for i in idx]}
        if est is not None:
            preds["nvMatmulHeuristics"] = [float(est[i]) if np.isfinite(est[i]) else float("inf") for i in idx]
        out.append(ShapeResult(s, [rows[i].label.removeprefix(s).strip() for i in idx],
                               [rows[i].measured_us for i in idx], preds))
    return out


# ======================================================================================= report
def _pct(x: float) -> str:
    return f"{100 * (x - 1):.2f}%"


def _summary(label: str, vals: list[float | None]) -> str:
    v = [x for x in vals if x is not None]
    return (f"{label}: median {_pct(statistics.median(v))}, mean {100 * (np.mean(v) - 1):.2f}%, max {_pct(max(v))}"
            if v else f"{label}: -")


def _spearman_line(res: list[ShapeResult], names: list[str]) -> str:
    parts = [f"{n} median {statistics.median(spearman(r.preds[n], r.meas) for r in res):.3f}" for n in names]
    return "- Spearman (predicted vs measured, per problem): " + "; ".join(parts)


def _vs_cublas(r: ShapeResult, i: int | None) -> str:
    return f"{r.cublas_us / r.meas[i]:.3f}" if r.cublas_us and i is not None else "-"


def format_h200(res: list[ShapeResult], title: str = "fp16") -> list[str]:
    names = [n for n in ("wsim, predicted clocks", "wsim", "roofline", "nvMatmulHeuristics") if res and n in res[0].preds]
    lines = [f"## H200: our twin's 96 `--space hw` candidates per problem ({title})", "",
             "`wsim, predicted clocks`: each candidate at its own predicted clock, as `wsim tune --arch h200 --space "
             "hw` ranks them (no measured clock); `wsim`: every candidate at the problem's median in-kernel clock "
             "(`clock`), the cycles model given the clock. Measured: CUDA-event times. Regret = "
             "measured time of the pick / measured best (0.00%: the true best); in brackets, how many candidates "
             "tie with the pick. vs cuBLAS: cuBLAS's time / ours (> 1: faster than cuBLAS). `best of 96` is the "
             "measured oracle, which no tool picks. `run 2`: run 1's best measured in the repeat run, over the "
             "repeat's best (the measurement's own floor).", "",
             "| problem | clock GHz | wsim tune's pick | " + " | ".join(f"{n} regret" for n in names)
             + " | default regret | wsim pick vs cuBLAS | default vs cuBLAS | best of 96 vs cuBLAS | wsim Spearman | "
             "cycles: regret | run 2 |",
             "| --- | ---: | --- |" + " ---: |" * len(names) + " ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    lead = names[0]
    for r in res:
        w = r.pick_of(lead)
        regs = " | ".join(f"{_pct(regret(r.meas, r.pick_of(n)))} ({ties(r.preds[n], r.pick_of(n))})" for n in names)
        dreg = _pct(regret(r.meas, r.default)) if r.default is not None else "-"
        rr = _pct(r.repeat_regret) if r.repeat_regret is not None else "-"
        lines.append(f"| {r.shape} | {r.clock:.3f} | {r.names[w]} | {regs} | {dreg} | {_vs_cublas(r, w)} | "
                     f"{_vs_cublas(r, r.default)} | {_vs_cublas(r, r.best)} | {spearman(r.preds[lead], r.meas):.3f} | "
                     f"{_pct(regret(r.cycles, pick(r.pred_cycles)))} | {rr} |")
    n_w = sum(1 for r in res if r.cublas_us and r.cublas_us >= r.meas[r.pick_of(lead)])
    n_d = sum(1 for r in res if r.cublas_us and r.default is not None and r.cublas_us >= r.meas[r.default])
    n_b = sum(1 for r in res if r.cublas_us and r.cublas_us >= min(r.meas))
    lines += ["", "Summary over the problems:", "",
              f"- wsim tune's pick ({lead}) is at least as fast as cuBLAS on {n_w} of {len(res)} problems; the default config on "
              f"{n_d}; the measured best of 96 (the oracle) on {n_b}",
              *[f"- {_summary(f'regret of the {n} pick', [regret(r.meas, r.pick_of(n)) for r in res])}" for n in names],
              "- " + _summary("regret of the default config",
                              [regret(r.meas, r.default) if r.default is not None else None for r in res]),
              _spearman_line(res, names),
              "- " + _summary("cycles view, regret of wsim's pick", [regret(r.cycles, pick(r.pred_cycles)) for r in res]),
              "- " + _summary("run-to-run floor (run 1's best in run 2)", [r.repeat_regret for r in res]),
              f"- default config: {res[0].default_note}" if res else "", ""]
    if res and "wsim, predicted clocks" in res[0].preds:
        reg = [regret(r.meas, r.pick_of("wsim, predicted clocks")) for r in res]
        lines += [f"Targets for the ranking at predicted clocks: median regret <= 0.5% (reached {_pct(statistics.median(reg))}), "
                  f"max <= 3% (reached {_pct(max(reg))}).", ""]
    if res and res[0].nvmh_top is not None:
        lines += ["nvMatmulHeuristics's own first config per problem (its pick among every config it knows), with "
                  "its runtime estimate, beside our measured best of 96:", "",
                  "| problem | its config | its estimate us | our measured best us |", "| --- | --- | ---: | ---: |"]
        lines += [f"| {r.shape} | {r.nvmh_top[0]} | {r.nvmh_top[1]:.1f} | {min(r.meas):.1f} |" for r in res] + [""]
    return lines + clock_lines(res)


def clock_lines(res: list[ShapeResult]) -> list[str]:
    """How much the measured in-kernel clock moves between one problem's candidates, and whether the
    repeat run sees the same clock per config (the model takes the clock as an input)."""
    spread, corr = [], []
    for r in res:
        c = r.extra.get("clocks") or []
        if len(c) > 1:
            spread.append(max(c) / min(c))
        c2 = r.extra.get("clocks_repeat") or []
        if len(c) > 2 and all(c2):
            corr.append(float(np.corrcoef(c, c2)[0, 1]))
    if not spread:
        return []
    out = ["Why event times and cycles disagree: within one problem, the candidates' measured in-kernel clocks "
           f"span a median {_pct(statistics.median(spread))} (max/min, up to {_pct(max(spread))})"]
    if corr:
        out[0] += (f", and the repeat run measures the same clock per config (correlation between the runs: "
                   f"median {statistics.median(corr):.2f}, min {min(corr):.2f})")
    out[0] += (". The model predicts cycles and takes the clock as an input (one per problem here), so a pick "
               "can be right in cycles and wrong in time; the `cycles` column ranks by span x each row's own clock.")
    return out + [""]


def format_b200(res: list[ShapeResult], subset: str = "") -> list[str]:
    names = [n for n in ("wsim", "wsim, shipped constants", "gemm-model", "nvMatmulHeuristics") if res and n in res[0].preds]
    lines = ["## B200: hbarclay/gemm-model's 16 measured configs per problem (fp16)", "",
             *([subset, ""] if subset else []),
             "`wsim`: the scored predictions of `wsim accuracy` (each shape's 16 configs simulated at the constants "
             "fitted without that shape, at the 1.3 GHz the runs were locked to). `wsim, shipped constants`: the same "
             "configs simulated at the constants `wsim tune` prints, which were fitted on these rows (a development "
             "figure, not a result). gemm-model: its WSPersistentGEMMModel (l2-hit) predictions. Regret as above.", "",
             "| problem | wsim pick | " + " | ".join(f"{n} regret" for n in names) + " | wsim Spearman |",
             "| --- | --- |" + " ---: |" * len(names) + " ---: |"]
    for r in res:
        regs = " | ".join(_pct(regret(r.meas, r.pick_of(n))) for n in names)
        lines.append(f"| {r.shape} | {r.names[r.pick_of('wsim')]} | {regs} | {spearman(r.preds['wsim'], r.meas):.3f} |")
    lines += ["", "Summary over the problems:", ""]
    lines += [f"- {_summary(f'regret of the {n} pick', [regret(r.meas, r.pick_of(n)) for r in res])}" for n in names]
    ws = [regret(r.meas, r.pick_of("wsim")) for r in res]
    gm = [regret(r.meas, r.pick_of("gemm-model")) for r in res]
    lines += [f"- wsim's pick at least as good as gemm-model's on {sum(1 for a, b in zip(ws, gm, strict=True) if a <= b)} "
              f"of {len(res)} problems", _spearman_line(res, names), ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="h200,b200", help="comma-separated: h200, h200-wide, b200 (default h200,b200)")
    ap.add_argument("--no-predicted", action="store_true", help="skip the ranking at predicted clocks (H200)")
    ap.add_argument("--jobs", type=int, default=0, help="processes (default: all cores)")
    ap.add_argument("--no-cache", action="store_true", help="simulate everything again (no out/accuracy-cache)")
    ap.add_argument("--gemm-model", metavar="DIR", default=None, help="hbarclay/gemm-model checkout")
    ap.add_argument("--b200-budget", metavar="MEVENTS", type=float, default=None,
                    help="B200: only the shapes of wsim accuracy --quick --budget b200=MEVENTS (default: all 40)")
    ap.add_argument("--out", metavar="MD", default=None, help="write the report there too")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(f"tune_check: {msg}", file=sys.stderr, flush=True)

    cache = SimCache(enabled=not args.no_cache)
    t0 = time.perf_counter()
    cmd = "python benchmarks/tune_check.py " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = ["# `wsim tune`, checked against measured times", "", f"Written by `{cmd.strip()}`.", "",
             "Every number is from committed measurements and real simulations of the model (hash "
             f"{model_hash()}), on the CPU.", ""]
    data = [d.strip() for d in args.data.split(",") if d.strip()]
    if "h200" in data:
        lines += format_h200(h200_results(jobs=args.jobs, cache=cache, log=log, predicted=not args.no_predicted),
                             "13 fp16 problems of the committed campaign")
    if "h200-wide" in data:
        lines += format_h200(h200_results(jobs=args.jobs, cache=cache, log=log, source="h200-wide",
                                          predicted=not args.no_predicted),
                             "the wide campaign's 55 dev problems, fp16 and bf16")
    if "b200" in data:
        from validation.b200_data import GemmModelDataMissing
        try:
            b200 = b200_results(jobs=args.jobs, cache=cache, log=log, path=args.gemm_model,
                                budget_mevents=args.b200_budget)
            lines += format_b200(b200, "" if args.b200_budget is None else (
                f"{len(b200)} of the 40 problems: those `wsim accuracy --quick --budget b200={args.b200_budget:g}` "
                "scores (the constants of each fold fitted over them, as there)."))
        except GemmModelDataMissing as e:
            lines += ["## B200", "", f"Not run: {e}", ""]
    text = "\n".join(lines) + "\n"
    print(text)
    log(f"{time.perf_counter() - t0:.0f} s, cached simulations included")
    if args.out:
        Path(args.out).write_text(text)
        log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
