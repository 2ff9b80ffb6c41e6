"""wgmma throughput and latency per N and dtype, SS (both operands in SMEM) and RS (A in registers).

Each kernel variant is one warpgroup-wide loop; per iteration: ``wgmma.fence``, a batch of ``wgmma
m64nNk16`` (``atoms`` accumulators of 64 rows, ``ksteps`` K steps of 16), ``commit_group``,
``wait_group(W)``. Operands are SMEM tiles of random values in the 128-byte-swizzled K-major layout the
hardware twin uses (B: N rows x 128 B shared by the warpgroups; A: 64 rows x 128 B per atom and
warpgroup). One CTA per SM (its dynamic SMEM forbids a second), 132 CTAs, so the chip runs under the
load (and clock) of a GEMM; each warpgroup times its loop with clock64 after 8 untimed iterations.

Variants and what they give (per N in 64, 128, 192, 256 and dtype fp16, bf16):

* ``a1k1w0`` (1 warpgroup): fence, 1 wgmma, commit, wait 0: **latency** of one instruction
  (issue to accumulator ready, with the commit/wait round trip);
* ``a1k4w0``, ``a1k16w0``: batches of 4 and 16 with wait 0: **issue interval** = slope between them
  (latency + (k-1) x interval);
* ``a1k16w0`` with 2 warpgroups: the SM's interval when two warpgroups issue at once (B read by both);
* ``a1k4w1`` with 1 and 2 warpgroups: the **cooperative** kernel's K-block (tile_k 64) per warpgroup,
  pipelined as CUTLASS does (``K_PIPE_MMAS = 1``: wait_group 1);
* ``a2k4w1`` (N <= 128): the **ping-pong** kernel's K-block (128 rows = two m64 atoms, one warpgroup).
"""

from __future__ import annotations

from .common import qv
from .wgmma_cuda import DTYPES, NS, VARIANTS, WARM_ITERS, cuda_source, kernel_name, variants

#: The kernels' variants and source live in :mod:`.wgmma_cuda` (the build compiles them without a GPU).
__all__ = ["DTYPES", "NS", "VARIANTS", "WARM_ITERS", "cuda_source", "kernel_name", "variants", "measure",
           "quantities"]


# ---------------------------------------------------------------------------------------------- GPU side
def _run(gpu, dtype, kind, n, atoms, ksteps, wait, nwg, iters, src, out):
    from .build import cubin_path
    from .driver import Args, span_summary
    fn = gpu.func(cubin_path(f"wgmma_{dtype}"), kernel_name(kind, dtype, n, atoms, ksteps, wait))
    smem = 116 * 1024  # > half the SM's SMEM: one CTA per SM
    gpu.memset(out, 0, gpu.sm_count * 2 * 6 * 8)
    gpu.launch(fn, gpu.sm_count, 128 * nwg, Args.of([src, out], [iters]), smem=smem)
    rows = gpu.spans(out, gpu.sm_count * 2, 6).reshape(gpu.sm_count, 2, 6)
    per_wg = [rows[:, w, :] for w in range(nwg)]
    s = span_summary([r for wgr in per_wg for r in wgr])
    instr = iters * ksteps * atoms
    return {"kind": kind, "dtype": dtype, "n": n, "atoms": atoms, "ksteps": ksteps, "wait": wait,
            "warpgroups": nwg, "iters": iters, "cycles_per_iter": s["cycles_median"] / iters,
            "cycles_per_iter_max": s["cycles_max"] / iters, "cycles_per_instr_per_wg": s["cycles_median"] / instr,
            "sms": s["sms"], "clock_mhz": s["clock_mhz"]}


def measure(gpu, quick: bool = False) -> dict:
    """All variants on the GPU; returns {"runs": [...], "quantities": {...}}."""
    src = gpu.alloc(1 << 20)
    out = gpu.alloc(gpu.sm_count * 2 * 6 * 8)
    runs = []
    for dtype in DTYPES:
        gpu.fill_random(src, (1 << 20) // 2, seed=7, bf16=dtype == "bf16")
        for kind, n, atoms, ksteps, wait in variants(dtype):
            two = kind == "ss" and (atoms, ksteps, wait) in ((1, 16, 0), (1, 4, 1))
            nwgs = (1, 2) if two else (1,)
            for nwg in nwgs:
                iters = max(16, (4096 if ksteps == 1 else 1024 // ksteps) // (4 if quick else 1))
                runs.append(_run(gpu, dtype, kind, n, atoms, ksteps, wait, nwg, iters, src, out))
                r = runs[-1]
                print(f"[wgmma] {kind} {dtype} n{n} a{atoms}k{ksteps}w{wait} wg{nwg}: "
                      f"{r['cycles_per_iter']:.1f} clk/iter ({r['clock_mhz']} MHz, {r['sms']} SMs)", flush=True)
    return {"runs": runs, "quantities": quantities(runs)}


def quantities(runs: list[dict]) -> dict:
    """Named results from the runs (CPU-side, also used by the tests on synthetic runs)."""
    q = {}

    def find(kind, dtype, n, atoms, ksteps, wait, nwg):
        for r in runs:
            if (r["kind"], r["dtype"], r["n"], r["atoms"], r["ksteps"], r["wait"], r["warpgroups"]) == \
                    (kind, dtype, n, atoms, ksteps, wait, nwg):
                return r
        return None

    for dtype in DTYPES:
        for kind in ("ss", "rs"):
            for n in NS:
                key = f"wgmma.{kind}.{dtype}.n{n}"
                lat = find(kind, dtype, n, 1, 1, 0, 1)
                k16 = find(kind, dtype, n, 1, 16, 0, 1)
                k4 = find(kind, dtype, n, 1, 4, 0, 1)
                if lat:
                    q[f"{key}.latency_cycles"] = qv(lat["cycles_per_iter"], "cycles",
                                                     "fence + 1 wgmma + commit + wait_group 0, one warpgroup")
                if k16 and (k4 or lat):
                    lo, klo = (k4, 4) if k4 else (lat, 1)
                    iv = (k16["cycles_per_iter"] - lo["cycles_per_iter"]) / (16 - klo)
                    q[f"{key}.issue_interval_cycles"] = qv(
                        iv, "cycles/instr", f"slope of a 16- vs {klo}-wgmma batch (wait 0), one warpgroup")
                    flops = 2 * 64 * n * 16
                    q[f"{key}.flops_per_clk"] = qv(flops / iv, "FLOP/clk/SM", "2*64*N*16 / issue interval")
                two = find(kind, dtype, n, 1, 16, 0, 2)
                if two:
                    q[f"{key}.two_wg_interval_cycles"] = qv(
                        two["cycles_per_iter"] / 32, "cycles/instr per SM",
                        "two warpgroups each issuing batches of 16 (wait 0): SM time per instruction")
                for nwg, sched in ((1, "1wg"), (2, "2wg")):
                    kb = find(kind, dtype, n, 1, 4, 1, nwg)
                    if kb:
                        q[f"{key}.coop_kblock_cycles_{sched}"] = qv(
                            kb["cycles_per_iter"], "cycles per K-block (64x N x 64 per warpgroup)",
                            f"4 wgmma + commit + wait_group 1 per iteration, {nwg} warpgroup(s) at once")
                pp = find(kind, dtype, n, 2, 4, 1, 1)
                if pp:
                    q[f"{key}.pingpong_kblock_cycles"] = qv(
                        pp["cycles_per_iter"], "cycles per K-block (128 x N x 64, one warpgroup)",
                        "2 atoms x 4 wgmma + commit + wait_group 1 per iteration")
    return q
