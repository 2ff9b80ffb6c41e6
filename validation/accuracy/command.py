"""``wsim accuracy``: its flags, their checks, and the run (every data set scored, files written)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from simulator.engine.out_path import check_output_dir
from simulator.errors import ConfigError

from .cache import SimCache
from .datasets import DATASETS, DEFAULT_DATASETS, quick_subset
from .evaluate import evaluate_dataset
from .report import format_report, results_json

DEFAULT_BUDGET_MEVENTS = 25.0
OUT_FILES = ("accuracy.md", "accuracy.json", "accuracy.png")


def add_accuracy_parser(sub) -> None:
    a = sub.add_parser("accuracy", help="re-run every committed measurement on the CPU and score the model "
                                        "beside the roofline, nvMatmulHeuristics and published models")
    a.add_argument("--data", action="append", choices=sorted(DATASETS), default=None,
                   help=f"data set(s) to score (default: {', '.join(DEFAULT_DATASETS)}; h200-wide-heldout: "
                        "the held-out rows, for the final score only)")
    a.add_argument("--quick", action="store_true",
                   help="a stratified subset: every config of the cheapest shapes of each row class")
    a.add_argument("--budget", action="append", default=[], metavar="[DATA=]MEVENTS",
                   help=f"with --quick: estimated events per data set, in millions (default {DEFAULT_BUDGET_MEVENTS:g}); "
                        "DATA=MEVENTS sets one data set's budget, e.g. --budget b200=400 --budget h200=25")
    a.add_argument("--jobs", type=int, default=0, help="processes (default 0: all cores)")
    a.add_argument("--engine", default="fast", choices=("fast", "reference"), help="simulation engine")
    a.add_argument("--gemm-model", metavar="DIR", default=None,
                   help="hbarclay/gemm-model checkout (default: $WSIM_GEMM_MODEL_DIR or external/gemm-model)")
    a.add_argument("--no-cache", action="store_true", help="simulate everything again (no out/accuracy-cache)")
    a.add_argument("--out", metavar="DIR", default=None,
                   help="write accuracy.md, accuracy.json and accuracy.png there (e.g. validation/results)")


def budgets(items: list[str], names: list[str], quick: bool) -> dict[str, float]:
    """``--budget`` values -> millions of estimated events per data set."""
    if items and not quick:
        raise ConfigError(f"--budget {items[0]}: applies to --quick (without it every row is scored)")
    out = dict.fromkeys(names, DEFAULT_BUDGET_MEVENTS)
    for item in items:
        key, _, val = item.rpartition("=")
        try:
            num = float(val)
        except ValueError:
            raise ConfigError(f"--budget {item!r}: expected MEVENTS or DATA=MEVENTS (a number)") from None
        if not (num > 0 and num < float("inf")):
            raise ConfigError(f"--budget {item!r}: the budget must be a finite number > 0 (millions of events)")
        if key and key not in DATASETS:
            raise ConfigError(f"--budget {item!r}: unknown data set {key!r}; valid: {', '.join(DATASETS)}")
        if key and key not in names:
            raise ConfigError(f"--budget {item!r}: data set {key} is not being scored (--data {' --data '.join(names)})")
        for n in ([key] if key else names):
            out[n] = num
    return out


def check_out_dir(path: str) -> Path:
    """``--out``: a folder that exists or can be made and is writable, whose result files can be
    overwritten (checked before the run, so that no finished run is lost to a typo)."""
    p = check_output_dir(path, "--out")
    for name in OUT_FILES:
        f = p / name
        if f.exists() and (f.is_dir() or not os.access(f, os.W_OK)):
            raise ConfigError(f"--out {path!r}: {str(f)!r} cannot be overwritten")
    return p


def check_args(args) -> tuple[list[str], dict[str, float], Path | None]:
    names = list(dict.fromkeys(args.data or DEFAULT_DATASETS))
    if args.jobs < 0:
        raise ConfigError(f"--jobs {args.jobs}: must be >= 0 (0 = every core)")
    if args.gemm_model is not None and "b200" not in names:
        raise ConfigError(f"--gemm-model {args.gemm_model}: applies to the b200 data set, which is not being "
                          f"scored (--data {' --data '.join(names)})")
    if args.gemm_model is not None and not Path(args.gemm_model).is_dir():
        raise ConfigError(f"--gemm-model {args.gemm_model!r}: no such directory (a checkout of hbarclay/gemm-model)")
    return names, budgets(args.budget, names, args.quick), check_out_dir(args.out) if args.out else None


def run_accuracy(args) -> int:
    def log(msg: str) -> None:
        print(f"wsim accuracy: {msg}", file=sys.stderr, flush=True)

    names, budget, out = check_args(args)
    datasets = [DATASETS[name](args.gemm_model if name == "b200" else None) for name in names]
    if not any(ds.rows for ds in datasets):
        raise ConfigError("no data set asked for can be scored: " + "; ".join(
            f"{ds.name}: {'; '.join(ds.skipped) or 'no rows'}" for ds in datasets))
    cache = SimCache(enabled=not args.no_cache, engine=args.engine)
    results = []
    for name, ds in zip(names, datasets, strict=True):
        rows, subset = ds.rows, f"all {len(ds.rows)}"
        if args.quick and rows:
            rows = quick_subset(rows, int(budget[name] * 1e6))
            shapes = sorted({r.shape for r in rows})
            subset = (f"--quick: {len(rows)} of {len(ds.rows)} ({len(shapes)} of {len({r.shape for r in ds.rows})} "
                      f"shapes: {', '.join(shapes)})")
        log(f"{name}: {len(rows)} row(s)" + (f"; not run: {ds.skipped[0]}" if not ds.rows and ds.skipped else ""))
        results.append(evaluate_dataset(ds, rows, subset, cache=cache, engine=args.engine, procs=args.jobs, log=log))
    command = getattr(args, "command_line", None) or ("wsim accuracy " + " ".join(sys.argv[2:])).strip()
    text = format_report(results, command=command, engine=args.engine)
    print(text)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "accuracy.md").write_text(text + "\n")
        data = results_json(results, command=command, engine=args.engine)
        (out / "accuracy.json").write_text(json.dumps(data, indent=1, default=float) + "\n")
        from simulator.views.plot_cli import use_headless_backend
        use_headless_backend()
        from simulator.views.accuracy_plot import accuracy_scatter
        accuracy_scatter([(r.ds.name, r.measured_us[r.keep], r.wsim_us[r.keep]) for r in results if r.rows],
                         out / "accuracy.png")
        log(f"wrote {out / 'accuracy.md'}, accuracy.json, accuracy.png")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m validation.accuracy",
                                description="re-run every committed measurement on the CPU and score the model")
    sub = p.add_subparsers(dest="command")
    add_accuracy_parser(sub)
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(["accuracy", *argv])
    args.command_line = ("python -m validation.accuracy " + " ".join(argv)).strip()
    from simulator.views.run_args import run_command
    return run_command(run_accuracy, args, prog="python -m validation.accuracy")
