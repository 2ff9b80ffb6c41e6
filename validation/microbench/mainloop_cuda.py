"""The CUDA source of the mainloop replay kernels (:mod:`validation.microbench.mainloop`), one per tile N:
the hardware twin's cooperative mainloop without its epilogue. Pure Python: the build
(:mod:`validation.microbench.build`) writes it out and compiles it on a machine without a GPU.

One CTA per SM, 384 threads: warp 0 (one thread) is MainloopLoad, warpgroups 1 and 2 are the
cooperative consumers (64 rows of the 128-row tile each). Per K-block (tile_k 64, fp16): the producer
waits the stage's empty barrier, arms its full barrier for the A box (128 x 64) and the B box
(N x 64), and issues the two TMA loads (1x2 cluster: each CTA loads 64 rows of A and multicasts them
to both CTAs; 2x1: 64 ... N/2 rows of B); each consumer warpgroup waits the full barrier and issues
4 wgmma m64nNk16 SS (commit, wait_group 1, then one arrival per warp on the previous stage's empty
barrier of every CTA its multicast fed, the peer's with the DSL's CTA-scoped remote arrive), as
CUTLASS's collective with K_PIPE_MMAS = 1. Each CTA records the clock at the end of its first three
tiles (after its span: ``o[5..7]``, cycles since its start, -1 if it had fewer tiles). Modes: 0
wgmma; 1 the consumers spin ``spin`` cycles per K-block instead (no SMEM reads); 2 they release each
stage as soon as it lands (TMA alone); 3 wgmma with no TMA after the first ``stages`` K-blocks (the
producer arrives on each full barrier instead: the operands stay what the first loads left); 4 and 5
as 0 and 3 with only the first consumer warpgroup issuing wgmma (64 rows: a 64-row tile's math), the
other releasing each stage as it lands.
"""

from __future__ import annotations

from .wgmma_cuda import _HEADER, _mma_fn

#: Tile N of the kernels (tile M = 128, tile K = 64, fp16): the twin's tiles.
TILE_NS = (64, 128, 192, 256)
MAX_STAGES = 8


def kernel_name(n: int) -> str:
    return f"mainloop_n{n}"


_HELPERS = r"""
// The consumers' remote release: the CuTe DSL's default, mbarrier.arrive.shared::cluster with release at
// CTA scope (the twin's; common.cuh mbar_arrive_remote_cta). The first v3 run used release.cluster
// (mbar_arrive_remote), which stalls each arriving warp: its cluster replays are not the twin's.
#define REMOTE_ARRIVE mbar_arrive_remote_cta
__device__ __forceinline__ void tma_load_2d_mc(uint32_t dst, const TmaDesc* d, int x, int y, uint32_t bar, uint16_t mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%2, %3}], [%4], %5;"
               :: "r"(dst), "l"(reinterpret_cast<uint64_t>(d)), "r"(x), "r"(y), "r"(bar), "h"(mask) : "memory");
}

"""

