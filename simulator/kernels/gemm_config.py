"""What both GEMM kernel configs share: data types, CUTLASS constants, the common derived
properties (:class:`GemmConfigBase`) and the ``check_*`` rules their ``can_implement`` methods call.

The two configs live in one module each: :mod:`simulator.kernels.sm100_config` (the seed kernel)
and :mod:`simulator.kernels.sm90_config` (the Hopper twin). Reading them from TOML or a mapping,
with strict types, is :mod:`simulator.kernels.config_io`.

Assumed layouts (the "TN" GEMM of the seed's examples): A is M x K, K-major; B is N x K, K-major;
C and D are M x N, N-major (row-major). ``read_c=False`` models ``ElementC = void`` (no source load:
the epilogue-load warp and its pipeline idle), which is also what CUTLASS's epilogue builders key
their tile and stage choices on.
"""

from __future__ import annotations

import numbers
import typing
from dataclasses import MISSING, dataclass, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar

from simulator.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from simulator.machine.arch import ArchSpec


# ---------------------------------------------------------------------------------------------- dtypes
#: name -> bits of storage. tf32 has 19 significant bits but is stored in 32.
DTYPE_BITS: dict[str, int] = {
    "fp16": 16,
    "bf16": 16,
    "fp8e4m3": 8,
    "fp8e5m2": 8,
    "f32": 32,
    "tf32": 32,
}
_DTYPE_ALIASES = {"f16": "fp16", "half": "fp16", "float16": "fp16", "bfloat16": "bf16", "fp32": "f32",
                  "float32": "f32", "e4m3": "fp8e4m3", "e5m2": "fp8e5m2", "float8_e4m3fn": "fp8e4m3",
                  "float8_e5m2": "fp8e5m2"}


def canonical_dtype(name: str, field_name: str = "dtype") -> str:
    key = str(name).strip().lower()
    key = _DTYPE_ALIASES.get(key, key)
    if key not in DTYPE_BITS:
        raise ConfigError(f"{field_name}={name!r}: unknown data type; valid: {', '.join(DTYPE_BITS)}")
    return key


def dtype_bits(name: str, field_name: str = "dtype") -> int:
    return DTYPE_BITS[canonical_dtype(name, field_name)]


def dtype_bytes(name: str, field_name: str = "dtype") -> float:
    """Bytes per element (a float only if a sub-byte type is ever added; all current types are whole)."""
    bits = dtype_bits(name, field_name)
    return bits // 8 if bits % 8 == 0 else bits / 8


# ------------------------------------------------------------------------------------ CUTLASS constants
SMEM_CAPACITY_BYTES = 232448  # cutlass/arch/arch.h sm100_smem_capacity_bytes; sm90_common.inl likewise
BARRIER_BYTES = 8  # one mbarrier (cutlass::arch::ClusterBarrier / ClusterTransactionBarrier) = uint64_t
PIPELINE_STAGE_BARRIER_BYTES = 2 * BARRIER_BYTES  # full + empty barrier per stage (Pipeline*::SharedStorage)
CLC_RESPONSE_BYTES = 16  # sm100_common.inl CLCResponseSize = sizeof(PersistentTileSchedulerSm100::CLCResponse)
TMEM_LANES = 128  # sm100_umma_builder.inl TotalTmemRows
TMEM_COLUMNS = 512  # Sm100TmemCapacityColumns
MAX_ACCUMULATOR_STAGES = 4  # sm100_umma_builder.inl: min(4u, AccumulatorPipelineStageCount_)
DEFAULT_SCHEDULER_STAGES = 2  # sm100_umma_builder.inl: conditional_return<IsGroupGemm||IsRCGroupGemm>(8, 2)
EPILOGUE_THREADS = 128  # sm100_epilogue_tma_warpspecialized.hpp ThreadCount
SM90_CONSUMER_REGISTERS = 232  # sm90 cooperative/pingpong kernels: MmaRegisterRequirement (240 only with HeavyRegisterPressure)
SWIZZLES = (1, 2, 4, 8)
RASTERS = ("m", "n", "heuristic")
SM100_TILE_SCHEDULERS = ("clc", "static")
SM90_TILE_SCHEDULERS = ("static",)
SM90_SCHEDULES = ("cooperative", "pingpong")
#: DecompositionMode (tile_scheduler_detail.hpp) as config values; "data_parallel" is the kernel's own
#: tile scheduler (CUTLASS's default), the others select the stream-K scheduler with that mode.
DECOMPOSITIONS = ("data_parallel", "heuristic", "split_k", "stream_k")
#: ReductionMode (tile_scheduler_detail.hpp), and "separate": the SM90 twin's own (hw_kernels/rules.py): each
#: non-final split stores its partials in a slot of its own without waiting, the final split sums the slots.
REDUCTIONS = ("deterministic", "nondeterministic", "separate")


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _is_pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


