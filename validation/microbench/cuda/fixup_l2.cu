// The stream-K fixup's workspace accesses while other SMs stream TMA loads (issue 18).
#include "common.cuh"

// One CTA per SM (launch with enough dynamic SMEM for that). Blocks [0, n_ws) move workspace slices
// as the twin's fixup does: each of 2 warpgroups owns a slice of NACC x 128 floats, thread t of a
// group touching float j * 128 + t (one word per thread per access, a warp covers 128 contiguous
// bytes). Blocks [n_ws, n_ws + n_load) stream TMA loads of 128 x 64 fp16 boxes (16 KiB, `stages` in
// flight) of their own stripe of an nbx-box-long row band, optionally paced (box i issued no earlier
// than `pace` cycles x i after the start), for `duration` cycles. The rest exit.
// The workspace blocks first spin `delay` cycles (the loads reach steady state), then run `reps`
// rounds of `op` on slice (block, group, round): 0 store, 1 load (ld.global.cg, summed), 2 read-add-
// write, 3 red.global.add.f32. For ops 1-3 the slice is stored once (untimed) before the delay.
// Per round, thread 0 of each group records: start (after bar.sync of the group), issued (the group's
// last access issued: bar.sync), fenced (after __threadfence, as the twin's fixup arrive does).
// p[0] = out: per block 8 int64 span (loaders: c0, c1, g0, g1, smid, boxes), then at p[1] per block
//        2 groups x reps x 3 int64 (clock64) records; p[2] = workspace (floats); p[3] = sink.
// i[0] = n_ws, i[1] = n_load, i[2] = op, i[3] = reps, i[4] = delay, i[5] = duration, i[6] = nbx,
// i[7] = pace (bits 0-31, cycles per box) | stages << 32.

// Loads go out CHUNK at a time per thread (the registers of a 128-float accumulator allow no more).
constexpr int CHUNK = 32;

template <int NACC>
__device__ __forceinline__ void ws_round(float* slice, int op, int t, float* acc) {
  if (op == 0) {
#pragma unroll
    for (int j = 0; j < NACC; ++j) slice[j * 128 + t] = acc[j];
  } else if (op == 1) {
#pragma unroll
    for (int c = 0; c < NACC; c += CHUNK) {
      float v[CHUNK];
#pragma unroll
      for (int j = 0; j < CHUNK; ++j) v[j] = __ldcg(slice + (c + j) * 128 + t);
#pragma unroll
      for (int j = 0; j < CHUNK; ++j) acc[c + j] += v[j];
    }
  } else if (op == 2) {
#pragma unroll
    for (int c = 0; c < NACC; c += CHUNK) {
      float v[CHUNK];
#pragma unroll
      for (int j = 0; j < CHUNK; ++j) v[j] = __ldcg(slice + (c + j) * 128 + t);
#pragma unroll
      for (int j = 0; j < CHUNK; ++j) slice[(c + j) * 128 + t] = acc[c + j] + v[j];
    }
  } else {
#pragma unroll
    for (int j = 0; j < NACC; ++j) atomicAdd(slice + j * 128 + t, acc[j]);
  }
}

template <int NACC>
__device__ void ws_block(const Args& a) {
  const int tid = threadIdx.x, group = tid / 128, t = tid % 128;
  if (group >= 2) return;
  const int op = (int)a.i[2], reps = (int)a.i[3];
  const long long delay = a.i[4];
  float* ws = (float*)a.p[2];
  const size_t slice_floats = (size_t)NACC * 128;
  float acc[NACC];
#pragma unroll
  for (int j = 0; j < NACC; ++j) acc[j] = (float)(j + t) * 0.5f;
  const uint64_t c_start = clk64();
  if (op != 0) {
    for (int r = 0; r < reps; ++r)
      ws_round<NACC>(ws + ((size_t)(blockIdx.x * 2 + group) * reps + r) * slice_floats, 0, t, acc);
    __threadfence();
  }
  while ((long long)(clk64() - c_start) < delay) { }
  long long* rec = (long long*)a.p[1] + ((size_t)blockIdx.x * 2 + group) * reps * 3;
  for (int r = 0; r < reps; ++r) {
    float* slice = ws + ((size_t)(blockIdx.x * 2 + group) * reps + r) * slice_floats;
    named_bar_sync(1 + group, 128);
    const uint64_t c0 = clk64();
    ws_round<NACC>(slice, op, t, acc);
    named_bar_sync(1 + group, 128);
    const uint64_t c1 = clk64();
    if (t == 0) __threadfence();
    const uint64_t c2 = clk64();
    if (t == 0) { rec[r * 3] = (long long)c0; rec[r * 3 + 1] = (long long)c1; rec[r * 3 + 2] = (long long)c2; }
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < NACC; ++j) s += acc[j];
  if (s == 1234.5f) ((float*)a.p[3])[0] = s;      // keeps the loads live
}

