"""The campaign's rows simulated at two SM clocks, for the clock model (issue 16): per row the cycles and
the activity the power model reads (tensor-core busy fraction, active SMs, L2 and HBM bytes).

    python -m validation.power_sims [--jobs 2] [--phases space,bf16,small] [--problems 1024x1024x1024,...]

Each row of ``validation.accuracy.load_h200()`` (the campaign's configs x problems) is simulated at
:data:`CLOCKS_GHZ`; between them a row's cycles and bytes are interpolated linearly in the clock
(:func:`at_clock`): the compute-bound part of a kernel counts the same cycles at any clock, the
memory-bound part the same nanoseconds. Results are cached per model source (``out/power-cache``),
cheapest problems first, so a run that is stopped keeps what it finished.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = ROOT / "out" / "power-cache"
#: The two clocks every row is simulated at (GHz): they bracket the campaign's in-kernel clocks.
CLOCKS_GHZ = (1.2, 1.8)


def row_phase(row) -> str:
    return row.key.split(" ", 1)[0]


def load_rows(phases=("space", "bf16", "small"), problems=None) -> list:
    """The campaign's H200 rows (validation.accuracy.load_h200), of the given phases and problems."""
    from validation.accuracy import load_h200
    ds = load_h200()
    rows = [r for r in ds.rows if row_phase(r) in phases]
    if problems:
        want = set(problems)
        rows = [r for r in rows if r.shape.split(" ", 1)[1] in want]
    return rows


def _key(cfg, ghz: float) -> str:
    blob = json.dumps([type(cfg).__name__, asdict(cfg), round(ghz, 4)], sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()


#: The clock model's own modules: they do not change a simulated cycle count, so the cache keeps.
NOT_SIMULATION = ("simulator/machine/power.py", "simulator/engine/power_clock.py")


def sim_hash() -> str:
    """A hash of the SM90 model's source (as validation.accuracy.model_hash(90)), the clock model left out."""
    from validation.accuracy import _OTHER_KERNEL, MODEL_SOURCES, MODEL_SOURCES_SKIP
    h = hashlib.sha1()
    skip = _OTHER_KERNEL[90]
    for folder in MODEL_SOURCES:
        for p in sorted((ROOT / folder).rglob("*.py")):
            rel = str(p.relative_to(ROOT))
            if rel in MODEL_SOURCES_SKIP or rel in NOT_SIMULATION or rel.startswith(skip):
                continue
            h.update(rel.encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def cache_path() -> Path:
    return CACHE_DIR / f"sm90-{sim_hash()}.jsonl"


def load_cache(path: Path | None = None) -> dict:
    path = path or cache_path()
    out = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                k, v = json.loads(line)
            except ValueError:
                continue
            out[k] = v
    return out


def simulate_one(args) -> tuple[str, dict]:
    """One row at one clock -> (cache key, {cycles, tc_busy, sms, l2_bytes, hbm_bytes, ok})."""
    key, cfg, ghz = args
    from simulator.engine import simulate
    from simulator.machine.arch import ArchSpec
    t0 = time.perf_counter()
    try:
        res = simulate(cfg, ArchSpec.h200().with_overrides({"clock_ghz": ghz}, origin="power_sims"), max_events=None)
    except Exception as e:  # noqa: BLE001 - recorded per row
        return key, {"ok": False, "error": f"{type(e).__name__}: {e}"[:300]}
    sms = max((r.ctas for r in res.role_times), default=0)
    return key, {"ok": res.ok, "cycles": res.cycles, "tc_busy": res.tensor_core_utilization, "sms": sms,
                 "l2_bytes": res.l2_load_bytes + res.hbm_write_bytes, "hbm_bytes": res.hbm_bytes,
                 "wall_s": round(time.perf_counter() - t0, 2)}


def simulate_rows(rows, jobs: int = 1, log=print) -> dict:
    """Simulate what the cache lacks (cheapest problems first); returns the cache."""
    path = cache_path()
    cache = load_cache(path)
    todo, seen = [], set()
    for r in sorted(rows, key=lambda r: r.est_events):
        for g in CLOCKS_GHZ:
            k = _key(r.config, g)
            if k not in cache and k not in seen:
                seen.add(k)
                todo.append((k, r.config, g))
    log(f"[power_sims] {len(todo)} simulations to run ({len(cache)} cached) on {jobs} process(es) -> {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    done = 0
    with path.open("a") as f:
        if jobs > 1 and len(todo) > 1:
            import multiprocessing as mp
            ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
            with ctx.Pool(jobs) as pool:
                for k, v in pool.imap(simulate_one, todo, chunksize=1):
                    cache[k] = v
                    f.write(json.dumps([k, v]) + "\n")
                    f.flush()
                    done += 1
                    if done % 50 == 0:
                        log(f"[power_sims] {done}/{len(todo)} ({time.time() - t0:.0f} s)")
        else:
            for w in todo:
                k, v = simulate_one(w)
                cache[k] = v
                f.write(json.dumps([k, v]) + "\n")
                f.flush()
                done += 1
                if done % 50 == 0:
                    log(f"[power_sims] {done}/{len(todo)} ({time.time() - t0:.0f} s)")
    log(f"[power_sims] done: {done} simulated in {time.time() - t0:.0f} s")
    return cache


def at_clock(sims: dict, ghz: float) -> dict:
    """A row's simulation at ``ghz``, interpolated (linearly in the clock) between its two simulated
    clocks ``sims = {clock: result}``: cycles, bytes and the tensor busy cycles."""
    (g0, a), (g1, b) = sorted(sims.items())
    w = (ghz - g0) / (g1 - g0)

    def lin(name):
        return a[name] + w * (b[name] - a[name])
    cycles = max(1.0, lin("cycles"))
    busy_cycles = lin("tc_busy_cycles") if "tc_busy_cycles" in a else \
        a["tc_busy"] * a["cycles"] + w * (b["tc_busy"] * b["cycles"] - a["tc_busy"] * a["cycles"])
    return {"cycles": cycles, "tc_busy": max(0.0, min(1.0, busy_cycles / cycles)), "sms": a["sms"],
            "l2_bytes": lin("l2_bytes"), "hbm_bytes": lin("hbm_bytes")}


def row_sims(rows, cache: dict) -> list[dict | None]:
    """Per row {clock: result} from the cache (None where a clock is missing or failed)."""
    out = []
    for r in rows:
        d = {}
        for g in CLOCKS_GHZ:
            v = cache.get(_key(r.config, g))
            if v is None or not v.get("ok"):
                d = None
                break
            d[g] = v
        out.append(d)
    return out


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
    simulate_rows(rows, jobs=max(1, min(a.jobs, os.cpu_count() or 1)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
