// A load generator for the clock-control microbenchmarks (validation/microbench/power.py): one CTA per SM
// (its dynamic SMEM forbids a second) holds one unit busy for a set fraction of every period, for a set
// time, and records its own clock (clock64 against %globaltimer) as it goes.
//
// Warpgroups 0 and 1 ("compute") run batches of one kind of work, each batch about 512 SM cycles when
// both run at once: 1 tensor cores (4 x wgmma m64n128k16 SS per warpgroup, pipelined: the SM's tensor
// rate: power_tc), shared memory (16 x ld.shared.v4 per thread: power_smem), FP32 FMAs (4 chains x 64 per
// thread: power_fma) or none (power_none).
// Warpgroup 2 ("memory"): one thread streams 16 KiB cp.async.bulk loads (TMA, 6 in flight) from a
// buffer of a set footprint into SMEM (an L2-resident footprint reads L2, a large one HBM).
// Every period each warpgroup runs its batches, then (if a period is set) sleeps until the period ends;
// a per-warpgroup named barrier keeps its warps in step and carries the stop flag (%globaltimer past
// the set duration).
//
// p[0] = 16-bit source for the SMEM operands (>= 48 KiB; its values are the input data),
// p[1] = memory buffer (footprint bytes), p[2] = trace (TRACE_BLOCKS x capacity x 2 int64: clock64,
// %globaltimer at a period start of warpgroup 0), p[3] = summary (SUMMARY_WORDS int64 per block).
// i[0] = duration ns, i[1] = unused (the kernel is the compute kind), i[2] = compute batches per period, i[3] = compute period
// cycles (0: no idle), i[4] = memory batches per period (0: memory warpgroup idle), i[5] = memory
// period cycles, i[6] = memory footprint bytes (a multiple of 16 KiB, > 16 KiB x grid), i[7] = trace:
// sample every (i[7] & 0xfffff) periods (0: none), capacity i[7] >> 20 samples per traced block.
#include "common.cuh"

#define TRACE_BLOCKS 4
#define SUMMARY_WORDS 10
#define MEM_STAGES 6
#define MEM_BYTES 16384
#define IDLE_PACE_CYCLES 4096

__device__ __forceinline__ uint64_t sw128_desc(uint32_t addr) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}

__device__ __forceinline__ void mma_n128(float* d, uint64_t da, uint64_t db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
    "%64, %65, p, 1, 1, 0, 0;\n}"
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
    : "l"(da), "l"(db), "r"(1));
}

__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

// Sleep (one thread) until clock64 reaches t_end.
__device__ __forceinline__ void idle_until(uint64_t t_end) {
  while (clk64() < t_end) __nanosleep(64);
}

