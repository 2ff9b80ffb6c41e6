"""Simulate many (config, arch) pairs, each once, on all cores, through the cache."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from .cache import SimCache, SimOutcome, row_key


@dataclass(frozen=True)
class SimJob:
    config: object
    arch: object
    est_events: int = 0


def _simulate_one(args) -> tuple[str, SimOutcome]:
    key, job, engine = args
    from simulator.engine import simulate
    t0 = time.perf_counter()
    try:
        res = simulate(job.config, job.arch, engine=engine, max_events=None)
    except Exception as e:  # noqa: BLE001 - one failing row must not stop the report; it is listed
        return key, SimOutcome(float("nan"), float("nan"), 0, time.perf_counter() - t0, engine, False,
                               f"{type(e).__name__}: {e}")
    ok = res.ok
    return key, SimOutcome(res.cycles, res.cycles / job.arch.clock_ghz.value / 1e3, res.events, res.wall_s,
                           res.engine, ok, "" if ok else f"deadlock or protocol violations ({res.violation_count})",
                           res.tensor_core_utilization, max((r.ctas for r in res.role_times), default=0),
                           res.l2_load_bytes + res.hbm_write_bytes, res.hbm_bytes)


def simulate_jobs(jobs: list[SimJob], *, cache: SimCache, engine: str = "fast", procs: int = 0,
                  log: Callable[[str], None] | None = None) -> list[SimOutcome]:
    """Every job's outcome (cached ones reused, the others simulated costliest first on ``procs``
    processes, 0 = all cores), in the order of ``jobs``."""
    keys = [row_key(j.config, j.arch) for j in jobs]
    todo: dict[str, SimJob] = {}
    for k, j in zip(keys, jobs, strict=True):
        if cache.get(k) is None and k not in todo:
            todo[k] = j
    order = sorted(todo.items(), key=lambda kv: -kv[1].est_events)
    procs = procs or os.cpu_count() or 1
    if log and order:
        log(f"simulating {len(order)} run(s) ({sum(j.est_events for _, j in order) / 1e6:.0f}M events estimated) "
            f"on {min(procs, len(order))} process(es); {len(jobs) - len(order)} cached or repeated")
    work = [(k, j, engine) for k, j in order]
    t0 = time.perf_counter()

    def record(done: int, k: str, v: SimOutcome) -> None:
        cache.put(k, v)
        if log and (done % 25 == 0 or done == len(work)):
            log(f"  {done}/{len(work)} simulated ({time.perf_counter() - t0:.0f} s)")

    if procs > 1 and len(work) > 1:
        import multiprocessing as mp
        ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
        with ctx.Pool(min(procs, len(work))) as pool:
            for done, (k, v) in enumerate(pool.imap_unordered(_simulate_one, work), 1):
                record(done, k, v)
    else:
        for done, w in enumerate(work, 1):
            record(done, *_simulate_one(w))
    return [cache.get(k) for k in keys]
