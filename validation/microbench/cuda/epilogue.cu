// The SM90 twin's epilogue, one subtile at a time, without the mainloop: accumulator fragments in
// registers (the wgmma m64n128 layout: one 64-row block per warpgroup (cooperative, 256 threads) or
// two (ping-pong, 128 threads)) -> fp16 convert -> stmatrix into one of 4 swizzled SMEM buffers ->
// fence.proxy.async -> (store thread) cp.async.bulk.wait_group.read 2 -> bar.sync 1 -> (store thread)
// TMA store + commit. Tile 128 x 128; subtile 128 x EN (EN = 16, 32, 64).
#include "common.cuh"

namespace {
constexpr int TILE_M = 128, TILE_N = 128, STAGES = 4;

__device__ __forceinline__ uint32_t pack_h2(float x, float y) {
  __half2 h = __floats2half2_rn(x, y);
  return *reinterpret_cast<uint32_t*>(&h);
}
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
               :: "r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}
// The value the accumulator holds at (row, col) of a tile before the first tile (the host checks D).
__device__ __forceinline__ float pattern(int row, int col) { return (float)((row * 3 + col) % 61 - 30); }

// p[0] = out (16 int64 per block), i[0] = tiles per CTA, i[1] = tiles along N of D.
template <int EN, int RB, bool PHASES>
__device__ __forceinline__ void epilogue_bench(const TmaDesc* tmap, const Args& a) {
  extern __shared__ uint8_t dyn[];
  const uint32_t base = smem_base_1k(dyn);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const uint32_t nthreads = blockDim.x;
  constexpr int SW = EN == 16 ? 1 : (EN == 32 ? 2 : 3);
  constexpr uint32_t BUF = TILE_M * EN * 2;
  constexpr int NSUB = TILE_N / EN;
  const bool store_thread = tid == 0;
  float acc[RB][TILE_N / 2];
#pragma unroll
  for (int rb = 0; rb < RB; ++rb) {
    const int rowbase = (RB == 1 ? (warp >> 2) * 64 : rb * 64) + (warp & 3) * 16;
#pragma unroll
    for (int c = 0; c < TILE_N / 8; ++c)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        acc[rb][c * 4 + e] = pattern(rowbase + (lane >> 2) + 8 * (e >> 1), c * 8 + 2 * (lane & 3) + (e & 1));
  }
  if (tid == 0) tma_prefetch_desc(tmap);
  __syncthreads();
  const int tiles = (int)a.i[0], ntn = (int)a.i[1];
  uint64_t ph0 = 0, ph1 = 0, ph2 = 0, ph3 = 0, ph4 = 0;
  int buf = 0;
  const uint64_t c0 = clk64(), g0 = gtimer();
  for (int t = 0; t < tiles; ++t) {
    const int tile = blockIdx.x * tiles + t;
    const int ty = (tile / ntn) * TILE_M, tx = (tile % ntn) * TILE_N;
#pragma unroll
    for (int j = 0; j < NSUB; ++j) {
      const uint64_t t0 = PHASES ? clk64() : 0;
      const uint32_t sbuf = base + buf * BUF;
#pragma unroll
      for (int rb = 0; rb < RB; ++rb) {
        const int rowbase = (RB == 1 ? (warp >> 2) * 64 : rb * 64) + (warp & 3) * 16;
#pragma unroll
        for (int g = 0; g < EN / 16; ++g) {
          const int c = j * (EN / 8) + g * 2;  // first n8 chunk of this 16-column group
          const uint32_t r0 = pack_h2(acc[rb][c * 4 + 0], acc[rb][c * 4 + 1]);
          const uint32_t r1 = pack_h2(acc[rb][c * 4 + 2], acc[rb][c * 4 + 3]);
          const uint32_t r2 = pack_h2(acc[rb][c * 4 + 4], acc[rb][c * 4 + 5]);
          const uint32_t r3 = pack_h2(acc[rb][c * 4 + 6], acc[rb][c * 4 + 7]);
          const int mi = lane >> 3;
          const int row = rowbase + (mi & 1) * 8 + (lane & 7);
          const int col = g * 16 + (mi >> 1) * 8;
          stmatrix_x4(sbuf + swizzle((uint32_t)(row * EN * 2 + col * 2), SW), r0, r1, r2, r3);
        }
      }
      const uint64_t t1 = PHASES ? clk64() : 0;
      fence_proxy_async_smem();
      const uint64_t t2 = PHASES ? clk64() : 0;
      if (store_thread) bulk_wait_read<STAGES - 2>();
      const uint64_t t3 = PHASES ? clk64() : 0;
      named_bar_sync(1, nthreads);
      const uint64_t t4 = PHASES ? clk64() : 0;
      if (store_thread) {
        tma_store_2d(tmap, tx + j * EN, ty, sbuf);
        bulk_commit();
      }
      if (PHASES) {
        const uint64_t t5 = clk64();
        ph0 += t1 - t0; ph1 += t2 - t1; ph2 += t3 - t2; ph3 += t4 - t3; ph4 += t5 - t4;
      }
      buf = (buf + 1) & (STAGES - 1);
    }
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int j = 0; j < TILE_N / 2; ++j) acc[rb][j] += 1.0f;
  }
  const uint64_t c1 = clk64(), g1 = gtimer();
  if (store_thread) bulk_wait<0>();
  const uint64_t c2 = clk64();
  if (tid == 0) {
    long long* o = (long long*)a.p[0] + blockIdx.x * 16;
    write_span(o, c0, c1, g0, g1);
    o[5] = (long long)(c2 - c1);
    o[6] = (long long)ph0; o[7] = (long long)ph1; o[8] = (long long)ph2; o[9] = (long long)ph3; o[10] = (long long)ph4;
  }
}
}  // namespace

