"""TMA streams of lines that come from HBM and that g SMs each read (``cuda/l2share.cu``, ``tma_stream_grouped``;
v3n): the mainloop of a few-tile long-K GEMM. At 512x512x32768 split-K 8 (128x128, 1x1) 128 SMs each read 2 MiB
once, every A and B box read by 4 of them, from a 64 MiB footprint that starts in HBM; the traced mainloop runs
at ~8.6 TB/s L2 -> SM where the model's all-SM L2 rate (16 MiB, L2-resident, v2) is 9.16
(``validation/results/h200_fixup_traces.md``, phases). Each case: ``CTAS`` CTAs in stripes of g, one pass over
the stripe's boxes, the group in lockstep or spread, cold (after an L2 flush) or warm (after the same pass),
at two footprints (L2-resident and not) and two counts of 16 KiB loads in flight per SM.
"""

from __future__ import annotations

from .common import qv
from .l2share import BOX_COLS, _stream, _try

#: SMs streaming (the split-K 8 launch's units), the SMs reading each box, footprints (MiB: A and B of the
#: 512x512x32768 problem; one that fits the 50 MiB L2), 16 KiB boxes in flight per SM (4 and the kernel's most,
#: 8; the twin's 7 stages of a 128 x 128 tile hold 14), and the spread group's stagger (boxes between a group's CTAs).
CTAS = 128
GROUPS = (1, 2, 4, 8)
FOOTPRINT_MIB = (16, 64)
IN_FLIGHT = (4, 8)
SPREAD = 8
BOX_BYTES = 128 * BOX_COLS * 2


def cases() -> list[tuple[int, int, int, str, bool]]:
    """Every (footprint MiB, group, in flight, lockstep|spread, cold) the family launches, in order."""
    return [(f, g, s, what, cold) for f in FOOTPRINT_MIB for g in GROUPS for s in IN_FLIGHT
            for what in ("lockstep", "spread") if g > 1 or what == "lockstep" for cold in (True, False)]


def boxes_per_stripe(footprint_mib: int, group: int) -> int:
    """Boxes along K of each of the ``CTAS // group`` stripes for the footprint."""
    stripes = CTAS // group
    return footprint_mib * 2**20 // (stripes * BOX_BYTES)


def measure(gpu, quick: bool = False) -> dict:
    from .build import cubin_path
    fn = gpu.func(cubin_path("l2share"), "tma_stream_grouped")
    out = gpu.alloc(gpu.sm_count * 8 * 8)
    big_bytes = max(FOOTPRINT_MIB) * 2**20
    big = gpu.alloc(big_bytes)
    gpu.fill_random(big, big_bytes // 2, seed=5)
    res: dict = {"streams": []}
    for f, g, inflight, what, cold in cases():
        nb = boxes_per_stripe(f, g)
        stripes = CTAS // g
        k = nb * BOX_COLS

        def tm(k=k, stripes=stripes):
            return gpu.tensor_map_2d(big, k, stripes * 128, k * 2, BOX_COLS, 128)
        stagger = SPREAD if what == "spread" else 0
        row = _try(res, ("l2share_hbm", f, g, inflight, what, cold), _stream, gpu, fn, out, tm, CTAS, nb, nb, 128, 0,
                   128, g, stagger, flush=cold, stages=inflight)
        if row is None:
            continue
        row.update(footprint_mib=f, what=what, cold=cold, hbm_bytes=f * 2**20)
        res["streams"].append(row)
        print(f"[l2share_hbm] {f:3d} MiB g={g} {inflight:2d} in flight {what:8s} {'cold' if cold else 'warm'}: "
              f"{row['bytes_per_s'] / 1e12:6.2f} TB/s landed, {row['bytes_per_clk_per_sm']:6.1f} B/clk/SM", flush=True)
    gpu.free(big)
    gpu.free(out)
    res["quantities"] = quantities(res)
    return res


def quantities(res: dict) -> dict:
    q = {}
    for r in res["streams"]:
        key = (f"l2share_hbm.f{r['footprint_mib']}.g{r['group']}.s{r['stages']}.{r['what']}."
               f"{'cold' if r['cold'] else 'warm'}")
        what = (f"{r['ctas']} CTAs, each box of a {r['footprint_mib']} MiB footprint read by {r['group']} of them "
                f"({r['what']}), one pass, {r['stages']} 16 KiB loads in flight per SM, "
                f"{'after an L2 flush' if r['cold'] else 'after the same pass'}")
        q[f"{key}.bytes_per_s"] = qv(r["bytes_per_s"], "B/s", f"TMA stream: {what}: bytes landed over the span")
        q[f"{key}.bytes_per_clk_per_sm"] = qv(r["bytes_per_clk_per_sm"], "B/clk/SM", "same run, per SM")
    return q
