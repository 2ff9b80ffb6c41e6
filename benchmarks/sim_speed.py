"""How fast is the simulator? Events per second and wall time of the default 8192^3 run.

    python benchmarks/sim_speed.py            # default SM100 8192^3 BF16 on all 148 SMs, K-block granularity
    python benchmarks/sim_speed.py --profile  # plus where the time goes (cProfile, top functions)

The baseline, measured in the same run on the same machine, is bare SimPy: processes that do
nothing but yield timeouts. The ratio says how much of SimPy's own speed the model keeps; wall
times are printed for information and never asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import simpy

from simulator.engine import simulate
from simulator.kernels.sm100_config import Sm100GemmConfig


def bare_simpy_events_per_s(n_procs: int = 296, n_steps: int = 2000) -> float:
    """Events/s of SimPy itself: ``n_procs`` processes each yielding ``n_steps`` timeouts."""
    env = simpy.Environment()

    def proc(i):
        for _ in range(n_steps):
            yield env.timeout(1 + (i % 7))

    for i in range(n_procs):
        env.process(proc(i))
    t0 = time.perf_counter()
    env.run()
    dt = time.perf_counter() - t0
    return n_procs * n_steps / dt


def _area(file: str) -> str:
    """Group a profiled file into a part of the program."""
    if "simpy" in file:
        return "SimPy (event queue, process resumption)"
    for name in ("mbarrier", "pipeline", "memory", "engine", "trace"):
        if file.endswith(f"simulator/{name}.py"):
            return f"simulator/{name}.py"
    if "simulator/kernels" in file:
        return "simulator/kernels (role processes, TMA/MMA issue)"
    if "simulator" in file:
        return "simulator (other)"
    return "Python builtins and other"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=8192)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--k", type=int, default=8192)
    ap.add_argument("--profile", action="store_true", help="print the top functions by own time")
    args = ap.parse_args()
    cfg = Sm100GemmConfig(m=args.m, n=args.n, k=args.k)

    base = bare_simpy_events_per_s()
    prof = cProfile.Profile() if args.profile else None
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    res = simulate(cfg, count_events=True)
    if prof:
        prof.disable()
    wall = time.perf_counter() - t0
    rate = res.events / res.wall_s
    c = res.config
    print(f"problem: {c.m}x{c.n}x{c.k} {c.dtype_ab}, MMA {c.mma_tile_m}x{c.mma_tile_n}x{c.tile_k} "
          f"({'2-SM' if c.use_2sm else '1-SM'}), {c.num_output_tiles} tiles x {c.k_tiles} K-blocks, "
          f"{int(res.arch.sm_count.value)} SMs")
    print(f"simulated kernel time : {res.time_ns / 1e3:.1f} us ({res.tflops:.0f} TFLOP/s)")
    print(f"events processed      : {res.events:,}")
    print(f"wall time             : {res.wall_s:.2f} s in the event loop, {wall:.2f} s including setup")
    print(f"events per second     : {rate:,.0f}")
    print(f"baseline (bare SimPy) : {base:,.0f} events/s measured now")
    print(f"ratio model/baseline  : {rate / base:.2f}")
    print(f"per event             : {1e6 / rate:.2f} us (bare SimPy {1e6 / base:.2f} us)")
    print(f"SimPy floor           : {res.events / base:.2f} s = these events at bare-SimPy speed; "
          f"the run took {res.wall_s / (res.events / base):.1f}x that")
    if prof:
        st = pstats.Stats(prof)
        by_area: dict[str, float] = {}
        total = 0.0
        for (file, _line, _fn), (_cc, _nc, tt, _ct, _callers) in st.stats.items():
            area = _area(file)
            by_area[area] = by_area.get(area, 0.0) + tt
            total += tt
        print("\nwhere the time goes (own time under cProfile, which inflates small functions):")
        for area, tt in sorted(by_area.items(), key=lambda kv: -kv[1]):
            print(f"  {area:<44} {100 * tt / total:5.1f}%")
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
        print(out.getvalue())


if __name__ == "__main__":
    main()
