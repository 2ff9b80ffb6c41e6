// Latencies of the memory system and of the synchronisation the kernels use.
#include "common.cuh"

// Pointer chase with ld.global.cg (L2, not L1): p[0] = start pointer per block, p[1] = out (8 int64 per
// block: span, then cycles per step in word 5), i[0] = timed steps, i[1] = untimed steps first (a warm pass).
extern "C" __global__ void __launch_bounds__(32, 1) pointer_chase(const Args a) {
  if (threadIdx.x != 0) return;
  unsigned long long p = ((const unsigned long long*)a.p[0])[blockIdx.x];
  for (long long s = 0; s < a.i[1]; ++s) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) :: "memory");
  const uint64_t c0 = clk64(), g0 = gtimer();
  for (long long s = 0; s < a.i[0]; ++s) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) :: "memory");
  const uint64_t c1 = clk64(), g1 = gtimer();
  long long* o = (long long*)a.p[1] + blockIdx.x * 8;
  write_span(o, c0, c1, g0, g1);
  o[6] = (long long)p;  // keeps the chain live
}

// Two threads of one CTA (warps 0 and 1) hand a token back and forth through two mbarriers of one
// arrival each: thread 0 arrives on A and waits on B, thread 32 waits on A and arrives on B. Also the
// one-way wake time: thread 0 stores its clock just before arriving, thread 32 reads its clock when its
// wait returns (same SM clock). p[0] = out (8 int64 per block), i[0] = round trips.
template <bool POLL>
__device__ __forceinline__ void pingpong_local(const Args& a) {
  __shared__ __align__(8) uint64_t bars[2];
  __shared__ volatile unsigned long long t_arrive;
  const uint32_t A = smem_u32(&bars[0]), B = smem_u32(&bars[1]);
  if (threadIdx.x == 0) { mbar_init(A, 1); mbar_init(B, 1); fence_mbar_init(); }
  __syncthreads();
  const int n = (int)a.i[0];
  if (threadIdx.x == 0) {
    const uint64_t c0 = clk64(), g0 = gtimer();
    for (int r = 0; r < n; ++r) {
      t_arrive = clk64();
      mbar_arrive(A);
      if (POLL) mbar_poll(B, r & 1); else mbar_wait(B, r & 1);
    }
    const uint64_t c1 = clk64(), g1 = gtimer();
    write_span((long long*)a.p[0] + blockIdx.x * 8, c0, c1, g0, g1);
  } else if (threadIdx.x == 32) {
    unsigned long long one_way = 0;
    for (int r = 0; r < n; ++r) {
      if (POLL) mbar_poll(A, r & 1); else mbar_wait(A, r & 1);
      const uint64_t t = clk64();
      one_way += t - t_arrive;
      mbar_arrive(B);
    }
    ((long long*)a.p[0])[blockIdx.x * 8 + 5] = (long long)one_way;
  }
}

extern "C" __global__ void __launch_bounds__(64, 1) mbarrier_pingpong_local(const Args a) { pingpong_local<false>(a); }
// The same with test_wait polling (never suspends) instead of try_wait.
extern "C" __global__ void __launch_bounds__(64, 1) mbarrier_pingpong_local_poll(const Args a) { pingpong_local<true>(a); }

// The same across a cluster: thread 0 of rank 0 arrives (release.cluster) on a barrier of rank `peer`
// and waits on its own; thread 0 of `peer` waits on its own and arrives on rank 0's. Launched as
// clusters of i[1] + 1 or more CTAs. p[0] = out (8 int64 per block), i[0] = round trips, i[1] = peer rank.
template <bool POLL, int ARRIVE>  // ARRIVE: 0 release.cluster, 1 relaxed.cluster, 2 release.cta (CTA-scope wait)
__device__ __forceinline__ void pingpong_remote(const Args& a) {
  __shared__ __align__(8) uint64_t bar;
  const uint32_t me = smem_u32(&bar);
  const uint32_t rank = cluster_ctarank();
  const uint32_t peer = (uint32_t)a.i[1];
  if (threadIdx.x == 0) { mbar_init(me, 1); fence_mbar_init(); }
  cluster_sync();
  const int n = (int)a.i[0];
  if (threadIdx.x == 0 && rank == 0) {
    const uint32_t there = mapa(me, peer);
    const uint64_t c0 = clk64(), g0 = gtimer();
    for (int r = 0; r < n; ++r) {
      if (ARRIVE == 1) mbar_arrive_remote_relaxed(there); else if (ARRIVE == 2) mbar_arrive_remote_cta(there); else mbar_arrive_remote(there);
      if (POLL) mbar_poll_cluster(me, r & 1); else if (ARRIVE == 2) mbar_wait(me, r & 1); else mbar_wait_cluster(me, r & 1);
    }
    const uint64_t c1 = clk64(), g1 = gtimer();
    write_span((long long*)a.p[0] + blockIdx.x * 8, c0, c1, g0, g1);
  } else if (threadIdx.x == 0 && rank == peer) {
    const uint32_t there = mapa(me, 0);
    for (int r = 0; r < n; ++r) {
      if (POLL) mbar_poll_cluster(me, r & 1); else if (ARRIVE == 2) mbar_wait(me, r & 1); else mbar_wait_cluster(me, r & 1);
      if (ARRIVE == 1) mbar_arrive_remote_relaxed(there); else if (ARRIVE == 2) mbar_arrive_remote_cta(there); else mbar_arrive_remote(there);
    }
    ((long long*)a.p[0])[blockIdx.x * 8 + 5] = (long long)smid();
  }
  cluster_sync();  // no CTA leaves while a peer may still arrive on its barrier
}
// release.cluster arrive + acquire.cluster try_wait; test_wait polling; relaxed.cluster arrive; and the CuTe
// DSL's default (release.cta arrive on the remote barrier, CTA-scope try_wait).
extern "C" __global__ void __launch_bounds__(32, 1) mbarrier_pingpong_remote(const Args a) { pingpong_remote<false, 0>(a); }
extern "C" __global__ void __launch_bounds__(32, 1) mbarrier_pingpong_remote_poll(const Args a) { pingpong_remote<true, 0>(a); }
extern "C" __global__ void __launch_bounds__(32, 1) mbarrier_pingpong_remote_relaxed(const Args a) { pingpong_remote<false, 1>(a); }
extern "C" __global__ void __launch_bounds__(32, 1) mbarrier_pingpong_remote_cta(const Args a) { pingpong_remote<false, 2>(a); }
