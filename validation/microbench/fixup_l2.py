"""The fixup's workspace accesses against other SMs' TMA loads (``cuda/fixup_l2.cu``, issue 18).

The twin's stream-K fixup stores, loads and read-add-writes its partials one word per thread; its
traces show the per-SM rate halving when most other SMs are in a mainloop
(``validation/results/fixup_contention.md``). Here that is isolated: ``n_ws`` SMs run the fixup's
access pattern (2 warpgroups, a 64 x 128 or 128 x 128 float slice each) while ``n_load`` other SMs
stream 16 KiB TMA boxes (6 in flight) from an L2-resident band (or one 16x larger than L2), unpaced or
paced to a mainloop's byte rate. Rate = the SM's slice bytes / the round's cycles until its last access
is issued (stores posted, loads returned), as the model's issue time; the fence's wait after it is
reported beside (the model's acknowledgement, one L2 round trip).
"""

from __future__ import annotations

import statistics

from .common import qv

DELAY = 30_000                  # cycles the workspace SMs wait for the loads' steady state
REPS = 6                        # timed rounds per warpgroup (the first is dropped from medians)
STAGES = 6
OPS = ("store", "load", "rmw", "red")
LOADERS = (0, 16, 33, 66, 100, 124)
#: cycles per 16 KiB box: 0 = unpaced; 340 ~ a 128x256x64 tile's 48 KiB per ~1000-cycle k-block
PACES = (0, 340)
NBX_L2, NBX_HBM = 8, 128        # boxes along the band: 17 MiB (L2-resident) or 277 MiB of 132 stripes


def _launch(gpu, fns, bufs, tmaps, *, op, n_ws, n_load, pace=0, nacc=64, hbm=False) -> dict:
    from .driver import Args
    sms = gpu.sm_count
    out, rec, ws, sink = bufs
    slice_bytes = nacc * 128 * 4
    duration = DELAY + REPS * 40_000
    args = Args.of([out, rec, ws, sink], [n_ws, n_load, OPS.index(op), REPS, DELAY, duration,
                                          NBX_HBM if hbm else NBX_L2, pace | (STAGES << 32)])
    smem = STAGES * 16384 + 1024
    fn = fns[nacc]
    tm = tmaps[hbm]
    gpu.launch(fn, sms, 256, args, smem=smem, tmap=tm)
    gpu.launch(fn, sms, 256, args, smem=smem, tmap=tm)
    spans = gpu.spans(out, sms, 8)
    recs = gpu.spans(rec, n_ws * 2 * REPS, 3).reshape(n_ws, 2, REPS, 3)
    issued = [int(recs[b, g, r, 1] - recs[b, g, r, 0]) for b in range(n_ws) for g in range(2) for r in range(1, REPS)]
    fenced = [int(recs[b, g, r, 2] - recs[b, g, r, 0]) for b in range(n_ws) for g in range(2) for r in range(1, REPS)]
    loaders = spans[n_ws:n_ws + n_load]
    ws_end = max(int(s[3]) for s in spans[:n_ws])
    row = {"op": op, "n_ws": n_ws, "n_load": n_load, "pace": pace, "nacc": nacc, "footprint": "hbm" if hbm else "l2",
           "slice_bytes_per_sm": 2 * slice_bytes, "cycles_issued_median": statistics.median(issued),
           "cycles_fenced_median": statistics.median(fenced), "cycles_fenced_max": max(fenced),
           "fence_cycles_median": statistics.median(f - i for f, i in zip(fenced, issued, strict=True)),
           "bytes_per_clk_per_sm": 2 * slice_bytes / statistics.median(issued),
           "ws_sms": len({int(s[4]) for s in spans[:n_ws]})}
    if n_load:
        cyc = [int(s[1] - s[0]) for s in loaders]
        ns = [int(s[3] - s[2]) for s in loaders]
        boxes = [int(s[5]) for s in loaders]
        row.update(load_bytes_per_clk_per_sm=statistics.median(b * 16384 / c for b, c in zip(boxes, cyc, strict=True)),
                   load_bytes_per_s=sum(boxes) * 16384 / (statistics.median(ns) * 1e-9),
                   loads_outlast_ws=bool(min(int(s[3]) for s in loaders) >= ws_end),
                   clock_mhz=round(statistics.median(c / n * 1e3 for c, n in zip(cyc, ns, strict=True)), 1))
    return row


