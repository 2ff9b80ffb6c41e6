"""Host side of the hardware kernels: compile (on a GPU, or for sm_90a on a CPU), launch, read records.

Needs nvidia-cutlass-dsl and torch. ``compile_sm90`` works without a GPU (it then compiles for sm_90a
against a fake stream and CPU tensors; the result can only be inspected: ``.ptx``, cubin).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from . import records as R
from .schedule import StaticSchedule, ceil_div, static_schedule

#: KernelConfig.name() of an uninstrumented kernel.
_NAME = re.compile(r"^(\d+)x(\d+)x(\d+)(_pp)?_c(\d+)x(\d+)_r([hmn])_sw(\d+)_e(\d+)(?:_s(\d+))?(?:_st(\d+))?$")

#: Persistent clusters that fit at once on an H200 (132 SMs), by cluster size, used when no GPU is
#: there to ask (CPU compiles). On the GPU the DSL's HardwareInfo answers.
H200_SMS = 132


@dataclass(frozen=True)
class KernelConfig:
    """The kernel's parameters, named as simulator.kernels.sm90_config.Sm90GemmConfig names them."""

    tile_m: int = 128
    tile_n: int = 256
    tile_k: int = 64
    cluster_m: int = 2
    cluster_n: int = 1
    schedule: str = "cooperative"
    mainloop_stages: int | None = None
    raster: str = "heuristic"
    swizzle: int = 1
    epilogue_tile_n: int = 32
    epilogue_store_stages: int = 4
    instrument: int = R.LEVEL_OFF
    instrument_roles: str = "all"  # diagnostics: which roles write K-block records (level >= 2)

    def name(self) -> str:
        lvl = {0: "", 1: "_trace-tile", 2: "_trace-kblock", 3: "_trace-kblock-epi"}[self.instrument]
        st = "" if self.mainloop_stages is None else f"_s{self.mainloop_stages}"
        st += "" if self.epilogue_store_stages == 4 else f"_st{self.epilogue_store_stages}"
        lvl += "" if self.instrument_roles == "all" else f"-{self.instrument_roles}"
        sched = "" if self.schedule == "cooperative" else "_pp"
        return (f"{self.tile_m}x{self.tile_n}x{self.tile_k}{sched}_c{self.cluster_m}x{self.cluster_n}"
                f"_r{self.raster[0]}_sw{self.swizzle}_e{self.epilogue_tile_n}{st}{lvl}")

    @classmethod
    def from_name(cls, name: str) -> KernelConfig | None:
        """The uninstrumented config ``name()`` gives ``name`` (e.g. ``128x64x64_pp_c2x1_rh_sw4_e32``),
        or None if ``name`` is not such a name (cuBLAS, an instrumented variant)."""
        mt = _NAME.match(name)
        if mt is None:
            return None
        tm, tn, tk, pp, cm, cn, r, sw, en, st, sst = mt.groups()
        return cls(tile_m=int(tm), tile_n=int(tn), tile_k=int(tk), cluster_m=int(cm), cluster_n=int(cn),
                   schedule="pingpong" if pp else "cooperative",
                   raster={"h": "heuristic", "m": "m", "n": "n"}[r], swizzle=int(sw),
                   epilogue_tile_n=int(en), mainloop_stages=int(st) if st else None,
                   epilogue_store_stages=int(sst) if sst else 4)

    def schedule_for(self, m: int, n: int) -> StaticSchedule:
        return static_schedule(m, n, self.tile_m, self.tile_n, self.cluster_m, self.cluster_n, self.raster,
                               self.swizzle)

    def asdict(self) -> dict:
        return asdict(self)


@dataclass
class Compiled:
    config: KernelConfig
    dtype: str
    fn: object
    max_active_clusters: int
    stages: int
    ptx: str = ""
    extra: dict = field(default_factory=dict)


def _torch_dtype(dtype: str):
    import torch
    return {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]


def to_cute(t, align: int = 16):
    """A torch tensor as a CuTe tensor with dynamic shape and strides (one compile serves all shapes)."""
    from cutlass.cute.runtime import from_dlpack
    return from_dlpack(t, assumed_align=align).mark_layout_dynamic(leading_dim=t.dim() - 1)


