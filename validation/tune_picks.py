"""What ``wsim tune`` picks for the issue-18 problems, written down before the GPU measures it (the campaign's
``picks`` phase): per problem, the pick as a user gets it (``--arch h200 --space hw``, each candidate at its own
predicted clock, no measurement) beside the fastest config of every committed campaign that measured the problem,
so that one run times both against the same cuBLAS.

    python -m validation.tune_picks [--jobs N] [--out validation/results/h200_tune_picks_plan.json]   # CPU
    python -m validation.tune_picks --earlier [--md validation/results/tune_picks_earlier.md]          # CPU

``--earlier``: the committed plan's picks as the committed campaigns already timed them (the same config on the
same problem, against the cuBLAS of that campaign's run), until the ``picks`` phase times them all in one run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from hw_kernels.host import KernelConfig
from validation.campaign import (
    COOP64_HELD_OUT,
    COOP64_SHAPES,
    RAGGED_N_HELD_OUT,
    RAGGED_N_SHAPES,
    SMALL_M_SHAPES,
    STREAMK_SHAPES,
)
from validation.campaign import TUNE_PICKS_PLAN as PLAN
from validation.campaign import load_tune_picks as load_plan

RESULTS = Path(__file__).resolve().parent / "results"
SPAN = "_trace-span"
#: The committed campaigns of issue 18 whose problems the phase measures, and whose fastest config per problem
#: it times again beside the pick (the coop64 phase has an H100 run only so far).
CAMPAIGNS = ("h200_streamk.json", "h200_streamk_nd.json", "h200_small_m.json", "h200_ragged_n.json",
             "h100_coop64.json")


def _held_out() -> frozenset:
    return COOP64_HELD_OUT | RAGGED_N_HELD_OUT


def problems() -> list[tuple[int, int, int]]:
    """The problems of the issue-18 phases (streamk, small_m, ragged_n, coop64), in that order, each once."""
    out: list = []
    for s in (*STREAMK_SHAPES, *SMALL_M_SHAPES, *RAGGED_N_SHAPES, *COOP64_SHAPES):
        if tuple(s) not in out:
            out.append(tuple(s))
    return out


def measured_bests(results: Path = RESULTS) -> dict[tuple, list[dict]]:
    """Per problem, the fastest config of our kernel in each committed campaign file that has it."""
    out: dict = {}
    for (name, key), cell in campaign_rows(results).items():
        ours = {c: us for c, us in cell.items() if c not in ("cublas", "device")}
        if ours:
            config = min(ours, key=ours.get)
            out.setdefault(key, []).append({"file": name, "config": config, "event_us": ours[config],
                                            "device": cell["device"]})
    return out


def _pick(shape) -> tuple[tuple, str, float, float]:
    from simulator.engine.tune import tune
    from simulator.kernels.space import hw_kernel_fields
    r = tune(*shape, arch="h200", space="hw", dtype="fp16", progress=False, workers=1, clock="predicted")
    best = r.best
    return tuple(shape), KernelConfig(**hw_kernel_fields(r.config_of(best))).name(), best.time_us, best.clock_ghz


def make_plan(jobs: int = 2, log=print) -> dict:
    from validation.accuracy.cache import model_hash
    shapes = problems()
    bests = measured_bests()
    with ProcessPoolExecutor(max(1, jobs)) as ex:
        picks = {}
        for shape, name, us, ghz in ex.map(_pick, shapes):
            picks[shape] = (name, us, ghz)
            log(f"[tune_picks] {shape[0]}x{shape[1]}x{shape[2]}: {name} ({us:.1f} us predicted at {ghz:.3f} GHz)")
    held = _held_out()
    rows = []
    for s in shapes:
        name, us, ghz = picks[s]
        refs = bests.get(s, [])
        configs = [name] + [x["config"] for x in refs if x["config"] != name]
        rows.append({"m": s[0], "n": s[1], "k": s[2], "held_out": s in held, "pick": name,
                     "pick_predicted_us": round(us, 3), "pick_predicted_ghz": round(ghz, 4),
                     "references": refs, "configs": list(dict.fromkeys(configs))})
    return {"model_hash": model_hash(), "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "tune": "simulator.engine.tune.tune(m, n, k, arch='h200', space='hw', dtype='fp16', clock='predicted')",
            "problems": rows}


def campaign_rows(results: Path = RESULTS) -> dict[tuple, dict]:
    """(file, (m, n, k)) -> {config without the span suffix: event us, "cublas": us, "device": name} of every
    committed campaign of :data:`CAMPAIGNS`, our kernel's correct rows only."""
    out: dict = {}
    for name in CAMPAIGNS:
        path = results / name
        if not path.is_file():
            continue
        d = json.loads(path.read_text())
        for r in (dict(zip(d["columns"], row, strict=True)) for row in d["rows"]):
            if r.get("event_us") is None or (r.get("kernel") != "cublas" and r.get("ok") is False):
                continue
            cell = out.setdefault((name, (r["m"], r["n"], r["k"])), {"device": d["env"].get("device")})
            cell["cublas" if r.get("kernel") == "cublas" else r["config"].removesuffix(SPAN)] = r["event_us"]
    return out