def measure(gpu, quick: bool = False) -> dict:
    from .build import cubin_path
    sms = gpu.sm_count
    fns = {n: gpu.func(cubin_path("fixup_l2"), f"fixup_l2_n{n}") for n in (64, 128)}
    out = gpu.alloc(sms * 8 * 8)
    rec = gpu.alloc(sms * 2 * REPS * 3 * 8)
    ws = gpu.alloc(sms * 2 * REPS * 128 * 128 * 4)
    sink = gpu.alloc(64)
    rows_total = sms * 128
    tmaps = {}
    for hbm, nbx in ((False, NBX_L2), (True, NBX_HBM)):
        k = nbx * 64
        band = gpu.alloc(rows_total * k * 2)
        gpu.fill_random(band, rows_total * k, seed=5 + hbm)
        tmaps[hbm] = gpu.tensor_map_2d(band, k, rows_total, k * 2, 64, 128)
    bufs = (out, rec, ws, sink)
    res: dict = {"rows": [], "errors": []}

    def one(**kw):
        try:
            row = _launch(gpu, fns, bufs, tmaps, **kw)
        except RuntimeError as e:
            res["errors"].append({"case": kw, "error": str(e)[:300]})
            print(f"[fixup_l2] {kw}: {e}", flush=True)
            return
        res["rows"].append(row)
        print(f"[fixup_l2] {row['op']:5s} ws={row['n_ws']:3d} load={row['n_load']:3d} pace={row['pace']:3d} "
              f"nacc={row['nacc']} {row['footprint']}: {row['bytes_per_clk_per_sm']:6.1f} B/clk/SM "
              f"(issued {row['cycles_issued_median']}, fenced {row['cycles_fenced_median']})"
              + (f", loads {row['load_bytes_per_clk_per_sm']:.1f} B/clk/SM {row['load_bytes_per_s'] / 1e12:.2f} TB/s"
                 f" outlast={row['loads_outlast_ws']}" if kw.get("n_load") else ""), flush=True)

    loaders = (0, 66, 124) if quick else LOADERS
    for op in OPS:
        for pace in PACES:
            for n_load in loaders:
                if pace and not n_load:
                    continue
                one(op=op, n_ws=8, n_load=n_load, pace=pace)
    for op in ("store", "load", "rmw"):
        for n_load in (0, 66, 124):
            one(op=op, n_ws=8, n_load=n_load, hbm=True)
    for op in ("store", "rmw"):
        for n_ws in (1, 32, 66, 132):
            one(op=op, n_ws=n_ws, n_load=0)
        one(op=op, n_ws=66, n_load=66)
        for n_load in (0, 124):
            one(op=op, n_ws=8, n_load=n_load, nacc=128)
    res["quantities"] = quantities(res)
    return res


def _pace_words(pace: int) -> str:
    return f"one 16 KiB box per {pace} cycles" if pace else "unpaced"


def quantities(res: dict) -> dict:
    q = {}
    for r in res["rows"]:
        name = (f"fixup_l2.{r['op']}.ws{r['n_ws']}.load{r['n_load']}.pace{r['pace']}.n{r['nacc']}.{r['footprint']}"
                ".bytes_per_clk_per_sm")
        q[name] = qv(r["bytes_per_clk_per_sm"], "B/clk/SM",
                     f"{r['op']} of a {r['slice_bytes_per_sm'] // 1024} KiB fixup slice per SM (2 warpgroups, one "
                     f"word per thread per access, until the last is issued) on {r['n_ws']} SMs while {r['n_load']} other SMs "
                     f"stream TMA loads ({_pace_words(r['pace'])}, "
                     f"{r['footprint']} footprint); median over rounds 2-{REPS} of both warpgroups")
    return q