def max_active_clusters(cluster_size: int) -> int:
    if not _have_gpu():
        return H200_SMS // cluster_size
    import cutlass.utils
    return cutlass.utils.HardwareInfo().get_max_active_clusters(cluster_size)


def _have_gpu() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


def compile_sm90(cfg: KernelConfig, dtype: str = "fp16", m: int = 512, n: int = 512, k: int = 256,
                 device: str | None = None, keep: bool = False) -> Compiled:
    """Compile the SM90 kernel for ``cfg`` (shapes are dynamic: m, n, k only pick the example tensors)."""
    import cutlass.cute as cute
    import torch

    from .sm90_gemm import Sm90TmaWsGemm

    gpu = device != "cpu" and _have_gpu()
    dev = "cuda" if gpu else "cpu"
    td = _torch_dtype(dtype)
    a = torch.empty(m, k, dtype=td, device=dev)
    b = torch.empty(n, k, dtype=td, device=dev)
    c = torch.empty(m, n, dtype=td, device=dev)
    trace = torch.empty(8, dtype=torch.int32, device=dev)
    kern = Sm90TmaWsGemm(**cfg.asdict())
    mac = max_active_clusters(cfg.cluster_m * cfg.cluster_n)
    if gpu:
        from cuda.bindings import driver as cuda
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    else:
        stream = cute.runtime.make_fake_stream()
    import cutlass
    opts = []
    if keep:
        opts.append("--keep-ptx --keep-cubin")
    if not gpu:
        # Without a GPU the DSL compiles for CUTE_DSL_ARCH (default sm_100a), read once per process:
        # name the target per compile so that sm_90a and sm_100a kernels can share a test session.
        opts.append("--gpu-arch sm_90a")
    opts = " ".join(opts) or None
    sched = [cutlass.Int32(x) for x in cfg.schedule_for(m, n).kernel_args()]
    fn = cute.compile(kern, to_cute(a), to_cute(b), to_cute(c), to_cute(trace, 32), cutlass.Int32(8), *sched,
                      mac, stream, options=opts)
    ptx = ""
    try:
        ptx = fn.artifacts.PTX or ""
    except Exception:
        pass
    return Compiled(cfg, dtype, fn, mac, getattr(kern, "stages", -1), ptx)


class Runner:
    """Launches a compiled kernel on torch CUDA tensors, with the trace buffer sized for the problem."""

    def __init__(self, compiled: Compiled):
        self.c = compiled
        self._trace = None
        self._stream = None

    def grid_ctas(self, m: int, n: int) -> int:
        cfg = self.c.config
        clusters = cfg.schedule_for(m, n).clusters
        return min(clusters, self.c.max_active_clusters) * cfg.cluster_m * cfg.cluster_n

    def capacity(self, m: int, n: int, k: int) -> int:
        cfg = self.c.config
        clusters = cfg.schedule_for(m, n).clusters
        p = min(clusters, self.c.max_active_clusters)
        tiles_per_cta = ceil_div(clusters, p)
        return R.slice_capacity(tiles_per_cta, ceil_div(k, cfg.tile_k), cfg.tile_n // cfg.epilogue_tile_n,
                                cfg.instrument)

    def prepare(self, a, b, c):
        """Build the launch arguments once (so that timing loops measure the kernel, not the wrapping)."""
        import cutlass
        import torch
        from cuda.bindings import driver as cuda
        m, k = a.shape
        n = b.shape[0]
        if self.c.config.instrument:
            cap = self.capacity(m, n, k)
            words = self.grid_ctas(m, n) * R.ROLES_PER_CTA * cap * R.RECORD_WORDS
            self._trace = torch.zeros(words, dtype=torch.int32, device=a.device)
        else:
            cap = 1
            self._trace = torch.zeros(8, dtype=torch.int32, device=a.device)
        self.cap = cap
        self._stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
        self.schedule = self.c.config.schedule_for(m, n)
        sched = [cutlass.Int32(x) for x in self.schedule.kernel_args()]
        self._args = (to_cute(a), to_cute(b), to_cute(c), to_cute(self._trace, 32), cutlass.Int32(cap), *sched,
                      self._stream)
        return self

    def launch(self):
        self.c.fn(*self._args)

    def trace_buffer(self):
        """The record buffer as a numpy int32 array (call after the kernel finished)."""
        return self._trace.cpu().numpy()
