"""Load latency of L2 and HBM (pointer chase), and mbarrier wake latency (``cuda/sync.cu``).

* ``pointer_chase``: one thread follows a random single-cycle chain with ``ld.global.cg`` (cached in L2,
  not L1). L2: a 4 MiB or 32 MiB chain of 256-B slots, after a warm pass. HBM: a chain of 4 KiB slots
  over 1 GiB, after reading 4x the L2, each CTA on its own stretch (every step a miss). One CTA alone,
  and one per SM at once (the median and spread over SMs show the near and far L2 halves).
* ``mbarrier_pingpong_local``: two warps of one CTA hand a token through two mbarriers; round trip /
  2, and the one-way time from the arriving thread's clock to the woken thread's clock (same SM).
* ``mbarrier_pingpong_remote``: the same between rank 0 and rank ``peer`` of a cluster
  (``mbarrier.arrive.release.cluster`` on the peer's barrier via ``mapa``), one CTA per SM; variants
  that poll with ``test_wait`` instead of ``try_wait`` (which may suspend the thread) and that arrive
  with ``.relaxed`` instead of ``.release`` semantics, to see which part costs, and the CuTe DSL's
  default (``mbarrier.arrive.shared::cluster`` at CTA scope, CTA-scope ``try_wait``).
"""

from __future__ import annotations

from .common import med, qv