def _round_up(x: int, m: int) -> int:
    return _ceil_div(x, m) * m


# ============================================================================================ common
#: The data-type fields of both configs.
DTYPE_FIELDS = ("dtype_ab", "dtype_acc", "dtype_c", "dtype_d")


@dataclass(frozen=True)
class GemmConfigBase:
    """What the SM100 and SM90 configs share: their first fields (the problem and its data types,
    declared here; each config declares its own after them), what they compute the same way (data
    types, tile and cluster counts, bytes and FLOPs, epilogue subtiles), ``resolved`` and the
    rules of ``check_given``/``can_implement`` that read the same on both kernels.

    Each config supplies its tiles_m/tiles_n/k_tiles, cluster_mma_tiles_m, stage bytes, epilogue
    defaults, the fields ``resolved`` fills (``_derived_fields``), its own tile rules
    (``_check_given_tiles``), its SMEM carve-outs (``_smem_parts``) and any further resource rule
    (``_check_resources``), and the class constants below that name its CUTLASS sources.

    Constructing a config checks the type of every field (:func:`check_field_types`): an ``int``
    field takes an integer (not a bool, a float or a string), a ``bool`` field takes True/False
    (not "false" or 0), a ``str`` field a string. Values are checked by ``can_implement``.
    """

    m: int = 8192
    n: int = 8192
    k: int = 8192
    l: int = 1  # noqa: E741 (CUTLASS's name for the batch mode)
    dtype_ab: str = "bf16"
    dtype_acc: str = "f32"
    dtype_c: str = "bf16"
    dtype_d: str = "bf16"

    #: The SM version of the kernel (``can_implement`` refuses an arch of another).
    SM_VERSION: ClassVar[int] = 0
    #: The MMA instruction and its CUTLASS header (named when the accumulator type is refused).
    MMA_INSTRUCTION: ClassVar[str] = ""
    #: Why cluster sides must be powers of two (the CUTLASS source).
    CLUSTER_POW2_RULE: ClassVar[str] = ""
    #: Where the 16-CTA cluster limit comes from ("" when only the arch constant is named).
    MAX_CLUSTER_RULE: ClassVar[str] = ""
    #: Tile scheduler names, and what an unknown one is called.
    TILE_SCHEDULERS: ClassVar[tuple[str, ...]] = ()
    TILE_SCHEDULER_RULE: ClassVar[str] = "unknown"
    #: The CUTLASS assertion behind "at least 2 mainloop stages".
    MIN_STAGES_RULE: ClassVar[str] = ""

    def __post_init__(self) -> None:
        check_field_types(self)

    # ------------------------------------------------------------------------------- rules
    def check_given(self) -> None:
        """The rules on the fields as given, before anything is derived from them (so no derivation
        divides by a zero tile or starts from an impossible one): sizes, data types, the kernel's
        tile shapes (``_check_given_tiles``), cluster shape, scheduler names, a given epilogue tile."""
        check_fields(self)
        for f_name in DTYPE_FIELDS:
            canonical_dtype(getattr(self, f_name), f_name)
        check_acc_dtype(canonical_dtype(self.dtype_ab), canonical_dtype(self.dtype_acc), self.MMA_INSTRUCTION)
        self._check_given_tiles()
        check_cluster_pow2(self.cluster_m, self.cluster_n, self.CLUSTER_POW2_RULE)
        check_tile_order(self.tile_scheduler, self.raster, self.swizzle, self.TILE_SCHEDULERS,
                         self.TILE_SCHEDULER_RULE)
        em, en = self.epi_tile
        check_epilogue_tile(em, en, self.cta_tile_m, self.cta_tile_n)
        check_decomposition(self.decomposition, self.splits, self.reduction, self._stream_k_refusal(),
                            self._separate_refusal())

    def _stream_k_refusal(self) -> str:
        """Why this kernel config cannot take the stream-K scheduler ("" if it can)."""
        return ""

    def _separate_refusal(self) -> str:
        """Why this kernel config cannot take the separate reduction ("" if it can)."""
        return ""

    def _check_given_tiles(self) -> None:  # pragma: no cover - every config defines it
        raise NotImplementedError

    def _derived_fields(self) -> dict:  # pragma: no cover - every config defines it
        raise NotImplementedError

    def _smem_parts(self) -> list[str]:  # pragma: no cover - every config defines it
        raise NotImplementedError

    def _check_resources(self, arch: ArchSpec, allow_protocol_experiments: bool) -> None:
        """Further resource rules of a resolved config (SM100: TMEM and accumulator stages)."""

    def resolved(self, arch: ArchSpec | None = None):
        """A copy with every None filled as CUTLASS's builders would (after :meth:`check_given`).

        A derived mainloop stage count below 2 is an error that names what was set (CUTLASS's
        builder would not compile); a given one is checked by :meth:`can_implement`.
        """
        self.check_given()
        em, en = self.epi_tile
        r = replace(self, **self._derived_fields(), epilogue_tile_m=em, epilogue_tile_n=en)
        r = replace(r, epilogue_store_stages=r.store_stages)
        r = replace(r, epilogue_load_stages=r.load_stages)
        if r.mainloop_stages is None:
            stages = r.derived_mainloop_stages(arch)
            if stages < 2:
                raise mainloop_stage_error(self, r, arch, stages, 2, self.MIN_STAGES_RULE)
            r = replace(r, mainloop_stages=stages)
        return r

    def can_implement(self, arch: ArchSpec, *, allow_protocol_experiments: bool = False) -> None:
        """Raise ConfigError for the first rule this configuration breaks.

        ``allow_protocol_experiments`` skips rules that are about performance or CUTLASS's protocol
        choices rather than hardware (mainloop_stages < 2; on SM100 also accumulator_stages > 4 and
        the overlapping-accumulator stage rule), so deadlock/what-if experiments can run; hardware
        limits (SMEM, TMEM, cluster size, MMA shapes) are always checked.
        """
        if arch.sm_version != self.SM_VERSION:
            raise ConfigError(f"arch={arch.name}: {type(self).__name__} needs an SM{self.SM_VERSION} architecture "
                              f"(got sm_version={arch.sm_version})")
        r = self.resolved(arch)   # runs check_given first
        check_cluster_size(r.cluster_m, r.cluster_n, arch, self.MAX_CLUSTER_RULE)
        if r.mainloop_stages < 2 and not allow_protocol_experiments:
            raise ConfigError(f"mainloop_stages={r.mainloop_stages}: SM{self.SM_VERSION} needs at least 2 "
                              f"({self.MIN_STAGES_RULE})")
        cap = r.smem_capacity(arch)
        used = r.smem_bytes(arch)
        if used > cap:
            raise ConfigError(
                f"mainloop_stages={r.mainloop_stages}: SMEM overflow: {r.mainloop_stages} x {r.mainloop_stage_bytes} B "
                f"stages + {' + '.join(r._smem_parts())} = {used} B > {cap} B per CTA")
        r._check_resources(arch, allow_protocol_experiments)
        if r.scheduler_sm_count is not None and r.scheduler_sm_count > arch.sm_count.value:
            raise ConfigError(f"scheduler_sm_count={r.scheduler_sm_count}: more SMs than {arch.name} has "
                              f"({arch.sm_count.value:g}); KernelHardwareInfo::sm_count is at most the device's")
        check_epilogue(r.epilogue_tile_m, r.epilogue_tile_n, r.cta_tile_m, r.cta_tile_n,
                       r.epilogue_load_stages, r.epilogue_store_stages)
        # TMA: 16 B aligned strides (A, B K-major; C, D N-major), each stride < 2^40 B.
        bits_c = r.bits_c if r.read_c else None
        check_alignment(r.m, r.n, r.k, r.bits_ab, bits_c, r.bits_d)
        check_tma_extents(r.m, r.n, r.k, r.bits_ab, bits_c, r.bits_d)

    def smem_capacity(self, arch: ArchSpec | None = None) -> int:
        """SMEM bytes per CTA: the arch's (possibly overridden) constant, or CUTLASS's 232448."""
        return int(arch.smem_bytes_per_cta.value) if arch is not None else SMEM_CAPACITY_BYTES

    # ------------------------------------------------------------------------------- derived

    @property
    def cluster_tiles_m(self) -> int:
        """Cluster tiles along M: ceil(tiles_m / (cluster_m / atom_thr_m))."""
        return _ceil_div(self.tiles_m, self.cluster_mma_tiles_m)

    @property
    def cluster_tiles_n(self) -> int:
        return _ceil_div(self.tiles_n, self.cluster_mma_tiles_n)

    @property
    def bits_ab(self) -> int:
        return dtype_bits(self.dtype_ab, "dtype_ab")

    @property
    def bits_acc(self) -> int:
        return dtype_bits(self.dtype_acc, "dtype_acc")

    @property
    def bits_c(self) -> int:
        return dtype_bits(self.dtype_c, "dtype_c")

    @property
    def bits_d(self) -> int:
        return dtype_bits(self.dtype_d, "dtype_d")

    @property
    def num_output_tiles(self) -> int:
        return self.tiles_m * self.tiles_n * self.l

    @property
    def cluster_size(self) -> int:
        return self.cluster_m * self.cluster_n

    @property
    def cluster_mma_tiles_n(self) -> int:
        return self.cluster_n

    @property
    def num_clusters_grid(self) -> int:
        """Clusters needed to cover the problem once (the non-persistent grid; before swizzle padding)."""
        return self.cluster_tiles_m * self.cluster_tiles_n * self.l

    @property
    def ab_stage_bytes_per_cta(self) -> int:
        return self.a_stage_bytes_per_cta + self.b_stage_bytes_per_cta

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k * self.l

    @property
    def compulsory_bytes(self) -> int:
        """A and B read once, C read once if read_c, D written once."""
        a = self.m * self.k * self.l * self.bits_ab // 8
        b = self.n * self.k * self.l * self.bits_ab // 8
        c = self.m * self.n * self.l * self.bits_c // 8 if self.read_c else 0
        d = self.m * self.n * self.l * self.bits_d // 8
        return a + b + c + d

    @property
    def epi_tile(self) -> tuple[int, int]:
        dm, dn = self._default_epilogue_tile()
        return (self.epilogue_tile_m if self.epilogue_tile_m is not None else dm,
                self.epilogue_tile_n if self.epilogue_tile_n is not None else dn)

    @property
    def store_stages(self) -> int:
        """StagesD = min(EpiTiles, 2) (sm100_dense_dispatch_policy)."""
        if self.epilogue_store_stages is not None:
            return self.epilogue_store_stages
        return min(self.epi_subtiles, 2)

    @property
    def load_stages(self) -> int:
        """StagesC = ReuseSmem ? max(min(EpiTiles, 4), StagesD + 1) : min(EpiTiles, 4)."""
        if self.epilogue_load_stages is not None:
            return self.epilogue_load_stages
        base = min(self.epi_subtiles, 4)
        return max(base, self.store_stages + 1) if self.reuse_smem_c else base

    @property
    def epi_c_subtile_bytes(self) -> int:
        em, en = self.epi_tile
        return em * en * self.bits_c // 8

    @property
    def epi_d_subtile_bytes(self) -> int:
        em, en = self.epi_tile
        return em * en * self.bits_d // 8

    @property
    def stages(self) -> int:
        """Mainloop stages (given, or derived for the default 232448-byte SMEM)."""
        return self.mainloop_stages if self.mainloop_stages is not None else self.derived_mainloop_stages()


