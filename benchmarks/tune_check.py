"""The checking step of ``wsim tune`` (issue 11, items 2 and 3), from committed measurements only (CPU).

H200 (``validation/results/h200_campaign.json``, the ``space`` phase: every one of the 96
``--space hw`` candidates of 13 fp16 problems, timed alternately with cuBLAS): per problem, wsim
predicts all 96 candidates exactly as ``simulator.tune(m, n, k, dtype="fp16", arch=H200 at one clock,
space="hw", search="exhaustive", prune=False)`` does (the same candidate list; simulated through the
accuracy cache), and the report gives

* Spearman between predicted and measured times over the 96;
* the regret of wsim's pick: measured time of the predicted best / measured time of the true best;
  the same for the wave-quantised roofline's pick (ties broken by candidate order) and for the
  project's default config (``Sm90GemmConfig()`` defaults, mapped to the twin: its raster heuristic
  resolved, the twin's 4 store buffers);
* our best and wsim's pick against cuBLAS (cuBLAS's time / ours, > 1: faster than cuBLAS);
* the run-to-run floor: run 1's best measured in the repeat run, over the repeat's best.

The model cannot know each config's clock before it runs, so every candidate of a problem is
predicted at that problem's median measured in-kernel clock. Measured times are the CUDA-event
times (launches queued behind a busy kernel); the cycles view ranks by in-kernel span x clock (each
row's own clock), which removes the clock differences between configs.

B200 (hbarclay/gemm-model's fp16 rows, read from outside git, :mod:`validation.b200_data`): per
problem (40), the regret of wsim's pick among the 16 measured configs (the ``--space gemm-model``
candidates at the 1.3 GHz the runs were locked to), ranked by ``wsim accuracy``'s leave-one-shape-out
predictions (the fitted B200 constants of each shape fitted without it), beside the regret of gemm-model's own
model's pick (its WSPersistentGEMMModel l2-hit predictions), and Spearman for both.

    python benchmarks/tune_check.py --out validation/results/tune_check.md
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from simulator.engine.run import estimate_events  # noqa: E402
from simulator.kernels.roofline import roofline  # noqa: E402
from simulator.kernels.scheduler import raster_for  # noqa: E402
from simulator.kernels.sm90_config import Sm90GemmConfig  # noqa: E402
from simulator.kernels.space import hw_kernel_fields, make_space  # noqa: E402
from simulator.machine.arch import ArchSpec  # noqa: E402
from validation.accuracy import DATASETS, Row, SimCache, evaluate, simulate_dataset, simulate_rows, spearman  # noqa: E402

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
    meas: list[float]                 # CUDA-event us
    cycles: list[float]               # measured span x clock
    pred: list[float]                 # wsim us at one clock
    pred_cycles: list[float]
    roof: list[float]
    clock: float = 0.0
    default: int | None = None
    default_note: str = ""
    cublas_us: float | None = None
    repeat_regret: float | None = None
    extra: dict = field(default_factory=dict)

    @property
    def wsim(self) -> int:
        return pick(self.pred)

    @property
    def roof_pick(self) -> int:
        return pick(self.roof)

    @property
    def best(self) -> int:
        return pick(self.meas)


# ========================================================================================= H200
def h200_shapes(path=None) -> dict[tuple[int, int, int], list[dict]]:
    """The campaign's ``space`` rows (fp16, our kernel) per problem, and cuBLAS's row."""
    from validation.measurements import load_h200_timings
    rows = load_h200_timings(path, phase="space", dtype="fp16", ok_only=False)
    out: dict[tuple[int, int, int], list[dict]] = {}
    for r in rows:
        out.setdefault((r["m"], r["n"], r["k"]), []).append(r)
    return out


def default_twin_name(m: int, n: int, k: int, arch: ArchSpec) -> tuple[str, str]:
    """The twin config name of the project's default SM90 config for this problem, and a note."""
    from hw_kernels.host import KernelConfig
    cfg = Sm90GemmConfig(m=m, n=n, k=k, dtype_ab="fp16", dtype_c="fp16", dtype_d="fp16").resolved(arch)
    f = hw_kernel_fields(cfg)
    f["raster"] = raster_for(cfg)
    note = f"Sm90GemmConfig() = {KernelConfig(**hw_kernel_fields(cfg)).name()}"
    f["mainloop_stages"] = None
    f["epilogue_store_stages"] = 4
    return KernelConfig(**f).name(), note + " -> the twin's raster (heuristic resolved) and 4 store buffers"


