"""NVIDIA's nvMatmulHeuristics as a baseline: its runtime estimate for the config that ran, and its
own top pick (``pip install -e '.[baselines]'``; without it the baseline is reported as not run).

Each config is given to the library as a CUTLASS 3 kernel (target CUTLASS3) on its predefined
``H200_SXM`` or ``B200`` descriptor: CTA tile (M, N, K), cluster, mainloop stages, swizzle and
raster; the warp and instruction shapes are the ones its own picks carry (64x64x64, 64x8x16:
its estimate does not depend on them). The estimate goes through ``nvMatmulHeuristicsEstimateRuntime``,
the path the library's ``get()`` uses.
"""

from __future__ import annotations

import ctypes
import functools

#: ArchSpec name -> the library's predefined GPU.
GPUS = {"H200": "H200_SXM", "B200": "B200"}
#: Our A/B/C/D dtype -> the library's precision string (A&B, compute, C&D).
PRECISIONS = {"fp16": "HSH", "bf16": "TST"}
WARP_TILE = (64, 64, 64)
INSTR_TILE = (64, 8, 16)


def unavailable() -> str | None:
    """Why the baseline cannot run here, or None."""
    try:
        import nvMatmulHeuristics  # noqa: F401
    except ImportError as e:
        return f"nvidia-matmul-heuristics is not installed (pip install -e '.[baselines]'): {e}"
    return None


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as v
    try:
        return v("nvidia-matmul-heuristics")
    except PackageNotFoundError:
        return "-"


class Heuristics:
    """The library for one GPU, CUTLASS3 target, A row-major and B given as N x K (``NT`` row-major)."""

    def __init__(self, arch_name: str):
        import nvMatmulHeuristics as nv
        if arch_name not in GPUS:
            raise ValueError(f"arch={arch_name!r}: nvMatmulHeuristics has no descriptor here; known: {', '.join(GPUS)}")
        self.nv = nv
        self.gpu = GPUS[arch_name]
        self.lib = nv.NvMatmulHeuristicsInterfaceEx(backend=nv.NvMatmulHeuristicsTarget.CUTLASS3,
                                                    gpu=getattr(nv.NvMatmulHeuristicsNvidiaGpu, self.gpu))
        self.layout = nv.NvMatmulHeuristicsMatmulLayout.NT_ROW_MAJOR

    def _problem(self, m: int, n: int, k: int, precision: str):
        self.lib._ensure_discovery_loaded(self.lib.target, precision, self.layout)
        return self.lib.makeNvMatmulHeuristicsProblem(m, n, k, self.layout)

    def estimate_us(self, cfg) -> float:
        """Its runtime estimate (us) for resolved ``cfg``; NaN where it gives none (0 or an error)."""
        precision = PRECISIONS.get(cfg.dtype_ab)
        if precision is None or cfg.dtype_d != cfg.dtype_ab:
            return float("nan")
        kc = self.lib.nvmmhKernelConfiguration()
        tile_k = getattr(cfg, "cta_tile_k", None) or cfg.tile_k
        for name, val in (("cta", (cfg.cta_tile_m, cfg.cta_tile_n, tile_k)), ("warp", WARP_TILE),
                          ("instr", INSTR_TILE)):
            arr = getattr(kc, name)
            for i, v in enumerate(val):
                arr[i] = v
        kc.splitK = 1
        kc.loadStages = cfg.mainloop_stages
        kc.gridSwizzle = cfg.swizzle
        kc.ctaOrder = 1 if cfg.raster == "m" else 0
        kc.cluster[0], kc.cluster[1] = cfg.cluster_m, cfg.cluster_n
        p = self._problem(cfg.m, cfg.n, cfg.k, precision)
        t = self.lib.nvMatmulHeuristicsEstimateRuntime(self.lib.handle, precision.encode(),
                                                       ctypes.c_int(self.lib.target), ctypes.byref(p),
                                                       ctypes.byref(kc), self.lib.hardware_descriptor)
        return t * 1e6 if t and t > 0 else float("nan")

    def top_pick(self, m: int, n: int, k: int, dtype: str) -> tuple[str, float]:
        """Its own first config for the problem and that config's runtime estimate (us)."""
        p = self._problem(m, n, k, PRECISIONS[dtype])
        res = self.lib.get(p, 1, precision=PRECISIONS[dtype])
        if not res:
            return "-", float("nan")
        kc = res[0]["kernel"]
        name = (f"cta {kc.cta_tile_m}x{kc.cta_tile_n}x{kc.cta_tile_k} c{kc.cluster_m}x{kc.cluster_n} "
                f"st {kc.stages} split-K {kc.split_k}")
        return name, res[0]["runtime"] * 1e6


@functools.lru_cache(maxsize=4)
def heuristics(arch_name: str) -> Heuristics:
    return Heuristics(arch_name)
