"""Zero fill against the number of SMs filling at once (``cuda/l2share.cu``): 128-row boxes of a
32-row tensor (96 rows zero-filled) beside the same boxes of a 128-row tensor, every CTA on the
same box at once (stagger 0, as the A operand of a one-tile-row GEMM), L2-resident, on 1 ... 132 SMs.
:mod:`.l2share` measured 1 and 132 SMs only; the model charges zero fill on the chip's shared
L2 -> SM path, which predicts a cost that falls with the SMs filling."""

from __future__ import annotations

from .common import qv
from .l2share import BOX_COLS, oob_stream

CTAS = (1, 8, 16, 32, 64, 96, 132)
#: (tensor rows, first box row) of the v3e run: 96 rows zero-filled, and none.
CASES = ((32, 0), (128, 0))
#: The v3g run (family ``zero_fill_fraction``): 64 and 32 rows zero-filled, and boxes wholly past the tensor.
FRACTION_CASES = ((64, 0), (96, 0), (32, 32))


def measure(gpu, quick: bool = False, cases: tuple = CASES) -> dict:
    from .build import cubin_path
    fn = gpu.func(cubin_path("l2share"), "tma_stream_grouped")
    sms = gpu.sm_count
    out = gpu.alloc(sms * 8 * 8)
    count = 128 if quick else 256
    nbx = 64
    k = nbx * BOX_COLS
    big = gpu.alloc(128 * k * 2)
    gpu.fill_random(big, 128 * k, seed=8)
    res: dict = {"zero_fill_scaling": []}
    for r, y0 in cases:
        for n in (c for c in CTAS if c <= sms):
            oob_stream(res, "zero_fill_scaling", "zero_fill_scaling", gpu, fn, out, big, k, r, y0, n, 0, nbx, count)
    gpu.free(big)
    gpu.free(out)
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
