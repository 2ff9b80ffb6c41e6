"""TMA streams that share L2 lines between SMs, or whose boxes reach past the tensor (``cuda/l2share.cu``).

Three questions about the mainloop loads of a small-M GEMM (issue 17), each one TMA stream per CTA
(one thread, ``STAGES`` loads in flight, nothing reads the data; ``tma_stream_grouped``):

* zero fill (``oob``): a 128-row box of a tensor R rows high (R = 16 ... 128) lands 128 rows, the
  rest zero-filled, beside an R-row box of the same rows (the same lines read, fewer bytes landed)
  and a box wholly past the tensor; 1 SM and 132 SMs, each CTA at its own K offset.
* same lines (``share``): groups of g CTAs (g = 1 ... 132) read the same 128 x 64 boxes, in lockstep
  (stagger 0) or spread over their stripe, at a fixed 16.5 MiB footprint (132 / g stripes of 8 g
  boxes), and the A operand of an M <= 128 problem (every CTA the same 1 MiB, 128 x 4096).
* B from HBM (``bstream``): the B operand of a wide-N problem, K-major at a row pitch of 8192 B, each
  CTA its own stripe of 64 / 128 / 256 rows (the tile N) walked along K, as many loads in flight as
  the twin's stages hold, after an L2 flush.

Bandwidth = bytes landed / the launch's span (%globaltimer); per SM = bytes per CTA / its cycles.
"""

from __future__ import annotations

from .common import qv

STAGES = 6
BOX_COLS = 64                  # fp16: 128-byte rows
OOB_HEIGHTS = (16, 32, 64, 96, 128)
SHARE_GROUPS = (1, 2, 4, 12, 33, 66, 132)
#: (tile N = box rows, stages of the twin's 128 x N x 64 tile: 8 / 6 / 4)
BSTREAM = ((64, 8), (128, 6), (256, 4))
B_PITCH_K = 4096               # B rows of 8192 B (K = 4096, fp16)
B_ROWS = 33792                 # 132 stripes of 256 rows


def _stream(gpu, fn, out, tmap, n, nbx, count, box_rows, y0, ystride, group, stagger, *, flush=False,
            stages=STAGES, smids=False):
    """One grouped stream launch (after an untimed one, or after an L2 flush); its rates. ``tmap`` is a
    callable making the descriptor (a failure to make it is a RuntimeError like a failed launch);
    ``smids``: also the SM each CTA ran on and its cycles, in CTA order."""
    from .driver import Args, span_summary
    tmap = tmap()
    nbytes_box = box_rows * BOX_COLS * 2
    args = Args.of([out], [nbx, count, stages, nbytes_box, y0, ystride, group, stagger])
    smem = stages * nbytes_box + 1024
    if flush:
        gpu.flush_l2()
    else:
        gpu.launch(fn, n, 32, args, smem=smem, tmap=tmap)
    gpu.launch(fn, n, 32, args, smem=smem, tmap=tmap)
    spans = gpu.spans(out, n, 8)
    s = span_summary(spans)
    total = n * count * nbytes_box
    extra = {"smids": [int(r[4]) for r in spans], "cta_cycles": [int(r[1]) - int(r[0]) for r in spans]} if smids else {}
    return {**extra, "ctas": n, "box_rows": box_rows, "count": count, "stages": stages, "group": group, "stagger": stagger,
            "bytes_landed": total, "wall_ns": s["wall_ns"], "bytes_per_s": total / s["wall_ns"] * 1e9,
            "bytes_per_clk_per_sm": count * nbytes_box / s["cycles_median"],
            "cycles_per_box": s["cycles_median"] / count, "clock_mhz": s["clock_mhz"]}


