"""How close in time two TMA reads of the same L2 lines must be to be served as one (``cuda/l2share.cu``,
``tma_stream_offset``): pairs of CTAs stream the same 128 x 128 B boxes in the same order, the second
starting a set number of cycles after the first, beside pairs that share nothing, over all SMs and over 16.
v3's l2share showed the two ends (reads in lockstep land ~1.9x the unique-line rate, 8 boxes apart 1.0x);
the offsets between them give the window an in-flight merge would use."""

from __future__ import annotations

from .common import qv
from .l2share import BOX_COLS, _stream, _try

#: cycles the second CTA of each pair starts after the first (a 16 KiB box takes ~450 cycles at 132 SMs)
OFFSETS = (0, 25, 50, 100, 200, 400, 800, 1600, 3200)
BOXES_PER_STRIPE = 16          # 66 stripes x 16 boxes x 16 KiB = 16.5 MiB, v3's footprint


def measure(gpu, quick: bool = False) -> dict:
    from .build import cubin_path
    fn = gpu.func(cubin_path("l2share"), "tma_stream_offset")
    sms = gpu.sm_count
    out = gpu.alloc(sms * 8 * 8)
    count = 128 if quick else 256
    nb = BOXES_PER_STRIPE
    k = nb * BOX_COLS
    big_bytes = sms * 128 * k * 2
    big = gpu.alloc(big_bytes)
    gpu.fill_random(big, big_bytes // 2, seed=5)
    res: dict = {"window": []}
    for n in (sms, 16):
        for group, offsets in ((2, OFFSETS[::2] if quick else OFFSETS), (1, (0,))):
            stripes = n // group

            def tm(stripes=stripes):
                return gpu.tensor_map_2d(big, k, stripes * 128, k * 2, BOX_COLS, 128)
            for off in offsets:
                row = _try(res, ("window", n, group, off), _stream, gpu, fn, out, tm, stripes * group, nb, count,
                           128, 0, 128, group, off, smids=True)
                if row is None:
                    continue
                row.pop("stagger", None)
                row.update(offset_cycles=off, footprint_mib=stripes * 128 * k * 2 / 2**20)
                res["window"].append(row)
                print(f"[l2share_window] {n:3d} CTAs, {'pairs' if group == 2 else 'alone'}, offset {off:5d}: "
                      f"{row['bytes_per_s'] / 1e12:6.2f} TB/s, {row['bytes_per_clk_per_sm']:6.1f} B/clk/SM", flush=True)
    gpu.free(big)
    gpu.free(out)
    res["quantities"] = quantities(res)
    return res


def quantities(res: dict) -> dict:
    q = {}
    for r in res["window"]:
        who = "pair" if r["group"] == 2 else "alone"
        key = f"l2share_window.{r['ctas']}sm.{who}.off{r['offset_cycles']}"
        what = (f"pairs of CTAs reading the same boxes, the second {r['offset_cycles']} cycles later"
                if r["group"] == 2 else "each CTA its own boxes")
        q[f"{key}.bytes_per_s"] = qv(r["bytes_per_s"], "B/s", f"TMA streams from L2 (warm), {what}, {r['ctas']} CTAs, "
                                     f"{r['stages']} loads in flight, {r['footprint_mib']:.1f} MiB")
        q[f"{key}.bytes_per_clk_per_sm"] = qv(r["bytes_per_clk_per_sm"], "B/clk/SM", "same run, per SM (median CTA)")
    return q