def _chain(gpu, base: int, nbytes: int, stride: int, seed: int):
    """Write a random single-cycle chain of ``nbytes // stride`` slots into ``base``; returns the
    slot order (the cycle) as a numpy array of slot indices."""
    import numpy as np

    from .driver import Args
    n = nbytes // stride
    order = np.random.default_rng(seed).permutation(n).astype(np.int64)
    nxt = np.roll(order, -1)
    offs = order * (stride // 8)
    vals = (base + nxt * stride).astype(np.uint64)
    d_off = gpu.alloc(n * 8)
    d_val = gpu.alloc(n * 8)
    gpu.h2d(d_off, offs)
    gpu.h2d(d_val, vals)
    gpu.launch(gpu.util("scatter_u64"), 4 * gpu.sm_count, 256, Args.of([base, d_off, d_val], [n]))
    gpu.free(d_off)
    gpu.free(d_val)
    return order


def measure(gpu, quick: bool = False) -> dict:
    import numpy as np

    from .build import cubin_path
    from .driver import Args, span_summary
    cub = cubin_path("sync")
    sms = gpu.sm_count
    out = gpu.alloc(sms * 8 * 8)
    starts = gpu.alloc(sms * 8)
    res: dict = {"chase": [], "mbarrier_local": [], "mbarrier_remote": []}
    fn = gpu.func(cub, "pointer_chase")
    steps = 1024 if quick else 4096
    for where, nbytes, stride in (("l2", 4 << 20, 256), ("l2", 32 << 20, 256), ("hbm", 1 << 30, 4096)):
        buf = gpu.alloc(nbytes)
        order = _chain(gpu, buf, nbytes, stride, seed=nbytes)
        n = len(order)
        for grid in (1, sms):
            pos = (np.arange(grid) * (n // grid)).astype(np.int64)
            gpu.h2d(starts, (buf + order[pos] * stride).astype(np.uint64))
            if where == "hbm":
                gpu.flush_l2()
                warm, timed = 0, min(steps, n // grid - 1)
            else:
                warm, timed = n, steps
            gpu.launch(fn, grid, 32, Args.of([starts, out], [timed, warm]), smem=116 * 1024)
            recs = gpu.spans(out, grid, 8)
            per = (recs[:, 1] - recs[:, 0]) / timed
            s = span_summary(recs)
            res["chase"].append({"where": where, "footprint_mib": nbytes >> 20, "stride": stride, "ctas": grid,
                                 "steps": timed, "cycles_median": med(per), "cycles_min": float(per.min()),
                                 "cycles_max": float(per.max()), "clock_mhz": s["clock_mhz"]})
            r = res["chase"][-1]
            print(f"[sync] chase {where} {nbytes >> 20} MiB x{grid}: {r['cycles_median']:.0f} clk "
                  f"(min {r['cycles_min']:.0f}, max {r['cycles_max']:.0f})", flush=True)
        gpu.free(buf)

    n = 1024 if quick else 8192
    for kname, wait in (("mbarrier_pingpong_local", "try_wait"), ("mbarrier_pingpong_local_poll", "test_wait")):
        fn = gpu.func(cub, kname)
        for grid in (1, sms):
            gpu.launch(fn, grid, 64, Args.of([out], [n]), smem=116 * 1024)
            recs = gpu.spans(out, grid, 8)
            rt = (recs[:, 1] - recs[:, 0]) / n
            res["mbarrier_local"].append({"wait": wait, "ctas": grid, "round_trips": n, "round_trip_cycles": med(rt),
                                          "one_way_cycles": med(recs[:, 5] / n),
                                          "clock_mhz": span_summary(recs)["clock_mhz"]})
            print(f"[sync] local mbarrier {wait} x{grid}: one way {med(recs[:, 5] / n):.0f}, "
                  f"round trip {med(rt):.0f} clk", flush=True)
    for kname, wait, arrive, cs, peer in (
            ("mbarrier_pingpong_remote", "try_wait", "release", 2, 1),
            ("mbarrier_pingpong_remote_poll", "test_wait", "release", 2, 1),
            ("mbarrier_pingpong_remote_relaxed", "try_wait", "relaxed", 2, 1),
            ("mbarrier_pingpong_remote_cta", "try_wait", "release_cta", 2, 1),
            ("mbarrier_pingpong_remote", "try_wait", "release", 4, 1),
            ("mbarrier_pingpong_remote", "try_wait", "release", 4, 3),
            ("mbarrier_pingpong_remote", "try_wait", "release", 8, 7),
            ("mbarrier_pingpong_remote", "try_wait", "release", 16, 15)):
        fn = gpu.func(cub, kname)
        clusters = 6
        gpu.memset(out, 0, sms * 8 * 8)
        try:
            gpu.launch(fn, cs * clusters, 32, Args.of([out], [n, peer]), smem=116 * 1024, cluster=cs)
        except RuntimeError as e:
            res["mbarrier_remote"].append({"cluster": cs, "peer": peer, "wait": wait, "arrive": arrive,
                                           "error": str(e)[:200]})
            continue
        recs = gpu.spans(out, cs * clusters, 8)
        lead = recs[::cs]
        peers = recs[peer::cs]
        rt = (lead[:, 1] - lead[:, 0]) / n
        same_sm = int(np.count_nonzero(lead[:, 4] == peers[:, 5]))
        res["mbarrier_remote"].append({"cluster": cs, "peer": peer, "wait": wait, "arrive": arrive,
                                       "clusters": clusters, "round_trips": n,
                                       "round_trip_cycles": med(rt), "round_trip_min": float(rt.min()),
                                       "round_trip_max": float(rt.max()), "pairs_on_one_sm": same_sm,
                                       "clock_mhz": span_summary(lead)["clock_mhz"]})
        print(f"[sync] remote arrive ({arrive}, {wait}) cluster {cs} peer {peer}: round trip {med(rt):.0f} clk",
              flush=True)
    gpu.free(out)
    gpu.free(starts)
    res["quantities"] = quantities(res)
    return res


def quantities(res: dict) -> dict:
    q = {}
    for r in res["chase"]:
        who = "1sm" if r["ctas"] == 1 else f"{r['ctas']}sm"
        key = f"load_latency.{r['where']}.f{r['footprint_mib']}MiB.{who}"
        q[key] = qv(r["cycles_median"], "cycles",
                    f"dependent ld.global.cg chain, {r['stride']}-B slots over {r['footprint_mib']} MiB, "
                    f"median over {r['ctas']} CTA(s) (min {r['cycles_min']:.0f}, max {r['cycles_max']:.0f})")
    for r in res["mbarrier_local"]:
        who = "1sm" if r["ctas"] == 1 else f"{r['ctas']}sm"
        w = r.get("wait", "try_wait")
        q[f"mbarrier.local.{w}.one_way_cycles.{who}"] = qv(
            r["one_way_cycles"], "cycles", f"arrive (clock before) -> waiting warp's {w} returns (clock after)")
        q[f"mbarrier.local.{w}.half_round_trip_cycles.{who}"] = qv(
            r["round_trip_cycles"] / 2, "cycles", f"token passed between two warps through two mbarriers ({w}), / 2")
    for r in res["mbarrier_remote"]:
        if "error" in r:
            continue
        q[f"mbarrier.remote.{r['arrive']}.{r['wait']}.c{r['cluster']}_peer{r['peer']}.half_round_trip_cycles"] = qv(
            r["round_trip_cycles"] / 2, "cycles",
            f"{r['arrive']}.cluster arrive on rank {r['peer']}'s barrier, {r['wait']} there, and back, / 2 "
            f"(cluster of {r['cluster']}, one CTA per SM)")
    return q
