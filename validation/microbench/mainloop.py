"""The twin's cooperative mainloop replayed without its epilogue (``mainloop_cuda.py``): which part of a
small-M or clustered GEMM's time the loads, the wgmma and their overlap take (issue 17).

Each experiment runs one GEMM's mainloop (fp16, 128 x N x 64 tiles, the twin's stage count, raster
along N, persistent over min(tiles, 132) CTAs or 66 clusters of 2) in one of three modes: ``wgmma``
(4 wgmma m64nNk16 SS per warpgroup and K-block, as the twin), ``spin`` (the consumers spin the
K-block's tensor-core time, 4 N cycles, instead: no SMEM operand reads), ``tma`` (the consumers
release each stage as it lands: the loads alone). ``a_full``: A's tensor is 128 rows high, so the
A box of an M < 128 problem is in bounds (the same bytes landed, none zero-filled). Clusters: 1x2
(A multicast to the two CTAs of a cluster row) and 2x1 (B multicast; with M <= 128 the second CTA's
A box lies wholly past M). One untimed launch, then the median of three timed ones (back to back, as
the campaign's launches: the L2 holds what the previous launch left).
"""

from __future__ import annotations

from .common import qv
from .mainloop_cuda import kernel_name

#: Stages of the twin's 128 x N x 64 fp16 tile (hw_kernels/sm90_gemm.py fills 227 KiB of SMEM).
STAGES = {64: 8, 128: 6, 192: 4, 256: 4}
MODES = {"wgmma": 0, "spin": 1, "tma": 2, "wgmma_notma": 3, "wg0": 4, "wg0_notma": 5}
CLUSTERS = {"c1x1": 0, "c1x2": 1, "c2x1": 2}


def scaling_experiments(quick: bool = False) -> list[tuple]:
    """The second v3 run's 1x1 replays: the 128 x 64 mainloop on 1 ... 132 SMs (grid given), where the
    per-SM pace of a K-block is set by the SM and where by the chip."""
    ex = []
    for grid in (1, 8, 33, 66, 132):
        ex += [(64, 28672, 4096, 64, "c1x1", "wgmma", True, 8, grid), (64, 28672, 4096, 64, "c1x1", "wgmma", False, 8, grid)]
        ex += [(4096, 4096, 4096, 64, "c1x1", "wgmma", False, 8, grid)]
    ex += [(64, 28672, 4096, 256, "c1x1", "wgmma", False, 4, g) for g in (1, 33, 112)]
    return ex[::3] if quick else ex


def pace_experiments(quick: bool = False) -> list[tuple]:
    """The v3c run: each tile N's mainloop on one SM (the SM's own pace per K-block: wgmma, and the loads
    alone) beside the same 4096^3 mainloop on 132 SMs in every cluster shape (the pace the chip's L2 gives
    a GEMM's pattern of shared lines: tma; with the math: wgmma)."""
    p = (4096, 4096, 4096)
    ex = [(*p, bn, "c1x1", m, False, STAGES[bn], 1) for bn in (64, 128, 192, 256) for m in ("wgmma", "tma")]
    ex += [(*p, bn, c, m, False) for bn in (128, 192, 256) for c in CLUSTERS for m in ("wgmma", "tma")]
    return ex[::3] if quick else ex


def hbm_experiments(quick: bool = False) -> list[tuple]:
    """The v3d run: the data-parallel small-M problems whose B streams from HBM on fewer SMs than the chip
    has (one tile row; each CTA its own B stripe), where the model's rows run 10-36% too fast: the loads
    alone (tma) and with the math (wgmma), A zero-filled or not, beside 128x128 tiles the model gets right."""
    ex = []
    p = (32, 8192, 8192)
    ex += [(*p, bn, "c1x1", m, False) for bn in (64, 128, 256) for m in ("wgmma", "tma")]
    ex += [(*p, 128, "c1x1", "wgmma", True), (*p, 128, "c1x2", "wgmma", False), (*p, 64, "c1x2", "wgmma", False)]
    p = (128, 4096, 65536)
    ex += [(*p, 64, "c1x1", m, False) for m in ("wgmma", "tma")]
    ex += [(*p, 64, "c1x2", "wgmma", False), (*p, 128, "c1x1", "wgmma", False), (*p, 128, "c1x1", "tma", False)]
    p = (512, 512, 32768)
    ex += [(*p, 64, "c1x1", m, False) for m in ("wgmma", "tma")] + [(*p, 128, "c1x1", "wgmma", False)]
    return ex[::3] if quick else ex


