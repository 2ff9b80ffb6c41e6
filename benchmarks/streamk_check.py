"""The model and wsim tune against the measured stream-K campaign (validation/results/h200_streamk.json), CPU only.

    python benchmarks/streamk_check.py [--jobs N] [--all-rows] [--out validation/results/streamk_check.md]
    python benchmarks/streamk_check.py --data validation/results/h200_small_m.json --out validation/results/small_m_check.md

For every problem of the ``streamk`` phase: wsim tune's pick (``--space hw``, the H200 at the median
in-kernel clock of the problem's measured rows) and its measured time against cuBLAS, the measured best;
and the model's error on the measured rows (each simulated at its own in-kernel clock, the way ``wsim
accuracy`` scores the campaign rows): by default the raster-M rows of clusters 1x1 and 2x1 (a quarter of the
rows; ``--all-rows`` for all 1872, ~1 CPU-hour), stream-K scheduler and data-parallel rows apart.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hw_kernels.host import KernelConfig  # noqa: E402
from simulator.engine.run import simulate  # noqa: E402
from simulator.engine.tune import tune  # noqa: E402
from simulator.kernels.space import HW_FIELDS, hw_kernel_fields, sm90_config_from_hw  # noqa: E402
from simulator.machine.arch import ArchSpec  # noqa: E402

DATA = ROOT / "validation/results/h200_streamk.json"
SPAN = "_trace-span"


def _rows(path: Path) -> tuple[list[dict], dict, str]:
    """The campaign file's rows, the file, and its phase (the one its rows were measured in)."""
    d = json.loads(path.read_text())
    rows = [dict(zip(d["columns"], r, strict=True)) for r in d["rows"]]
    phases = {r["phase"] for r in rows if r.get("kernel") == "wsim_sm90_twin"}
    if len(phases) != 1:
        raise SystemExit(f"--data {path}: expected the rows of one campaign phase, found {sorted(phases)}")
    return rows, d, phases.pop()


def _fields(name: str) -> dict:
    cfg = KernelConfig.from_name(name.removesuffix(SPAN))
    return {f: getattr(cfg, f) for f in HW_FIELDS}


def _sim(job) -> tuple[str, float | None]:
    key, fields, m, n, k, clock = job
    arch = ArchSpec.h200().with_overrides({"clock_ghz": round(clock, 4)}, origin="the row's in-kernel clock")
    res = simulate(sm90_config_from_hw(fields, m, n, k, "fp16"), arch)
    return key, (res.time_ns / 1e3 if res.deadlock is None else None)


def _tune_pick(job) -> tuple[tuple, str, float]:
    (m, n, k), clock = job
    arch = ArchSpec.h200().with_overrides({"clock_ghz": round(clock, 4)}, origin="median in-kernel clock")
    r = tune(m, n, k, arch=arch, space="hw", dtype="fp16", progress=False, workers=1)
    best = r.best
    return (m, n, k), KernelConfig(**hw_kernel_fields(r.config_of(best))).name(), best.time_us


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--all-rows", action="store_true", help="simulate every measured row, not the default subset")
    ap.add_argument("--data", default=str(DATA), help="a campaign file of one phase (default: %(default)s)")
    ap.add_argument("--out", default=str(ROOT / "validation/results/streamk_check.md"))
    a = ap.parse_args(argv)
    src = Path(a.data).resolve()
    rows, data, phase = _rows(src)
    ours = [r for r in rows if r.get("kernel") == "wsim_sm90_twin" and r.get("event_us") and r.get("clock_ghz")]
    shapes = sorted({(r["m"], r["n"], r["k"]) for r in ours}, key=lambda s: [tuple(x) for x in data["plan"]
                                                                          [phase]["shapes"]].index(s))
    clock = {s: statistics.median(r["clock_ghz"] for r in ours if (r["m"], r["n"], r["k"]) == s) for s in shapes}
    cub = {(r["m"], r["n"], r["k"]): r["event_us"] for r in rows if r.get("kernel") == "cublas"}
    scored = [r for r in ours if a.all_rows or (_fields(r["config"])["raster"] == "m"
                                               and (_fields(r["config"])["cluster_m"], _fields(r["config"])["cluster_n"])
                                               in ((1, 1), (2, 1)))]
    jobs = [(f"{r['m']}x{r['n']}x{r['k']}|{r['config']}", _fields(r["config"]), r["m"], r["n"], r["k"], r["clock_ghz"])
            for r in scored]
    with ProcessPoolExecutor(a.jobs) as ex:
        picks = {s: (nm, t) for s, nm, t in ex.map(_tune_pick, [(s, clock[s]) for s in shapes])}
        sims = dict(ex.map(_sim, jobs, chunksize=4))
    meas = {f"{r['m']}x{r['n']}x{r['k']}|{r['config']}": r for r in ours}
    scored_keys = {j[0] for j in jobs}
    cmd = "python benchmarks/streamk_check.py" + ("" if src == DATA else f" --data {src.relative_to(ROOT)}")
    out = [f"# wsim against the measured {phase} campaign", "",
           f"`{cmd}` over {src.relative_to(ROOT)} ({data['env']['device']}, "
           f"{data['env']['date_utc']}): wsim tune's pick (`--space hw`, the H200 at the problem's median in-kernel "
           "clock) measured against cuBLAS, and the model's error on every measured row (each simulated at its own "
           "in-kernel clock).", "",
           "| problem | cuBLAS us | measured best x cuBLAS | tune's pick | measured us | x cuBLAS | pick / best |",
           "| --- | ---: | ---: | --- | ---: | ---: | ---: |"]
    for s in shapes:
        key = f"{s[0]}x{s[1]}x{s[2]}"
        best = min(r["event_us"] for r in ours if (r["m"], r["n"], r["k"]) == s)
        nm, _ = picks[s]
        row = meas.get(f"{key}|{nm}{SPAN}")
        t = row["event_us"] if row else None
        out.append(f"| {key} | {cub[s]:.1f} | {cub[s] / best:.2f} | {nm} | "
                   + (f"{t:.1f} | {cub[s] / t:.2f} | {t / best:.3f} |" if t else "not measured | - | - |"))
    out += ["", f"Model error on {len(scored)} of the {len(ours)} measured rows of our kernel"
            + ("" if a.all_rows else " (raster M, clusters 1x1 and 2x1; `--all-rows` for all)") + ":", "",
            "| rows | n | MAPE | max error | bias |", "| --- | ---: | ---: | ---: | ---: |"]
    for label, sel in (("stream-K scheduler (heuristic, stream-K, split-K)", lambda nm: "_d" in nm),
                       ("data-parallel (static scheduler)", lambda nm: "_d" not in nm)):
        errs = [(sims[kk] - r["event_us"]) / r["event_us"] for kk, r in meas.items()
                if kk in scored_keys and sel(r["config"]) and sims.get(kk) is not None]
        if errs:
            out.append(f"| {label} | {len(errs)} | {100 * statistics.mean(abs(e) for e in errs):.1f}% | "
                       f"{100 * max(abs(e) for e in errs):.1f}% | {100 * statistics.mean(errs):+.1f}% |")
    per = {}
    for kk, r in meas.items():
        if kk in scored_keys and "_d" in r["config"] and sims.get(kk) is not None:
            per.setdefault(kk.split("|")[0], []).append(abs(sims[kk] - r["event_us"]) / r["event_us"])
    out += ["", "Stream-K scheduler rows, MAPE per problem: "
            + ", ".join(f"{p} {100 * statistics.mean(v):.1f}%" for p, v in per.items()) + "."]
    Path(a.out).write_text("\n".join(out) + "\n")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