template <int KIND>
__device__ __forceinline__ void power_load(const Args& a) {
  extern __shared__ uint8_t dyn[];
  __shared__ __align__(8) uint64_t bars[MEM_STAGES];
  __shared__ volatile int stop_flag[3][2];
  const uint32_t base = smem_base_1k(dyn);
  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 127;
  const bool leader = lane == 0;
  // SMEM: B operand 128 rows x 128 B (16 KiB), A operands 2 x 64 rows x 128 B (16 KiB), then the
  // memory stages (6 x 16 KiB). The operands are filled from p[0] (the input data).
  const uint32_t b_smem = base, a_smem = base + 16384, mem_smem = base + 32768;
  const uint4* src = (const uint4*)a.p[0];
  for (uint32_t j = tid; j < 32768 / 16; j += blockDim.x) {
    uint4 v = src[j];
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" :: "r"(base + j * 16), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
  }
  if (tid == 256) {
    for (int s = 0; s < MEM_STAGES; ++s) mbar_init(smem_u32(&bars[s]), 1);
    fence_mbar_init();
  }
  fence_proxy_async_smem();
  __syncthreads();

  const uint64_t g_end = gtimer() + (uint64_t)a.i[0];
  const int kind = wg < 2 ? KIND : 4;
  const long long batches = wg < 2 ? a.i[2] : a.i[4];
  long long period = wg < 2 ? a.i[3] : a.i[5];
  if (batches == 0 || kind == 0) period = IDLE_PACE_CYCLES;   // an idle warpgroup paces itself
  const bool working = batches > 0 && kind != 0;
  const int sample_every = (int)(a.i[7] & 0xfffff);
  const long long capacity = a.i[7] >> 20;
  long long* trace = (long long*)a.p[2] + (long long)blockIdx.x * capacity * 2;
  const bool tracing = wg == 0 && leader && sample_every > 0 && blockIdx.x < TRACE_BLOCKS;

  float acc[64];
#pragma unroll
  for (int j = 0; j < 64; ++j) acc[j] = 0.0f;
  uint32_t sink = 0;
  float x0 = tid * 1e-3f, x1 = x0 + 0.1f, x2 = x0 + 0.2f, x3 = x0 + 0.3f;
  const float y = 1.0001f;
  const uint64_t db = sw128_desc(b_smem), da = sw128_desc(a_smem + (wg & 1) * 8192);
  // memory warpgroup state (its leader only)
  const char* mbuf = (const char*)a.p[1];
  const unsigned long long footprint = (unsigned long long)a.i[6];
  const unsigned long long step = (unsigned long long)gridDim.x * MEM_BYTES;
  unsigned long long off = (unsigned long long)blockIdx.x * MEM_BYTES;
  uint32_t phases = 0;
  int stage = 0;
  long long mem_bytes = 0;
  if (wg == 2 && leader && working) {
    for (int s = 0; s < MEM_STAGES; ++s) {
      const uint32_t bar = smem_u32(&bars[s]);
      mbar_expect_tx(bar, MEM_BYTES);
      bulk_load(mem_smem + s * MEM_BYTES, mbuf + off, MEM_BYTES, bar);
      off += step;
      if (off >= footprint) off -= footprint;
    }
  }

  uint64_t c0 = 0, g0 = 0, busy = 0;
  long long done = 0, samples = 0;
  for (long long p = 0;; ++p) {
    if (leader) {
      const uint64_t g = gtimer();
      if (p == 0) { c0 = clk64(); g0 = g; }
      stop_flag[wg][p & 1] = g >= g_end;
      if (tracing && p % sample_every == 0 && samples < capacity) {
        trace[samples * 2] = (long long)clk64();
        trace[samples * 2 + 1] = (long long)g;
        ++samples;
      }
    }
    named_bar_sync(1 + wg, 128);
    if (stop_flag[wg][p & 1]) break;
    const uint64_t t0 = clk64();
    if (working) {
      if (KIND == 1 && kind == 1) {
        for (long long b = 0; b < batches; ++b) {
          wg_fence();
#pragma unroll
          for (int k = 0; k < 4; ++k) mma_n128(acc, da + 2 * k, db + 2 * k);
          wg_commit();
          wg_wait<1>();
        }
        wg_wait<0>();
      } else if (KIND == 2 && kind == 2) {
        for (long long b = 0; b < batches; ++b) {
#pragma unroll
          for (int j = 0; j < 16; ++j) {
            uint32_t v0, v1, v2, v3;
            const uint32_t addr = base + ((uint32_t)(lane * 16 + j * 2048 + wg * 32768) & 65535u);
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "r"(addr) : "memory");
            sink ^= v0 ^ v1 ^ v2 ^ v3;
          }
        }
      } else if (KIND == 3 && kind == 3) {
        for (long long b = 0; b < batches; ++b) {
#pragma unroll 16
          for (int j = 0; j < 64; ++j) {
            x0 = fmaf(x0, y, 1e-7f); x1 = fmaf(x1, y, 1e-7f); x2 = fmaf(x2, y, 1e-7f); x3 = fmaf(x3, y, 1e-7f);
          }
          x0 *= 0.99f; x1 *= 0.99f; x2 *= 0.99f; x3 *= 0.99f;
        }
      } else if (kind == 4 && leader) {
        for (long long b = 0; b < batches; ++b) {
          const uint32_t bar = smem_u32(&bars[stage]);
          mbar_wait(bar, (phases >> stage) & 1u);
          phases ^= 1u << stage;
          mem_bytes += MEM_BYTES;
          mbar_expect_tx(bar, MEM_BYTES);
          bulk_load(mem_smem + stage * MEM_BYTES, mbuf + off, MEM_BYTES, bar);
          off += step;
          if (off >= footprint) off -= footprint;
          if (++stage == MEM_STAGES) stage = 0;
        }
      }
      done += batches;
    }
    if (leader) {
      const uint64_t t1 = clk64();
      busy += working ? t1 - t0 : 0;
      if (period > 0) idle_until(t0 + (uint64_t)period);
    }
  }
  if (wg == 2 && leader && working) {   // drain the loads in flight
    for (int s = 0; s < MEM_STAGES; ++s) {
      mbar_wait(smem_u32(&bars[stage]), (phases >> stage) & 1u);
      if (++stage == MEM_STAGES) stage = 0;
    }
  }
  const uint64_t c1 = clk64(), g1 = gtimer();
  float fsum = x0 + x1 + x2 + x3;
#pragma unroll
  for (int j = 0; j < 64; ++j) fsum += acc[j];
  long long* o = (long long*)a.p[3] + (long long)blockIdx.x * SUMMARY_WORDS;
  if (tid == 0) {
    write_span(o, c0, c1, g0, g1);
    o[5] = (long long)busy;
    o[6] = done;
    o[9] = (long long)(sink ^ (uint32_t)__float_as_int(fsum));
  }
  if (tid == 256) {
    o[7] = mem_bytes;
    o[8] = (long long)busy;
  }
  if (tid == 0 && blockIdx.x < TRACE_BLOCKS && capacity > 0) {
    // the number of samples is the word after the last one written: a -1 marks the end
    if (samples < capacity) trace[samples * 2] = -1;
  }
}

// One kernel per compute kind (i[1] is not read: the kernel's name is the kind).
extern "C" __global__ void __launch_bounds__(384, 1) power_none(const Args a) { power_load<0>(a); }
extern "C" __global__ void __launch_bounds__(384, 1) power_tc(const Args a) { power_load<1>(a); }
extern "C" __global__ void __launch_bounds__(384, 1) power_smem(const Args a) { power_load<2>(a); }
extern "C" __global__ void __launch_bounds__(384, 1) power_fma(const Args a) { power_load<3>(a); }