# ============================================================================================ helpers
#: CUTLASS's GEMM problem shape (GemmCoord / the kernels' ProblemShape) holds M, N, K, L as int (int32).
INT32_MAX = 2**31 - 1
#: cuTensorMapEncodeTiled (CUDA driver API): every global stride of a TMA descriptor is < 2^40 bytes.
#: CUTLASS hands TMA rank-3 tensors (rows, columns, batch), so the batch stride of a packed operand,
#: rows x columns x element bytes, is one of them even when L = 1.
TMA_MAX_STRIDE_BYTES = 1 << 40
#: Fields that do not change the SMEM a kernel needs (left out when naming what the user set).
_NOT_SMEM_FIELDS = frozenset({"m", "n", "k", "l", "raster", "swizzle", "tile_scheduler", "cluster_m",
                              "decomposition", "splits", "reduction", "scheduler_sm_count",
                              "cluster_n", "overlapping_accum"})
_HINTS: dict[type, dict[str, Any]] = {}


def field_hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def type_name(tp: Any) -> str:
    """``int | None`` for the annotation ``int | None`` (for messages)."""
    args = typing.get_args(tp)
    if args and typing.get_origin(tp) is not None:
        return " | ".join(type_name(a) for a in args)
    return "None" if tp is type(None) else getattr(tp, "__name__", str(tp))