def oob_streams(gpu, quick: bool, key: str, nbx: int, seed: int, cases) -> dict:
    """Streams of 128-row boxes of a ``height``-row tensor from row ``y0`` (rows past the tensor
    zero-filled), L2-resident, ``nbx`` boxes along K: one per case ``(height, y0, ctas, stagger, fields)``
    (stagger 0: every CTA on the same box at once), its row updated with ``fields`` and appended to
    ``res[key]``; a failed one is recorded in ``res["errors"]`` and the rest run."""
    from .build import cubin_path
    fn = gpu.func(cubin_path("l2share"), "tma_stream_grouped")
    out = gpu.alloc(gpu.sm_count * 8 * 8)
    count = 128 if quick else 256
    k = nbx * BOX_COLS
    big = gpu.alloc(128 * k * 2)
    gpu.fill_random(big, 128 * k, seed=seed)
    res: dict = {key: []}
    for height, y0, ctas, stagger, fields in cases:
        def tm(height=height):
            return gpu.tensor_map_2d(big, k, height, k * 2, BOX_COLS, 128)
        row = _try(res, (key, height, y0, ctas, stagger), _stream, gpu, fn, out, tm, ctas, nbx, count, 128, y0, 0,
                   ctas, stagger)
        if row is None:
            continue
        row.update(height=height, y0=y0, in_bounds_rows=max(0, min(128, height - y0)), **fields)
        res[key].append(row)
        print(f"[{key}] R={height:3d} from row {y0:3d}, {ctas:3d} CTAs, stagger {stagger}: "
              f"{row['cycles_per_box']:7.1f} clk/box, {row['bytes_per_clk_per_sm']:6.1f} B/clk/SM", flush=True)
    gpu.free(big)
    gpu.free(out)
    return res


def _try(res: dict, what: tuple, f, *args, **kw):
    """``f(*args, **kw)``, or None with the error recorded in ``res["errors"]`` (the next run goes on)."""
    try:
        return f(*args, **kw)
    except RuntimeError as e:
        res.setdefault("errors", []).append({"experiment": list(what), "error": str(e)[:300]})
        print(f"[l2share] {what}: {e}", flush=True)
        return None


