"""Microbenchmarks of the H200 timing constants the SM90 model uses.

One module per family, each a set of sm_90a kernels (CUDA C++ with inline PTX, compiled by nvcc:
:mod:`.build`) launched through the CUDA driver API (:mod:`.driver`):

* :mod:`.wgmma` -- wgmma SS/RS issue interval and latency per N and dtype, one and two warpgroups,
  and the cooperative / ping-pong K-block batch;
* :mod:`.epilogue` -- one epilogue subtile per size: convert + stmatrix, fence.proxy.async, bulk
  wait_group.read, named barrier, TMA store issue; TMA store read-out and write completion;
* :mod:`.tma` -- TMA load latency against bytes (L2 hit / HBM, row pitch a multiple of 128 B or not),
  and streaming TMA bandwidth against footprint and number of SMs (the L2 -> SM bandwidth);
* :mod:`.sync` -- pointer-chase L2 / HBM latency, mbarrier wake latency in a CTA and across a cluster;
* :mod:`.cluster` -- cluster residency (cuOccupancyMaxActiveClusters) and where the clusters of one
  launch land (%smid), from which the GPCs are inferred;
* :mod:`.power` (its own command, ``python -m validation.microbench.power``; issue 16) -- the clock
  control: power, NVML and in-kernel clock under set tensor-core / SMEM / L2 / HBM loads, the clock's
  fall and recovery, input data and neighbours (:mod:`validation.nvml_sampler` samples NVML).

    python -m validation.microbench.run --out OUT     # on the GPU machine: all families, JSON + .md
    python -m validation.microbench.run --dry-run     # on a CPU: build every kernel, print the plan

The memory-only microbenchmark of the first H200 constants (Triton L2 sweep, HBM copy) is
:mod:`.memory_v1`, still run by ``python -m validation.microbench --out OUT``.
"""
