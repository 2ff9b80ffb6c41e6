"""The model and wsim tune against the measured stream-K campaign (validation/results/h200_streamk.json and
h200_streamk_nd.json, its nondeterministic-reduction rows), CPU only.

    python benchmarks/streamk_check.py [--jobs N] [--all-rows] [--out validation/results/streamk_check.md]
    python benchmarks/streamk_check.py --data validation/results/h200_small_m.json --out validation/results/small_m_check.md

For every problem of the ``streamk`` phase: wsim tune's pick (``--space hw``, the H200 at the median
in-kernel clock of the problem's measured rows) and its measured time against cuBLAS (the cuBLAS timed in the
same run as the pick's row), the measured best;
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
from validation.accuracy.cache import model_hash  # noqa: E402
from validation.campaign import gpu_tag  # noqa: E402

DATA = (ROOT / "validation/results/h200_streamk.json", ROOT / "validation/results/h200_streamk_nd.json")
SPAN = "_trace-span"


def _rows(path: Path) -> tuple[list[dict], dict, str]:
    """The campaign file's rows, the file, and its phase (the one its rows were measured in)."""
    d = json.loads(path.read_text())
    if gpu_tag(d.get("env", {})) != "h200":
        raise SystemExit(f"--data {path}: measured on {d.get('env', {}).get('device')!r}; this check simulates the H200 (ArchSpec.h200()), so "
                         "it takes H200 campaigns only")
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
    ap.add_argument("--data", nargs="+", default=[str(p) for p in DATA],
                    help="campaign files of one phase each, of the same problems (default: %(default)s)")
    ap.add_argument("--out", default=str(ROOT / "validation/results/streamk_check.md"))
    a = ap.parse_args(argv)
    srcs = [Path(x).resolve() for x in a.data]
    ours, cub, datas, phases = [], {}, [], []
    for src in srcs:
        rows, data, phase = _rows(src)
        datas.append(data)
        phases.append(phase)
        for r in rows:                   # each row with the cuBLAS time of its own run
            if r.get("kernel") == "cublas":
                cub[(src, r["m"], r["n"], r["k"])] = r["event_us"]
            elif r.get("kernel") == "wsim_sm90_twin" and r.get("event_us") and r.get("clock_ghz"):
                ours.append({**r, "src": src})
    data, phase = datas[0], phases[0]
    shapes = sorted({(r["m"], r["n"], r["k"]) for r in ours}, key=lambda s: [tuple(x) for x in data["plan"]
                                                                          [phase]["shapes"]].index(s))
    clock = {s: statistics.median(r["clock_ghz"] for r in ours if (r["m"], r["n"], r["k"]) == s) for s in shapes}

    def x_cublas(r) -> float:
        return cub[(r["src"], r["m"], r["n"], r["k"])] / r["event_us"]
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
    cmd = "python benchmarks/streamk_check.py" + ("" if tuple(srcs) == DATA else
                                                  " --data " + " ".join(str(x.relative_to(ROOT)) for x in srcs))
    over = ", ".join(f"{x.relative_to(ROOT)} ({d['env']['device']}, {d['env']['date_utc']})"
                     for x, d in zip(srcs, datas, strict=True))
    out = [f"# wsim against the measured {' and '.join(phases)} campaign", "",
           f"`{cmd}` (model hash {model_hash()}) over {over}: wsim tune's pick (`--space hw`, the H200 at the problem's median in-kernel "
           "clock) measured against cuBLAS (the cuBLAS of the pick's own run), and the model's error on every "
           "measured row (each simulated at its own in-kernel clock).", "",
           "| problem | cuBLAS us (the best's run) | measured best x cuBLAS | tune's pick | measured us | x cuBLAS | "
           "pick / best |",
           "| --- | ---: | ---: | --- | ---: | ---: | ---: |"]
    for s in shapes:
        key = f"{s[0]}x{s[1]}x{s[2]}"
        best = max((r for r in ours if (r["m"], r["n"], r["k"]) == s), key=x_cublas)
        nm, _ = picks[s]
        row = meas.get(f"{key}|{nm}{SPAN}")
        cb = cub[(best["src"], *s)]
        out.append(f"| {key} | {cb:.1f} | {x_cublas(best):.2f} | {nm} | "
                   + (f"{row['event_us']:.1f} | {x_cublas(row):.2f} | {x_cublas(best) / x_cublas(row):.3f} |"
                      if row else "not measured | - | - |"))
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
