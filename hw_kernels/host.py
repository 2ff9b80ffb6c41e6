"""Host side of the hardware kernels: compile (on a GPU, or for sm_90a on a CPU), launch, read records.

Needs nvidia-cutlass-dsl and torch. ``compile_sm90`` works without a GPU (it then compiles for sm_90a
against a fake stream and CPU tensors; the result can only be inspected: ``.ptx``, cubin).

Launch paths (``Runner``), host time per launch measured on the H200 by ``validation/campaign.py``:
``launch_plain`` calls the compiled function with CuTe tensors (the DSL converts and checks every
argument on every call); ``launch`` replays arguments the DSL marshalled once in ``prepare``
(``generate_execution_args`` + a device-bound executor: only the C launch remains); ``graph`` captures
launches into a CUDA graph. All three launch the same kernel with the same arguments.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace

from simulator.errors import ConfigError

from . import records as R
from .rules import can_implement
from .schedule import StaticSchedule, ceil_div, static_schedule, stream_k_schedule

#: KernelConfig.name() of an uninstrumented kernel.
_NAME = re.compile(r"^(\d+)x(\d+)x(\d+)(_pp)?_c(\d+)x(\d+)_r([hmn])_sw(\d+)_e(\d+)(?:_s(\d+))?(?:_st(\d+))?"
                   r"(?:_d(h|sk|s\d+))?(_nd|_sr)?(?:_fv(\d+))?$")
#: Name tags of the reduction modes other than the deterministic turnstile (KernelConfig.name()).
_REDUCTION_TAGS = {"nondeterministic": "_nd", "separate": "_sr"}
#: Name tags of the stream-K scheduler's decompositions (KernelConfig.name()).
_DECOMP_TAGS = {"heuristic": "h", "stream_k": "sk"}

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
    # The stream-K scheduler (simulator.kernels.stream_k; "data_parallel": the static scheduler).
    decomposition: str = "data_parallel"
    splits: int = 1
    reduction: str = "deterministic"
    # Floats per thread per workspace access of the fixup: 1 (one word per thread, the twin the campaigns
    # measured) or 4 (16 B, ld/st.global.v4, as CUTLASS's BlockStripedReduce); named ``_fv4``.
    fixup_vec: int = 1

    @property
    def stream_k(self) -> bool:
        """Whether the kernel runs the stream-K scheduler's work table (and its fixup)."""
        return self.decomposition != "data_parallel"

    @property
    def roles_per_cta(self) -> int:
        """Record slices each CTA writes: MainloopLoad's and one per math warpgroup (two, but one in the
        64-row cooperative kernel; its Consumer1 slice stays empty)."""
        return R.ROLES_PER_CTA - 1 if self.schedule == "cooperative" and self.tile_m == 64 else R.ROLES_PER_CTA

    def _decomp_tag(self) -> str:
        if not self.stream_k:
            return ""
        tag = _DECOMP_TAGS.get(self.decomposition, f"s{self.splits}")
        return (f"_d{tag}" + _REDUCTION_TAGS.get(self.reduction, "")
                + ("" if self.fixup_vec == 1 else f"_fv{self.fixup_vec}"))

    def name(self) -> str:
        lvl = {0: "", 1: "_trace-tile", 2: "_trace-kblock", 3: "_trace-kblock-epi",
               R.LEVEL_SPAN: "_trace-span"}[self.instrument]
        st = "" if self.mainloop_stages is None else f"_s{self.mainloop_stages}"
        st += "" if self.epilogue_store_stages == 4 else f"_st{self.epilogue_store_stages}"
        lvl += "" if self.instrument_roles == "all" else f"-{self.instrument_roles}"
        sched = "" if self.schedule == "cooperative" else "_pp"
        return (f"{self.tile_m}x{self.tile_n}x{self.tile_k}{sched}_c{self.cluster_m}x{self.cluster_n}"
                f"_r{self.raster[0]}_sw{self.swizzle}_e{self.epilogue_tile_n}{st}{self._decomp_tag()}{lvl}")

    @classmethod
    def from_name(cls, name: str) -> KernelConfig | None:
        """The uninstrumented config ``name()`` gives ``name`` (e.g. ``128x64x64_pp_c2x1_rh_sw4_e32``),
        or None if ``name`` is not such a name (cuBLAS, an instrumented variant)."""
        mt = _NAME.match(name)
        if mt is None:
            return None
        tm, tn, tk, pp, cm, cn, r, sw, en, st, sst, dec, nd, fv = mt.groups()
        decomposition, splits = "data_parallel", 1
        if dec:
            inv = {v: k for k, v in _DECOMP_TAGS.items()}
            decomposition = inv.get(dec, "split_k")
            splits = int(dec[1:]) if decomposition == "split_k" else 1
        return cls(tile_m=int(tm), tile_n=int(tn), tile_k=int(tk), cluster_m=int(cm), cluster_n=int(cn),
                   schedule="pingpong" if pp else "cooperative",
                   raster={"h": "heuristic", "m": "m", "n": "n"}[r], swizzle=int(sw),
                   epilogue_tile_n=int(en), mainloop_stages=int(st) if st else None,
                   epilogue_store_stages=int(sst) if sst else 4, decomposition=decomposition, splits=splits,
                   reduction={v: k for k, v in _REDUCTION_TAGS.items()}.get(nd, "deterministic"),
                   fixup_vec=int(fv) if fv else 1)

    def compile_key(self) -> KernelConfig:
        """The fields one compiled kernel serves: raster and swizzle are run-time arguments of the
        kernel (``StaticSchedule.kernel_args()``), so every raster and swizzle share one compile; so
        are the stream-K scheduler's units (its work table), so every stream-K decomposition shares one
        compile per reduction mode."""
        key = replace(self, raster="heuristic", swizzle=1)
        if self.stream_k:
            key = replace(key, decomposition="stream_k", splits=1)
        return key

    def stream_k_for(self, m: int, n: int, k: int):
        """The stream-K work table of this config on problem (m, n, k) (``StreamKSchedule``)."""
        return stream_k_schedule(m, n, k, self.tile_m, self.tile_n, self.tile_k, self.cluster_m, self.cluster_n,
                                 self.raster, self.swizzle, self.decomposition, self.splits, self.reduction)

    def schedule_for(self, m: int, n: int) -> StaticSchedule:
        return static_schedule(m, n, self.tile_m, self.tile_n, self.cluster_m, self.cluster_n, self.raster,
                               self.swizzle)

    def asdict(self) -> dict:
        """The fields; ``fixup_vec`` only where it is not the default 1 (the campaigns' rows and the SM90
        model's hardware fields, ``simulator.kernels.space.HW_FIELDS``, know the one-word fixup only)."""
        d = asdict(self)
        if d["fixup_vec"] == 1:
            del d["fixup_vec"]
        return d


