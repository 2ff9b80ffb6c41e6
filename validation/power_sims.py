"""The campaign's rows simulated at two SM clocks, for the clock model's fit: per row the cycles and the
activity the power model reads (tensor-core busy fraction, active SMs, L2 and HBM bytes).

    python -m validation.power_sims [--jobs 2] [--phases space,bf16,small] [--problems 1024x1024x1024,...]

Each row of the committed campaign (``validation.accuracy.datasets.load_h200``) is simulated at
:data:`CLOCKS_GHZ` through ``wsim accuracy``'s cache and process pool (``out/accuracy-cache``, keyed
by every simulator source); between the two clocks a row's cycles and bytes are interpolated
linearly in the clock (:func:`at_clock`): the compute-bound part of a kernel counts the same cycles
at any clock, the memory-bound part the same nanoseconds.
"""

from __future__ import annotations

import argparse
import os
import sys

#: The two clocks every row is simulated at (GHz): they bracket the campaign's in-kernel clocks.
CLOCKS_GHZ = (1.2, 1.8)


def row_phase(row) -> str:
    return row.key.split(" ", 1)[0]


def load_rows(phases=("space", "bf16", "small"), problems=None) -> list:
    """The campaign's H200 rows, of the given phases and problems (MxNxK)."""
    from validation.accuracy.datasets import load_h200
    rows = [r for r in load_h200().rows if row_phase(r) in phases]
    if problems:
        want = set(problems)
        rows = [r for r in rows if r.shape.split(" ", 1)[1] in want]
    return rows


def activity(o) -> dict | None:
    """What the clock model reads of one simulated outcome (None if the run failed)."""
    if not o.ok:
        return None
    return {"cycles": o.cycles, "tc_busy": o.tc_busy, "sms": o.sms, "l2_bytes": o.l2_bytes, "hbm_bytes": o.hbm_bytes}


def row_sims(rows, *, jobs: int = 1, cache=None, log=None) -> list[dict | None]:
    """Per row ``{clock: activity}`` at :data:`CLOCKS_GHZ` (simulating what the cache lacks), None where a
    run failed."""
    from validation.accuracy.cache import SimCache
    from validation.accuracy.simulate import SimJob, simulate_jobs
    cache = cache or SimCache()
    jobs_ = [SimJob(r.config, r.arch.with_overrides({"clock_ghz": g}, origin="validation.power_sims"), r.est_events)
             for r in rows for g in CLOCKS_GHZ]
    outs = simulate_jobs(jobs_, cache=cache, procs=jobs, log=log)
    out = []
    for i in range(len(rows)):
        acts = [activity(o) for o in outs[i * len(CLOCKS_GHZ):(i + 1) * len(CLOCKS_GHZ)]]
        out.append(None if any(a is None for a in acts) else dict(zip(CLOCKS_GHZ, acts, strict=True)))
    return out


def at_clock(sims: dict, ghz: float) -> dict:
    """A row's simulation at ``ghz``, interpolated (linearly in the clock) between its two simulated
    clocks ``sims = {clock: activity}``: cycles, bytes and the tensor busy cycles."""
    (g0, a), (g1, b) = sorted(sims.items())
    w = (ghz - g0) / (g1 - g0)

    def lin(name):
        return a[name] + w * (b[name] - a[name])
    cycles = max(1.0, lin("cycles"))
    busy_cycles = a["tc_busy"] * a["cycles"] + w * (b["tc_busy"] * b["cycles"] - a["tc_busy"] * a["cycles"])
    return {"cycles": cycles, "tc_busy": max(0.0, min(1.0, busy_cycles / cycles)), "sms": a["sms"],
            "l2_bytes": lin("l2_bytes"), "hbm_bytes": lin("hbm_bytes")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--phases", default="space,bf16,small")
    ap.add_argument("--problems", default="", help="comma-separated MxNxK (default: all)")
    a = ap.parse_args(argv)
    rows = load_rows(tuple(a.phases.split(",")), [p for p in a.problems.split(",") if p] or None)
    if not rows:
        print(f"--phases {a.phases} --problems {a.problems}: no campaign rows", file=sys.stderr)
        return 2
    row_sims(rows, jobs=max(1, min(a.jobs, os.cpu_count() or 1)),
             log=lambda m: print(f"[power_sims] {m}", file=sys.stderr, flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