def strict_value(tp: Any, value: Any) -> tuple[bool, Any]:
    """(accepted, value) for a field annotated ``tp``: no conversion between kinds of value.

    ``int`` takes integers only (Python or numpy integers, returned as int), never a bool, a float
    (not even 4096.0) or a string; ``bool`` takes True/False only; ``str`` takes strings only.
    """
    args = typing.get_args(tp)
    if args and typing.get_origin(tp) is not None:  # a union such as int | None
        for a in args:
            ok, v = strict_value(a, value)
            if ok:
                return True, v
        return False, value
    if tp is type(None):
        return value is None, value
    if tp is bool:
        return isinstance(value, bool), value
    if tp is int:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return True, int(value)
        return False, value
    if tp is str:
        return isinstance(value, str), value if type(value) is str else str(value)
    return isinstance(value, tp), value


def check_field_types(cfg: Any) -> None:
    """Every field of a config dataclass holds a value of its annotated type (see :func:`strict_value`)."""
    hints = field_hints(type(cfg))
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        tp = hints[f.name]
        ok, v = strict_value(tp, value)
        if not ok:
            base = [a for a in (typing.get_args(tp) or (tp,)) if a is not type(None)]
            hint = {bool: "True or False", int: "an integer", str: "a string"}.get(base[0] if base else None,
                                                                                   type_name(tp))
            raise ConfigError(f"{f.name}={value!r}: expected {type_name(tp)}, got {type(value).__name__} "
                              f"({type(cfg).__name__} does not convert values: give {hint})")
        if v is not value:
            object.__setattr__(cfg, f.name, v)