_KERNEL = r"""
// p[0] = out (8 int64 per block); i[0] = K-blocks per tile, i[1] = cluster tiles along N,
// i[2] = cluster tiles along M, i[3] = stages (<= @MAXST@), i[4] = mode (0 wgmma, 1 spin, 2 none, 3 wgmma
// without TMA past the first stages, 4/5: 0/3 with warpgroup 0 alone issuing wgmma),
// i[5] = spin cycles per K-block, i[6] = cluster (0: 1x1, 1: 1x2 with A multicast, 2: 2x1 with B
// multicast), i[7] = A row of CTA b = b * i[7] (> 0: every CTA its own A; 0: the tile's m * 128).
extern "C" __global__ void __launch_bounds__(384, 1) @NAME@(const __grid_constant__ TmaDesc ta,
                                                           const __grid_constant__ TmaDesc tb, const Args a) {
  extern __shared__ uint8_t dyn[];
  __shared__ __align__(8) uint64_t full_s[@MAXST@], empty_s[@MAXST@];
  __shared__ uint64_t tile_end[3];
  const uint32_t base = smem_base_1k(dyn);
  const uint32_t A_BYTES = 16384, B_BYTES = @N@ * 128, STAGE = A_BYTES + B_BYTES;
  const int kbs = (int)a.i[0], cn = (int)a.i[1], cm = (int)a.i[2], stages = (int)a.i[3];
  const int mode = (int)a.i[4], cmode = (int)a.i[6];
  const int csize = cmode ? 2 : 1;
  const uint32_t rank = cmode ? cluster_ctarank() : 0u, peer = rank ^ 1u;
  const int cid = blockIdx.x / csize, nclusters = gridDim.x / csize;
  const uint32_t full0 = smem_u32(&full_s[0]), empty0 = smem_u32(&empty_s[0]);
  const int tid = threadIdx.x;
  if (tid < 3) tile_end[tid] = 0;
  if (tid == 0) {
    tma_prefetch_desc(&ta);
    tma_prefetch_desc(&tb);
    for (int s = 0; s < stages; ++s) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, 8 * csize);   // one arrival per consumer warp of every CTA fed
    }
    fence_mbar_init();
  }
  if (csize > 1) cluster_sync(); else __syncthreads();
  const uint64_t c0 = clk64(), g0 = gtimer();
  float sum = 0.0f;
  // The warpgroup index, warp-uniform as the compiler sees it (CUTLASS's canonical_warp_group_idx).
  const int wgi = __shfl_sync(0xffffffffu, tid / 128, 0);
  if (wgi == 0) {
    if (tid == 0) {
      int s = 0, issued = 0;
      uint32_t ph = 0;
      for (int ct = cid; ct < cm * cn; ct += nclusters) {
        int m = ct / cn, n = ct % cn;
        if (cmode == 1) n = 2 * n + (int)rank;
        if (cmode == 2) m = 2 * m + (int)rank;
        const int ya = a.i[7] ? (int)(blockIdx.x * a.i[7]) : m * 128;
        for (int kb = 0; kb < kbs; ++kb) {
          const uint32_t fb = full0 + 8 * s, sa = base + s * STAGE, sb = sa + A_BYTES;
          mbar_wait(empty0 + 8 * s, ph ^ 1u);
          if ((mode == 3 || mode == 5) && ++issued > stages) {      // no TMA: the stage keeps its operands
            mbar_arrive(fb);
            if (++s == stages) { s = 0; ph ^= 1u; }
            continue;
          }
          mbar_expect_tx(fb, STAGE);
          if (cmode == 1) tma_load_2d_mc(sa + rank * 8192, &ta, kb * 64, ya + (int)rank * 64, fb, (uint16_t)3);
          else tma_load_2d(sa, &ta, kb * 64, ya, fb);
          if (cmode == 2) tma_load_2d_mc(sb + rank * (B_BYTES / 2), &tb, kb * 64, n * @N@ + (int)rank * (@N@ / 2), fb, (uint16_t)3);
          else tma_load_2d(sb, &tb, kb * 64, n * @N@, fb);
          if (++s == stages) { s = 0; ph ^= 1u; }
        }
      }
    }
    __syncwarp();
  } else {
    const int wg = wgi - 1;
    const bool signal = (tid & 31) == 0;
    const bool mma = mode == 0 || mode == 3 || ((mode == 4 || mode == 5) && wg == 0);
    float acc[@NDACC@];
#pragma unroll
    for (int j = 0; j < @NDACC@; ++j) acc[j] = 0.0f;
    int s = 0, prev = -1, tile_no = 0;
    uint32_t ph = 0;
    for (int ct = cid; ct < cm * cn; ct += nclusters) {
      for (int kb = 0; kb < kbs; ++kb) {
        mbar_wait(full0 + 8 * s, ph);
        if (mma) {
          const uint32_t sa = base + s * STAGE;
          const uint64_t da = sw128_desc(sa + wg * 8192), db = sw128_desc(sa + A_BYTES);
          wg_fence();
#pragma unroll
          for (int k = 0; k < 4; ++k) mma_ss_f16_n@N@(acc, da + 2 * k, db + 2 * k);
          wg_commit();
          wg_wait<1>();
        } else if (mode == 1) {
          const uint64_t t0 = clk64();
          while (clk64() - t0 < (uint64_t)a.i[5]) { }
        }
        const int rel = mma ? prev : s;
        if (rel >= 0 && signal) {
          mbar_arrive(empty0 + 8 * rel);
          if (csize > 1) REMOTE_ARRIVE(mapa(empty0 + 8 * rel, peer));
        }
        prev = s;
        if (++s == stages) { s = 0; ph ^= 1u; }
      }
      if (mma) {
        wg_wait<0>();
        if (signal) {
          mbar_arrive(empty0 + 8 * prev);
          if (csize > 1) REMOTE_ARRIVE(mapa(empty0 + 8 * prev, peer));
        }
        prev = -1;
      }
      // The clock at the end of each of the CTA's first three tiles (consumer warpgroup 0's thread 0).
      if (tid == 128 && tile_no < 3) tile_end[tile_no] = clk64();
      ++tile_no;
    }
#pragma unroll
    for (int j = 0; j < @NDACC@; ++j) sum += acc[j];
  }
  if (csize > 1) cluster_sync(); else __syncthreads();
  if (tid == 0) {
    const uint64_t c1 = clk64(), g1 = gtimer();
    long long* o = (long long*)a.p[0] + blockIdx.x * 8;
    write_span(o, c0, c1, g0, g1);
    for (int t = 0; t < 3; ++t) o[5 + t] = tile_end[t] ? (long long)(tile_end[t] - c0) : -1;
  }
  if (sum == 1234.5f) ((float*)a.p[0])[1] = sum;
}
"""


def cuda_source() -> str:
    """The generated .cu of every tile N (fp16)."""
    parts = [_HEADER, _HELPERS]
    for n in TILE_NS:
        parts.append(_mma_fn("ss", "f16", n))
    for n in TILE_NS:
        text = _KERNEL
        for key, val in (("NAME", kernel_name(n)), ("N", n), ("NDACC", n // 2), ("MAXST", MAX_STAGES)):
            text = text.replace(f"@{key}@", str(val))
        parts.append(text)
    return "\n".join(parts)
