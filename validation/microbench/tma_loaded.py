"""A CTA's TMA stream against how many SMs stream at once and how many loads each keeps in flight
(``cuda/l2share.cu``, ``tma_stream_grouped``: each CTA its own stripe of K-major rows at a row pitch
of 16 KiB, from HBM after an L2 flush or from a warm L2). Rate = bytes in flight / round trip, so the
cycles per box at each depth give the loaded latency of the level that serves it, as a function of
the SMs loading: the v3d ``depth`` runs had 1 and 16 CTAs; the stream-K rows run 16 to 128. Each run
keeps the SM every CTA ran on (``smids``), so that a limit per GPC can be told from one per SM."""

from __future__ import annotations

from .bstream_pitch import DEPTH_PITCH_K, depth_runs
from .common import qv

CTAS = (1, 8, 16, 32, 64, 132)
DEPTHS = (1, 2, 4, 6)
L2_BOXES = 4


def measure(gpu, quick: bool = False) -> dict:
    from .build import cubin_path
    fn = gpu.func(cubin_path("l2share"), "tma_stream_grouped")
    out = gpu.alloc(gpu.sm_count * 8 * 8)
    ctas = tuple(min(c, gpu.sm_count) for c in CTAS)
    big_bytes = max(ctas) * 256 * DEPTH_PITCH_K * 2
    big = gpu.alloc(big_bytes)
    gpu.fill_random(big, big_bytes // 2, seed=11)
    res: dict = {}
    # L2: 32 boxes over the first L2_BOXES of each row (ctas x rows x L2_BOXES x 128 B <= 17 MB: resident)
    res["loaded"] = depth_runs(gpu, fn, out, big, res, "loaded", ctas=ctas[::2] if quick else ctas, stages=DEPTHS,
                               l2_boxes=L2_BOXES, smids=True)
    gpu.free(big)
    gpu.free(out)
    res["quantities"] = quantities(res)
    return res


def quantities(res: dict) -> dict:
    q = {}
    for r in res["loaded"]:
        key = f"tma_loaded.{r['where']}.rows{r['box_rows']}.st{r['stages']}.{r['ctas']}sm"
        src = "HBM (after an L2 flush)" if r["where"] == "hbm" else "L2 (warm)"
        what = (f"TMA stream of {r['box_rows']} x 128 B boxes at a row pitch of {r['pitch_bytes']} B from {src}, "
                f"{r['stages']} loads in flight, {r['ctas']} CTA(s) at once, each its own stripe")
        q[f"{key}.bytes_per_clk_per_sm"] = qv(r["bytes_per_clk_per_sm"], "B/clk/SM", what)
        q[f"{key}.cycles_per_box"] = qv(r["cycles_per_box"], "cycles", "same run: median CTA's cycles per box "
                                        "(x loads in flight: the round trip of one load)")
        q[f"{key}.bytes_per_s"] = qv(r["bytes_per_s"], "B/s", "same run, all CTAs")
    return q