def user_set_fields(cfg: Any, relevant=lambda name: True) -> list[str]:
    """``name=value`` for the fields of ``cfg`` that differ from the class defaults (what the user set)."""
    out = []
    for f in fields(cfg):
        default = f.default if f.default is not MISSING else None
        v = getattr(cfg, f.name)
        if v != default and relevant(f.name):
            out.append(f"{f.name}={v!r}")
    return out


def check_shape(m: int, n: int, k: int, l: int) -> None:  # noqa: E741
    for name, v in (("m", m), ("n", n), ("k", k), ("l", l)):
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ConfigError(f"{name}={v!r}: problem size must be a positive integer")
        if v > INT32_MAX:
            raise ConfigError(f"{name}={v}: CUTLASS's problem shape (M, N, K, L) is int32: {name} must be "
                              f"<= {INT32_MAX}")


#: Why a count field must be at least 1.
_POSITIVE_RULE = {
    "mainloop_stages": "needs at least 1 stage (CUTLASS: at least 2)",
    "accumulator_stages": "needs at least 1 TMEM accumulator stage",
    "scheduler_stages": "needs at least 1 CLC pipeline stage",
    "epilogue_load_stages": "needs at least 1 (StagesC >= 1)",
    "epilogue_store_stages": "needs at least 1 (StagesD >= 1)",
    "epilogue_tile_m": "an epilogue subtile has at least one row",
    "epilogue_tile_n": "an epilogue subtile has at least one column",
    "cluster_m": "cluster dimensions must be >= 1",
    "cluster_n": "cluster dimensions must be >= 1",
    "splits": "the split count must be >= 1 (sm90_tile_scheduler_stream_k.hpp can_implement: splits >= 1)",
    "scheduler_sm_count": "the stream-K scheduler needs at least 1 SM (KernelHardwareInfo::sm_count)",
}


def check_fields(cfg: Any) -> None:
    """The value rules every derivation relies on: the problem shape fits CUTLASS's int32 shape and
    every other integer field that is given is at least 1 (so no tile, stage or cluster count is 0)."""
    check_shape(cfg.m, cfg.n, cfg.k, cfg.l)
    for f in fields(cfg):
        if f.name in ("m", "n", "k", "l"):
            continue
        v = getattr(cfg, f.name)
        if isinstance(v, int) and not isinstance(v, bool) and v < 1:
            raise ConfigError(f"{f.name}={v}: {_POSITIVE_RULE.get(f.name, 'must be a positive integer')}")


