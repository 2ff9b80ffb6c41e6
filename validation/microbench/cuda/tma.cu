// TMA loads (cp.async.bulk.tensor.2d, completing on an mbarrier), issued by one thread per CTA.
#include "common.cuh"

// Latency: each repetition arms the barrier for the bytes of `boxes` boxes of box_rows x 128 B, issues
// them and spins until the phase completes. p[0] = out (64 int64 per block: span, then one value per
// repetition), i[0] = repetitions (<= 56), i[1] = boxes per load (1 or 2), i[2] = box rows,
// i[3] = first row, i[4] = rows to advance per repetition (0: the same box again, an L2 hit after the
// untimed warm-up load), i[5] = 1: one untimed load of the first box before timing, i[6] = rows between
// blocks' first rows.
extern "C" __global__ void __launch_bounds__(32, 1) tma_load_latency(const __grid_constant__ TmaDesc tmap, const Args a) {
  extern __shared__ uint8_t dyn[];
  __shared__ __align__(8) uint64_t bar_storage;
  if (threadIdx.x != 0) return;
  const uint32_t dst = smem_base_1k(dyn), bar = smem_u32(&bar_storage);
  tma_prefetch_desc(&tmap);
  mbar_init(bar, 1);
  fence_mbar_init();
  const int reps = (int)a.i[0], boxes = (int)a.i[1], rows = (int)a.i[2];
  const uint32_t bytes = (uint32_t)(boxes * rows * 128);
  const int y0 = (int)(a.i[3] + blockIdx.x * a.i[6]);
  uint32_t phase = 0;
  long long* o = (long long*)a.p[0] + blockIdx.x * 64;
  if (a.i[5]) {
    mbar_expect_tx(bar, bytes);
    for (int b = 0; b < boxes; ++b) tma_load_2d(dst + b * rows * 128, &tmap, 0, y0 + b * rows, bar);
    mbar_wait(bar, phase);
    phase ^= 1;
  }
  const uint64_t c0 = clk64(), g0 = gtimer();
  for (int r = 0; r < reps; ++r) {
    const int y = y0 + (int)(r * a.i[4]);
    const uint64_t t0 = clk64();
    mbar_expect_tx(bar, bytes);
    for (int b = 0; b < boxes; ++b) tma_load_2d(dst + b * rows * 128, &tmap, 0, y + b * rows, bar);
    mbar_wait(bar, phase);
    const uint64_t t1 = clk64();
    phase ^= 1;
    o[8 + r] = (long long)(t1 - t0);
  }
  const uint64_t c1 = clk64(), g1 = gtimer();
  write_span(o, c0, c1, g0, g1);
}

// Streaming: `stages` SMEM buffers, each refilled as soon as its load lands (nothing reads the data).
// Box b of this block is (b0 + b) mod (nbx * nby), at x = (b mod nbx) * box_cols, y = (b div nbx) * box_rows.
// The loop does no division (64-bit division costs hundreds of cycles of the one issuing thread).
// p[0] = out (8 int64 per block), i[0] = nbx, i[1] = nby, i[2] = boxes per block, i[3] = stages (<= 8),
// i[4] = bytes per box, i[5] = boxes between the blocks' first boxes, i[6] = box rows, i[7] = box cols.
extern "C" __global__ void __launch_bounds__(32, 1) tma_stream(const __grid_constant__ TmaDesc tmap, const Args a) {
  extern __shared__ uint8_t dyn[];
  __shared__ __align__(8) uint64_t bars[8];
  if (threadIdx.x != 0) return;
  const uint32_t base = smem_base_1k(dyn), bar0 = smem_u32(&bars[0]);
  tma_prefetch_desc(&tmap);
  const int nbx = (int)a.i[0], nby = (int)a.i[1];
  const int count = (int)a.i[2], stages = (int)a.i[3];
  const uint32_t bytes = (uint32_t)a.i[4];
  const int box_rows = (int)a.i[6], box_cols = (int)a.i[7];
  const long long b0 = (blockIdx.x * a.i[5]) % (a.i[0] * a.i[1]);
  int bx = (int)(b0 % nbx), by = (int)(b0 / nbx);  // the next box to load
  for (int s = 0; s < stages; ++s) mbar_init(bar0 + 8 * s, 1);
  fence_mbar_init();
  const uint64_t c0 = clk64(), g0 = gtimer();
  int issued = 0;
  for (; issued < stages && issued < count; ++issued) {
    mbar_expect_tx(bar0 + 8 * issued, bytes);
    tma_load_2d(base + issued * bytes, &tmap, bx * box_cols, by * box_rows, bar0 + 8 * issued);
    if (++bx == nbx) { bx = 0; if (++by == nby) by = 0; }
  }
  int s = 0;
  uint32_t phase = 0;
  for (int i = 0; i < count; ++i) {
    const uint32_t bar = bar0 + 8 * s;
    mbar_wait(bar, phase);
    if (issued < count) {
      mbar_expect_tx(bar, bytes);
      tma_load_2d(base + s * bytes, &tmap, bx * box_cols, by * box_rows, bar);
      if (++bx == nbx) { bx = 0; if (++by == nby) by = 0; }
      ++issued;
    }
    if (++s == stages) { s = 0; phase ^= 1u; }
  }
  const uint64_t c1 = clk64(), g1 = gtimer();
  write_span((long long*)a.p[0] + blockIdx.x * 8, c0, c1, g0, g1);
}