__device__ void load_block(const TmaDesc* tmap, const Args& a, uint8_t* dyn, uint64_t* bars) {
  if (threadIdx.x != 0) return;
  const uint32_t base = smem_base_1k(dyn), bar0 = smem_u32(&bars[0]);
  tma_prefetch_desc(tmap);
  const long long duration = a.i[5];
  const int nbx = (int)a.i[6];
  const long long pace = a.i[7] & 0xffffffffLL;
  const int stages = (int)(a.i[7] >> 32);
  const uint32_t bytes = 128 * 64 * 2;
  const int y = (int)(blockIdx.x - a.i[0]) * 128;
  int bx = (int)((blockIdx.x * 7) % nbx);
  for (int s = 0; s < stages; ++s) mbar_init(bar0 + 8 * s, 1);
  fence_mbar_init();
  const uint64_t c0 = clk64(), g0 = gtimer();
  long long issued = 0, landed = 0;
  for (; issued < stages; ++issued) {
    mbar_expect_tx(bar0 + 8 * issued, bytes);
    tma_load_2d(base + issued * bytes, tmap, bx * 64, y, bar0 + 8 * issued);
    if (++bx == nbx) bx = 0;
  }
  int s = 0;
  uint32_t phase = 0;
  while (true) {
    const uint32_t bar = bar0 + 8 * s;
    mbar_wait(bar, phase);
    ++landed;
    const long long now = (long long)(clk64() - c0);
    if (now >= duration) break;
    while (pace && (long long)(clk64() - c0) < pace * issued) { }
    mbar_expect_tx(bar, bytes);
    tma_load_2d(base + s * bytes, tmap, bx * 64, y, bar);
    if (++bx == nbx) bx = 0;
    ++issued;
    if (++s == stages) { s = 0; phase ^= 1u; }
  }
  // drain the loads still in flight before the CTA exits
  for (long long k = landed; k < issued; ++k) {
    if (++s == stages) { s = 0; phase ^= 1u; }
    mbar_wait(bar0 + 8 * s, phase);
  }
  const uint64_t c1 = clk64(), g1 = gtimer();
  long long* out = (long long*)a.p[0] + blockIdx.x * 8;
  write_span(out, c0, c1, g0, g1);
  out[5] = landed;
}

template <int NACC>
__device__ void fixup_l2_body(const TmaDesc* tmap, const Args& a) {
  extern __shared__ uint8_t dyn[];
  __shared__ __align__(8) uint64_t bars[8];
  const long long n_ws = a.i[0], n_load = a.i[1];
  if (blockIdx.x < n_ws) {
    const uint64_t c0 = clk64(), g0 = gtimer();
    ws_block<NACC>(a);
    __syncthreads();
    if (threadIdx.x == 0) write_span((long long*)a.p[0] + blockIdx.x * 8, c0, clk64(), g0, gtimer());
  } else if (blockIdx.x < n_ws + n_load) {
    load_block(tmap, a, dyn, bars);
  }
}

extern "C" __global__ void __launch_bounds__(256, 1) fixup_l2_n64(const __grid_constant__ TmaDesc tmap, const Args a) {
  fixup_l2_body<64>(&tmap, a);
}
extern "C" __global__ void __launch_bounds__(256, 1) fixup_l2_n128(const __grid_constant__ TmaDesc tmap, const Args a) {
  fixup_l2_body<128>(&tmap, a);
}
