"""The effective SM clock under a light load: clock64 ticks over %globaltimer ns of a busy loop of FMAs
on every SM (``clock_spin`` in ``cuda/util.cu``), for a short and a longer run."""

from __future__ import annotations

from .common import qv


def measure(gpu, quick: bool = False) -> dict:
    from .driver import Args, span_summary
    out = gpu.alloc(gpu.sm_count * 5 * 8)
    sink = gpu.alloc(64)
    runs = []
    for iters in (20_000, 400_000) if not quick else (20_000,):
        gpu.launch(gpu.util("clock_spin"), gpu.sm_count, 128, Args.of([out, sink], [iters]))
        s = span_summary(gpu.spans(out, gpu.sm_count))
        runs.append({"iters": iters, **s})
        print(f"[clock] {iters} iterations: {s['clock_mhz']} MHz over {s['wall_ns'] / 1e3:.0f} us", flush=True)
    gpu.free(out)
    gpu.free(sink)
    q = {f"clock.spin_{r['iters']}.mhz": qv(r["clock_mhz"], "MHz",
                                           f"clock64 / %globaltimer of an FMA loop on every SM, {r['wall_ns'] / 1e3:.0f} us")
         for r in runs}
    return {"runs": runs, "quantities": q}