def zero_fill_experiments(quick: bool = False) -> list[tuple]:
    """The v3e run: the 32x8192x8192 mainloop (128x128 tiles, 64 tiles) on 8 ... 64 CTAs with A 32 rows
    high (96 rows of each A box zero-filled) and 128 rows high (none): how the zero fill's cost grows
    with the SMs that fill at once."""
    p = (32, 8192, 8192)
    ex = [(*p, 128, "c1x1", "wgmma", full, 6, g) for g in (8, 16, 32, 48, 64) for full in (False, True)]
    return ex[::3] if quick else ex


def operand_experiments(quick: bool = False) -> list[tuple]:
    """The v3f run: why a K-block of N = 64 takes 1.5x its math on one SM (v3c) while wgmma alone issues
    at the math rate: each tile N's mainloop on one SM with and without TMA traffic during the math
    (wgmma / wgmma_notma), with one warpgroup issuing (wg0 / wg0_notma: a 64-row tile's math), and the
    loads alone; N = 64 and 128 also on 132 SMs."""
    p = (4096, 4096, 4096)
    modes = ("wgmma", "wgmma_notma", "wg0", "wg0_notma", "tma")
    ex = [(*p, bn, "c1x1", m, False, STAGES[bn], 1) for bn in (64, 128, 192, 256) for m in modes]
    ex += [(*p, bn, "c1x1", m, False) for bn in (64, 128) for m in ("wgmma", "wgmma_notma", "wg0", "wg0_notma")]
    return ex[::3] if quick else ex


def pitch_experiments(quick: bool = False) -> list[tuple]:
    """The v3h run: the 4096^3 mainloop with A and B rows 8192 B apart (a multiple of the 128-B line) and
    8208 B (K = 4104's pitch: 7 of 8 row segments straddle two lines), in every cluster shape, the loads
    alone (tma) and with the math (wgmma), on 132 SMs; and the loads alone on one CTA or one cluster (the
    SM's own TMA pace, no L2 contention): whether a multicast slice's misaligned rows cost each receiving
    SM or only the issuing one."""
    p = (4096, 4096, 4096)
    ex = []
    for pitch in (4096, 4104):
        ex += [(*p, bn, c, m, False, STAGES[bn], None, pitch) for bn in (64, 128, 256) for c in CLUSTERS
               for m in ("tma", "wgmma")]
        ex += [(*p, 128, c, "tma", False, STAGES[128], 1 if c == "c1x1" else 2, pitch) for c in CLUSTERS]
    return ex[::3] if quick else ex


def experiments(quick: bool = False) -> list[tuple]:
    """(M, N, K, tile N, cluster, mode, a_full[, stages[, grid[, pitch]]]) of every replay (stages: the
    twin's, grid: min(tiles, 132 CTAs or 66 clusters), unless given (None: not given), pitch: K, elements
    from one row of A or B to the next)."""
    ex = []
    p1 = (64, 28672, 4096)
    for bn in (64, 128, 192, 256):
        ex += [(*p1, bn, "c1x1", m, False) for m in MODES]
        ex += [(*p1, bn, "c1x1", "wgmma", True), (*p1, bn, "c1x2", "wgmma", False), (*p1, bn, "c2x1", "wgmma", False)]
    ex += [(*p1, 64, c, m, False) for c in ("c1x2", "c2x1") for m in ("spin", "tma")]
    p2 = (16, 28672, 4096)
    ex += [(*p2, 64, "c1x1", "wgmma", False), (*p2, 256, "c1x1", "wgmma", False), (*p2, 64, "c1x1", "wgmma", True)]
    p3 = (128, 8192, 28672)
    ex += [(*p3, 64, c, "wgmma", False) for c in CLUSTERS] + [(*p3, 64, "c2x1", "spin", False)]
    for p in ((1152, 2304, 8192), (4096, 4096, 4096)):
        ex += [(*p, 64, c, m, False) for c in CLUSTERS for m in ("wgmma", "spin", "tma")]
    ex += [(1152, 2304, 8192, 128, c, "wgmma", False) for c in CLUSTERS]
    ex += [(4096, 4096, 4096, 256, c, "wgmma", False) for c in ("c1x1", "c2x1")]
    ex += [(*p1, 64, "c1x1", "wgmma", False, 4), (*p1, 64, "c1x1", "tma", False, 4), (*p1, 256, "c1x1", "tma", False, 2)]
    return ex[::4] if quick else ex


