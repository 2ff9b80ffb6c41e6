"""The accuracy report: Markdown for people, JSON for re-runs and tests, and the scatter plot."""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np

from .cache import key_parts, model_hash
from .evaluate import DataSetResult
from .scoring import Score

LABELS = {
    "wsim": "wsim (each row simulated at constants made without its shape)",
    "roofline": "wave-quantised roofline + wsim's launch term",
    "roofline, own intercept": "roofline + its own intercept (leave-one-shape-out)",
    "nvMatmulHeuristics": "nvMatmulHeuristics, as it estimates",
    "nvMatmulHeuristics, own scale": "nvMatmulHeuristics x its own scale (leave-one-shape-out)",
    "gemm-model": "gemm-model WSPersistentGEMMModel (l2-hit), published",
}


def _fmt(x: float, pct: bool = True) -> str:
    if not math.isfinite(x):
        return "-"
    return f"{x:+.1f}%" if pct and x < 0 else (f"{x:.1f}%" if pct else f"{x:.3f}")


def scores(res: DataSetResult, sel: np.ndarray | None = None) -> dict[str, Score]:
    k = res.keep if sel is None else res.keep & sel
    meas = res.measured_us[k]
    return {n: Score.of(p[k], meas) for n, p in res.predictors().items()}


def clock_json(res: DataSetResult) -> dict | None:
    if res.clock is None:
        return None
    k = res.keep
    return {"clock_errors": {n: clock_errors(p, res.clock.measured_ghz[k]) for n, p in clock_predictors(res).items()},
            "scores": {n: asdict(Score.of(p[k], res.measured_us[k])) for n, p in predicted_time_predictors(res).items()}}