def h200_results(*, jobs: int = 0, cache: SimCache | None = None, log=None) -> list[ShapeResult]:
    from hw_kernels.host import KernelConfig
    base = ArchSpec.h200()
    todo: list[tuple[tuple, list, list[Row], ArchSpec, dict]] = []
    for (m, n, k), rows in sorted(h200_shapes().items()):
        ours = {r["config"].removesuffix(SPAN_SUFFIX): r for r in rows
                if r["kernel"] != "cublas" and r.get("event_us") and r.get("clock_ghz")}
        clock = statistics.median(r["clock_ghz"] for r in ours.values())
        arch = base.with_overrides({"clock_ghz": round(clock, 4)},
                                   origin="median in-kernel clock of this problem's measured candidates")
        cands = make_space("hw", 90, m, n, k, "fp16", None).all_candidates(arch)
        sim_rows = []
        for cfg in cands:
            name = KernelConfig(**hw_kernel_fields(cfg)).name()
            if name not in ours:
                raise ValueError(f"{m}x{n}x{k}: candidate {name} has no measured row")
            sim_rows.append(Row("tune_check_h200", f"{m}x{n}x{k} {name}", name, f"{m}x{n}x{k}", "", cfg, arch,
                                float(ours[name]["event_us"]), est_events=estimate_events(cfg.resolved(arch))))
        cub = [r for r in rows if r["kernel"] == "cublas" and r.get("event_us")]
        todo.append(((m, n, k), cands, sim_rows, arch, {"ours": ours, "cublas": cub[0]["event_us"] if cub else None}))
    all_rows = [r for t in todo for r in t[2]]
    sim = simulate_rows(all_rows, jobs=jobs, cache=cache, log=log)
    out = []
    pos = 0
    for (m, n, k), cands, rows, arch, info in todo:
        outs = sim[pos:pos + len(rows)]
        pos += len(rows)
        ours = info["ours"]
        names = [r.label for r in rows]
        res = ShapeResult(f"{m}x{n}x{k}", names, [r.measured_us for r in rows],
                          [ours[nm]["span_us"] * ours[nm]["clock_ghz"] * 1e3 for nm in names],
                          [o.time_us if o.ok else float("inf") for o in outs],
                          [o.cycles if o.ok else float("inf") for o in outs],
                          [roofline(c, arch).time_ns / 1e3 for c in cands], clock=arch.clock_ghz.value,
                          cublas_us=info["cublas"])
        dname, res.default_note = default_twin_name(m, n, k, arch)
        res.default = names.index(dname) if dname in names else None
        res.extra["clocks"] = [ours[nm]["clock_ghz"] for nm in names]
        res.extra["clocks_repeat"] = [ours[nm].get("clock_ghz_repeat") for nm in names]
        rep = [(nm, ours[nm].get("event_us_repeat")) for nm in names]
        if all(v for _, v in rep):
            r2 = [v for _, v in rep]
            res.repeat_regret = regret(r2, res.best)
        out.append(res)
    return out


# ========================================================================================= B200
def b200_results(*, jobs: int = 0, cache: SimCache | None = None, log=None, path=None) -> list[ShapeResult]:
    """Per gemm-model shape, its 16 configs ranked by ``wsim accuracy``'s leave-one-shape-out
    predictions: the same simulations (cached), each shape predicted with the fitted B200
    constants fitted without it, so no shape is ranked by constants tuned on its own rows."""
    ds = DATASETS["b200"](path)
    if not ds.rows:
        from validation.b200_data import GemmModelDataMissing
        raise GemmModelDataMissing("; ".join(ds.skipped))
    res = evaluate(ds, ds.rows, simulate_dataset(ds, ds.rows, jobs=jobs, cache=cache, log=log), "all rows")
    by: dict[str, list[int]] = {}
    for i, r in enumerate(ds.rows):
        by.setdefault(r.shape, []).append(i)
    out = []
    for s, idx in by.items():
        rows = [ds.rows[i] for i in idx]
        sr = ShapeResult(s, [r.label.removeprefix(s).strip() for r in rows], [r.measured_us for r in rows], [],
                         [float(res.model_us[i]) for i in idx], [], [])
        sr.extra["gemm_model"] = [r.baselines["gemm-model"] for r in rows]
        out.append(sr)
    return out


