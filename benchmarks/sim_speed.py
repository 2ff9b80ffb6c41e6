"""How fast is the simulator? Wall time and events of the README's speed runs, as ratios to bare SimPy.

    python benchmarks/sim_speed.py            # all runs, the 100-config sweep and a profile (~2-4 min on 2 cores)
    python benchmarks/sim_speed.py --quick    # without SM100 16384^3 and the sweep

The baseline is measured in the same run: bare SimPy, 296 processes that do nothing but yield
timeouts (the best of three runs). The *floor* is the time bare SimPy needs to dispatch 461k
events, the event count of the default SM100 8192^3 run; each run below is reported as its wall
time (``simulate()`` from the call to the result; the best of two for the fast engine, one run of
the reference) over that floor: a ratio that holds across machines, as both slow down together on
a busy one. Every run is the whole problem on all SMs at K-block granularity. Wall times are
printed for information and never asserted anywhere.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import itertools
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

import simpy

from simulator import _native
from simulator.engine.run import simulate
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig

FLOOR_EVENTS = 461_000


def bare_simpy_events_per_s(n_procs: int = 296, n_steps: int = 2000, repeat: int = 3) -> float:
    """Events/s of SimPy itself (best of ``repeat``): ``n_procs`` processes yielding ``n_steps`` timeouts."""
    best = float("inf")
    for _ in range(repeat):
        env = simpy.Environment()

        def proc(i, env=env):
            for _ in range(n_steps):
                yield env.timeout(1 + (i % 7))

        for i in range(n_procs):
            env.process(proc(i))
        t0 = time.perf_counter()
        env.run()
        best = min(best, time.perf_counter() - t0)
    return n_procs * n_steps / best


def _run(label: str, cfg, engine: str, floor_s: float, rows: list, repeat: int = 2) -> object:
    wall = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = simulate(cfg, engine=engine)
        wall = min(wall, time.perf_counter() - t0)
    rows.append((label, engine, res.events, wall, wall / floor_s))
    print(f"  {label:<34} {engine:<9} {res.events:>10,} {wall:>8.2f} s {wall / floor_s:>7.2f}x   "
          f"{res.time_ns / 1e3:,.1f} us simulated", flush=True)
    return res


def sweep_configs() -> list:
    """100 SM100 configs: 5 M x 2 N x 2 K x 5 tile/cluster shapes (0.05-0.5 s each)."""
    shapes = [dict(), dict(cluster_n=2, mma_tile_n=128), dict(use_2sm=False, mma_tile_m=128, mma_tile_n=128),
              dict(tile_scheduler="static"), dict(read_c=True)]
    return [Sm100GemmConfig(m=m, n=n, k=k, **s) for m, n, k, s in
            itertools.product((2048, 3072, 4096, 6144, 8192), (2048, 4096), (1024, 4096), shapes)]


AREAS = (("fast_env", "event loop (fast_env)"), ("mbarrier", "barriers (mbarrier)"),
         ("pipeline", "pipelines"), ("memory", "memory model (L2/HBM)"), ("kernels", "role processes"),
         ("engine/run", "setup and results"), ("simpy", "SimPy"))


def profile_summary(m: int = 4096) -> None:
    """Own time by part of the program for the fast engine, from cProfile on the pure-Python core
    (cProfile cannot see inside compiled functions). cProfile inflates small functions."""
    code = ("import cProfile, pstats, sys\n"
            "from simulator.engine.run import simulate\n"
            "from simulator.kernels.sm100_config import Sm100GemmConfig\n"
            f"cfg = Sm100GemmConfig(m={m}, n={m}, k={m})\n"
            "p = cProfile.Profile(); p.enable(); simulate(cfg, engine='fast'); p.disable()\n"
            "pstats.Stats(p).dump_stats(sys.argv[1])\n")
    root = Path(__file__).resolve().parents[1]
    out = root / "build" / "sim_speed.prof"
    out.parent.mkdir(exist_ok=True)
    env = dict(os.environ, **{_native.PURE_PYTHON_ENV: "1"})
    subprocess.run([sys.executable, "-c", code, str(out)], cwd=root, env=env, check=True)
    st = pstats.Stats(str(out))
    by_area: dict[str, float] = {}
    total = 0.0
    for (file, _line, _fn), (_cc, _nc, tt, _ct, _callers) in st.stats.items():
        area = next((name for key, name in AREAS if key in file), "Python builtins and other")
        by_area[area] = by_area.get(area, 0.0) + tt
        total += tt
    print(f"\nwhere the time goes (fast engine, SM100 {m}^3, pure-Python core under cProfile, own time):")
    for area, tt in sorted(by_area.items(), key=lambda kv: -kv[1]):
        print(f"  {area:<30} {100 * tt / total:5.1f}%")
    s = io.StringIO()
    pstats.Stats(str(out), stream=s).sort_stats("tottime").print_stats(8)
    print("  top functions:")
    for line in s.getvalue().splitlines():
        if "(" in line and "/" in line:
            print("   ", line.strip()[:120])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="skip SM100 16384^3 and the 100-config sweep")
    ap.add_argument("--no-profile", action="store_true", help="skip the profile summary")
    args = ap.parse_args()

    print(f"simulator core: {_native.status()}")
    base = bare_simpy_events_per_s()
    floor_s = FLOOR_EVENTS / base
    print(f"bare SimPy: {base:,.0f} events/s (best of 3) -> floor = {FLOOR_EVENTS:,} events in {floor_s:.2f} s\n")
    print(f"  {'run':<34} {'engine':<9} {'events':>10} {'wall':>10} {'/floor':>8}")
    rows: list = []
    default = Sm100GemmConfig()
    ref = _run("SM100 8192^3 (wsim simulate)", default, "reference", floor_s, rows, repeat=1)
    fast = _run("SM100 8192^3 (wsim simulate)", default, "fast", floor_s, rows)
    same = "identical" if fast.fingerprint() == ref.fingerprint() else "DIFFERENT (a bug: see tests/test_engine_differential.py)"
    for sched in ("cooperative", "pingpong"):
        _run(f"SM90 8192^3 {sched}", Sm90GemmConfig(schedule=sched), "fast", floor_s, rows)
    if not args.quick:
        _run("SM100 16384^3", Sm100GemmConfig(m=16384, n=16384, k=16384), "fast", floor_s, rows)
    print(f"\nfast vs reference on the default run: results {same}; "
          f"{rows[0][3] / rows[1][3]:.1f}x faster")
    print("targets: SM100 default <= 1.0x, SM90 8192^3 <= 2x, SM100 16384^3 <= 8x the floor")

    if not args.quick:
        if importlib.util.find_spec("simulator.engine.sweep") is None:
            print("\n100-config sweep: simulator.engine.sweep is not available")
        else:
            from simulator.engine.sweep import default_workers, run_sweep

            cfgs = sweep_configs()
            workers = default_workers()
            t0 = time.perf_counter()
            out = run_sweep(cfgs, workers=workers, progress=False)
            wall = time.perf_counter() - t0
            ok = [r for r in out if r.ok]
            events = sum(r.events or 0 for r in ok)
            busy = sum(r.wall_s or 0.0 for r in ok)
            print(f"\n100-config sweep (SM100, {workers} workers): {len(ok)}/{len(out)} ok, {events:,} events, "
                  f"{wall:.1f} s wall ({wall / floor_s:.1f}x the floor; {busy:.1f} s of simulation in the "
                  f"workers, {events / FLOOR_EVENTS * floor_s / wall:.2f}x bare SimPy's event rate overall)")

    if not args.no_profile:
        profile_summary()


if __name__ == "__main__":
    main()