def _grid(m: int, n: int, bn: int, cluster: str, sms: int) -> tuple[int, int, int, int]:
    """(cluster tiles along N, along M, CTAs, CTAs per cluster)."""
    mt, nt = -(-m // 128), -(-n // bn)
    cn, cm = (-(-nt // 2), mt) if cluster == "c1x2" else ((nt, -(-mt // 2)) if cluster == "c2x1" else (nt, mt))
    size = 1 if cluster == "c1x1" else 2
    return cn, cm, size * min(sms // size, cn * cm), size


#: Replay plans by name (``measure``'s ``plan``, one per family): :func:`experiments` split into the 1x1
#: replays (family ``mainloop``) and the 1x2 / 2x1 ones (``mainloop_cluster``), then the later runs' plans.
PLANS = {
    "c1x1": lambda quick: [e for e in experiments(quick) if e[4] == "c1x1"],
    "clustered": lambda quick: [e for e in experiments(quick) if e[4] != "c1x1"],
    "scaling": scaling_experiments,        # family mainloop_scaling
    "pace": pace_experiments,              # family mainloop_pace
    "hbm": hbm_experiments,                # family mainloop_hbm
    "zero_fill": zero_fill_experiments,    # family mainloop_zero_fill
    "operand": operand_experiments,        # family mainloop_operand
    "pitch": pitch_experiments,            # family mainloop_pitch
}


def measure(gpu, quick: bool = False, plan: str = "c1x1") -> dict:
    """The replays of one of :data:`PLANS` (default: the 1x1 ones of :func:`experiments`)."""
    from .build import cubin_path
    from .driver import Args, span_summary
    cub = cubin_path("mainloop_f16")
    sms = gpu.sm_count
    out = gpu.alloc(sms * 8 * 8)
    a_elems = 4096 * 4104                            # the largest A (4096 rows at the v3h pitch)
    a_buf = gpu.alloc(a_elems * 2)
    b_elems = max(8192 * 28672, 4096 * 65536)        # the largest B of any experiment
    b_buf = gpu.alloc(b_elems * 2)
    gpu.fill_random(a_buf, a_elems, seed=5)
    gpu.fill_random(b_buf, b_elems, seed=6)
    res: dict = {"runs": []}
    for ex in PLANS[plan](quick):
        m, n, k, bn, cluster, mode, a_full = ex[:7]
        stages = ex[7] if len(ex) > 7 else STAGES[bn]
        fn = gpu.func(cub, kernel_name(bn))
        cn, cm, grid, size = _grid(m, n, bn, cluster, sms)
        given = ex[8] if len(ex) > 8 else None
        if given is not None:
            grid = given
        pitch = ex[9] if len(ex) > 9 else k        # elements from one row of A (B) to the next
        a_rows = 128 if a_full else m
        try:
            ta = gpu.tensor_map_2d(a_buf, k, a_rows, pitch * 2, 64, 64 if cluster == "c1x2" else 128)
            tb = gpu.tensor_map_2d(b_buf, k, n, pitch * 2, 64, bn // 2 if cluster == "c2x1" else bn)
            args = Args.of([out], [k // 64, cn, cm, stages, MODES[mode], 4 * bn, CLUSTERS[cluster], 0])
            smem = stages * (16384 + bn * 128) + 1024
            spans = []
            for rep in range(4):
                gpu.launch(fn, grid, 384, args, smem=smem, cluster=size if size > 1 else 0, tmap=(ta, tb))
                if rep:
                    spans.append(span_summary(gpu.spans(out, grid, 8)))
        except RuntimeError as e:     # recorded, and the next experiment runs
            res.setdefault("errors", []).append({"experiment": list(ex), "error": str(e)[:300]})
            print(f"[mainloop] {ex}: {e}", flush=True)
            continue
        best = sorted(spans, key=lambda s: s["wall_ns"])[1]
        nclusters = grid // size
        tiles = [len(range(c, cn * cm, nclusters)) for c in range(nclusters)]
        recs = gpu.spans(out, grid, 8)
        ends = [[int(x) for x in r[5:8]] for r in recs]
        row = {"m": m, "n": n, "k": k, "tile_n": bn, "cluster": cluster, "mode": mode, "a_full": a_full,
               "grid": grid, "grid_given": given is not None, "stages": stages,
               "pitch_bytes": pitch * 2, "max_tiles_per_cta": max(tiles),
               "wall_ns": best["wall_ns"], "wall_ns_all": [s["wall_ns"] for s in spans],
               "cycles_median": best["cycles_median"], "cycles_max": best["cycles_max"], "clock_mhz": best["clock_mhz"],
               "kblock_cycles": best["cycles_max"] / (max(tiles) * (k // 64)),
               "tile_end_cycles_median": [_median([e[t] for e in ends if e[t] >= 0]) for t in range(3)]}
        res["runs"].append(row)
        print(f"[mainloop] {m}x{n}x{k} n{bn} {cluster} {mode:5s}{' a_full' if a_full else '       '}: "
              f"{row['wall_ns'] / 1e3:8.1f} us, {row['kblock_cycles']:7.1f} clk/K-block ({row['clock_mhz']} MHz)",
              flush=True)
    for p in (out, a_buf, b_buf):
        gpu.free(p)
    res["quantities"] = quantities(res)
    return res


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def misaligned_pitch(r: dict) -> int | None:
    """A replay's row pitch in bytes where it is not the problem's own (2 K), else None."""
    pb = r.get("pitch_bytes", 2 * r["k"])
    return None if pb == 2 * r["k"] else pb


def key(r: dict) -> str:
    return (f"mainloop.fp16_{r['m']}x{r['n']}x{r['k']}.n{r['tile_n']}.{r['cluster']}.{r['mode']}"
            + (".a_full" if r["a_full"] else "") + ("" if r["stages"] == STAGES[r["tile_n"]] else f".st{r['stages']}")
            + (f".grid{r['grid']}" if r.get("grid_given") else "")
            + (f".p{misaligned_pitch(r)}" if misaligned_pitch(r) else ""))


def quantities(res: dict) -> dict:
    q = {}
    for r in res["runs"]:
        what = (f"twin's cooperative mainloop, no epilogue, fp16 {r['m']}x{r['n']}x{r['k']}, 128x{r['tile_n']}x64 "
                f"tiles, {r['stages']} stages, {r['cluster']}, consumers: {r['mode']}"
                + (" (A tensor 128 rows: no zero fill)" if r["a_full"] else "") + f", {r['grid']} CTAs"
                + (f", rows {misaligned_pitch(r)} B apart" if misaligned_pitch(r) else ""))
        q[f"{key(r)}.span_us"] = qv(r["wall_ns"] / 1e3, "us", f"{what}: launch span (%globaltimer), median of 3")
        q[f"{key(r)}.kblock_cycles"] = qv(r["kblock_cycles"], "cycles",
                                          "same run: the slowest CTA's cycles / its K-blocks")
        first = (r.get("tile_end_cycles_median") or [None])[0]
        if first:
            q[f"{key(r)}.first_tile_kblock_cycles"] = qv(first / (r["k"] // 64), "cycles",
                                                         "same run: the median CTA's first tile, cycles / K-blocks")
    return q

