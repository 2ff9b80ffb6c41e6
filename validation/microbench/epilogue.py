"""The SM90 epilogue per subtile size, without a mainloop (kernels: ``cuda/epilogue.cu``).

* ``epi_e{EN}_{coop|pp}_plain``: 132 CTAs (one per SM), each storing ``tiles`` 128 x 128 fp16 tiles
  in subtiles of 128 x EN exactly as the hardware twin does (convert + stmatrix -> fence.proxy.async ->
  store thread bulk wait_group.read 2 -> bar.sync of 256 (cooperative) or 128 (ping-pong) threads ->
  TMA store + commit), 4 SMEM buffers. Time per subtile = loop cycles / subtiles (the final drain,
  wait_group 0, is reported apart). The host checks every element of D against the pattern the
  registers held (a wrong swizzle or fragment mapping would show as mismatches).
* ``epi_..._phases``: the same with a clock read between the steps (store thread's view): stmatrix
  issue, fence (waits for the stmatrix writes), wait_group.read, barrier, TMA store issue.
* ``tma_store_latency``: one store at a time from one thread: cycles until its SMEM is read out
  (``wait_group.read 0``) and until it is written (``wait_group 0``); 1 CTA alone and 132 at once.
* ``named_barrier_loop``: back-to-back ``bar.sync 1`` of 128, 256, 384 threads.
"""

from __future__ import annotations

from .common import med, qv

ENS = (16, 32, 64)
TILE = 128
D_COLS = 4096
#: CTAs (one per SM) of the subtile loop: one SM alone (the SM-local cost), 16, and all (then the
#: stores of e32/e64 saturate the HBM write bandwidth: 132 x 8 KiB / 519 cycles = 4.1 TB/s).
GRIDS = (1, 16, 132)