def measure(gpu, quick: bool = False) -> dict:
    from .build import cubin_path
    fn = gpu.func(cubin_path("l2share"), "tma_stream_grouped")
    sms = gpu.sm_count
    out = gpu.alloc(sms * 8 * 8)
    count = 128 if quick else 256
    res: dict = {"oob": [], "share": [], "bstream": []}
    big_bytes = B_ROWS * B_PITCH_K * 2
    big = gpu.alloc(big_bytes)
    gpu.fill_random(big, big_bytes // 2, seed=3)
    ctx = (gpu, fn, out, big, sms, count, res)
    _zero_fill(*ctx)
    _shared_lines(*ctx)
    _b_stream(*ctx)
    gpu.free(big)
    gpu.free(out)
    res["quantities"] = quantities(res)
    return res


def _zero_fill(gpu, fn, out, big, sms, count, res) -> None:
    """128-row boxes of an R-row tensor, R-row boxes of it, and boxes wholly past it."""
    nbx = 8 * sms                      # each CTA starts 8 boxes after the previous one
    for r in OOB_HEIGHTS:
        k = nbx * BOX_COLS
        for box_rows, y0, what in ((128, 0, "box128"), (r, 0, "box_r"), (128, r, "box128_all_oob")):
            if what == "box_r" and r == 128:
                continue
            def tm(k=k, r=r, box_rows=box_rows):
                return gpu.tensor_map_2d(big, k, r, k * 2, BOX_COLS, box_rows)
            for n in (1, sms):
                row = _try(res, ("oob", r, what, n), _stream, gpu, fn, out, tm, n, nbx, count, box_rows, y0, 0, n, 8)
                if row is None:
                    continue
                row.update(height=r, what=what, in_bounds_rows=max(0, min(box_rows, r - y0)))
                res["oob"].append(row)
                print(f"[l2share] oob R={r:3d} {what:15s} x{n:3d}: {row['cycles_per_box']:7.1f} clk/box, "
                      f"{row['bytes_per_clk_per_sm']:6.1f} B/clk/SM", flush=True)


def _shared_lines(gpu, fn, out, big, sms, count, res) -> None:
    """g CTAs per box at a fixed footprint, lockstep or spread; every CTA on the A operand of M <= 128."""
    for g in SHARE_GROUPS:
        stripes = sms // g
        nb = 8 * g
        k = nb * BOX_COLS
        def tm(k=k, stripes=stripes):
            return gpu.tensor_map_2d(big, k, stripes * 128, k * 2, BOX_COLS, 128)
        for stagger, what in ((0, "lockstep"), (8, "spread")):
            if g == 1 and stagger:
                continue
            row = _try(res, ("share", g, what), _stream, gpu, fn, out, tm, stripes * g, nb, count, 128, 0, 128, g,
                       stagger)
            if row is None:
                continue
            row.update(what=what, footprint_mib=stripes * 128 * k * 2 / 2**20)
            res["share"].append(row)
            print(f"[l2share] share g={g:3d} {what:8s}: {row['bytes_per_s'] / 1e12:6.2f} TB/s, "
                  f"{row['bytes_per_clk_per_sm']:6.1f} B/clk/SM", flush=True)
    def tm_a():
        return gpu.tensor_map_2d(big, 4096, 128, 8192, BOX_COLS, 128)
    for stagger, what in ((0, "a_operand_lockstep"), (1, "a_operand_stagger1")):
        row = _try(res, ("share", what), _stream, gpu, fn, out, tm_a, sms, 64, count, 128, 0, 0, sms, stagger)
        if row is None:
            continue
        row.update(what=what, footprint_mib=1.0)
        res["share"].append(row)
        print(f"[l2share] share {what}: {row['bytes_per_s'] / 1e12:6.2f} TB/s, "
              f"{row['bytes_per_clk_per_sm']:6.1f} B/clk/SM", flush=True)


def _b_stream(gpu, fn, out, big, sms, count, res) -> None:
    """B from HBM: each CTA its own stripe of the tile's N rows, walked once along K."""
    for rows, stages in BSTREAM:
        def tm(rows=rows):
            return gpu.tensor_map_2d(big, B_PITCH_K, B_ROWS, B_PITCH_K * 2, BOX_COLS, rows)
        for st, n in sorted({(stages, sms), (STAGES, sms)} | ({(stages, 112)} if rows == 256 else set())):
            row = _try(res, ("bstream", rows, st, n), _stream, gpu, fn, out, tm, n, B_PITCH_K // BOX_COLS,
                       B_PITCH_K // BOX_COLS, rows, 0, rows, 1, 0, flush=True, stages=st)
            if row is None:
                continue
            res["bstream"].append(row)
            print(f"[l2share] bstream {rows:3d} rows, {st} stages, {n} SMs: {row['bytes_per_s'] / 1e12:5.2f} TB/s, "
                  f"{row['bytes_per_clk_per_sm']:5.1f} B/clk/SM", flush=True)


def quantities(res: dict) -> dict:
    q = {}
    for r in res["oob"]:
        who = "1sm" if r["ctas"] == 1 else f"{r['ctas']}sm"
        key = f"tma_oob.h{r['height']}.{r['what']}.{who}"
        q[f"{key}.cycles_per_box"] = qv(r["cycles_per_box"], "cycles",
                                        f"TMA stream of {r['box_rows']}-row x 128 B boxes of a {r['height']}-row "
                                        f"tensor ({r['in_bounds_rows']} rows in bounds, the rest zero-filled), "
                                        f"L2-resident, {r['stages']} in flight, {r['ctas']} CTA(s): cycles per box")
        q[f"{key}.bytes_per_clk_per_sm"] = qv(r["bytes_per_clk_per_sm"], "B/clk/SM", "same run: bytes landed "
                                              "(zero fill included) per SM per cycle")
    for r in res["share"]:
        key = f"l2_share.g{r['group']}.{r['what']}" if not r["what"].startswith("a_") else f"l2_share.{r['what']}"
        q[f"{key}.bytes_per_s"] = qv(r["bytes_per_s"], "B/s",
                                     f"TMA stream of 128 x 128 B boxes, {r['group']} CTAs read each box "
                                     f"({r['what']}), footprint {r['footprint_mib']:.1f} MiB, {r['ctas']} SMs")
        q[f"{key}.bytes_per_clk_per_sm"] = qv(r["bytes_per_clk_per_sm"], "B/clk/SM", "same run, per SM")
    for r in res["bstream"]:
        key = f"b_stream.hbm.rows{r['box_rows']}.st{r['stages']}.{r['ctas']}sm"
        q[f"{key}.bytes_per_s"] = qv(r["bytes_per_s"], "B/s",
                                     f"TMA stream from HBM (after an L2 flush) of {r['box_rows']} x 128 B boxes "
                                     f"of a K-major matrix at a row pitch of 8192 B, each of {r['ctas']} CTAs its "
                                     f"own stripe along K, {r['stages']} loads in flight")
        q[f"{key}.bytes_per_clk_per_sm"] = qv(r["bytes_per_clk_per_sm"], "B/clk/SM", "same run, per SM")
    return q