@dataclass
class Compiled:
    config: KernelConfig
    dtype: str
    fn: object
    max_active_clusters: int
    stages: int
    ptx: str = ""
    extra: dict = field(default_factory=dict)

    def executor(self):
        """The compiled function bound to the current device (made once): it launches arguments
        marshalled beforehand (``Runner.launch``), without the per-call conversion of ``fn(...)``."""
        if "executor" not in self.extra:
            self.extra["executor"] = self.fn.to(None)
        return self.extra["executor"]


#: torch dtype names of the kernel's element types.
_TORCH_DTYPE_NAMES = {"fp16": "torch.float16", "bf16": "torch.bfloat16"}


def problem_problems(a, b, c, dtype: str) -> list[str]:
    """Why the kernel cannot compute ``c = a @ b.t()`` for these tensors (empty: it can).

    Each entry names the offending value and the rule: shapes (a is M x K, b is N x K, c is M x N),
    element types (the compiled ``dtype`` for all three), row-major contiguous 16-byte aligned
    storage on a CUDA device, and ``Sm90TmaWsGemm.can_implement`` (K and N multiples of 8: TMA
    rows of 16 bytes). Without this check a problem with N = 17 runs and leaves outputs unwritten.
    """
    p = []
    shapes = [tuple(getattr(t, "shape", ())) for t in (a, b, c)]
    if any(len(sh) != 2 for sh in shapes):
        return [f"shapes a{list(shapes[0])}, b{list(shapes[1])}, c{list(shapes[2])}: a, b and c must be "
                "2-D (a: M x K, b: N x K, c: M x N)"]
    (m, k), (n, kb), (mc, nc) = shapes
    if kb != k:
        p.append(f"b.shape={list(shapes[1])}: b must be N x K with K={k} (a is {m} x {k})")
    if (mc, nc) != (m, n):
        p.append(f"c.shape={list(shapes[2])}: c must be M x N = {m} x {n}")
    want = _TORCH_DTYPE_NAMES.get(dtype, dtype)
    for name, t in (("a", a), ("b", b), ("c", c)):
        if str(t.dtype) != want:
            p.append(f"{name}.dtype={t.dtype}: the kernel was compiled for {dtype} ({want})")
    p += can_implement(m, n, k)
    for name, t in (("a", a), ("b", b), ("c", c)):
        if not t.is_contiguous():
            p.append(f"{name}.stride()={tuple(t.stride())}: must be row-major contiguous")
        if t.data_ptr() % 16:
            p.append(f"{name}.data_ptr()={t.data_ptr():#x}: must be 16-byte aligned (TMA)")
    devices = {str(t.device) for t in (a, b, c)}
    if any(not d.startswith("cuda") for d in devices) or len(devices) > 1:
        p.append(f"devices {sorted(devices)}: a, b and c must be on one CUDA device")
    return p


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
    work, workspace, flags = _stream_k_buffers(None, dev)
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
                      to_cute(work), to_cute(workspace), to_cute(flags), cutlass.Int32(1), mac, stream, options=opts)
    ptx = ""
    try:
        ptx = fn.artifacts.PTX or ""
    except Exception:
        pass
    return Compiled(cfg, dtype, fn, mac, getattr(kern, "stages", -1), ptx)