def check_acc_dtype(ab: str, acc: str, where: str) -> None:
    """f32 accumulation always; f16 accumulation only for fp16 / fp8 inputs (not bf16 or tf32)."""
    if acc == "f32":
        return
    if acc == "fp16" and ab in ("fp16", "fp8e4m3", "fp8e5m2"):
        return
    raise ConfigError(f"dtype_acc={acc!r}: {where} accumulates in f32 (or fp16 for fp16/fp8 inputs); "
                      f"not with dtype_ab={ab!r}")


def check_tile_k(tk: Any, bits_ab: int, name: str) -> None:
    if not isinstance(tk, int) or isinstance(tk, bool) or tk <= 0:
        raise ConfigError(f"{name}={tk!r}: must be a positive integer")
    # One MMA instruction consumes 32 bytes of K (K=16 for 16-bit, 32 for 8-bit, 8 for tf32).
    if (tk * bits_ab) % 256 != 0:
        raise ConfigError(f"{name}={tk}: K tile must be a multiple of one MMA instruction's K "
                          f"({256 // bits_ab} elements = 32 B for {bits_ab}-bit inputs)")


def check_epilogue_tile(em: int, en: int, cta_m: int, cta_n: int) -> None:
    if em <= 0 or en <= 0 or cta_m % em != 0 or cta_n % en != 0:
        raise ConfigError(f"epilogue_tile_m x epilogue_tile_n={em}x{en}: epilogue tile must divide the CTA tile "
                          f"{cta_m}x{cta_n}")
    if en % 8 != 0:
        raise ConfigError(f"epilogue_tile_n={en}: must be a multiple of 8 (sm100_builder.inl 'Unsupported tile shape')")


def check_epilogue(em: int, en: int, cta_m: int, cta_n: int, load_st: int, store_st: int) -> None:
    check_epilogue_tile(em, en, cta_m, cta_n)
    if store_st < 1:
        raise ConfigError(f"epilogue_store_stages={store_st}: needs at least 1 (StagesD >= 1)")
    if load_st < 1:
        raise ConfigError(f"epilogue_load_stages={load_st}: needs at least 1 (StagesC >= 1)")


def check_cluster_pow2(cm: int, cn: int, rule: str) -> None:
    if not (_is_pow2(cm) and _is_pow2(cn)):
        raise ConfigError(f"cluster_m={cm}, cluster_n={cn}: cluster dimensions must be powers of two ({rule})")


def check_tile_order(tile_scheduler: str, raster: str, swizzle: int, schedulers: tuple[str, ...],
                     scheduler_rule: str = "unknown") -> None:
    """Scheduler, raster and swizzle names (``scheduler_rule``: why another scheduler is refused)."""
    if tile_scheduler not in schedulers:
        raise ConfigError(f"tile_scheduler={tile_scheduler!r}: {scheduler_rule}; valid: {', '.join(schedulers)}")
    if raster not in RASTERS:
        raise ConfigError(f"raster={raster!r}: unknown; valid: {', '.join(RASTERS)}")
    if swizzle not in SWIZZLES:
        raise ConfigError(f"swizzle={swizzle}: max swizzle size must be one of {SWIZZLES}")


def check_decomposition(decomposition: str, splits: int, reduction: str, refusal: str,
                        separate_refusal: str = "") -> None:
    """The stream-K scheduler's arguments (``PersistentTileSchedulerSm90StreamK::Arguments``):
    decomposition and reduction names, ``splits > 1`` only with the heuristic or split-K
    (sm90_tile_scheduler_stream_k.hpp ``can_implement``), ``refusal``: why the kernel cannot take
    the stream-K scheduler at all ("" if it can), and ``separate_refusal``: why not the separate reduction."""
    if decomposition not in DECOMPOSITIONS:
        raise ConfigError(f"decomposition={decomposition!r}: unknown; valid: {', '.join(DECOMPOSITIONS)}")
    if reduction not in REDUCTIONS:
        raise ConfigError(f"reduction={reduction!r}: unknown; valid: {', '.join(REDUCTIONS)}")
    if reduction == "separate" and decomposition != "data_parallel" and separate_refusal:
        raise ConfigError(f"reduction='separate': {separate_refusal}")
    if splits > 1 and decomposition not in ("heuristic", "split_k"):
        raise ConfigError(f"splits={splits} with decomposition={decomposition!r}: a split count > 1 is valid only "
                          "for the heuristic and split-K decompositions (sm90_tile_scheduler_stream_k.hpp "
                          "can_implement)")
    if decomposition != "data_parallel" and refusal:
        raise ConfigError(f"decomposition={decomposition!r}: {refusal}")


