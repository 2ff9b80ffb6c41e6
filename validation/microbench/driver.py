"""A thin layer over the CUDA driver API (cuda-bindings) for the microbenchmarks: load a cubin, launch a
kernel (optionally in a cluster, with a TMA descriptor), allocate and copy, ask occupancy questions.

Every kernel of ``validation/microbench/cuda`` takes ``(const Args)`` or ``(const __grid_constant__
TmaDesc, ..., const Args)`` (one or more descriptors): :class:`Args` below is the host image of the C struct (8 pointers, 8 integers).
Only :class:`Args` and :func:`span_summary` are usable without a GPU.
"""

from __future__ import annotations

import ctypes
import statistics
from pathlib import Path


class Args(ctypes.Structure):
    """``struct Args { unsigned long long p[8]; long long i[8]; }`` of ``cuda/common.cuh``."""

    _fields_ = [("p", ctypes.c_uint64 * 8), ("i", ctypes.c_int64 * 8)]

    @classmethod
    def of(cls, ptrs=(), ints=()) -> Args:
        ptrs, ints = list(ptrs), list(ints)
        if len(ptrs) > 8 or len(ints) > 8:
            raise ValueError(f"Args holds 8 pointers and 8 integers, got {len(ptrs)} and {len(ints)}")
        a = cls()
        for j, v in enumerate(ptrs):
            a.p[j] = int(v)
        for j, v in enumerate(ints):
            a.i[j] = int(v)
        return a


def span_summary(rows) -> dict:
    """Summarise per-block ``write_span`` records ``(clock0, clock1, gtimer0, gtimer1, smid, ...)``:
    cycles and ns per block (median, min, max), the launch's wall span by %globaltimer, the effective
    SM clock (median over blocks of cycles / ns) and how many distinct SMs ran blocks."""
    cyc = [int(r[1]) - int(r[0]) for r in rows]
    ns = [int(r[3]) - int(r[2]) for r in rows]
    mhz = [c / n * 1e3 for c, n in zip(cyc, ns, strict=True) if n > 0]
    span = max(int(r[3]) for r in rows) - min(int(r[2]) for r in rows)
    return {"blocks": len(rows), "sms": len({int(r[4]) for r in rows}),
            "cycles_median": statistics.median(cyc), "cycles_min": min(cyc), "cycles_max": max(cyc),
            "ns_median": statistics.median(ns), "wall_ns": span,
            "clock_mhz": round(statistics.median(mhz), 1) if mhz else None}