def _stream_k_buffers(sk, device: str):
    """(work table, workspace, flags) tensors of a stream-K schedule ``sk``, or 8-element placeholders
    (``sk`` None: the data-parallel kernel never reads them). The flags start at 0 (CUTLASS
    ``initialize_workspace`` zeroes them); the final split of each tile sets its flags back to 0, so
    the same buffers serve every later launch."""
    import torch
    if sk is None:
        return (torch.zeros(8, dtype=torch.int32, device=device), torch.zeros(8, dtype=torch.float32, device=device),
                torch.zeros(8, dtype=torch.int32, device=device))
    work = torch.tensor(sk.flat() + [0] * 8, dtype=torch.int32, device=device)
    return (work, torch.zeros(max(8, sk.workspace_floats), dtype=torch.float32, device=device),
            torch.zeros(max(8, sk.flags), dtype=torch.int32, device=device))


class Runner:
    """Launches a compiled kernel on torch CUDA tensors, with the trace buffer sized for the problem.

    ``config``: the configuration to run when it differs from the compiled one only in raster and
    swizzle (run-time arguments; ``KernelConfig.compile_key``). ``prepare`` refuses a problem the
    kernel cannot compute (:func:`problem_problems`) with a one-line :class:`ConfigError`.
    """

    def __init__(self, compiled: Compiled, config: KernelConfig | None = None):
        self.c = compiled
        self.config = compiled.config if config is None else config
        if self.config.compile_key() != compiled.config.compile_key():
            raise ConfigError(f"config {self.config.name()}: the compiled kernel is {compiled.config.name()}; "
                              "only raster and swizzle may differ (run-time arguments)")
        self._trace = None
        self._stream = None
        self.slots = 0

    def _persistent(self, m: int, n: int, k: int) -> tuple[int, int]:
        """(persistent clusters launched, tiles (stream-K: segments) the busiest one computes)."""
        cfg = self.config
        if cfg.stream_k:
            sk = cfg.stream_k_for(m, n, k)
            # a segment writes up to three records (tile, fixup; the producer one): count it as two tiles
            return min(sk.clusters, self.c.max_active_clusters), 2 * sk.max_segments
        clusters = cfg.schedule_for(m, n).clusters
        p = min(clusters, self.c.max_active_clusters)
        return p, ceil_div(clusters, p)

    def grid_ctas(self, m: int, n: int, k: int = 64) -> int:
        cfg = self.config
        return self._persistent(m, n, k)[0] * cfg.cluster_m * cfg.cluster_n

    def capacity(self, m: int, n: int, k: int) -> int:
        cfg = self.config
        tiles_per_cta = self._persistent(m, n, k)[1]
        return R.slice_capacity(tiles_per_cta, ceil_div(k, cfg.tile_k), cfg.tile_n // cfg.epilogue_tile_n,
                                cfg.instrument)

    def prepare(self, a, b, c, *, stream=None, slots: int = 1, fast: bool = True):
        """Check the problem, then build the launch arguments once (so that timing loops measure the
        kernel, not the wrapping). ``slots``: independent record buffers (one per timed launch, so
        that every launch keeps its own clock and span); ``stream``: a torch CUDA stream (default:
        the current one). ``fast``: also marshal the arguments once for :meth:`launch`."""
        bad = problem_problems(a, b, c, self.c.dtype)
        if bad:
            m, k = tuple(a.shape)[:2] if len(a.shape) == 2 else (None, None)
            n = b.shape[0] if len(b.shape) == 2 else None
            raise ConfigError(f"problem {m}x{n}x{k} ({self.c.dtype}) refused by {self.config.name()}: "
                              + "; ".join(bad))
        import cutlass
        import torch
        from cuda.bindings import driver as cuda
        m, k = a.shape
        n = b.shape[0]
        self.problem = (m, n, k)
        self.slots = max(1, int(slots))
        if self.config.instrument:
            cap = self.capacity(m, n, k)
            self.words_per_slot = self.grid_ctas(m, n, k) * R.ROLES_PER_CTA * cap * R.RECORD_WORDS
        else:
            cap = 1
            self.words_per_slot = 8
        self._trace = torch.zeros(self.words_per_slot * (self.slots if self.config.instrument else 1),
                                  dtype=torch.int32, device=a.device)
        self.cap = cap
        self.torch_stream = stream if stream is not None else torch.cuda.current_stream()
        self._stream = cuda.CUstream(self.torch_stream.cuda_stream)
        self.schedule = self.config.schedule_for(m, n)
        sched = [cutlass.Int32(x) for x in self.schedule.kernel_args()]
        self.stream_k = self.config.stream_k_for(m, n, k) if self.config.stream_k else None
        stride = 1
        if self.stream_k is not None:
            sk = self.stream_k
            if sk.clusters > self.c.max_active_clusters:
                raise ConfigError(f"{self.config.name()} on {m}x{n}x{k}: the stream-K units need {sk.clusters} "
                                  f"co-resident clusters, the GPU holds {self.c.max_active_clusters} (peers spin "
                                  "on each other's flags)")
            sched[2] = cutlass.Int32(sk.clusters)
            stride = sk.row_words
        self._sk_buffers = _stream_k_buffers(self.stream_k, str(a.device))
        work, workspace, flags = (to_cute(t) for t in self._sk_buffers)
        abc = (to_cute(a), to_cute(b), to_cute(c))
        self._args, self._exe, self._keep = [], [], []
        for s in range(self.slots):
            tr = self._trace_view(s)
            args = (*abc, to_cute(tr, 32), cutlass.Int32(cap), *sched, work, workspace, flags,
                    cutlass.Int32(stride), self._stream)
            self._args.append(args)
            if fast:
                exe, adapted = self.c.fn.generate_execution_args(*args)
                self._exe.append(exe)
                self._keep.append(adapted)
        self._executor = self.c.executor() if fast else None
        return self

    def _trace_view(self, slot: int):
        if not self.config.instrument:
            return self._trace
        return self._trace[slot * self.words_per_slot:(slot + 1) * self.words_per_slot]

    def launch(self, slot: int = 0):
        """Launch with the arguments marshalled in ``prepare`` (the short host path)."""
        if self._executor is None:
            return self.launch_plain(slot)
        self._executor.run_compiled_program(self._exe[slot])

    def launch_plain(self, slot: int = 0):
        """Launch through the compiled function's ordinary call (converts every argument again)."""
        self.c.fn(*self._args[slot])

    def graph(self, slots=None, launch=None):
        """A CUDA graph of launches (one per slot in ``slots``, in order) on this runner's stream;
        replay it with ``g.replay()``. The kernel must have run once before (module loaded)."""
        import torch
        slots = list(range(self.slots)) if slots is None else list(slots)
        launch = launch or self.launch
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=self.torch_stream, capture_error_mode="relaxed"):
            for s in slots:
                launch(s)
        return g

    def trace_buffer(self, slot: int | None = None):
        """The record buffer as a numpy int32 array (call after the kernel finished): one slot's
        (``slot``), or every slot's, concatenated (``None``)."""
        t = self._trace if slot is None else self._trace_view(slot)
        return t.cpu().numpy()