def check_cluster_size(cm: int, cn: int, arch: ArchSpec, rule: str = "") -> None:
    """At most the arch's max cluster size (``rule``: its CUTLASS source), and no larger than the GPU."""
    max_cluster = int(arch.max_cluster_size.value)
    if cm * cn > max_cluster:
        raise ConfigError(f"cluster_m*cluster_n={cm * cn} > {max_cluster}: cluster larger than {max_cluster} CTAs"
                          + (f" ({rule})" if rule else ""))
    check_cluster_fits(cm, cn, arch)


def check_cluster_fits(cm: int, cn: int, arch: ArchSpec) -> None:
    """Every CTA of a cluster runs on its own SM at the same time: a cluster no larger than the GPU."""
    sms = arch.sm_count.value
    if cm * cn > sms:
        raise ConfigError(f"cluster_m*cluster_n={cm * cn} > sm_count={sms:g}: the CTAs of a cluster run at once, "
                          f"one per SM, so a cluster cannot be larger than the GPU ({arch.name}: {sms:g} SMs)")


def mainloop_stage_error(cfg: Any, r: Any, arch: ArchSpec | None, stages: int, need: int, rule: str) -> ConfigError:
    """The error for a derived mainloop stage count below ``need``: it names the fields the user set
    that take SMEM (tiles, epilogue, stages), and the bytes, rather than the derived count alone."""
    cap = r.smem_capacity(arch)
    epi = r.epilogue_smem_bytes
    carve = r.kernel_smem_carveout_bytes
    set_ = user_set_fields(cfg, lambda name: name not in _NOT_SMEM_FIELDS)
    who = ", ".join(set_) if set_ else "the default config"
    if arch is not None and arch.smem_bytes_per_cta.kind == "override":
        who += f" with smem_bytes_per_cta={cap} (override)"
    return ConfigError(
        f"{who}: one mainloop stage takes {r.mainloop_stage_bytes} B of SMEM per CTA (A {r.a_stage_bytes_per_cta} B "
        f"+ B {r.b_stage_bytes_per_cta} B + barriers) and the epilogue takes {epi} B, the kernel {carve} B of the "
        f"{cap} B per CTA: room for {max(stages, 0)} stage(s) (derived mainloop_stages), but CUTLASS needs at "
        f"least {need} ({rule}); use smaller tiles or fewer epilogue stages")


def check_alignment(m: int, n: int, k: int, bits_ab: int, bits_c: int | None, bits_d: int) -> None:
    """TMA needs 16-byte aligned global strides: A (MxK) and B (NxK) K-major rows of k elements;
    C and D (MxN) N-major rows of n elements."""
    if (k * bits_ab) % 128 != 0:
        raise ConfigError(f"k={k}: A/B rows (K-major) are {k * bits_ab / 8:g} B; TMA needs strides that are a "
                          f"multiple of 16 B (k a multiple of {128 // bits_ab})")
    for name, bits in (("C", bits_c), ("D", bits_d)):
        if bits is not None and (n * bits) % 128 != 0:
            raise ConfigError(f"n={n}: {name} rows (N-major) are {n * bits / 8:g} B; TMA needs strides that are a "
                              f"multiple of 16 B (n a multiple of {128 // bits})")


def check_tma_extents(m: int, n: int, k: int, bits_ab: int, bits_c: int | None, bits_d: int) -> None:
    """Each operand's batch stride (one packed matrix) must be below TMA's 2^40-byte stride limit."""
    for name, rows, cols, bits, dims in (("A", m, k, bits_ab, "m x k"), ("B", n, k, bits_ab, "n x k"),
                                         ("C", m, n, bits_c, "m x n"), ("D", m, n, bits_d, "m x n")):
        if bits is None:
            continue
        nbytes = rows * cols * bits // 8
        if nbytes >= TMA_MAX_STRIDE_BYTES:
            raise ConfigError(f"{dims}={rows}x{cols}: one batch of {name} is {nbytes:,} B; TMA global strides "
                              "(the batch stride included) must be < 2^40 B = 1 TiB (cuTensorMapEncodeTiled)")
