"""B from HBM at the row pitches and SM counts of small-M problems (``cuda/l2share.cu``,
``tma_stream_grouped``): each CTA walks its own stripe of N rows along the whole K, as the twin's
producer does for a one-tile-row problem, after an L2 flush. The v3 ``bstream`` runs held the pitch
at 8192 B and every SM busy; here the pitch is 8 / 16 / 128 KiB (K = 4096 / 8192 / 65536, fp16) and
32 / 64 / 128 SMs stream. ``depth``: one SM and 16 SMs at 1 ... 8 loads in flight, from HBM (after
a flush) and from L2 (after a warm-up launch): whether a CTA's TMA stream is held by the bytes it keeps
in flight (rate = bytes in flight / latency, the latency of the level that serves it).
"""

from __future__ import annotations

from .common import qv
from .l2share import BOX_COLS, _stream, _try

#: (tile N = stripe rows, the twin's stages for that tile)
TILES = ((64, 8), (128, 6), (256, 4))
PITCH_K = (4096, 8192, 65536)
CTAS = (32, 64, 128)
DEPTH_STAGES = (1, 2, 3, 4, 6, 8)
DEPTH_CTAS = (1, 16)
DEPTH_PITCH_K = 8192


def measure(gpu, quick: bool = False) -> dict:
    from .build import cubin_path
    fn = gpu.func(cubin_path("l2share"), "tma_stream_grouped")
    out = gpu.alloc(gpu.sm_count * 8 * 8)
    rows_max = max(CTAS) * max(r for r, _ in TILES)
    big_bytes = rows_max * max(PITCH_K) * 2
    big = gpu.alloc(big_bytes)
    gpu.fill_random(big, big_bytes // 2, seed=7)
    res: dict = {"bstream_pitch": [], "depth": []}
    # rate against loads in flight: 128- and 256-row boxes (16 and 32 KiB), HBM and L2
    res["depth"] = depth_runs(gpu, fn, out, big, res, "depth", ctas=DEPTH_CTAS,
                              stages=DEPTH_STAGES[::2] if quick else DEPTH_STAGES)
    for k in PITCH_K[::2] if quick else PITCH_K:
        for rows, stages in TILES:
            for n in CTAS:
                def tm(k=k, rows=rows, n=n):
                    return gpu.tensor_map_2d(big, k, n * rows, k * 2, BOX_COLS, rows)
                row = _try(res, ("bstream_pitch", k, rows, n), _stream, gpu, fn, out, tm, n, k // BOX_COLS,
                           k // BOX_COLS, rows, 0, rows, 1, 0, flush=True, stages=stages)
                if row is None:
                    continue
                row["pitch_bytes"] = k * 2
                res["bstream_pitch"].append(row)
                print(f"[bstream_pitch] pitch {k * 2:6d} B, {rows:3d} rows, {stages} stages, {n:3d} SMs: "
                      f"{row['bytes_per_s'] / 1e12:5.2f} TB/s, {row['bytes_per_clk_per_sm']:5.1f} B/clk/SM", flush=True)
    gpu.free(big)
    gpu.free(out)
    res["quantities"] = quantities(res)
    return res


def depth_runs(gpu, fn, out, big, res, key: str, *, ctas, stages, l2_boxes: int | None = None,
               smids: bool = False) -> list[dict]:
    """Each CTA streams its own stripe of 128- or 256-row boxes at a row pitch of ``2 * DEPTH_PITCH_K`` B,
    ``stages`` loads in flight, ``ctas`` CTAs at once: from HBM (the whole stripe once, after an L2 flush)
    and from L2 (32 boxes over the first ``l2_boxes`` of each row, re-read; default all distinct, 4 KiB
    of each row). Failed runs go to ``res["errors"]``; ``smids``: each CTA's SM and cycles too."""
    k = DEPTH_PITCH_K
    rows_out = []
    for rows in (128, 256):
        for n in ctas:
            for where in ("hbm", "l2"):
                for st in stages:
                    if st * rows * BOX_COLS * 2 > 200 * 1024:
                        continue
                    def tm(rows=rows, n=n):
                        return gpu.tensor_map_2d(big, k, n * rows, k * 2, BOX_COLS, rows)
                    count, nbx = (k // BOX_COLS, k // BOX_COLS) if where == "hbm" else (32, l2_boxes or k // BOX_COLS)
                    row = _try(res, (key, rows, n, where, st), _stream, gpu, fn, out, tm, n, nbx,
                               count, rows, 0, rows, 1, 0, flush=where == "hbm", stages=st, smids=smids)
                    if row is None:
                        continue
                    row.update(pitch_bytes=k * 2, where=where, nbx=nbx)
                    rows_out.append(row)
                    print(f"[{key}] {where} {rows:3d} rows x{n:3d} CTAs, {st} in flight: "
                          f"{row['bytes_per_clk_per_sm']:6.1f} B/clk/SM, {row['cycles_per_box']:7.1f} clk/box, "
                          f"{row['bytes_per_s'] / 1e12:5.2f} TB/s", flush=True)
    return rows_out


def quantities(res: dict) -> dict:
    q = {}
    for r in res["depth"]:
        key = f"tma_depth.{r['where']}.rows{r['box_rows']}.st{r['stages']}.{r['ctas']}sm"
        q[f"{key}.bytes_per_clk_per_sm"] = qv(
            r["bytes_per_clk_per_sm"], "B/clk/SM",
            f"TMA stream of {r['box_rows']} x 128 B boxes ({r['box_rows'] * 128 // 1024} KiB) at a row pitch of "
            f"{r['pitch_bytes']} B from {'HBM (after an L2 flush)' if r['where'] == 'hbm' else 'L2 (warm)'}, "
            f"{r['stages']} loads in flight, {r['ctas']} CTA(s), each its own stripe")
    for r in res["bstream_pitch"]:
        key = f"b_stream.hbm.p{r['pitch_bytes']}.rows{r['box_rows']}.st{r['stages']}.{r['ctas']}sm"
        q[f"{key}.bytes_per_s"] = qv(r["bytes_per_s"], "B/s",
                                     f"TMA stream from HBM (after an L2 flush) of {r['box_rows']} x 128 B boxes of a "
                                     f"K-major matrix at a row pitch of {r['pitch_bytes']} B, each of {r['ctas']} CTAs "
                                     f"its own stripe along the whole K, {r['stages']} loads in flight")
        q[f"{key}.bytes_per_clk_per_sm"] = qv(r["bytes_per_clk_per_sm"], "B/clk/SM", "same run, per SM")
    return q
