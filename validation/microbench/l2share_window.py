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


#: v3l: the window against the load (CTAs streaming at once), partners on one GPC or on two, finer offsets
OFFSETS_FINE = (0, 10, 25, 50, 100, 150, 200, 300, 400, 800, 3200)
LOAD_CTAS = (132, 66, 32, 16)


def measure(gpu, quick: bool = False) -> dict:
    """v3k: partners next to each other in blockIdx (one GPC), all SMs and 16."""
    return sweep(gpu, (gpu.sm_count, 16), ("near",), OFFSETS[::2] if quick else OFFSETS, quick)


def measure_load(gpu, quick: bool = False) -> dict:
    """v3l: the same at 132, 66, 32 and 16 CTAs, partners b, b + 1 (near) and b, b + n/2 (far)."""
    cts = tuple(dict.fromkeys(min(n, gpu.sm_count) for n in LOAD_CTAS))
    return sweep(gpu, cts, ("near", "far"), OFFSETS_FINE[::2] if quick else OFFSETS_FINE, quick)


def sweep(gpu, ctas: tuple, pairings: tuple, offsets: tuple, quick: bool) -> dict:
    """Pairs at every offset and pairing, and each CTA alone, at each CTA count; rows in ``res["window"]``."""
    from .build import cubin_path
    fns = {"near": gpu.func(cubin_path("l2share"), "tma_stream_offset"),
           "far": gpu.func(cubin_path("l2share"), "tma_stream_offset_far")}
    out = gpu.alloc(gpu.sm_count * 8 * 8)
    count = 128 if quick else 256
    nb = BOXES_PER_STRIPE
    k = nb * BOX_COLS
    big_bytes = gpu.sm_count * 128 * k * 2
    big = gpu.alloc(big_bytes)
    gpu.fill_random(big, big_bytes // 2, seed=5)
    res: dict = {"window": []}
    cases = [(n, 2, pr, off) for n in ctas for pr in pairings for off in offsets] + [(n, 1, "near", 0) for n in ctas]
    for n, group, pairing, off in sorted(cases, key=lambda c: (-c[0], -c[1], c[2], c[3])):
        stripes = n // group

        def tm(stripes=stripes):
            return gpu.tensor_map_2d(big, k, stripes * 128, k * 2, BOX_COLS, 128)
        row = _try(res, ("window", n, group, pairing, off), _stream, gpu, fns[pairing], out, tm, stripes * group, nb,
                   count, 128, 0, 128, group, off, smids=True)
        if row is None:
            continue
        row.pop("stagger", None)
        row.update(offset_cycles=off, footprint_mib=stripes * 128 * k * 2 / 2**20)
        if pairing != "near":
            row["pairing"] = pairing
        res["window"].append(row)
        who = "alone" if group == 1 else f"pairs ({pairing})"
        print(f"[l2share_window] {n:3d} CTAs, {who}, offset {off:5d}: "
              f"{row['bytes_per_s'] / 1e12:6.2f} TB/s, {row['bytes_per_clk_per_sm']:6.1f} B/clk/SM", flush=True)
    gpu.free(big)
    gpu.free(out)
    res["quantities"] = quantities(res)
    return res


def quantities(res: dict) -> dict:
    q = {}
    for r in res["window"]:
        who = ("pair" if r["group"] == 2 else "alone") + ("." + r["pairing"] if "pairing" in r else "")
        key = f"l2share_window.{r['ctas']}sm.{who}.off{r['offset_cycles']}"
        what = (f"pairs of CTAs ({r.get('pairing', 'near')} in blockIdx) reading the same boxes, the second "
                f"{r['offset_cycles']} cycles later"
                if r["group"] == 2 else "each CTA its own boxes")
        q[f"{key}.bytes_per_s"] = qv(r["bytes_per_s"], "B/s", f"TMA streams from L2 (warm), {what}, {r['ctas']} CTAs, "
                                     f"{r['stages']} loads in flight, {r['footprint_mib']:.1f} MiB")
        q[f"{key}.bytes_per_clk_per_sm"] = qv(r["bytes_per_clk_per_sm"], "B/clk/SM", "same run, per SM (median CTA)")
    return q