def earlier_markdown(plan: dict, cells: dict, command: str) -> str:
    """Each problem's pick as each committed campaign timed it: its us, that run's cuBLAS, the run's fastest
    of ours, and a tally of issue 18's 0.95x bar on the H200 rows."""
    lines = ["# wsim tune's picks as the committed campaigns timed them", "",
             f"`{command}`. Written by the command. The picks: {PLAN.name} (`{plan.get('command')}`, model hash "
             f"{plan.get('model_hash')}, {plan.get('tune')}). A pick counts where a committed campaign ran the same "
             "config (raster, swizzle, decomposition and reduction included) on the same problem; x cuBLAS is "
             "against the cuBLAS of that campaign's run (> 1: ours faster); `pick / run's best` against the fastest "
             "of ours in that run. The H100 rows (the coop64 phase's only run so far) are not the H200's and are not "
             "counted in the tally.", "",
             "| problem | tune's pick | predicted us | campaign | device | measured us | x cuBLAS | pick / run's best |",
             "| --- | --- | ---: | --- | --- | ---: | ---: | ---: |"]
    h200, ok = set(), set()
    for p in plan["problems"]:
        shape = (p["m"], p["n"], p["k"])
        label = f"{p['m']}x{p['n']}x{p['k']}" + (" (held out)" if p["held_out"] else "")
        found = [(f, c) for (f, s), c in cells.items() if s == shape and p["pick"] in c]
        if not found:
            lines.append(f"| {label} | {p['pick']} | {p['pick_predicted_us']:.1f} | not measured | - | - | - | - |")
        for f, c in found:
            us = c[p["pick"]]
            best = min(v for k, v in c.items() if k not in ("cublas", "device"))
            ratio = c["cublas"] / us if c.get("cublas") else None
            lines.append(f"| {label} | {p['pick']} | {p['pick_predicted_us']:.1f} | {f} | {c['device']} | {us:.1f} | "
                         f"{'-' if ratio is None else f'{ratio:.2f}'} | {us / best:.3f} |")
            if "H200" in str(c["device"]) and ratio is not None:
                h200.add(shape)
                if ratio >= 0.95:
                    ok.add(shape)
    lines += ["", f"On the H200: the pick >= 0.95x cuBLAS on {len(ok)} of the {len(h200)} problems whose pick an H200 "
              f"campaign timed (in any campaign that did); {len(plan['problems']) - len(h200)} of "
              f"{len(plan['problems'])} problems have no H200 timing of their pick yet."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(PLAN))
    ap.add_argument("--earlier", action="store_true", help="the committed plan's picks in the committed campaigns")
    ap.add_argument("--md", help="with --earlier: write the table here")
    a = ap.parse_args(argv)
    if a.earlier:
        cmd = "python -m validation.tune_picks --earlier" + (f" --md {a.md}" if a.md else "")
        md = earlier_markdown(load_plan(), campaign_rows(), cmd)
        print(md)
        if a.md:
            Path(a.md).write_text(md)
        return 0
    plan = make_plan(a.jobs, log=lambda m: print(m, file=sys.stderr, flush=True))
    cmd = "python -m validation.tune_picks" + ("" if a.jobs == 2 else f" --jobs {a.jobs}") + \
        ("" if Path(a.out).resolve() == PLAN else f" --out {a.out}")
    Path(a.out).write_text(json.dumps({"command": cmd, **plan}, indent=1) + "\n")
    print(f"wrote {a.out}: {len(plan['problems'])} problems", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
