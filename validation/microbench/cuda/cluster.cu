// Where the CTAs of a cluster launch land. Every CTA records its SM and cluster coordinates, then
// spins until all CTAs of the grid have checked in (or a timeout): all of them checking in proves the
// launch's clusters were resident at once. p[0] = out (8 int64 per block), p[1] = a zeroed uint32
// counter, i[0] = blocks expected, i[1] = timeout in ns.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(384, 1) cluster_probe(const Args a) {
  if (threadIdx.x != 0) return;
  const uint64_t g0 = gtimer();
  unsigned int* counter = (unsigned int*)a.p[1];
  atomicAdd(counter, 1u);
  unsigned int seen = 0;
  uint64_t g = g0;
  do {
    seen = atomicAdd(counter, 0u);
    g = gtimer();
  } while (seen < (unsigned int)a.i[0] && g - g0 < (uint64_t)a.i[1]);
  long long* o = (long long*)a.p[0] + blockIdx.x * 8;
  o[0] = smid(); o[1] = nsmid(); o[2] = cluster_id_x(); o[3] = cluster_ctarank(); o[4] = cluster_nctarank();
  o[5] = (long long)g0; o[6] = (long long)(g - g0); o[7] = seen;
}
