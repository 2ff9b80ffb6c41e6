// Helpers shared by the microbenchmark kernels (sm_90a). Inline PTX only: each helper is one
// instruction or a short spin loop, so what a kernel times is what its name says.
#pragma once
#include <stdint.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// A TMA descriptor (cuTensorMapEncodeTiled output), passed by value as a __grid_constant__ parameter.
struct __align__(64) TmaDesc { unsigned long long opaque[16]; };

// Every kernel takes one of these by value: pointers first, then integers (host: validation/microbench/driver.py).
struct Args { unsigned long long p[8]; long long i[8]; };

__device__ __forceinline__ uint64_t gtimer() {
  uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
__device__ __forceinline__ uint64_t clk64() {
  uint64_t t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) :: "memory"); return t;
}
__device__ __forceinline__ uint32_t smid() { uint32_t r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }
__device__ __forceinline__ uint32_t nsmid() { uint32_t r; asm volatile("mov.u32 %0, %%nsmid;" : "=r"(r)); return r; }
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r;
}
__device__ __forceinline__ uint32_t cluster_id_x() {
  uint32_t r; asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r)); return r;
}
__device__ __forceinline__ uint32_t cluster_nctarank() {
  uint32_t r; asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r)); return r;
}
__device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// Dynamic shared memory rounded up to 1024 B (128-byte swizzle atoms need it); launch with 1 KiB extra.
__device__ __forceinline__ uint32_t smem_base_1k(const void* dyn) { return (smem_u32(dyn) + 1023u) & ~1023u; }

// ---- mbarrier (PTX ISA: mbarrier) -----------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
// Spin until the phase with parity `phase` of the barrier has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t phase) {
  asm volatile("{\n\t.reg .pred P1;\n"
               "MB_WAIT:\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
               "@!P1 bra MB_WAIT;\n}" :: "r"(bar), "r"(phase) : "memory");
}
// The same with cluster-scope acquire (the arrival came from another CTA of the cluster).
__device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t phase) {
  asm volatile("{\n\t.reg .pred P1;\n"
               "MB_WAITC:\n\t"
               "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 P1, [%0], %1;\n\t"
               "@!P1 bra MB_WAITC;\n}" :: "r"(bar), "r"(phase) : "memory");
}
// Non-blocking polls (no suspend): spin on test_wait instead of try_wait.
__device__ __forceinline__ void mbar_poll(uint32_t bar, uint32_t phase) {
  asm volatile("{\n\t.reg .pred P1;\n"
               "MB_POLL:\n\t"
               "mbarrier.test_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
               "@!P1 bra MB_POLL;\n}" :: "r"(bar), "r"(phase) : "memory");
}
__device__ __forceinline__ void mbar_poll_cluster(uint32_t bar, uint32_t phase) {
  asm volatile("{\n\t.reg .pred P1;\n"
               "MB_POLLC:\n\t"
               "mbarrier.test_wait.parity.acquire.cluster.shared::cta.b64 P1, [%0], %1;\n\t"
               "@!P1 bra MB_POLLC;\n}" :: "r"(bar), "r"(phase) : "memory");
}
// Address of the same shared-memory variable in CTA `rank` of the cluster.
__device__ __forceinline__ uint32_t mapa(uint32_t addr, uint32_t rank) {
  uint32_t r; asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank)); return r;
}
__device__ __forceinline__ void mbar_arrive_remote(uint32_t remote_bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote_bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive_remote_relaxed(uint32_t remote_bar) {
  asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote_bar) : "memory");
}
// The CuTe DSL's default for a remote arrival: release at CTA scope (no .cluster qualifier).
__device__ __forceinline__ void mbar_arrive_remote_cta(uint32_t remote_bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" :: "r"(remote_bar) : "memory");
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void named_bar_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory");
}

// ---- TMA (cp.async.bulk.tensor) ---------------------------------------------------------------------
__device__ __forceinline__ void tma_prefetch_desc(const TmaDesc* d) {
  asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<uint64_t>(d)) : "memory");
}
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const TmaDesc* d, int x, int y, uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"(reinterpret_cast<uint64_t>(d)), "r"(x), "r"(y), "r"(bar) : "memory");
}
__device__ __forceinline__ void tma_store_2d(const TmaDesc* d, int x, int y, uint32_t src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
               :: "l"(reinterpret_cast<uint64_t>(d)), "r"(x), "r"(y), "r"(src) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
}
template <int N> __device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory");
}
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// CuTe's Swizzle<B,4,3> on a byte offset: the 16-byte chunk index (bits 4..) XOR the row-group bits (7..).
// B = 1, 2, 3 is TMA's 32 B, 64 B, 128 B swizzle.
__device__ __forceinline__ uint32_t swizzle(uint32_t off, int b) {
  return off ^ (((off >> 7) & ((1u << b) - 1u)) << 4);
}

// Write one block's summary: clock64 and %globaltimer at start and end, and the SM.
__device__ __forceinline__ void write_span(long long* out, uint64_t c0, uint64_t c1, uint64_t g0, uint64_t g1) {
  out[0] = (long long)c0; out[1] = (long long)c1; out[2] = (long long)g0; out[3] = (long long)g1;
  out[4] = (long long)smid();
}