#define EPI(EN, RB, PH, NAME) \
  extern "C" __global__ void __launch_bounds__(256, 1) NAME(const __grid_constant__ TmaDesc tmap, const Args a) { \
    epilogue_bench<EN, RB, PH>(&tmap, a); }
EPI(16, 1, false, epi_e16_coop_plain)
EPI(32, 1, false, epi_e32_coop_plain)
EPI(64, 1, false, epi_e64_coop_plain)
EPI(16, 2, false, epi_e16_pp_plain)
EPI(32, 2, false, epi_e32_pp_plain)
EPI(64, 2, false, epi_e64_pp_plain)
EPI(16, 1, true, epi_e16_coop_phases)
EPI(32, 1, true, epi_e32_coop_phases)
EPI(64, 1, true, epi_e64_coop_phases)
EPI(16, 2, true, epi_e16_pp_phases)
EPI(32, 2, true, epi_e32_pp_phases)
EPI(64, 2, true, epi_e64_pp_phases)

// One TMA store of a 128 x EN subtile at a time, from one thread: cycles until its SMEM has been read
// (wait_group.read 0) and until it is written (wait_group 0). p[0] = out (8 int64 per block: sums and
// minima of both), i[0] = stores per block, i[1] = EN, i[2] = tiles along N of D (of 128 x EN boxes).
extern "C" __global__ void __launch_bounds__(128, 1) tma_store_latency(const __grid_constant__ TmaDesc tmap, const Args a) {
  extern __shared__ uint8_t dyn[];
  const uint32_t base = smem_base_1k(dyn);
  const int en = (int)a.i[1];
  for (uint32_t j = threadIdx.x; j < 128u * en * 2 / 16; j += blockDim.x)
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" :: "r"(base + j * 16), "r"(0x3c003c00u + j) : "memory");
  fence_proxy_async_smem();
  __syncthreads();
  if (threadIdx.x != 0) return;
  tma_prefetch_desc(&tmap);
  uint64_t sr = 0, sw = 0, mr = ~0ull, mw = ~0ull;
  const int n = (int)a.i[0], ntx = (int)a.i[2];
  const uint64_t c0 = clk64(), g0 = gtimer();
  for (int r = 0; r < n; ++r) {
    const int box = blockIdx.x * n + r;
    const uint64_t t0 = clk64();
    tma_store_2d(&tmap, (box % ntx) * en, (box / ntx) * 128, base);
    bulk_commit();
    bulk_wait_read<0>();
    const uint64_t t1 = clk64();
    bulk_wait<0>();
    const uint64_t t2 = clk64();
    sr += t1 - t0; sw += t2 - t0;
    mr = min(mr, t1 - t0); mw = min(mw, t2 - t0);
  }
  const uint64_t c1 = clk64(), g1 = gtimer();
  long long* o = (long long*)a.p[0] + blockIdx.x * 16;
  write_span(o, c0, c1, g0, g1);
  o[5] = (long long)sr; o[6] = (long long)sw; o[7] = (long long)mr; o[8] = (long long)mw;
}

// bar.sync 1 of the whole block, i[0] times back to back: cycles per barrier. p[0] = out (16 int64 per block).
extern "C" __global__ void __launch_bounds__(384, 1) named_barrier_loop(const Args a) {
  const int n = (int)a.i[0];
  __syncthreads();
  const uint64_t c0 = clk64(), g0 = gtimer();
  for (int r = 0; r < n; ++r) named_bar_sync(1, blockDim.x);
  const uint64_t c1 = clk64(), g1 = gtimer();
  if (threadIdx.x == 0) write_span((long long*)a.p[0] + blockIdx.x * 16, c0, c1, g0, g1);
}
