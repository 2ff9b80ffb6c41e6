"""TMA loads: latency against bytes, and streaming bandwidth against footprint and SMs (``cuda/tma.cu``).

Latency (``tma_load_latency``): one thread arms an mbarrier for the bytes, issues the load (boxes of
``rows`` x 64 fp16 = rows x 128 B, 128-byte swizzle, as the twin's A/B tiles; 64 KiB = two 256-row
boxes) and spins until the phase completes; repeated, one value per repetition (median reported).

* L2 hit: the same box again after an untimed load of it;
* HBM: a fresh box each repetition, after reading 4x the L2 (``l2_flush``);
* row pitch 8192 B (K = 4096, a multiple of 128 B) or 8208 B (K = 4104: each 128-B row segment
  straddles two 128-B lines);
* one CTA alone, or 132 (one per SM) at once.

Streaming (``tma_stream``): one thread per CTA keeps 6 loads of 32 KiB in flight (refilling each
buffer when it lands), over a footprint of F MiB (F = 8 ... 96: L2-resident or not; 2048: HBM), from
1, 16, 66 or 132 SMs. Bandwidth = bytes / span of the launch (%globaltimer); per SM = bytes per CTA /
its cycles. The same stream over K-major matrices with both row pitches (16 MiB: L2; 512 MiB: HBM),
and with 1, 2, 4, 6 loads in flight (the bandwidth-latency product of one SM).
"""

from __future__ import annotations

from .common import linfit, med, qv

BOX_ROWS = ((8, 1), (32, 1), (64, 1), (128, 1), (256, 1), (256, 2))  # (rows, boxes): 1, 4, 8, 16, 32, 64 KiB
PITCHES = (("p8192", 4096), ("p8208", 4104))
FOOTPRINTS_MIB = (8, 16, 24, 32, 48, 64, 96, 2048)
SMS = (1, 16, 66, 132)
STAGES = 6
STREAM_BOX = 32 * 1024


