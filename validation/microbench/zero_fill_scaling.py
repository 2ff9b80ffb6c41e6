"""Zero fill against the number of SMs filling at once (``cuda/l2share.cu``): 128-row boxes of a
32-row tensor (96 rows zero-filled) beside the same boxes of a 128-row tensor, every CTA on the
same box at once (stagger 0, as the A operand of a one-tile-row GEMM), L2-resident, on 1 ... 132 SMs.
:mod:`.l2share` measured 1 and 132 SMs only; the model charges zero fill on the chip's shared
L2 -> SM path, which predicts a cost that falls with the SMs filling."""

from __future__ import annotations

from .common import qv
from .l2share import oob_streams

CTAS = (1, 8, 16, 32, 64, 96, 132)
#: (tensor rows, first box row) of the v3e run: 96 rows zero-filled, and none.
CASES = ((32, 0), (128, 0))
#: The v3g run (family ``zero_fill_fraction``): 64 and 32 rows zero-filled, and boxes wholly past the tensor.
FRACTION_CASES = ((64, 0), (96, 0), (32, 32))


def measure(gpu, quick: bool = False, cases: tuple = CASES) -> dict:
    runs = [(r, y0, n, 0, {}) for r, y0 in cases for n in CTAS if n <= gpu.sm_count]
    res = oob_streams(gpu, quick, "zero_fill_scaling", 64, 8, runs)
    res["quantities"] = quantities(res)
    return res


def quantities(res: dict) -> dict:
    q = {}
    for r in res["zero_fill_scaling"]:
        box = "box128_all_oob" if r.get("y0", 0) >= r["height"] else "box128"
        q[f"tma_oob_scaling.h{r['height']}.{box}.lockstep.{r['ctas']}sm.cycles_per_box"] = qv(
            r["cycles_per_box"], "cycles",
            f"TMA stream of 128-row x 128 B boxes of a {r['height']}-row tensor ({r['in_bounds_rows']} rows in "
            f"bounds), L2-resident, {r['stages']} in flight, {r['ctas']} CTAs all on the same box at once")
    return q
