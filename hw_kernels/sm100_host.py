"""Host side of the SM100 kernel: compile it for sm_100a on a machine without a Blackwell GPU.

Nothing here launches the kernel: there is no Blackwell GPU in this project (hw_kernels/SM100.md).
The target is named per compile with ``--gpu-arch sm_100a``; the DSL's arch checks read that option
before ``CUTE_DSL_ARCH``. So ``CUTE_DSL_ARCH=sm_100a`` is not required, and this module does not set
it: the DSL reads the variable once, when it is imported, and it would retarget every other compile
of the process (the sm_90a kernel's on a Hopper machine). On a CPU-only machine the DSL's default
target is sm_100 anyway; exporting ``CUTE_DSL_ARCH=sm_100a`` before Python starts is harmless there.
Example tensors are CPU torch tensors with dynamic layouts, the stream is a fake one.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from typing import Any

SM100_ARCH = "sm_100a"


@dataclass
class CompiledSm100:
    """A compiled kernel and what was compiled."""

    kernel: Any      # the Sm100TmaWsGemm instance (its counts and shapes are set by the compile)
    fn: Any          # the compiled function (cannot run here)
    dtype: str
    ptx: str


def _torch_dtype(dtype: str):
    import torch

    table = {"bf16": torch.bfloat16, "fp16": torch.float16}
    if dtype not in table:
        from simulator.errors import ConfigError

        raise ConfigError(f"dtype={dtype!r}: valid: {sorted(table)}")
    return table[dtype]


def _dynamic(t, leading_dim: int):
    """A CPU torch tensor as a CuTe tensor with dynamic shape and strides (16-byte aligned)."""
    from cutlass.cute.runtime import from_dlpack

    return from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=leading_dim)


def compile_sm100(config=None, dtype: str = "bf16", m: int = 512, n: int = 512, k: int = 256,
                  l: int = 1) -> CompiledSm100:  # noqa: E741 (CUTLASS's name for the batch mode)
    """Compile the SM100 kernel for sm_100a on the CPU.

    ``config``: a :class:`simulator.kernels.sm100_config.Sm100GemmConfig` (default: its defaults, the seed's 2-SM
    256x256 tile on a 2x1 cluster), or an :class:`~hw_kernels.sm100_gemm.Sm100TmaWsGemm`. Shapes are
    dynamic; ``m, n, k, l`` only size the example tensors.
    """
    import cutlass
    import cutlass.cute as cute
    import torch

    from simulator.kernels.sm100_config import Sm100GemmConfig

    from .sm100_gemm import Sm100TmaWsGemm

    if isinstance(config, Sm100TmaWsGemm):
        kern = config
        if kern.dtype != dtype:
            raise ValueError(f"dtype={dtype!r}: the kernel object was built for dtype={config.dtype!r}")
    else:
        kern = Sm100TmaWsGemm.from_config(config if config is not None else Sm100GemmConfig(), dtype=dtype)
    Sm100TmaWsGemm.can_implement(m, n, k, l, **kern.parameters())
    td = _torch_dtype(dtype)
    # (M, K, L), (N, K, L), (M, N, L) views with K (resp. N) contiguous: K-major A and B, N-major D.
    a = torch.empty(l, m, k, dtype=td).permute(1, 2, 0)
    b = torch.empty(l, n, k, dtype=td).permute(1, 2, 0)
    d = torch.empty(l, m, n, dtype=td).permute(1, 2, 0)
    stream = cute.runtime.make_fake_stream()
    # The tile order (raster, swizzle, transposed grid) is a run-time argument: the seed's, for this
    # problem (hw_kernels/schedule.py clc_schedule, checked against the model's TileRaster).
    order = [cutlass.Int32(x) for x in sm100_schedule(kern, m, n, l, config).kernel_args()]
    # --keep-ptx fills artifacts.PTX; the files it also writes go to a scratch folder, not the CWD.
    with tempfile.TemporaryDirectory(prefix="wsim-sm100-") as dump:
        fn = cute.compile(kern, _dynamic(a, 1), _dynamic(b, 1), _dynamic(d, 1), *order, stream,
                          options=f"--gpu-arch {SM100_ARCH} --keep-ptx --dump-dir {dump}")
        ptx = fn.artifacts.PTX or ""
    return CompiledSm100(kern, fn, dtype, ptx)


def sm100_schedule(kernel, m: int, n: int, l: int = 1, config=None):  # noqa: E741
    """The CLC tile order the kernel runs for an ``m x n (x l)`` problem: raster and swizzle of
    ``config`` (a ``Sm100GemmConfig``; default: heuristic raster, no swizzle), tiles and cluster of
    ``kernel`` (an ``Sm100TmaWsGemm``)."""
    from .schedule import clc_schedule

    raster = getattr(config, "raster", "heuristic")
    swizzle = getattr(config, "swizzle", 1)
    tm, tn = kernel.mma_tile_mn
    return clc_schedule(m, n, tm, tn, kernel.atom_thr_m, *kernel.cluster_mn, raster, swizzle, l)
