"""How close is the model to measured GEMM times? Every row, beside the roofline (and a published model).

A per-row view of what ``wsim accuracy`` scores (validation/accuracy.py does the work: the same
data sets, configs, clocks, harness model and leave-one-shape-out fitted constants): for each
measured row, the model's prediction, the wave-quantised roofline at the same clock and, for the
B200 rows, hbarclay/gemm-model's own prediction, each as predicted / measured.

    python benchmarks/model_accuracy.py --data h200            # our H200 timings
    python benchmarks/model_accuracy.py --data b200 --quick    # gemm-model's B200 fp16 rows, a subset
"""

from __future__ import annotations

import argparse

import numpy as np

from validation.accuracy import DATASETS, Score, SimCache, evaluate, quick_subset, simulate_dataset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=sorted(DATASETS), default="h200")
    ap.add_argument("--quick", action="store_true", help="a stratified subset (see wsim accuracy --quick)")
    ap.add_argument("--budget", type=float, default=25.0, help="with --quick: millions of estimated events")
    ap.add_argument("--jobs", type=int, default=0)
    args = ap.parse_args()
    ds = DATASETS[args.data](None)
    rows = quick_subset(ds.rows, int(args.budget * 1e6)) if args.quick else ds.rows
    if not rows:
        print(f"no rows: {'; '.join(ds.skipped)}")
        return
    print(f"{ds.title}\nsource: {ds.source}\n")
    res = evaluate(ds, rows, simulate_dataset(ds, rows, jobs=args.jobs, cache=SimCache()), f"{len(rows)} rows")
    names = list(res.predictors())
    print(f"{'row':<44} {'class':<24} {'measured us':>11} " + " ".join(f"{n + '/meas':>15}" for n in names))
    for i, r in enumerate(rows):
        ratios = " ".join(f"{p[i] / r.measured_us:15.3f}" for p in res.predictors().values())
        print(f"{r.label:<44} {r.row_class:<24} {r.measured_us:11.1f} {ratios}")
    print()
    for n, p in res.predictors().items():
        s = Score.of(p, res.measured_us)
        print(f"{n:<12} {s.n} rows: MAPE {s.mape:.1f}%, max {s.max_err:.1f}%, bias {s.bias:+.1f}%, "
              f"Spearman {s.spearman:.3f}, pred/meas median {np.nanmedian(p / res.measured_us):.3f}")
    if res.fit is not None:
        print("wsim is scored leave-one-shape-out; fitted on all rows: "
              + ", ".join(f"{k} = {v:g} [fitted]" for k, v in res.fit.constants.items()))


if __name__ == "__main__":
    main()