# ======================================================================================= report
def _pct(x: float) -> str:
    return f"{100 * (x - 1):.2f}%"


def _summary(label: str, vals: list[float]) -> str:
    v = [x for x in vals if x is not None]
    return f"{label}: median {_pct(statistics.median(v))}, max {_pct(max(v))}" if v else f"{label}: -"


def format_h200(res: list[ShapeResult]) -> list[str]:
    lines = ["## H200: our twin's 96 `--space hw` candidates per problem (fp16)", "",
             "Predicted at each problem's median in-kernel clock (`clock`); measured: CUDA-event times. "
             "Regret = measured time of the pick / measured best (0.00%: the true best). `roofline` ties: "
             "candidates sharing the roofline's best time (the first in candidate order is taken). `run 2`: "
             "run 1's best measured in the repeat run, over the repeat's best (the measurement's own floor).",
             "",
             "| problem | clock GHz | Spearman | wsim pick | regret | roofline regret (ties) | default regret | "
             "best vs cuBLAS | wsim pick vs cuBLAS | cycles: Spearman | cycles: regret | run 2 |",
             "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in res:
        sp = spearman(r.pred, r.meas)
        spc = spearman(r.pred_cycles, r.cycles)
        w, rf = r.wsim, r.roof_pick
        dreg = _pct(regret(r.meas, r.default)) if r.default is not None else "-"
        cub = f"{r.cublas_us / min(r.meas):.3f}" if r.cublas_us else "-"
        cubw = f"{r.cublas_us / r.meas[w]:.3f}" if r.cublas_us else "-"
        rr = _pct(r.repeat_regret) if r.repeat_regret is not None else "-"
        lines.append(f"| {r.shape} | {r.clock:.3f} | {sp:.3f} | {r.names[w]} | {_pct(regret(r.meas, w))} | "
                     f"{_pct(regret(r.meas, rf))} ({ties(r.roof, rf)}) | {dreg} | {cub} | {cubw} | {spc:.3f} | "
                     f"{_pct(regret(r.cycles, pick(r.pred_cycles)))} | {rr} |")
    sps = [spearman(r.pred, r.meas) for r in res]
    lines += ["", "Summary over the problems:", "",
              f"- Spearman (event times): median {statistics.median(sps):.3f}, min {min(sps):.3f}; "
              f"cycles view: median {statistics.median(spearman(r.pred_cycles, r.cycles) for r in res):.3f}",
              "- " + _summary("regret of wsim's pick", [regret(r.meas, r.wsim) for r in res]),
              "- " + _summary("regret of the roofline's pick", [regret(r.meas, r.roof_pick) for r in res]),
              "- " + _summary("regret of the default config",
                              [regret(r.meas, r.default) if r.default is not None else None for r in res]),
              "- " + _summary("cycles view, regret of wsim's pick",
                              [regret(r.cycles, pick(r.pred_cycles)) for r in res]),
              "- " + _summary("run-to-run floor (run 1's best in run 2)", [r.repeat_regret for r in res]),
              f"- our best >= cuBLAS on {sum(1 for r in res if r.cublas_us and r.cublas_us >= min(r.meas))} of "
              f"{len(res)} problems; wsim's pick >= cuBLAS on "
              f"{sum(1 for r in res if r.cublas_us and r.cublas_us >= r.meas[r.wsim])}",
              f"- default config: {res[0].default_note}" if res else "", ""]
    lines += clock_lines(res) + h200_target_lines(res)
    return lines


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
               "can be right in cycles and wrong in time; the `cycles` columns rank by span x each row's own "
               "clock.")
    return out + [""]


def h200_target_lines(res: list[ShapeResult]) -> list[str]:
    """Issue 11's H200 targets beside what this run reached."""
    reg = [regret(r.meas, r.wsim) for r in res]
    sps = [spearman(r.pred, r.meas) for r in res]
    cub = sum(1 for r in res if r.cublas_us and r.cublas_us >= min(r.meas))
    rows = [("median regret of wsim's pick", "<= 1%", _pct(statistics.median(reg)), statistics.median(reg) <= 1.01),
            ("max regret", "<= 3%", _pct(max(reg)), max(reg) <= 1.03),
            ("median Spearman", ">= 0.9", f"{statistics.median(sps):.3f}", statistics.median(sps) >= 0.9),
            ("our best >= cuBLAS", ">= 10 of 12", f"{cub} of {len(res)}", cub >= 10)]
    return (["Targets (issue 11):", "", "| target | wanted | reached | met |", "| --- | --- | ---: | --- |"]
            + [f"| {a} | {b} | {c} | {'yes' if ok else 'no'} |" for a, b, c, ok in rows] + [""])


