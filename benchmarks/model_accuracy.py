"""How close is the model to measured GEMM times? Every row, beside the baselines.

A per-row view of what ``wsim accuracy`` scores (:mod:`validation.accuracy` does the work: the same
data sets, configs, clocks and leave-one-shape-out constants, the same baselines on the same rows):
for each measured row, every predictor as predicted / measured.

    python benchmarks/model_accuracy.py --data h200            # our H200 timings
    python benchmarks/model_accuracy.py --data b200 --quick    # gemm-model's B200 fp16 rows, a subset
"""

from __future__ import annotations

import argparse

import numpy as np

from validation.accuracy import DATASETS, evaluate_dataset, quick_subset
from validation.accuracy.cache import SimCache
from validation.accuracy.report import scores


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
    res = evaluate_dataset(ds, rows, f"{len(rows)} rows", cache=SimCache(), procs=args.jobs)
    names = list(res.predictors())
    print(f"{'row':<44} {'class':<24} {'measured us':>11} " + " ".join(f"{n[:14] + '/meas':>19}" for n in names))
    for i, r in enumerate(rows):
        ratios = " ".join(f"{p[i] / r.measured_us:19.3f}" for p in res.predictors().values())
        print(f"{r.label:<44} {r.row_class:<24} {r.measured_us:11.1f} {ratios}"
              + ("" if res.keep[i] else "   (left out of the scores)"))
    print()
    k = res.keep
    for n, s in scores(res).items():
        p = res.predictors()[n][k]
        print(f"{n:<30} {s.n} rows: MAPE {s.mape:.1f}%, max {s.max_err:.1f}%, bias {s.bias:+.1f}%, "
              f"Spearman {s.spearman:.3f}, pred/meas median {np.median(p / res.measured_us[k]):.3f}")
    if res.plan is not None:
        print("wsim is scored leave-one-shape-out; made on all rows: "
              + ", ".join(f"{c} = {v:g}" for c, v in res.plan.all_rows.items()))


if __name__ == "__main__":
    main()