def _check(res):
    """cuda-bindings returns (CUresult, values...): raise on an error, return the values."""
    from cuda.bindings import driver as cu
    err, rest = (res[0], res[1:]) if isinstance(res, tuple) else (res, ())
    if err != cu.CUresult.CUDA_SUCCESS:
        _, msg = cu.cuGetErrorString(err)
        raise RuntimeError(f"CUDA driver error {int(err)}: {msg.decode() if msg else err}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


class Gpu:
    """Device 0's primary context, the loaded modules and the allocations of one process."""

    def __init__(self):
        from cuda.bindings import driver as cu
        self.cu = cu
        _check(cu.cuInit(0))
        self.dev = _check(cu.cuDeviceGet(0))
        self.ctx = _check(cu.cuDevicePrimaryCtxRetain(self.dev))
        _check(cu.cuCtxSetCurrent(self.ctx))
        self.name = _check(cu.cuDeviceGetName(128, self.dev)).split(b"\0")[0].decode()
        A = cu.CUdevice_attribute
        self.sm_count = self.attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.l2_bytes = self.attr(A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
        self.smem_optin = self.attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.smem_per_sm = self.attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
        self.driver_version = _check(cu.cuDriverGetVersion())
        self._modules: dict[str, object] = {}
        self._funcs: dict[tuple[str, str], object] = {}
        self._allocs: list[int] = []

    def attr(self, a) -> int:
        return int(_check(self.cu.cuDeviceGetAttribute(a, self.dev)))

    # ------------------------------------------------------------------ modules and launches
    def func(self, cubin: Path, name: str):
        key = (str(cubin), name)
        if key not in self._funcs:
            if str(cubin) not in self._modules:
                import numpy as np
                image = np.frombuffer(Path(cubin).read_bytes(), dtype=np.uint8)
                self._modules[str(cubin)] = _check(self.cu.cuModuleLoadData(image.ctypes.data))
            self._funcs[key] = _check(self.cu.cuModuleGetFunction(self._modules[str(cubin)], name.encode()))
        return self._funcs[key]

    def _config(self, grid, block, smem, cluster):
        cu = self.cu
        cfg = cu.CUlaunchConfig()
        g = (grid, 1, 1) if isinstance(grid, int) else tuple(grid)
        b = (block, 1, 1) if isinstance(block, int) else tuple(block)
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = g
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = b
        cfg.sharedMemBytes = int(smem)
        cfg.hStream = cu.CUstream(0)
        if cluster:
            at = cu.CUlaunchAttribute()
            at.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            at.value.clusterDim.x, at.value.clusterDim.y, at.value.clusterDim.z = int(cluster), 1, 1
            cfg.attrs = [at]
            cfg.numAttrs = 1
        else:
            cfg.numAttrs = 0
        return cfg

    def prepare(self, fn, smem: int = 0, cluster: int = 0) -> None:
        """Function attributes a launch needs: the dynamic SMEM limit, non-portable cluster sizes."""
        F = self.cu.CUfunction_attribute
        if smem > 48 * 1024:
            _check(self.cu.cuFuncSetAttribute(fn, F.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(smem)))
        if cluster > 8:
            _check(self.cu.cuFuncSetAttribute(fn, F.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1))

    def launch(self, fn, grid, block, args: Args, *, smem: int = 0, cluster: int = 0, tmap=None,
               sync: bool = True) -> None:
        """Launch ``fn(tmap?, args)`` (``tmap``: one descriptor, or a tuple of them passed in order); with
        ``sync`` wait for it and raise on any error."""
        self.prepare(fn, smem, cluster)
        maps = () if tmap is None else (tuple(tmap) if isinstance(tmap, (tuple, list)) else (tmap,))
        ptrs = [m.getPtr() for m in maps] + [ctypes.addressof(args)]
        params = (ctypes.c_void_p * len(ptrs))(*ptrs)
        _check(self.cu.cuLaunchKernelEx(self._config(grid, block, smem, cluster), fn,
                                        ctypes.addressof(params), 0))
        if sync:
            self.sync()

    def sync(self) -> None:
        _check(self.cu.cuCtxSynchronize())

    def wait(self, poll_s: float = 0.0005) -> None:
        """Wait for stream 0 by polling (sleeping between polls), so that other Python threads (an NVML
        sampler) keep running while a long kernel runs; raise on any error."""
        import time
        cu = self.cu
        while True:
            res = cu.cuStreamQuery(cu.CUstream(0))
            err = res[0] if isinstance(res, tuple) else res
            if err == cu.CUresult.CUDA_SUCCESS:
                return
            if err != cu.CUresult.CUDA_ERROR_NOT_READY:
                _check(res)
            time.sleep(poll_s)

    def max_active_clusters(self, fn, cluster: int, block: int, smem: int) -> int:
        """``cuOccupancyMaxActiveClusters`` (the driver's cudaOccupancyMaxActiveClusters)."""
        self.prepare(fn, smem, cluster)
        return int(_check(self.cu.cuOccupancyMaxActiveClusters(fn, self._config(cluster, block, smem, cluster))))

    # ------------------------------------------------------------------ memory
    def alloc(self, nbytes: int) -> int:
        p = int(_check(self.cu.cuMemAlloc(int(nbytes))))
        self._allocs.append(p)
        return p

    def free(self, p: int) -> None:
        _check(self.cu.cuMemFree(p))
        self._allocs.remove(p)

    def memset(self, p: int, byte: int, nbytes: int) -> None:
        _check(self.cu.cuMemsetD8(p, byte, int(nbytes)))

    def h2d(self, p: int, arr) -> None:
        _check(self.cu.cuMemcpyHtoD(p, arr.ctypes.data, arr.nbytes))

    def d2h(self, arr, p: int):
        _check(self.cu.cuMemcpyDtoH(arr.ctypes.data, p, arr.nbytes))
        return arr

    def tensor_map_2d(self, ptr: int, cols: int, rows: int, pitch_bytes: int, box_cols: int, box_rows: int,
                      swizzle_bytes: int = 128, bf16: bool = False):
        """A 2-D TMA descriptor of 16-bit elements: ``rows`` x ``cols``, rows ``pitch_bytes`` apart, box
        ``box_rows`` x ``box_cols``, swizzle 0/32/64/128 B (the SMEM side of every load/store)."""
        cu = self.cu
        dt = (cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 if bf16
              else cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16)
        sw = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}[swizzle_bytes]
        return _check(cu.cuTensorMapEncodeTiled(
            dt, 2, int(ptr), [cu.cuuint64_t(cols), cu.cuuint64_t(rows)], [cu.cuuint64_t(pitch_bytes)],
            [cu.cuuint32_t(box_cols), cu.cuuint32_t(box_rows)], [cu.cuuint32_t(1), cu.cuuint32_t(1)],
            cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            getattr(cu.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{sw}"),
            cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))

    # ------------------------------------------------------------------ common kernels
    def util(self, name: str):
        from .build import cubin_path
        return self.func(cubin_path("util"), name)

    def fill_random(self, p: int, elems: int, seed: int = 1, bf16: bool = False) -> None:
        self.launch(self.util("fill_random16"), 4 * self.sm_count, 256,
                    Args.of([p], [elems, seed, 1 if bf16 else 0]))

    def flush_l2(self) -> None:
        """Read a buffer of 4x the L2 once, so that nothing the next kernel reads is in L2."""
        if not hasattr(self, "_flush_buf"):
            self._flush_bytes = 4 * self.l2_bytes
            self._flush_buf = self.alloc(self._flush_bytes)
            self._sink = self.alloc(64)
            self.memset(self._flush_buf, 1, self._flush_bytes)
        self.launch(self.util("l2_flush"), 4 * self.sm_count, 512,
                    Args.of([self._flush_buf, self._sink], [self._flush_bytes // 16]))

    def spans(self, p: int, blocks: int, words: int = 5):
        """Read ``blocks`` records of ``words`` int64 from device memory."""
        import numpy as np
        out = np.zeros((blocks, words), dtype=np.int64)
        return self.d2h(out, p)