def format_b200(res: list[ShapeResult]) -> list[str]:
    lines = ["## B200: hbarclay/gemm-model's 16 measured configs per problem (fp16)", "",
             "wsim: the leave-one-shape-out predictions of `wsim accuracy` (the `--space gemm-model` configs at the "
             "1.3 GHz the runs were locked to; each shape predicted with the three fitted constants fitted "
             "without it, the in-model ones interpolated between their simulated values as `wsim accuracy` "
             "does), so no shape is ranked by constants tuned on its own rows; gemm-model: its "
             "WSPersistentGEMMModel (l2-hit) predictions. Regret as above, against the measured runtimes.", "",
             "| problem | wsim pick | wsim regret | wsim Spearman | gemm-model pick | gemm-model regret | "
             "gemm-model Spearman |", "| --- | --- | ---: | ---: | --- | ---: | ---: |"]
    for r in res:
        g = r.extra["gemm_model"]
        gi = pick(g)
        lines.append(f"| {r.shape} | {r.names[r.wsim]} | {_pct(regret(r.meas, r.wsim))} | "
                     f"{spearman(r.pred, r.meas):.3f} | {r.names[gi]} | {_pct(regret(r.meas, gi))} | "
                     f"{spearman(g, r.meas):.3f} |")
    ws = [regret(r.meas, r.wsim) for r in res]
    gm = [regret(r.meas, pick(r.extra["gemm_model"])) for r in res]
    lines += ["", "Summary over the problems:", "",
              "- " + _summary("regret of wsim's pick", ws),
              "- " + _summary("regret of gemm-model's pick", gm),
              f"- mean regret: wsim {100 * (np.mean(ws) - 1):.2f}%, gemm-model {100 * (np.mean(gm) - 1):.2f}%; "
              f"wsim's pick at least as good on {sum(1 for a, b in zip(ws, gm, strict=True) if a <= b)} of "
              f"{len(res)} problems",
              f"- Spearman: wsim median {statistics.median(spearman(r.pred, r.meas) for r in res):.3f}, gemm-model "
              f"median {statistics.median(spearman(r.extra['gemm_model'], r.meas) for r in res):.3f}", ""]
    med_w, med_g = statistics.median(ws), statistics.median(gm)
    lines += ["Targets (issue 11): median regret <= 2% and below gemm-model's: "
              f"{_pct(med_w)} against gemm-model's {_pct(med_g)}: "
              f"{'met' if med_w <= 1.02 and med_w < med_g else 'not met'}.", ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="h200,b200", help="comma-separated: h200, b200 (default both)")
    ap.add_argument("--jobs", type=int, default=0, help="processes (default: all cores)")
    ap.add_argument("--no-cache", action="store_true", help="simulate everything again (no out/accuracy-cache)")
    ap.add_argument("--gemm-model", metavar="DIR", default=None, help="hbarclay/gemm-model checkout")
    ap.add_argument("--out", metavar="MD", default=None, help="write the report there too")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(f"tune_check: {msg}", file=sys.stderr, flush=True)

    cache = SimCache(enabled=not args.no_cache)
    t0 = time.perf_counter()
    cmd = "python benchmarks/tune_check.py " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = ["# `wsim tune`, checked against measured times", "", f"Command: `{cmd.strip()}`", "",
             "Every number is from committed measurements and the model at HEAD, on the CPU.", ""]
    data = [d.strip() for d in args.data.split(",") if d.strip()]
    if "h200" in data:
        lines += format_h200(h200_results(jobs=args.jobs, cache=cache, log=log))
    if "b200" in data:
        from validation.b200_data import GemmModelDataMissing
        try:
            lines += format_b200(b200_results(jobs=args.jobs, cache=cache, log=log, path=args.gemm_model))
        except GemmModelDataMissing as e:
            lines += ["## B200", "", f"Not run: {e}", ""]
    lines.append(f"({time.perf_counter() - t0:.0f} s on this machine, cached simulations included.)")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
        log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
