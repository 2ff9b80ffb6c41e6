"""Zero fill when every SM fills the same rows at once (``cuda/l2share.cu``), as the A operand of an
M < 128 GEMM does: :mod:`.l2share`'s zero-fill streams (128-row boxes of an R-row tensor, 16 KiB) with
every CTA on the same box at the same time (stagger 0), beside its own K offset (stagger 8, as
:mod:`.l2share`'s), on 132 SMs."""

from __future__ import annotations

from .common import qv
from .l2share import BOX_COLS, oob_stream


def measure(gpu, quick: bool = False) -> dict:
    from .build import cubin_path
    fn = gpu.func(cubin_path("l2share"), "tma_stream_grouped")
    sms = gpu.sm_count
    out = gpu.alloc(sms * 8 * 8)
    count = 128 if quick else 256
    nbx = 8 * sms
    k = nbx * BOX_COLS
    big = gpu.alloc(128 * k * 2)
    gpu.fill_random(big, 128 * k, seed=4)
    res: dict = {"oob_lockstep": []}
    for r, y0, what in ((16, 0, "box128"), (64, 0, "box128"), (128, 0, "box128"), (64, 64, "box128_all_oob")):
        for stagger in (0, 8):
            row = oob_stream(res, "oob_lockstep", "l2share_lockstep", gpu, fn, out, big, k, r, y0, sms, stagger, nbx,
                             count)
            if row is not None:
                row["what"] = what
    gpu.free(big)
    gpu.free(out)
    res["quantities"] = quantities(res)
    return res


def quantities(res: dict) -> dict:
    q = {}
    for r in res["oob_lockstep"]:
        timing = "lockstep" if r["stagger"] == 0 else "own_offset"
        q[f"tma_oob_shared.h{r['height']}.{r['what']}.{timing}.132sm.cycles_per_box"] = qv(
            r["cycles_per_box"], "cycles",
            f"TMA stream of 128-row x 128 B boxes of a {r['height']}-row tensor ({r['in_bounds_rows']} rows in "
            f"bounds), L2-resident, {r['stages']} in flight, {r['ctas']} CTAs "
            + ("all on the same box at once" if r["stagger"] == 0 else "each at its own K offset"))
    return q