def expected_tiles(rows: int, tiles_per_cta: int):
    """What D must hold: tile (m, n) of CTA c's t-th tile is pattern(r, c) + t (see ``epilogue.cu``)."""
    import numpy as np
    r = np.arange(rows)[:, None]
    c = np.arange(D_COLS)[None, :]
    tile = (r // TILE) * (D_COLS // TILE) + c // TILE
    t = tile % tiles_per_cta
    return (((r % TILE) * 3 + (c % TILE)) % 61 - 30 + t).astype(np.float16)


def measure(gpu, quick: bool = False) -> dict:
    import numpy as np

    from .build import cubin_path
    from .driver import Args, span_summary
    cub = cubin_path("epilogue")
    sms = gpu.sm_count
    tiles = 8 if quick else 32
    rows = -(-sms * tiles // (D_COLS // TILE)) * TILE
    d = gpu.alloc(rows * D_COLS * 2)
    out = gpu.alloc(sms * 16 * 8)
    runs, checks = [], {}
    want = expected_tiles(rows, tiles)
    tile_of = (np.arange(rows)[:, None] // TILE) * (D_COLS // TILE) + np.arange(D_COLS)[None, :] // TILE
    one_per_sm = 116 * 1024
    for en in ENS:
        tmap = gpu.tensor_map_2d(d, D_COLS, rows, D_COLS * 2, en, TILE, swizzle_bytes=en * 2)
        for sched, threads in (("coop", 256), ("pp", 128)):
            for mode, grids in (("plain", GRIDS), ("phases", (1, sms))):
                fn = gpu.func(cub, f"epi_e{en}_{sched}_{mode}")
                for grid in grids:
                    grid = min(grid, sms)
                    gpu.memset(d, 0xFF, rows * D_COLS * 2)
                    gpu.launch(fn, grid, threads, Args.of([out], [tiles, D_COLS // TILE]), smem=one_per_sm, tmap=tmap)
                    recs = gpu.spans(out, grid, 16)
                    s = span_summary(recs)
                    nsub = tiles * (TILE // en)
                    r = {"en": en, "schedule": sched, "mode": mode, "ctas": grid, "tiles_per_cta": tiles,
                         "cycles_per_subtile": s["cycles_median"] / nsub,
                         "cycles_per_subtile_max": s["cycles_max"] / nsub,
                         "drain_cycles": med(recs[:, 5]), "clock_mhz": s["clock_mhz"], "sms": s["sms"]}
                    if mode == "phases":
                        for j, name in enumerate(("stmatrix_issue", "fence", "wait_read", "barrier", "store_issue")):
                            r[f"phase_{name}"] = med(recs[:, 6 + j]) / nsub
                    if mode == "plain":
                        got = np.zeros((rows, D_COLS), dtype=np.float16)
                        gpu.d2h(got, d)
                        bad = int(np.count_nonzero((got != want) & (tile_of < grid * tiles)))
                        checks[f"e{en}_{sched}_{grid}sm"] = bad
                        r["mismatches"] = bad
                    runs.append(r)
                    print(f"[epilogue] e{en} {sched} {mode} x{grid}: {r['cycles_per_subtile']:.1f} clk/subtile"
                          + (f", mismatches {r.get('mismatches')}" if mode == "plain" else ""), flush=True)
    store = []
    fn = gpu.func(cub, "tma_store_latency")
    n = 16 if quick else 64
    for en in ENS:
        tmap = gpu.tensor_map_2d(d, D_COLS, rows, D_COLS * 2, en, TILE, swizzle_bytes=en * 2)
        for grid in (1, sms):
            gpu.launch(fn, grid, 128, Args.of([out], [n, en, D_COLS // en]), smem=one_per_sm, tmap=tmap)
            recs = gpu.spans(out, grid, 16)
            store.append({"en": en, "bytes": TILE * en * 2, "ctas": grid, "stores": n,
                          "read_cycles": med(recs[:, 5] / n), "write_cycles": med(recs[:, 6] / n),
                          "read_cycles_min": int(recs[:, 7].min()), "write_cycles_min": int(recs[:, 8].min()),
                          "clock_mhz": span_summary(recs)["clock_mhz"]})
            print(f"[epilogue] TMA store e{en} x{grid}: read {store[-1]['read_cycles']:.0f} "
                  f"write {store[-1]['write_cycles']:.0f} clk", flush=True)
    bars = []
    fn = gpu.func(cub, "named_barrier_loop")
    for threads in (128, 256, 384):
        iters = 4096
        gpu.launch(fn, sms, threads, Args.of([out], [iters]), smem=one_per_sm)
        s = span_summary(gpu.spans(out, sms, 16))
        bars.append({"threads": threads, "cycles_per_barrier": s["cycles_median"] / iters, "clock_mhz": s["clock_mhz"]})
    gpu.free(d)
    gpu.free(out)
    res = {"runs": runs, "store": store, "named_barrier": bars, "mismatches": checks}
    res["quantities"] = quantities(res)
    return res


def quantities(res: dict) -> dict:
    q = {}
    for r in res["runs"]:
        key = f"epilogue.{r['schedule']}.e{r['en']}"
        ctas = r.get("ctas", 132)
        sfx = "" if ctas == 132 else f"_{ctas}sm"
        who = "256 threads, cooperative" if r["schedule"] == "coop" else "128 threads, ping-pong"
        if r["mode"] == "plain":
            q[f"{key}.subtile_cycles{sfx}"] = qv(r["cycles_per_subtile"], "cycles per 128 x EN subtile",
                                                 f"steady state, {who}, 4 store buffers, {ctas} SMs storing")
            q[f"{key}.drain_cycles{sfx}"] = qv(r["drain_cycles"], "cycles",
                                               "final bulk wait_group 0 after the last store")
        else:
            for ph in ("stmatrix_issue", "fence", "wait_read", "barrier", "store_issue"):
                q[f"{key}.{ph}_cycles{sfx}"] = qv(r[f"phase_{ph}"], "cycles per subtile",
                                                  f"store thread's clock between steps ({who}, {ctas} SMs)")
    for s in res["store"]:
        where = "1sm" if s["ctas"] == 1 else f"{s['ctas']}sm"
        q[f"tma_store.e{s['en']}.read_cycles_{where}"] = qv(
            s["read_cycles"], "cycles", f"TMA store of {s['bytes']} B: issue -> SMEM read out (wait_group.read 0)")
        q[f"tma_store.e{s['en']}.write_cycles_{where}"] = qv(
            s["write_cycles"], "cycles", f"TMA store of {s['bytes']} B: issue -> written (wait_group 0)")
    for b in res["named_barrier"]:
        q[f"named_barrier.t{b['threads']}.cycles"] = qv(b["cycles_per_barrier"], "cycles",
                                                       f"bar.sync of {b['threads']} threads, back to back")
    return q
