// TMA load streams that share L2 lines between CTAs, or whose boxes reach past the tensor (zero fill).
#include "common.cuh"

// Grouped stream: `stages` SMEM buffers, each refilled as soon as its load lands (nothing reads the
// data). CTA b loads `count` boxes of 64 x box_rows 16-bit elements (128-byte rows) at
// x = ((b * stagger + j) mod nbx) * 64 and y = y0 + (b / group) * ystride: the `group` CTAs of one
// stripe read the same boxes (at the same time when stagger = 0), and rows of a box past the
// tensor's height are zero-filled by TMA (their bytes still count towards complete_tx).
// p[0] = out (8 int64 per block); i[0] = nbx, i[1] = count, i[2] = stages (<= 8), i[3] = bytes per
// box (box_rows x 128), i[4] = y0, i[5] = ystride, i[6] = group, i[7] = stagger.
// The stream of one CTA (thread 0): boxes from x = bx on, after a spin of `delay` cycles (not timed).
__device__ __forceinline__ void grouped_stream(const TmaDesc* tmap, const Args& a, int bx, long long delay) {
  extern __shared__ uint8_t dyn[];
  __shared__ __align__(8) uint64_t bars[8];
  const uint32_t base = smem_base_1k(dyn), bar0 = smem_u32(&bars[0]);
  tma_prefetch_desc(tmap);
  const int nbx = (int)a.i[0], count = (int)a.i[1], stages = (int)a.i[2];
  const uint32_t bytes = (uint32_t)a.i[3];
  const int y = (int)(a.i[4] + (blockIdx.x / a.i[6]) * a.i[5]);
  for (int s = 0; s < stages; ++s) mbar_init(bar0 + 8 * s, 1);
  fence_mbar_init();
  if (delay > 0) {
    const uint64_t until = clk64() + (uint64_t)delay;
    while (clk64() < until) {}
  }
  const uint64_t c0 = clk64(), g0 = gtimer();
  int issued = 0;
  for (; issued < stages && issued < count; ++issued) {
    mbar_expect_tx(bar0 + 8 * issued, bytes);
    tma_load_2d(base + issued * bytes, tmap, bx * 64, y, bar0 + 8 * issued);
    if (++bx == nbx) bx = 0;
  }
  int s = 0;
  uint32_t phase = 0;
  for (int i = 0; i < count; ++i) {
    const uint32_t bar = bar0 + 8 * s;
    mbar_wait(bar, phase);
    if (issued < count) {
      mbar_expect_tx(bar, bytes);
      tma_load_2d(base + s * bytes, tmap, bx * 64, y, bar);
      if (++bx == nbx) bx = 0;
      ++issued;
    }
    if (++s == stages) { s = 0; phase ^= 1u; }
  }
  const uint64_t c1 = clk64(), g1 = gtimer();
  write_span((long long*)a.p[0] + blockIdx.x * 8, c0, c1, g0, g1);
}

extern "C" __global__ void __launch_bounds__(32, 1) tma_stream_grouped(const __grid_constant__ TmaDesc tmap,
                                                                         const Args a) {
  if (threadIdx.x != 0) return;
  grouped_stream(&tmap, a, (int)((blockIdx.x * a.i[7]) % a.i[0]), 0);
}

// Offset stream: as tma_stream_grouped with stagger 0 (the `group` CTAs of a stripe read the same boxes in
// the same order), but CTA b starts (b % group) x i[7] cycles late: how close in time two reads of one
// line must be for the L2 to serve them as one.
extern "C" __global__ void __launch_bounds__(32, 1) tma_stream_offset(const __grid_constant__ TmaDesc tmap,
                                                                        const Args a) {
  if (threadIdx.x != 0) return;
  grouped_stream(&tmap, a, 0, (long long)(blockIdx.x % a.i[6]) * a.i[7]);
}

// Far-pair offset stream: as tma_stream_offset, but the CTAs of a stripe are b, b + n/group, ... (n the grid),
// so that partners sit on different GPCs (the launch gives each GPC a contiguous run of blockIdx); CTA b
// starts (b / (n/group)) x i[7] cycles late.
extern "C" __global__ void __launch_bounds__(32, 1) tma_stream_offset_far(const __grid_constant__ TmaDesc tmap,
                                                                            const Args a) {
  if (threadIdx.x != 0) return;
  const long long stripes = gridDim.x / a.i[6];
  Args b = a;
  b.i[4] = a.i[4] + (blockIdx.x % stripes - blockIdx.x / a.i[6]) * a.i[5];
  grouped_stream(&tmap, b, 0, (long long)(blockIdx.x / stripes) * a.i[7]);
}

// Masked stream: CTA b streams its own stripe (tma_stream_grouped with group 1, stagger 0) only if its SM is
// selected (p[1]: one byte per SM id); the others record an empty span and exit. Which SMs share a limit on the
// L2 -> SM path: the same SMs streaming with and without their neighbours.
extern "C" __global__ void __launch_bounds__(32, 1) tma_stream_masked(const __grid_constant__ TmaDesc tmap,
                                                                        const Args a) {
  if (threadIdx.x != 0) return;
  const unsigned char* mask = (const unsigned char*)a.p[1];
  if (!mask[smid()]) {
    write_span((long long*)a.p[0] + blockIdx.x * 8, 0, 0, 0, 0);
    return;
  }
  grouped_stream(&tmap, a, 0, 0);
}