def _headline(res: DataSetResult) -> list[str]:
    lines = ["| predictor | rows | MAPE | max error | signed bias | Spearman |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, s in scores(res).items():
        lines.append(f"| {LABELS.get(name, name)} | {s.n} | {_fmt(s.mape)} | {_fmt(s.max_err)} | {_fmt(s.bias)} | "
                     f"{_fmt(s.spearman, False)} |")
    dev = Score.of(res.dev_us[res.keep], res.measured_us[res.keep]) if res.plan else None
    out = lines + [""]
    if dev is not None:
        out += [f"Development figure, not a result: wsim at the shipped constants (made on these same rows) "
                f"scores MAPE {_fmt(dev.mape)}, max {_fmt(dev.max_err)}, bias {_fmt(dev.bias)}.", ""]
    return out


def class_dimensions(res: DataSetResult) -> dict[str, np.ndarray]:
    """Each way the rows are classed (the data set's primary class first) -> every row's class."""
    dims = {res.ds.class_title: np.array([r.row_class for r in res.rows])}
    for key in dict.fromkeys(k for r in res.rows for k in r.classes):
        dims[key] = np.array([r.classes.get(key, "-") for r in res.rows])
    return dims


def _by_class(res: DataSetResult) -> list[str]:
    names = list(res.predictors())
    lines = []
    for dim, cls_of in class_dimensions(res).items():
        classes = sorted(set(cls_of))
        if len(classes) < 2:
            continue
        lines += [f"By {dim} (MAPE, same rows):", "", f"| {dim} | rows | " + " | ".join(names) + " |",
                  "| --- | ---: |" + " ---: |" * len(names)]
        for c in classes:
            sc = scores(res, cls_of == c)
            n = next(iter(sc.values())).n
            lines.append(f"| {c} | {n} | " + " | ".join(_fmt(s.mape) for s in sc.values()) + " |")
        lines.append("")
    return lines


def clock_errors(pred: np.ndarray, meas: np.ndarray) -> dict[str, float]:
    e = np.abs(np.asarray(pred, float) / meas - 1.0)
    return {"rows": int(e.size), "median": 100 * float(np.median(e)), "p90": 100 * float(np.percentile(e, 90)),
            "max": 100 * float(e.max()), "mean": 100 * float(e.mean())}


def clock_predictors(res: DataSetResult) -> dict[str, np.ndarray]:
    """Clock predictions on the scored rows: the model's, and the one-clock baselines."""
    c, k = res.clock, res.keep
    meas = c.measured_ghz[k]
    grid = np.arange(1.0, 1.981, 0.005)
    best = float(grid[np.argmin([np.mean(np.abs(g / meas - 1)) for g in grid])])
    return {"power model, in the campaign's stream": c.stream_ghz[k],
            "power model, each kernel alone (--clock predicted)": c.alone_ghz[k],
            f"one fixed clock, the best in hindsight ({best:.3f} GHz; chosen on these rows)": np.full(meas.size, best),
            "the documented --clock sustained (1.30 GHz)": np.full(meas.size, 1.30),
            "the spec maximum (1.98 GHz)": np.full(meas.size, 1.98)}


def predicted_time_predictors(res: DataSetResult) -> dict[str, np.ndarray]:
    out = {"wsim at the predicted clock": res.clock.wsim_us, "roofline at the predicted clock": res.clock.roofline_us}
    out.update({n: v for n, v in res.baselines.items() if n.startswith("nvMatmulHeuristics")})
    out["wsim at the measured clock (for reference)"] = res.wsim_us
    return out


def _predicted_clock(res: DataSetResult) -> list[str]:
    if res.clock is None:
        return []
    k, meas = res.keep, res.measured_us[res.keep]
    lines = ["### With the predicted clock: no measured clock used", "",
             "Each row's clock predicted by the shipped power model (`simulator/machine/power.py`) from the "
             "simulated activity of the kernels the campaign ran around it, and the row simulated at that clock:", "",
             "| clock predictor | rows | median error | p90 | max | mean |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, pred in clock_predictors(res).items():
        e = clock_errors(pred, res.clock.measured_ghz[k])
        lines.append(f"| {name} | {e['rows']} | {e['median']:.2f}% | {e['p90']:.2f}% | {e['max']:.1f}% | {e['mean']:.2f}% |")
    lines += ["", "| predictor | rows | MAPE | max error | signed bias | Spearman |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, pred in predicted_time_predictors(res).items():
        sc = Score.of(pred[k], meas)
        lines.append(f"| {name} | {sc.n} | {_fmt(sc.mape)} | {_fmt(sc.max_err)} | {_fmt(sc.bias)} | {_fmt(sc.spearman, False)} |")
    lines.append("")
    for dim, cls_of in class_dimensions(res).items():
        classes = sorted(set(cls_of[k]))
        if len(classes) < 2:
            continue
        lines += [f"By {dim}, with the predicted clock:", "", f"| {dim} | rows | clock error (median) | wsim MAPE | "
                  "roofline MAPE | wsim MAPE at the measured clock |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for c in classes:
            sel = k & (cls_of == c)
            e = clock_errors(res.clock.stream_ghz[sel], res.clock.measured_ghz[sel])
            m = res.measured_us[sel]
            w, r, w0 = (Score.of(p[sel], m).mape for p in (res.clock.wsim_us, res.clock.roofline_us, res.wsim_us))
            lines.append(f"| {c} | {int(sel.sum())} | {e['median']:.2f}% | {_fmt(w)} | {_fmt(r)} | {_fmt(w0)} |")
        lines.append("")
    return lines


def _constants(res: DataSetResult) -> list[str]:
    if res.plan is None:
        return []
    ds, plan = res.ds, res.plan
    lines = ["Constants made on these rows (every row is scored at the values made without its shape; each "
             "row's values are in accuracy.json):", ""]
    shipped = res.rows[0].arch
    for c in (*ds.fitted, *ds.derived):
        kind = "fitted" if c in ds.fitted else "derived"
        lo, hi = plan.ranges().get(c.name, (float("nan"), float("nan")))
        v, s = plan.all_rows[c.name], shipped.value(c.name)
        same = "= the shipped value" if v == s else f"shipped in arch.py: {s:g}"
        lines.append(f"- `{c.name}` = {v:g} {c.unit} [{kind}] on all {len(res.rows)} rows, {same}; folds "
                     f"{lo:g}-{hi:g}; {c.note}")
    if plan.surrogate_cv_us is not None:
        k = res.keep & np.isfinite(plan.surrogate_cv_us)
        s = Score.of(plan.surrogate_cv_us[k], res.measured_us[k])
        lines.append(f"- the fit searches a surrogate (every row simulated at {res.surrogate_runs // max(1, len(res.rows))} "
                     f"corners of the in-model constants, interpolated); the surrogate's own leave-one-shape-out "
                     f"MAPE is {_fmt(s.mape)}; the figure above is the real simulation at each fold's point")
    return lines + [""]


def _worst(res: DataSetResult, n: int = 8) -> list[str]:
    meas = res.measured_us
    err = np.where(res.keep, np.abs(res.wsim_us / meas - 1.0), -1.0)
    order = [i for i in np.argsort(-err)[:n] if err[i] >= 0]
    names = list(res.baselines)
    if res.ds.external:
        lines = ["Largest wsim errors (predicted / measured; the measured times stay in the source repository):",
                 "", "| row | class | wsim | " + " | ".join(names) + " |", "| --- | --- | ---: |" + " ---: |" * len(names)]
        for i in order:
            cells = " | ".join(f"{res.baselines[b][i] / meas[i]:.3f}" for b in names)
            lines.append(f"| {res.rows[i].label} | {res.rows[i].row_class} | {res.wsim_us[i] / meas[i]:.3f} | {cells} |")
    else:
        lines = ["Largest wsim errors (us):", "", "| row | class | measured | wsim | " + " | ".join(names) + " |",
                 "| --- | --- | ---: | ---: |" + " ---: |" * len(names)]
        for i in order:
            cells = " | ".join(f"{res.baselines[b][i]:.1f}" for b in names)
            lines.append(f"| {res.rows[i].label} | {res.rows[i].row_class} | {meas[i]:.1f} | {res.wsim_us[i]:.1f} | "
                         f"{cells} |")
    return lines + [""]


def _left_out_scored(res: DataSetResult) -> list[str]:
    """wsim, and each baseline that predicts them all, on the rows left out of the common score where wsim has
    a value (a baseline had none, e.g. a tile nvMatmulHeuristics does not know), by the data set's class."""
    rows = ~res.keep & np.isfinite(res.wsim_us)
    if not rows.any():
        return []
    preds = {"wsim": res.wsim_us, **{b: v for b, v in res.baselines.items() if np.isfinite(v[rows]).all()}}
    cls_of = np.array([r.row_class for r in res.rows])
    lines = [f"wsim on the {int(rows.sum())} rows left out of the common score that it predicts, beside the baselines "
             "that predict all of them (MAPE / bias):", "",
             f"| {res.ds.class_title} | rows | " + " | ".join(LABELS.get(b, b) for b in preds) + " |",
             "| --- | ---: |" + " ---: |" * len(preds)]
    for c in [*sorted(set(cls_of[rows])), None]:
        sel = rows & (cls_of == c) if c is not None else rows
        cells = []
        for v in preds.values():
            sc = Score.of(v[sel], res.measured_us[sel])
            cells.append(f"{_fmt(sc.mape)} / {_fmt(sc.bias)}")
        lines.append(f"| {c if c is not None else 'all'} | {int(sel.sum())} | " + " | ".join(cells) + " |")
    return lines + [""]


def _listing(title: str, items: list[str], limit: int = 12) -> list[str]:
    """``items`` ("what: why") in one paragraph, those with the same reason counted together."""
    if not items:
        return []
    by_reason: dict[str, list[str]] = {}
    for it in items:
        what, _, why = it.partition(": ")
        by_reason.setdefault(why, []).append(what)
    parts = [f"{why} ({len(ws)}: {', '.join(ws[:3])}{' ...' if len(ws) > 3 else ''})" if len(ws) > 1 else f"{ws[0]}: {why}"
             for why, ws in list(by_reason.items())[:limit]]
    more = f"; ... {len(by_reason) - limit} more reasons (all in accuracy.json)" if len(by_reason) > limit else ""
    return [f"{title} ({len(items)}): " + "; ".join(parts) + more, ""]


def format_dataset(res: DataSetResult) -> list[str]:
    ds = res.ds
    lines = [f"## {ds.title}", ""]
    if not res.rows:
        return lines + [f"Not run: {'; '.join(ds.skipped) or 'no rows'}", ""]
    lines += [f"Source: {ds.source}", "", f"Rows: {res.subset}; scored: {int(res.keep.sum())}, every predictor on "
              "the same rows.", ""]
    lines += _headline(res) + _by_class(res) + _predicted_clock(res) + _constants(res)
    lines += _listing("Rows left out of every predictor's score", res.left_out)
    lines += _left_out_scored(res)
    lines += _listing("Rows the loader did not use", ds.skipped)
    lines += _worst(res)
    sims = [*res.shipped, *res.scored]
    wall = sum(o.wall_s for o in sims) / 60
    lines += [f"Simulations: {len(res.rows)} rows at the shipped and at their fold's constants, plus "
              f"{res.surrogate_runs} surrogate runs; {sum(o.events for o in sims) / 1e6:.1f}M events in the scored and "
              f"shipped runs, {wall:.1f} CPU-minutes (cached runs count the time of the run that made them)."]
    lines += [f"Note: {n}." for n in (*ds.notes, *res.notes)]
    a = res.scored_arch[0]
    lines += ["", f"Constants of the first row's scored prediction ({a.name}; every row's overrides are in "
              "accuracy.json):", ""]
    lines += [f"- {c.name} = {c.value:g} {c.unit} [{c.label}] {c.source}" for c in a.constants()]
    return lines + [""]


def format_report(results: list[DataSetResult], *, command: str, engine: str) -> str:
    parts = ", ".join(f"{k} {v}" for k, v in key_parts(engine).items())
    lines = ["# wsim accuracy: every committed measurement, re-run on the CPU", "",
             f"Written by `{command}`. Simulation cache key {model_hash(engine)} (every source file under simulator/, "
             f"{parts}).", ""]
    for res in results:
        lines += format_dataset(res)
    return "\n".join(lines)


def _row_json(res: DataSetResult, i: int) -> dict:
    r, meas = res.rows[i], res.measured_us[i]
    row = {"key": r.key, "label": r.label, "class": r.row_class, "classes": r.classes, "shape": r.shape,
           "scored": bool(res.keep[i]),
           "cycles": res.scored[i].cycles, "wsim_us": res.wsim_us[i], "constants": res.fold_constants(i),
           "shipped_us": res.dev_us[i]}
    if res.clock is not None:
        row.update({"clock_measured_ghz": res.clock.measured_ghz[i], "clock_predicted_ghz": res.clock.stream_ghz[i],
                    "clock_alone_ghz": res.clock.alone_ghz[i], "wsim_predicted_clock_us": res.clock.wsim_us[i],
                    "roofline_predicted_clock_us": res.clock.roofline_us[i]})
    if res.ds.external:
        row.update({"wsim_ratio": res.wsim_us[i] / meas,
                    **{f"{b}_ratio": v[i] / meas for b, v in res.baselines.items()}})
    else:
        row.update({"measured_us": meas, **{f"{b}_us": v[i] for b, v in res.baselines.items()}})
    return row


def results_json(results: list[DataSetResult], *, command: str, engine: str) -> dict:
    """Scores, constants and per-row predictions (no wall times: the file is reproducible); an
    external data set's rows carry ratios to the measured time, not the measured times."""
    out = {"command": command, "model_hash": model_hash(engine), "key": key_parts(engine), "datasets": {}}
    for res in results:
        d = {"title": res.ds.title, "source": res.ds.source, "subset": res.subset, "skipped": res.ds.skipped}
        if res.rows:
            d.update({
                "scores": {n: asdict(s) for n, s in scores(res).items()},
                "shipped_constants_score": (asdict(Score.of(res.dev_us[res.keep], res.measured_us[res.keep]))
                                            if res.plan else None),
                "by_class": {dim: {c: {n: asdict(s) for n, s in scores(res, cls_of == c).items()}
                                   for c in sorted(set(cls_of))}
                             for dim, cls_of in class_dimensions(res).items()},
                "constants": ({"all_rows": res.plan.all_rows, "folds": res.plan.folds} if res.plan else None),
                "predicted_clock": clock_json(res),
                "left_out": res.left_out, "notes": [*res.ds.notes, *res.notes],
                "rows": [_row_json(res, i) for i in range(len(res.rows))]})
        out["datasets"][res.ds.name] = d
    return out
