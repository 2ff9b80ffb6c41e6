"""Kernel configurations for the SM100 and SM90 warp-specialized GEMMs, with CUTLASS's rules.

Two frozen dataclasses describe one GEMM launch each:

- :class:`Sm100GemmConfig` -- CUTLASS's ``Sm100GemmTmaWarpSpecialized`` kernel (the seed): tcgen05
  1-SM or 2-SM MMA, TMEM accumulators, CLC or static persistent scheduler.
- :class:`Sm90GemmConfig` -- the Hopper twin (``KernelTmaWarpSpecializedCooperative`` / ``Pingpong``).

``None`` fields are filled by :meth:`resolved` with the values CUTLASS's collective builders compute
(stage counts, epilogue tile); every derivation cites the CUTLASS file it follows. ``can_implement``
raises :class:`ConfigError` naming the field, the value and the rule, like CUTLASS's can_implement
traces.

Assumed layouts (the "TN" GEMM of the seed's examples): A is M x K, K-major; B is N x K, K-major;
C and D are M x N, N-major (row-major). ``read_c=False`` models ``ElementC = void`` (no source load:
the epilogue-load warp and its pipeline idle), which is also what CUTLASS's epilogue builders key
their tile and stage choices on.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from simulator.arch import ArchSpec


class ConfigError(ValueError):
    """A configuration CUTLASS (or the hardware) would reject; the message names field, value, rule."""


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


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _is_pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


def _round_up(x: int, m: int) -> int:
    return _ceil_div(x, m) * m


def resolve_raster(raster: str, tiles_m: int, tiles_n: int) -> str:
    """CUTLASS RasterOrderOptions -> RasterOrder ("m" = AlongM, "n" = AlongN).

    tile_scheduler_params.h ``get_rasterization_order``: Heuristic -> AlongM if tiles_n > tiles_m,
    else AlongN (evaluated on the problem's CTA-tile counts rounded up to cluster x swizzle).
    """
    if raster == "heuristic":
        return "m" if tiles_n > tiles_m else "n"
    return raster


def log_swizzle_size(tiles_m: int, tiles_n: int, max_swizzle: int) -> int:
    """tile_scheduler_params.h ``get_log_swizzle_size`` (tiles counted in CTAs / MMA tiles)."""
    min_dim = min(tiles_m, tiles_n)
    if max_swizzle >= 8 and min_dim >= 6:
        return 3
    if max_swizzle >= 4 and min_dim >= 3:
        return 2
    if max_swizzle >= 2 and min_dim >= 2:
        return 1
    return 0


# ============================================================================================ common
class _GemmCommon:
    """What the SM100 and SM90 configs compute the same way (data types, tile and cluster counts,
    bytes and FLOPs, epilogue subtiles); each config supplies its own tiles_m/tiles_n/k_tiles,
    cluster_mma_tiles_m, stage bytes and epilogue defaults."""

    @property
    def cluster_tiles_m(self) -> int:
        """Cluster tiles along M: ceil(tiles_m / (cluster_m / atom_thr_m))."""
        return _ceil_div(self.tiles_m, self.cluster_mma_tiles_m)

    @property
    def cluster_tiles_n(self) -> int:
        return _ceil_div(self.tiles_n, self.cluster_mma_tiles_n)

    @property
    def effective_raster(self) -> str:
        """"m" or "n" after CUTLASS's heuristic (see simulator.scheduler for the padded tile counts)."""
        from simulator.scheduler import raster_for  # local import: scheduler imports config

        return raster_for(self)

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



# ============================================================================================= SM100
@dataclass(frozen=True)
class Sm100GemmConfig(_GemmCommon):
    """One launch of CUTLASS's SM100 TMA warp-specialized persistent GEMM (the seed kernel).

    An *MMA tile* (``mma_tile_m`` x ``mma_tile_n``) is computed by one CTA (1-SM) or by a CTA pair
    (2-SM, ``use_2sm``): the pair splits M (each CTA owns ``cta_tile_m = mma_tile_m / 2`` rows and
    loads half of B). A cluster of ``cluster_m x cluster_n`` CTAs covers
    ``(cluster_m / atom_thr_m) x cluster_n`` MMA tiles.
    """

    m: int = 8192
    n: int = 8192
    k: int = 8192
    l: int = 1  # noqa: E741 (CUTLASS's name for the batch mode)
    dtype_ab: str = "bf16"
    dtype_acc: str = "f32"
    dtype_c: str = "bf16"
    dtype_d: str = "bf16"
    mma_tile_m: int = 256
    mma_tile_n: int = 256
    mma_tile_k: int | None = None  # None -> 128 B of K per row (64 for 16-bit, 128 for 8-bit, 32 for 32-bit)
    use_2sm: bool = True
    cluster_m: int = 2
    cluster_n: int = 1
    mainloop_stages: int | None = None
    accumulator_stages: int | None = None
    scheduler_stages: int | None = None
    read_c: bool = False
    epilogue_tile_m: int | None = None
    epilogue_tile_n: int | None = None
    epilogue_load_stages: int | None = None  # CUTLASS StagesC
    epilogue_store_stages: int | None = None  # CUTLASS StagesD
    tile_scheduler: str = "clc"
    raster: str = "heuristic"
    swizzle: int = 1
    overlapping_accum: bool = False

    # ------------------------------------------------------------------------------- basic derived
    @property
    def arch_name(self) -> str:
        return "sm100"

    @property
    def atom_thr_m(self) -> int:
        """size<0>(AtomThrShapeMNK): CTAs per MMA atom (2 for 2-SM tcgen05, else 1)."""
        return 2 if self.use_2sm else 1

    @property
    def tile_k(self) -> int:
        """mma_tile_k, or the default: 128 bytes of K per row (one SW128 swizzle atom)."""
        if self.mma_tile_k is not None:
            return self.mma_tile_k
        return max(1, 1024 // self.bits_ab)

    @property
    def cta_tile_m(self) -> int:
        return self.mma_tile_m // self.atom_thr_m

    @property
    def cta_tile_n(self) -> int:
        return self.mma_tile_n

    @property
    def tiles_m(self) -> int:
        """MMA tiles along M (ceil(m / mma_tile_m))."""
        return _ceil_div(self.m, self.mma_tile_m)

    @property
    def tiles_n(self) -> int:
        return _ceil_div(self.n, self.mma_tile_n)

    @property
    def k_tiles(self) -> int:
        """K-blocks per output tile = mainloop iterations (one stage each)."""
        return _ceil_div(self.k, self.tile_k)

    @property
    def cluster_mma_tiles_m(self) -> int:
        """MMA tiles a cluster covers along M: cluster_m / atom_thr_m."""
        return max(1, self.cluster_m // self.atom_thr_m)

    # ------------------------------------------------------------------------------- bytes / flops
    @property
    def a_stage_bytes_per_cta(self) -> int:
        """SMEM bytes of A per stage per CTA: cta_tile_m x tile_k (sm100_umma_builder.inl BlockTileA)."""
        return self.cta_tile_m * self.tile_k * self.bits_ab // 8

    @property
    def b_stage_bytes_per_cta(self) -> int:
        """SMEM bytes of B per stage per CTA: (mma_tile_n / atom_thr_m) x tile_k.

        In 2-SM mode B is split across the pair (sm100_umma_builder.inl SmemShape_N =
        TileShape_N / size(AtomThrID); partition_shape_B of the 2x1SM atom); each CTA loads half.
        """
        return (self.mma_tile_n // self.atom_thr_m) * self.tile_k * self.bits_ab // 8

    @property
    def mainloop_stage_bytes(self) -> int:
        """A + B + one stage's barriers (sizeof(PipelineTmaUmmaAsync<1>::SharedStorage) = 16 B)."""
        return self.ab_stage_bytes_per_cta + PIPELINE_STAGE_BARRIER_BYTES

    @property
    def tma_transaction_bytes(self) -> int:
        """Bytes the MMA-leader CTA's full barrier expects per stage.

        sm100_mma_warpspecialized.hpp TmaTransactionBytes = size(AtomThrShapeMNK) x (A + B per CTA):
        "Only one thread issues the TMA and updates the barriers in a 2SM MMA".
        """
        return self.atom_thr_m * self.ab_stage_bytes_per_cta

    # ------------------------------------------------------------------------------- epilogue
    @property
    def tmem_warp_shape(self) -> tuple[int, int]:
        """sm100_builder.inl ``sm100_tmem_warps``: (2,2) for 2-SM with MMA M=128, else (4,1)."""
        return (2, 2) if (self.use_2sm and self.mma_tile_m == 128) else (4, 1)

    def _default_epilogue_tile(self) -> tuple[int, int]:
        """sm100_builder.inl ``sm100_dense_compute_tile_shape_or_override`` (EpilogueTileAuto, dense).

        M = min(CTA_M, 32 x WarpM). N_perf: no source -> 4096 / M (8192 / M for 4-bit);
        with source -> 32-bit max: 16 if CTA_M > 64 and CTA_N <= 128 else 32; 16-bit: 32 if CTA_N <= 128
        else 64; 8-bit: 64. N_min = 128 bits / element bits x WarpN for N-major C/D (8 x WarpN without C).
        N = min(CTA_N, max(N_perf, N_min_C, N_min_D)), or CTA_N if that does not divide CTA_N.
        """
        warp_m, warp_n = self.tmem_warp_shape
        cta_m, cta_n = self.cta_tile_m, self.cta_tile_n
        disable_source = not self.read_c
        bits_c = self.bits_d if disable_source else self.bits_c  # ElementC := ElementD when void
        max_bits = max(bits_c, self.bits_d)
        m = min(cta_m, 32 * warp_m)
        if disable_source:
            n_perf = (8192 if max_bits == 4 else 4096) // m
        elif max_bits == 32:
            n_perf = 16 if (cta_m > 64 and cta_n <= 128) else 32
        elif max_bits == 16:
            n_perf = 32 if cta_n <= 128 else 64
        else:
            n_perf = 64
        n_min_c = 8 * warp_n if disable_source else (128 // bits_c) * warp_n
        n_min_d = (128 // self.bits_d) * warp_n
        n_tmp = min(cta_n, max(n_perf, n_min_c, n_min_d))
        n = n_tmp if cta_n % n_tmp == 0 else cta_n
        return m, n

    @property
    def epi_subtiles(self) -> int:
        """EpiTiles = (CTA_M / epi_m) x (CTA_N / epi_n) (kernel's NumEpilogueSubTiles)."""
        em, en = self.epi_tile
        return _ceil_div(self.cta_tile_m, em) * _ceil_div(self.cta_tile_n, en)

    @property
    def reuse_smem_c(self) -> bool:
        """sm100_builder.inl ``sm100_dense_dispatch_policy``: ReuseSmem = sizeof_bits(ElementC) > 8."""
        return self.read_c and self.bits_c > 8

    @property
    def epilogue_smem_bytes(self) -> int:
        """sizeof(CollectiveEpilogue::SharedStorage), sm100_epilogue_tma_warpspecialized.hpp.

        No C: smem_D = StagesD x D subtile. C with ReuseSmemC: a union of StagesC x max(C, D) subtile.
        C without reuse: StagesC x C + StagesD x D. Plus the C load pipeline's barriers
        (PipelineTransactionAsync<StagesC>: 16 B per stage), present even without C.
        (Alignment padding and fusion storage are ignored: both are 0 for the linear combination.)
        """
        c, d = self.epi_c_subtile_bytes, self.epi_d_subtile_bytes
        if not self.read_c:
            tensors = self.store_stages * d
        elif self.reuse_smem_c:
            tensors = self.load_stages * max(c, d)
        else:
            tensors = self.load_stages * c + self.store_stages * d
        return tensors + PIPELINE_STAGE_BARRIER_BYTES * self.load_stages

    # ------------------------------------------------------------------------------- stage counts
    @property
    def acc_stages(self) -> int:
        """sm100_umma_builder.inl AccumulatorPipelineStageCount.

        2-SM, or 1-SM with MMA M > 64: TotalTmem (128 x 512) / (CTA_M x CTA_N); 1-SM M=64:
        (512 / CTA_N) x 2; then min(4, .).
        """
        if self.accumulator_stages is not None:
            return self.accumulator_stages
        if self.use_2sm or self.mma_tile_m > 64:
            raw = (TMEM_LANES * TMEM_COLUMNS) // max(1, self.cta_tile_m * self.cta_tile_n)
        else:
            raw = (TMEM_COLUMNS // max(1, self.cta_tile_n)) * 2
        return min(MAX_ACCUMULATOR_STAGES, raw)

    @property
    def sched_stages(self) -> int:
        """SchedulerPipelineStageCount: 2 for (non-grouped) GEMM, sm100_umma_builder.inl."""
        return self.scheduler_stages if self.scheduler_stages is not None else DEFAULT_SCHEDULER_STAGES

    @property
    def kernel_smem_carveout_bytes(self) -> int:
        """sm100_pipeline_carveout.inl Sm100DenseGemmTmaUmmaCarveout::KernelSmemCarveout (non-array GEMM).

        accumulator pipeline (16 B x acc stages) + CLC pipeline (16 B x sched stages) + load-order
        barrier (OrderedSequenceBarrier<1,2>: 2 x 8 B) + TMEM-dealloc cluster barrier (8 B) + CLC
        throttle pipeline (16 B x sched stages) + CLC responses (16 B x sched stages) + TMEM base
        pointers (4 B x sched stages).
        """
        s = self.sched_stages
        return (PIPELINE_STAGE_BARRIER_BYTES * self.acc_stages
                + PIPELINE_STAGE_BARRIER_BYTES * s
                + 2 * BARRIER_BYTES
                + BARRIER_BYTES
                + PIPELINE_STAGE_BARRIER_BYTES * s
                + CLC_RESPONSE_BYTES * s
                + 4 * s)

    def smem_capacity(self, arch: ArchSpec | None = None) -> int:
        return int(arch.smem_bytes_per_cta.value) if arch is not None else SMEM_CAPACITY_BYTES

    def derived_mainloop_stages(self, arch: ArchSpec | None = None) -> int:
        """sm100_umma_builder.inl PipelineStages with StageCountAutoCarveout<sizeof(epilogue SharedStorage)>.

        (capacity - KernelSmemCarveout - epilogue carve-out) // (A + B + 16 B barriers)
        (sm100_compute_stage_count_or_override; ReducedSmemCapacityBytes = capacity - KernelSmemCarveout).
        """
        avail = self.smem_capacity(arch) - self.kernel_smem_carveout_bytes - self.epilogue_smem_bytes
        return avail // self.mainloop_stage_bytes

    def smem_bytes(self, arch: ArchSpec | None = None) -> int:
        """Total SMEM the kernel's SharedStorage needs with the resolved stage counts."""
        stages = self.mainloop_stages if self.mainloop_stages is not None else self.derived_mainloop_stages(arch)
        return stages * self.mainloop_stage_bytes + self.kernel_smem_carveout_bytes + self.epilogue_smem_bytes

    @property
    def tmem_cells_needed(self) -> int:
        """TMEM 32-bit cells the accumulators take: stages x CTA_M x CTA_N x (acc bits / 32)."""
        return self.acc_stages * self.cta_tile_m * self.cta_tile_n * max(1, self.bits_acc // 32)

    def resolved(self, arch: ArchSpec | None = None) -> Sm100GemmConfig:
        """A copy with every None filled as CUTLASS's builders would (validates dtypes first)."""
        for f_name in ("dtype_ab", "dtype_acc", "dtype_c", "dtype_d"):
            canonical_dtype(getattr(self, f_name), f_name)
        em, en = self.epi_tile
        partial = replace(
            self,
            mma_tile_k=self.tile_k,
            accumulator_stages=self.acc_stages,
            scheduler_stages=self.sched_stages,
            epilogue_tile_m=em,
            epilogue_tile_n=en,
        )
        partial = replace(partial, epilogue_store_stages=partial.store_stages)
        partial = replace(partial, epilogue_load_stages=partial.load_stages)
        if partial.mainloop_stages is None:
            partial = replace(partial, mainloop_stages=partial.derived_mainloop_stages(arch))
        return partial

    # ------------------------------------------------------------------------------- can_implement
    def can_implement(self, arch: ArchSpec, *, allow_protocol_experiments: bool = False) -> None:
        """Raise ConfigError for the first rule this configuration breaks.

        ``allow_protocol_experiments`` skips rules that are about performance or CUTLASS's protocol
        choices rather than hardware (mainloop_stages < 2, accumulator_stages > 4, overlapping-accum
        stage rule), so deadlock/what-if experiments can run; hardware limits (SMEM, TMEM, cluster
        size, MMA shapes) are always checked.
        """
        if arch.sm_version != 100:
            raise ConfigError(f"arch={arch.name}: Sm100GemmConfig needs an SM100 architecture "
                              f"(got sm_version={arch.sm_version})")
        _check_shape(self.m, self.n, self.k, self.l)
        for f_name in ("dtype_ab", "dtype_acc", "dtype_c", "dtype_d"):
            canonical_dtype(getattr(self, f_name), f_name)
        ab, acc = canonical_dtype(self.dtype_ab), canonical_dtype(self.dtype_acc)
        _check_acc_dtype(ab, acc, "tcgen05.mma (mma_sm100_umma.hpp)")
        _check_int_fields(self, ("mma_tile_m", "mma_tile_n", "cluster_m", "cluster_n", "swizzle"))
        r = self.resolved(arch)

        # MMA atom shapes (cute/arch/mma_sm100_umma.hpp SS atoms; sm100_common.inl builder asserts).
        tm, tn = r.mma_tile_m, r.mma_tile_n
        if r.use_2sm:
            if tm not in (128, 256):
                raise ConfigError(f"mma_tile_m={tm}: 2-SM tcgen05.mma (SM100_MMA_*_2x1SM_SS) needs M in {{128, 256}}")
            if not (tn % 16 == 0 and 16 <= tn <= 256):
                raise ConfigError(f"mma_tile_n={tn}: 2-SM tcgen05.mma needs N a multiple of 16 in [16, 256]")
        else:
            if tm not in (64, 128):
                raise ConfigError(f"mma_tile_m={tm}: 1-SM tcgen05.mma (SM100_MMA_*_SS) needs M in {{64, 128}}")
            if not (tn % 8 == 0 and 8 <= tn <= 256):
                raise ConfigError(f"mma_tile_n={tn}: 1-SM tcgen05.mma needs N a multiple of 8 in [8, 256]")
        tk = r.mma_tile_k
        _check_tile_k(tk, r.bits_ab, "mma_tile_k")

        # Cluster shape.
        cm, cn = r.cluster_m, r.cluster_n
        if cm < 1 or cn < 1:
            raise ConfigError(f"cluster_m={cm}, cluster_n={cn}: cluster dimensions must be >= 1")
        if r.use_2sm and cm % 2 != 0:
            raise ConfigError(f"cluster_m={cm}: 2-SM MMA needs an even cluster_m (CTA pairs along M; "
                              "cluster.hpp preferred_cluster_can_implement: cluster_shape.x % AtomThrShapeM == 0)")
        if not (_is_pow2(cm) and _is_pow2(cn)):
            raise ConfigError(f"cluster_m={cm}, cluster_n={cn}: cluster dimensions must be powers of two "
                              "(cluster.hpp preferred_cluster_can_implement: 'Only support pow2')")
        max_cluster = int(arch.max_cluster_size.value)
        if cm * cn > max_cluster:
            raise ConfigError(f"cluster_m*cluster_n={cm * cn} > {max_cluster}: cluster larger than "
                              f"{max_cluster} CTAs (sm100_gemm_tma_warpspecialized.hpp MaxClusterSize = 16)")

        # Scheduler.
        if r.tile_scheduler not in SM100_TILE_SCHEDULERS:
            raise ConfigError(f"tile_scheduler={r.tile_scheduler!r}: unknown; valid: {', '.join(SM100_TILE_SCHEDULERS)}")
        if r.raster not in RASTERS:
            raise ConfigError(f"raster={r.raster!r}: unknown; valid: {', '.join(RASTERS)}")
        if r.swizzle not in SWIZZLES:
            raise ConfigError(f"swizzle={r.swizzle}: max swizzle size must be one of {SWIZZLES}")
        if r.scheduler_stages < 1:
            raise ConfigError(f"scheduler_stages={r.scheduler_stages}: needs at least 1 CLC pipeline stage")

        # Mainloop stages / SMEM.
        if r.mainloop_stages < 1:
            raise ConfigError(f"mainloop_stages={r.mainloop_stages}: needs at least 1 stage "
                              f"(stage bytes {r.mainloop_stage_bytes} B per CTA do not fit)")
        if r.mainloop_stages < 2 and not allow_protocol_experiments:
            raise ConfigError(f"mainloop_stages={r.mainloop_stages}: SM100 needs at least 2 "
                              "(sm100_mma_warpspecialized.hpp static_assert(Stages >= 2))")
        cap = r.smem_capacity(arch)
        used = r.smem_bytes(arch)
        if used > cap:
            raise ConfigError(
                f"mainloop_stages={r.mainloop_stages}: SMEM overflow: {r.mainloop_stages} x {r.mainloop_stage_bytes} B "
                f"stages + {r.kernel_smem_carveout_bytes} B kernel carve-out + {r.epilogue_smem_bytes} B epilogue "
                f"= {used} B > {cap} B per CTA")

        # Accumulators / TMEM.
        if r.accumulator_stages < 1:
            raise ConfigError(f"accumulator_stages={r.accumulator_stages}: needs at least 1 TMEM accumulator stage")
        cells = r.tmem_cells_needed
        tmem_cells = int(arch.tmem_lanes.value * arch.tmem_columns.value)
        if cells > tmem_cells:
            raise ConfigError(
                f"accumulator_stages={r.accumulator_stages}: TMEM overflow: {r.accumulator_stages} x "
                f"{r.cta_tile_m}x{r.cta_tile_n} {r.dtype_acc} = {cells} cells > {tmem_cells} "
                f"({int(arch.tmem_lanes.value)} lanes x {int(arch.tmem_columns.value)} columns)")
        if not allow_protocol_experiments:
            if r.accumulator_stages > MAX_ACCUMULATOR_STAGES:
                raise ConfigError(f"accumulator_stages={r.accumulator_stages} > {MAX_ACCUMULATOR_STAGES}: "
                                  "CUTLASS caps accumulator stages at 4 (sm100_umma_builder.inl)")
            if r.overlapping_accum and r.accumulator_stages != 1:
                raise ConfigError(f"overlapping_accum=True with accumulator_stages={r.accumulator_stages}: CUTLASS "
                                  "uses overlapping accumulators only when AccumulatorPipelineStageCount == 1 "
                                  "(dispatch_policy.hpp, block-scaled SM100 policies)")

        # Epilogue.
        _check_epilogue(r.epilogue_tile_m, r.epilogue_tile_n, r.cta_tile_m, r.cta_tile_n,
                        r.epilogue_load_stages, r.epilogue_store_stages)

        # TMA alignment: 16 B aligned strides (A, B K-major; C, D N-major).
        _check_alignment(r.m, r.n, r.k, r.bits_ab, r.bits_c if r.read_c else None, r.bits_d)

    def warnings(self) -> list[str]:
        """Legal but unusual choices (not errors)."""
        out = []
        if self.tile_k * self.bits_ab // 8 != 128:
            out.append(f"mma_tile_k={self.tile_k}: {self.tile_k * self.bits_ab // 8} B of K per row; CUTLASS's "
                       "default is 128 B (one SW128 swizzle atom); a smaller swizzle is used otherwise")
        return out


# ============================================================================================== SM90
@dataclass(frozen=True)
class Sm90GemmConfig(_GemmCommon):
    """One launch of CUTLASS's SM90 TMA warp-specialized persistent GEMM (cooperative or pingpong).

    cooperative (``KernelTmaWarpSpecializedCooperative``): two consumer warpgroups split one tile's M
    (tile_m a multiple of 128, 64 rows per warpgroup per wgmma). pingpong
    (``KernelTmaWarpSpecializedPingpong``): each consumer warpgroup owns a whole tile and the two
    alternate mainloop/epilogue through an ordered barrier. ``tile_n`` None -> 256 (cooperative) or
    128 (pingpong: a 128x256 fp32 accumulator would need 256 registers per thread of one warpgroup,
    over the 232-register budget).
    """

    m: int = 8192
    n: int = 8192
    k: int = 8192
    l: int = 1  # noqa: E741
    dtype_ab: str = "bf16"
    dtype_acc: str = "f32"
    dtype_c: str = "bf16"
    dtype_d: str = "bf16"
    tile_m: int = 128
    tile_n: int | None = None
    tile_k: int | None = None  # None -> 128 B of K per row
    cluster_m: int = 2
    cluster_n: int = 1
    schedule: str = "cooperative"
    mainloop_stages: int | None = None
    read_c: bool = False
    epilogue_tile_m: int | None = None
    epilogue_tile_n: int | None = None
    epilogue_load_stages: int | None = None
    epilogue_store_stages: int | None = None
    tile_scheduler: str = "static"
    raster: str = "heuristic"
    swizzle: int = 1

    @property
    def arch_name(self) -> str:
        return "sm90"

    @property
    def cta_tile_m(self) -> int:
        return self.tile_m

    @property
    def cta_tile_n(self) -> int:
        if self.tile_n is not None:
            return self.tile_n
        return 128 if self.schedule == "pingpong" else 256

    @property
    def cta_tile_k(self) -> int:
        return self.tile_k if self.tile_k is not None else max(1, 1024 // self.bits_ab)

    # Aliases matching Sm100GemmConfig, so schedulers/metrics can treat both alike.
    @property
    def mma_tile_m(self) -> int:
        return self.tile_m

    @property
    def mma_tile_n(self) -> int:
        return self.cta_tile_n

    @property
    def atom_thr_m(self) -> int:
        return 1

    @property
    def use_2sm(self) -> bool:
        return False

    @property
    def num_consumer_warpgroups(self) -> int:
        return 2

    @property
    def tiles_m(self) -> int:
        return _ceil_div(self.m, self.tile_m)

    @property
    def tiles_n(self) -> int:
        return _ceil_div(self.n, self.cta_tile_n)

    @property
    def k_tiles(self) -> int:
        return _ceil_div(self.k, self.cta_tile_k)

    @property
    def cluster_mma_tiles_m(self) -> int:
        return self.cluster_m

    @property
    def a_stage_bytes_per_cta(self) -> int:
        return self.tile_m * self.cta_tile_k * self.bits_ab // 8

    @property
    def b_stage_bytes_per_cta(self) -> int:
        return self.cta_tile_n * self.cta_tile_k * self.bits_ab // 8

    @property
    def mainloop_stage_bytes(self) -> int:
        """sm90_gmma_builder.inl compute_stage_count_or_override: round_up(A + B, 128) + 16 B barriers."""
        return _round_up(self.ab_stage_bytes_per_cta, 128) + PIPELINE_STAGE_BARRIER_BYTES

    @property
    def tma_transaction_bytes(self) -> int:
        """sm90_mma_tma_gmma_ss_warpspecialized.hpp TmaTransactionBytes: A + B per CTA stage."""
        return self.ab_stage_bytes_per_cta

    def _default_epilogue_tile(self) -> tuple[int, int]:
        """sm90_builder.inl ``sm90_compute_tile_shape_or_override`` (EpilogueTileAuto).

        cooperative: (min(128, tile_m), gcd(min(32, tile_n), tile_n)); pingpong (plain warp-specialized
        epilogue schedule): (min(64, tile_m), gcd(min(N_perf, tile_n), tile_n)), N_perf = 64 for 8-bit D
        with tile_n % 64 == 0, else 32.
        """
        tn = self.cta_tile_n
        if self.schedule == "cooperative":
            return min(128, self.tile_m), math.gcd(min(32, tn), tn)
        n_perf = 64 if (self.bits_d == 8 and tn % 64 == 0) else 32
        return min(64, self.tile_m), math.gcd(min(n_perf, tn), tn)

    @property
    def epi_subtiles(self) -> int:
        em, en = self.epi_tile
        return _ceil_div(self.tile_m, em) * _ceil_div(self.cta_tile_n, en)

    @property
    def reuse_smem_c(self) -> bool:
        """sm90_builder.inl sm90_get_tma_dispatch_policy: ReuseSmem = bits(C) == bits(D) and bits(D) > 8."""
        return self.read_c and self.bits_c == self.bits_d and self.bits_d > 8

    @property
    def epilogue_smem_bytes(self) -> int:
        """sizeof(CollectiveEpilogue::SharedStorage), sm90_epilogue_tma_warpspecialized.hpp (same layout
        rules as SM100: D only / C-D union when reusing / C + D), plus 16 B per C load stage."""
        c, d = self.epi_c_subtile_bytes, self.epi_d_subtile_bytes
        if not self.read_c:
            tensors = self.store_stages * d
        elif self.reuse_smem_c:
            tensors = self.load_stages * max(c, d)
        else:
            tensors = self.load_stages * c + self.store_stages * d
        return tensors + PIPELINE_STAGE_BARRIER_BYTES * self.load_stages

    @property
    def kernel_smem_carveout_bytes(self) -> int:
        """sm90_gmma_builder.inl KernelSmemCarveout = TensorMapStorage + SchedulerPipelineStorage = 0
        for non-pointer-array GEMM."""
        return 0

    def smem_capacity(self, arch: ArchSpec | None = None) -> int:
        return int(arch.smem_bytes_per_cta.value) if arch is not None else SMEM_CAPACITY_BYTES

    def derived_mainloop_stages(self, arch: ArchSpec | None = None) -> int:
        """sm90_gmma_builder.inl compute_stage_count_or_override(StageCountAutoCarveout<epilogue bytes>):
        (capacity // 128 x 128 - round_up(carve-out, 128)) // (round_up(A + B, 128) + 16)."""
        cap = self.smem_capacity(arch) // 128 * 128 - self.kernel_smem_carveout_bytes
        carve = _round_up(self.epilogue_smem_bytes, 128)
        return (cap - carve) // self.mainloop_stage_bytes

    def smem_bytes(self, arch: ArchSpec | None = None) -> int:
        stages = self.mainloop_stages if self.mainloop_stages is not None else self.derived_mainloop_stages(arch)
        return stages * self.mainloop_stage_bytes + _round_up(self.epilogue_smem_bytes, 128)

    @property
    def consumer_threads_per_tile(self) -> int:
        """Threads holding one tile's accumulators: 256 (cooperative: both warpgroups) or 128 (pingpong)."""
        return 256 if self.schedule == "cooperative" else 128

    @property
    def accumulator_registers_per_thread(self) -> int:
        """tile_m x tile_n x acc bytes / 4 B per register / consumer threads holding the tile."""
        return self.tile_m * self.cta_tile_n * (self.bits_acc // 8) // 4 // self.consumer_threads_per_tile

    def resolved(self, arch: ArchSpec | None = None) -> Sm90GemmConfig:
        for f_name in ("dtype_ab", "dtype_acc", "dtype_c", "dtype_d"):
            canonical_dtype(getattr(self, f_name), f_name)
        em, en = self.epi_tile
        r = replace(self, tile_n=self.cta_tile_n, tile_k=self.cta_tile_k, epilogue_tile_m=em, epilogue_tile_n=en)
        r = replace(r, epilogue_store_stages=r.store_stages)
        r = replace(r, epilogue_load_stages=r.load_stages)
        if r.mainloop_stages is None:
            r = replace(r, mainloop_stages=r.derived_mainloop_stages(arch))
        return r

    def can_implement(self, arch: ArchSpec, *, allow_protocol_experiments: bool = False) -> None:
        if arch.sm_version != 90:
            raise ConfigError(f"arch={arch.name}: Sm90GemmConfig needs an SM90 architecture "
                              f"(got sm_version={arch.sm_version})")
        _check_shape(self.m, self.n, self.k, self.l)
        for f_name in ("dtype_ab", "dtype_acc", "dtype_c", "dtype_d"):
            canonical_dtype(getattr(self, f_name), f_name)
        _check_acc_dtype(canonical_dtype(self.dtype_ab), canonical_dtype(self.dtype_acc), "wgmma (mma_sm90_gmma.hpp)")
        if self.schedule not in SM90_SCHEDULES:
            raise ConfigError(f"schedule={self.schedule!r}: unknown; valid: {', '.join(SM90_SCHEDULES)}")
        _check_int_fields(self, ("tile_m", "cluster_m", "cluster_n", "swizzle"))
        r = self.resolved(arch)
        tm, tn = r.tile_m, r.tile_n
        # wgmma: M = 64 per warpgroup instruction, N a multiple of 8 in [8, 256] (mma_sm90_gmma.hpp).
        if r.schedule == "cooperative":
            if tm % 128 != 0 or tm <= 0:
                raise ConfigError(f"tile_m={tm}: cooperative schedule splits M over 2 consumer warpgroups of "
                                  "64-row wgmma: tile_m must be a multiple of 128 (sm90 cooperative kernel)")
        elif tm % 64 != 0 or tm <= 0:
            raise ConfigError(f"tile_m={tm}: pingpong needs tile_m a multiple of 64 (wgmma M = 64)")
        if not (tn % 8 == 0 and 8 <= tn <= 256):
            raise ConfigError(f"tile_n={tn}: wgmma needs N a multiple of 8 in [8, 256]")
        _check_tile_k(r.tile_k, r.bits_ab, "tile_k")
        regs = r.accumulator_registers_per_thread
        if regs > SM90_CONSUMER_REGISTERS:
            raise ConfigError(
                f"tile_m x tile_n={tm}x{tn}: {r.dtype_acc} accumulators need {regs} registers per thread over "
                f"{r.consumer_threads_per_tile} consumer threads > {SM90_CONSUMER_REGISTERS} "
                "(consumer warpgroup register budget MmaRegisterRequirement = warpgroup_reg_alloc<232>)")
        cm, cn = r.cluster_m, r.cluster_n
        if cm < 1 or cn < 1:
            raise ConfigError(f"cluster_m={cm}, cluster_n={cn}: cluster dimensions must be >= 1")
        if not (_is_pow2(cm) and _is_pow2(cn)):
            raise ConfigError(f"cluster_m={cm}, cluster_n={cn}: cluster dimensions must be powers of two "
                              "(tile_scheduler_params.h divmod_cluster_shape_* are FastDivmodU64Pow2)")
        max_cluster = int(arch.max_cluster_size.value)
        if cm * cn > max_cluster:
            raise ConfigError(f"cluster_m*cluster_n={cm * cn} > {max_cluster}: cluster larger than {max_cluster} CTAs")
        if r.tile_scheduler not in SM90_TILE_SCHEDULERS:
            raise ConfigError(f"tile_scheduler={r.tile_scheduler!r}: the SM90 model has only the static "
                              f"persistent scheduler; valid: {', '.join(SM90_TILE_SCHEDULERS)}")
        if r.raster not in RASTERS:
            raise ConfigError(f"raster={r.raster!r}: unknown; valid: {', '.join(RASTERS)}")
        if r.swizzle not in SWIZZLES:
            raise ConfigError(f"swizzle={r.swizzle}: max swizzle size must be one of {SWIZZLES}")
        if r.mainloop_stages < 1:
            raise ConfigError(f"mainloop_stages={r.mainloop_stages}: needs at least 1 stage "
                              f"(stage bytes {r.mainloop_stage_bytes} B do not fit)")
        if r.mainloop_stages < 2 and not allow_protocol_experiments:
            raise ConfigError(f"mainloop_stages={r.mainloop_stages}: SM90 needs at least 2 "
                              "(sm90_mma_tma_gmma_ss_warpspecialized.hpp static_assert(Stages >= 2))")
        cap = r.smem_capacity(arch)
        used = r.smem_bytes(arch)
        if used > cap:
            raise ConfigError(
                f"mainloop_stages={r.mainloop_stages}: SMEM overflow: {r.mainloop_stages} x {r.mainloop_stage_bytes} B "
                f"stages + {_round_up(r.epilogue_smem_bytes, 128)} B epilogue = {used} B > {cap} B per CTA")
        _check_epilogue(r.epilogue_tile_m, r.epilogue_tile_n, r.tile_m, r.tile_n,
                        r.epilogue_load_stages, r.epilogue_store_stages)
        _check_alignment(r.m, r.n, r.k, r.bits_ab, r.bits_c if r.read_c else None, r.bits_d)


# ============================================================================================ helpers
def _check_shape(m: int, n: int, k: int, l: int) -> None:  # noqa: E741
    for name, v in (("m", m), ("n", n), ("k", k), ("l", l)):
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ConfigError(f"{name}={v!r}: problem size must be a positive integer")


def _check_int_fields(cfg: Any, names: tuple[str, ...]) -> None:
    for name in names:
        v = getattr(cfg, name)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ConfigError(f"{name}={v!r}: must be a positive integer")


def _check_acc_dtype(ab: str, acc: str, where: str) -> None:
    """f32 accumulation always; f16 accumulation only for fp16 / fp8 inputs (not bf16 or tf32)."""
    if acc == "f32":
        return
    if acc == "fp16" and ab in ("fp16", "fp8e4m3", "fp8e5m2"):
        return
    raise ConfigError(f"dtype_acc={acc!r}: {where} accumulates in f32 (or fp16 for fp16/fp8 inputs); "
                      f"not with dtype_ab={ab!r}")


def _check_tile_k(tk: Any, bits_ab: int, name: str) -> None:
    if not isinstance(tk, int) or isinstance(tk, bool) or tk <= 0:
        raise ConfigError(f"{name}={tk!r}: must be a positive integer")
    # One MMA instruction consumes 32 bytes of K (K=16 for 16-bit, 32 for 8-bit, 8 for tf32).
    if (tk * bits_ab) % 256 != 0:
        raise ConfigError(f"{name}={tk}: K tile must be a multiple of one MMA instruction's K "
                          f"({256 // bits_ab} elements = 32 B for {bits_ab}-bit inputs)")


def _check_epilogue(em: int, en: int, cta_m: int, cta_n: int, load_st: int, store_st: int) -> None:
    if em <= 0 or en <= 0 or cta_m % em != 0 or cta_n % en != 0:
        raise ConfigError(f"epilogue_tile_m x epilogue_tile_n={em}x{en}: epilogue tile must divide the CTA tile "
                          f"{cta_m}x{cta_n}")
    if en % 8 != 0:
        raise ConfigError(f"epilogue_tile_n={en}: must be a multiple of 8 (sm100_builder.inl 'Unsupported tile shape')")
    if store_st < 1:
        raise ConfigError(f"epilogue_store_stages={store_st}: needs at least 1 (StagesD >= 1)")
    if load_st < 1:
        raise ConfigError(f"epilogue_load_stages={load_st}: needs at least 1 (StagesC >= 1)")


def _check_alignment(m: int, n: int, k: int, bits_ab: int, bits_c: int | None, bits_d: int) -> None:
    """TMA needs 16-byte aligned global strides: A (MxK) and B (NxK) K-major rows of k elements;
    C and D (MxN) N-major rows of n elements."""
    if (k * bits_ab) % 128 != 0:
        raise ConfigError(f"k={k}: A/B rows (K-major) are {k * bits_ab / 8:g} B; TMA needs strides that are a "
                          f"multiple of 16 B (k a multiple of {128 // bits_ab})")
    for name, bits in (("C", bits_c), ("D", bits_d)):
        if bits is not None and (n * bits) % 128 != 0:
            raise ConfigError(f"n={n}: {name} rows (N-major) are {n * bits / 8:g} B; TMA needs strides that are a "
                              f"multiple of 16 B (n a multiple of {128 // bits})")


# ========================================================================================= loading
def load_toml(path: str) -> dict:
    """Read a TOML file (tomllib on 3.11+, tomli before)."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def _field_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls)}


def _accepts(tp: Any, value: Any) -> bool:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(a, value) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    return isinstance(value, tp)


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(tp))
    return "None" if tp is type(None) else getattr(tp, "__name__", str(tp))


def config_from_mapping(cls: type, mapping: dict, origin: str = "mapping") -> Any:
    """Build ``cls`` (Sm100GemmConfig / Sm90GemmConfig) from a dict of field values.

    Unknown key -> ConfigError listing the valid fields; a value of the wrong type -> ConfigError
    naming the field, the value and the expected type. (Integers given as whole floats, e.g. 8192.0,
    are accepted for int fields.)
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a config dataclass")
    types_ = _field_types(cls)
    kwargs: dict[str, Any] = {}
    for key, value in mapping.items():
        if key not in types_:
            raise ConfigError(f"{key}={value!r} ({origin}): unknown {cls.__name__} field; valid fields: "
                              f"{', '.join(types_)}")
        tp = types_[key]
        if (isinstance(value, float) and value.is_integer() and _accepts(tp, 0) and not _accepts(tp, 0.5)):
            value = int(value)
        if not _accepts(tp, value):
            raise ConfigError(f"{key}={value!r} ({origin}): expected {_type_name(tp)}, got {type(value).__name__}")
        kwargs[key] = value
    return cls(**kwargs)


__all__ = [
    "ConfigError", "DTYPE_BITS", "canonical_dtype", "dtype_bits", "dtype_bytes", "Sm100GemmConfig",
    "Sm90GemmConfig", "load_toml", "config_from_mapping", "resolve_raster", "log_swizzle_size",
    "SMEM_CAPACITY_BYTES",
]