def measure(gpu, quick: bool = False) -> dict:
    from .build import cubin_path
    from .driver import Args, span_summary
    cub = cubin_path("tma")
    sms = gpu.sm_count
    out = gpu.alloc(sms * 64 * 8)
    res: dict = {"latency": [], "stream": [], "stream_pitch": []}

    # ---------------------------------------------------------------- latency
    fn = gpu.func(cub, "tma_load_latency")
    reps_1, reps_all = (8, 4) if quick else (32, 8)
    rows_all = sms * reps_all * 512
    big_bytes = rows_all * 4104 * 2
    big = gpu.alloc(big_bytes)
    for pname, k in PITCHES:
        pitch = k * 2
        tmaps = {r: gpu.tensor_map_2d(big, k, big_bytes // pitch, pitch, 64, r) for r, _ in BOX_ROWS}
        for rows, boxes in BOX_ROWS:
            span = rows * boxes
            for where in ("l2", "hbm"):
                for grid in (1, sms):
                    reps = reps_1 if grid == 1 else reps_all
                    if where == "hbm":
                        gpu.flush_l2()
                    step = 0 if where == "l2" else span
                    block_rows = span if where == "l2" else reps * span
                    gpu.launch(fn, grid, 32, Args.of([out], [reps, boxes, rows, 0, step, 1 if where == "l2" else 0,
                                                             block_rows]),
                               smem=span * 128 + 1024, tmap=tmaps[rows])
                    recs = gpu.spans(out, grid, 64)
                    vals = recs[:, 8:8 + reps].reshape(-1)
                    res["latency"].append({
                        "pitch": pname, "bytes": span * 128, "where": where, "ctas": grid, "reps": reps,
                        "median_cycles": med(vals), "min_cycles": int(vals.min()), "max_cycles": int(vals.max()),
                        "first_rep_median_cycles": med(recs[:, 8]),
                        "clock_mhz": span_summary(recs)["clock_mhz"]})
                    r = res["latency"][-1]
                    print(f"[tma] latency {pname} {span * 128 // 1024:2d} KiB {where} x{grid}: "
                          f"median {r['median_cycles']:.0f} min {r['min_cycles']} clk", flush=True)

    # ---------------------------------------------------------------- streaming, footprint x SMs
    fn = gpu.func(cub, "tma_stream")
    per_block = 64 if quick else 256  # boxes of 32 KiB: 8 MiB per CTA
    smem = STAGES * STREAM_BOX + 1024
    for fmib in FOOTPRINTS_MIB:
        if quick and fmib not in (16, 48, 96, 2048):
            continue
        rows = fmib * 1024 * 1024 // 128
        buf = big if fmib * 1024 * 1024 <= big_bytes else None
        if buf is None:
            raise RuntimeError(f"footprint {fmib} MiB is larger than the {big_bytes} B buffer")
        tmap = gpu.tensor_map_2d(buf, 64, rows, 128, 64, 256)
        nby = rows // 256
        for n in SMS:
            if fmib > 1024 and n != sms:
                continue
            stride = max(1, nby // n)
            args = Args.of([out], [1, nby, per_block, STAGES, STREAM_BOX, stride, 256, 64])
            if fmib > 1024:
                gpu.flush_l2()
            else:
                gpu.launch(fn, n, 32, args, smem=smem, tmap=tmap)  # warm the L2 with the footprint
            gpu.launch(fn, n, 32, args, smem=smem, tmap=tmap)
            s = span_summary(gpu.spans(out, n, 8))
            nbytes = n * per_block * STREAM_BOX
            r = {"footprint_mib": fmib, "sms": n, "bytes": nbytes, "wall_ns": s["wall_ns"],
                 "bytes_per_s": nbytes / s["wall_ns"] * 1e9,
                 "bytes_per_clk_per_sm": per_block * STREAM_BOX / s["cycles_median"],
                 "clock_mhz": s["clock_mhz"], "distinct_sms": s["sms"]}
            r["bytes_per_clk"] = r["bytes_per_s"] / (s["clock_mhz"] * 1e6) if s["clock_mhz"] else None
            res["stream"].append(r)
            print(f"[tma] stream {fmib:5d} MiB x{n:3d} SMs: {r['bytes_per_s'] / 1e12:6.2f} TB/s, "
                  f"{r['bytes_per_clk_per_sm']:.1f} B/clk/SM ({s['clock_mhz']} MHz)", flush=True)

    # ---------------------------------------------------------------- streaming, loads in flight
    rows = 16 * 1024 * 1024 // 128
    tmap = gpu.tensor_map_2d(big, 64, rows, 128, 64, 256)
    for stages in (1, 2, 4, 6):
        for n in (1, sms):
            args = Args.of([out], [1, rows // 256, per_block, stages, STREAM_BOX, max(1, rows // 256 // n), 256, 64])
            sm = stages * STREAM_BOX + 1024
            gpu.launch(fn, n, 32, args, smem=sm, tmap=tmap)
            gpu.launch(fn, n, 32, args, smem=sm, tmap=tmap)
            s = span_summary(gpu.spans(out, n, 8))
            nbytes = n * per_block * STREAM_BOX
            r = {"stages": stages, "sms": n, "footprint_mib": 16, "bytes_per_s": nbytes / s["wall_ns"] * 1e9,
                 "bytes_per_clk_per_sm": per_block * STREAM_BOX / s["cycles_median"], "clock_mhz": s["clock_mhz"]}
            res.setdefault("stream_depth", []).append(r)
            print(f"[tma] stream {stages} x 32 KiB in flight x{n} SMs: {r['bytes_per_s'] / 1e12:.2f} TB/s, "
                  f"{r['bytes_per_clk_per_sm']:.1f} B/clk/SM", flush=True)

    # ---------------------------------------------------------------- streaming, row pitch
    for pname, k in PITCHES:
        for where, rows in (("l2", 2048), ("hbm", 65536)):
            tmap = gpu.tensor_map_2d(big, k, rows, k * 2, 64, 256)
            nbx, nby = 4096 // 64, rows // 256
            for n in (1, sms):
                count = min(per_block, nbx * nby // n) if where == "hbm" else per_block // 2
                stride = nbx * nby // n
                args = Args.of([out], [nbx, nby, count, STAGES, STREAM_BOX, stride, 256, 64])
                if where == "hbm":
                    gpu.flush_l2()
                else:
                    gpu.launch(fn, n, 32, args, smem=smem, tmap=tmap)
                gpu.launch(fn, n, 32, args, smem=smem, tmap=tmap)
                s = span_summary(gpu.spans(out, n, 8))
                nbytes = n * count * STREAM_BOX
                r = {"pitch": pname, "where": where, "footprint_mib": rows * 64 * 2 // (1 << 20), "sms": n,
                     "bytes_per_s": nbytes / s["wall_ns"] * 1e9,
                     "bytes_per_clk_per_sm": count * STREAM_BOX / s["cycles_median"], "clock_mhz": s["clock_mhz"]}
                res["stream_pitch"].append(r)
                print(f"[tma] stream {pname} {where} x{n}: {r['bytes_per_s'] / 1e12:.2f} TB/s, "
                      f"{r['bytes_per_clk_per_sm']:.1f} B/clk/SM", flush=True)
    gpu.free(big)
    gpu.free(out)
    res["quantities"] = quantities(res)
    return res


def quantities(res: dict) -> dict:
    q = {}
    for r in res["latency"]:
        who = "1sm" if r["ctas"] == 1 else f"{r['ctas']}sm"
        key = f"tma_load.latency.{r['where']}.{r['pitch']}.{r['bytes'] // 1024}KiB.{who}"
        q[key] = qv(r["median_cycles"], "cycles",
                    f"arrive.expect_tx + TMA load of {r['bytes']} B -> mbarrier phase complete "
                    f"({'same box again (L2 hit)' if r['where'] == 'l2' else 'fresh box after an L2 flush'}), "
                    f"median of {r['reps']} x {r['ctas']} CTA(s)")
    # The byte-dependent part of a lone CTA's L2-hit latency: latency = a + bytes / b.
    for where in ("l2", "hbm"):
        pts = [(r["bytes"], r["median_cycles"]) for r in res["latency"]
               if r["where"] == where and r["pitch"] == "p8192" and r["ctas"] == 1]
        if len(pts) >= 2:
            a, b = linfit([p[0] for p in pts], [p[1] for p in pts])
            q[f"tma_load.{where}.fixed_cycles_1sm"] = qv(a, "cycles", f"intercept of latency vs bytes, 1 CTA, {where}")
            if b > 0:
                q[f"tma_load.{where}.bytes_per_clk_1sm"] = qv(1 / b, "B/clk", f"1 / slope of latency vs bytes, 1 CTA, {where}")
    for r in res["stream"]:
        key = f"l2_to_sm.f{r['footprint_mib']}MiB.{r['sms']}sm"
        q[f"{key}.bytes_per_s"] = qv(r["bytes_per_s"], "B/s",
                                     f"TMA stream, {STAGES} x 32 KiB in flight per SM, footprint "
                                     f"{r['footprint_mib']} MiB, {r['sms']} SMs")
        q[f"{key}.bytes_per_clk_per_sm"] = qv(r["bytes_per_clk_per_sm"], "B/clk/SM", "same run, per SM")
    for r in res["stream_pitch"]:
        key = f"tma_stream.{r['where']}.{r['pitch']}.{r['sms']}sm"
        q[f"{key}.bytes_per_s"] = qv(
            r["bytes_per_s"], "B/s", f"TMA stream of 256 x 64 boxes of a K-major matrix, row pitch {r['pitch'][1:]} B, "
            f"{r['footprint_mib']} MiB, {r['sms']} SMs")
        q[f"{key}.bytes_per_clk_per_sm"] = qv(r["bytes_per_clk_per_sm"], "B/clk/SM", "same run, per SM")
    for r in res.get("stream_depth", []):
        q[f"tma_stream.depth{r['stages']}.{r['sms']}sm.bytes_per_clk_per_sm"] = qv(
            r["bytes_per_clk_per_sm"], "B/clk/SM", f"TMA stream from L2 (16 MiB), {r['stages']} x 32 KiB loads "
            f"in flight per SM, {r['sms']} SMs")
    return q
