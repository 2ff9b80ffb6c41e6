"""Which SMs share a limit on the L2 -> SM path (``cuda/l2share.cu``, ``tma_stream_masked``; v3m): every SM streams its
own L2-resident lines, then only chosen SMs do. With all 132 streaming, each GPC lands ~500-540 B/clk and in every
16-SM GPC four SMs (two TPCs) land ~40 B/clk where the other twelve land ~29 (v3j-v3l): are those twelve held by the
GPC's total, or by a share of it per group of TPCs? The fast and slow sets are found on the chip that runs this."""

from __future__ import annotations

import functools
import json
import statistics
from pathlib import Path

from .common import qv
from .l2share import BOX_COLS, STAGES, _try

BOXES_PER_STRIPE = 16
#: The physical GPC of each cluster placement domain of h200_microbench_v2 ``cluster.gpcs`` (same order): the 8-SM
#: domain and the four 2-SM domains are one GPC of 16 SMs (measured on an H100, the same GH100 floorplan and domains:
#: h100_microbench_v3j's streams from L2 slow down together exactly when they share these groups).
DOMAIN_GPC = (0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0)
_V2 = Path(__file__).resolve().parents[1] / "results" / "h200_microbench_v2.json"


@functools.cache
def gpc_of_sm() -> dict[int, int]:
    """SM id -> GPC on the GH100 floorplan: v2's measured placement domains mapped by :data:`DOMAIN_GPC`."""
    doms = json.loads(_V2.read_text())["results"]["cluster"]["gpcs"]
    return {sm: DOMAIN_GPC[i] for i, d in enumerate(doms) for sm in d}


def _run(gpu, fn, out, mask_d, tm, n: int, count: int, sms) -> dict:
    """One masked launch (after an untimed one): the streaming CTAs' SMs and B/clk."""
    import numpy as np

    from .driver import Args
    m = np.zeros(256, dtype=np.uint8)
    m[sorted(sms)] = 1
    gpu.h2d(mask_d, m)
    box = 128 * BOX_COLS * 2
    args = Args.of([out, mask_d], [BOXES_PER_STRIPE, count, STAGES, box, 0, 128, 1, 0])
    tmap = tm()
    for _ in range(2):      # the first launch warms L2
        gpu.launch(fn, n, 32, args, smem=STAGES * box + 1024, tmap=tmap)
    spans = gpu.spans(out, n, 8)
    rates = {int(r[4]): count * box / (int(r[1]) - int(r[0])) for r in spans if int(r[1]) > int(r[0])}
    mhz = [(int(r[1]) - int(r[0])) / (int(r[3]) - int(r[2])) * 1e3 for r in spans if int(r[3]) > int(r[2])]
    return {"sms": sorted(rates), "bytes_per_clk": [rates[s] for s in sorted(rates)],
            "clock_mhz": round(statistics.median(mhz), 1) if mhz else None}


def measure(gpu, quick: bool = False) -> dict:
    from .build import cubin_path
    fn = gpu.func(cubin_path("l2share"), "tma_stream_masked")
    n = gpu.sm_count
    out, mask_d = gpu.alloc(n * 8 * 8), gpu.alloc(256)
    k = BOXES_PER_STRIPE * BOX_COLS
    big = gpu.alloc(n * 128 * k * 2)
    gpu.fill_random(big, n * 128 * k, seed=7)

    def tm():
        return gpu.tensor_map_2d(big, k, n * 128, k * 2, BOX_COLS, 128)
    count = 128 if quick else 256
    gmap = gpc_of_sm()
    res: dict = {"runs": []}
    everyone = _try(res, ("groups", "all"), _run, gpu, fn, out, mask_d, tm, n, count, range(n))
    if everyone is not None:
        res["runs"].append({"what": "all", **everyone})
        rate = dict(zip(everyone["sms"], everyone["bytes_per_clk"], strict=True))
        by_gpc: dict[int, list[int]] = {}
        for sm in everyone["sms"]:
            by_gpc.setdefault(gmap.get(sm, -1), []).append(sm)
        med = statistics.median(rate.values())
        fast = {g: sorted(s for s in sms if rate[s] > 1.2 * med) for g, sms in by_gpc.items()}
        uneven = [g for g in sorted(by_gpc) if len(fast[g]) == 4]
        cases = [("fast SMs of every GPC", [s for g in uneven for s in fast[g]]),
                 ("slow SMs of the GPCs with fast ones", [s for g in uneven for s in by_gpc[g] if s not in fast[g]])]
        if uneven:
            g = uneven[0]
            cases += [(f"GPC {g} alone", by_gpc[g]), (f"GPC {g}'s slow SMs alone", [s for s in by_gpc[g] if s not in fast[g]]),
                      (f"GPC {g}'s fast SMs alone", fast[g])]
        even = [g for g in sorted(by_gpc) if g >= 0 and not fast[g]]
        if even:
            cases.append((f"GPC {even[0]} alone", by_gpc[even[0]]))
        for what, sms in cases:
            row = _try(res, ("groups", what), _run, gpu, fn, out, mask_d, tm, n, count, sms)
            if row is not None:
                res["runs"].append({"what": what, **row})
                print(f"[l2share_groups] {what}: {len(sms)} SMs, median {statistics.median(row['bytes_per_clk']):.1f} "
                      f"B/clk, sum {sum(row['bytes_per_clk']):.0f}", flush=True)
    gpu.free(big)
    gpu.free(out)
    gpu.free(mask_d)
    res["quantities"] = quantities(res)
    return res


def quantities(res: dict) -> dict:
    q = {}
    for r in res["runs"]:
        key = "l2share_groups." + r["what"].replace(" ", "_").replace("'", "")
        v = r["bytes_per_clk"]
        q[f"{key}.median_bytes_per_clk"] = qv(statistics.median(v), "B/clk/SM",
                                             f"TMA streams from L2, each CTA its own lines, {len(v)} SMs streaming "
                                             f"({r['what']}), 6 loads in flight, median CTA")
        q[f"{key}.sum_bytes_per_clk"] = qv(sum(v), "B/clk", "same run, all streaming CTAs together")
    return q
