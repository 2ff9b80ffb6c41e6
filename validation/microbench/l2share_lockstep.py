"""Zero fill when every SM fills the same rows at once (``cuda/l2share.cu``), as the A operand of an
M < 128 GEMM does: :mod:`.l2share`'s zero-fill streams (128-row boxes of an R-row tensor, 16 KiB) with
every CTA on the same box at the same time (stagger 0), beside its own K offset (stagger 8, as
:mod:`.l2share`'s), on 132 SMs."""

from __future__ import annotations

from .common import qv
from .l2share import oob_streams


def measure(gpu, quick: bool = False) -> dict:
    sms = gpu.sm_count
    cases = [(r, y0, sms, stagger, {"what": what})
             for r, y0, what in ((16, 0, "box128"), (64, 0, "box128"), (128, 0, "box128"), (64, 64, "box128_all_oob"))
             for stagger in (0, 8)]
    res = oob_streams(gpu, quick, "oob_lockstep", 8 * sms, 4, cases)
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
