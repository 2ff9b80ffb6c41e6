"""The SM100 kernel's configuration: CUTLASS's ``Sm100GemmTmaWarpSpecialized`` (the seed).

``None`` fields are filled by :meth:`Sm100GemmConfig.resolved` with the values CUTLASS's collective
builders compute (stage counts, epilogue tile); every derivation cites the CUTLASS file it follows.
``can_implement`` raises :class:`~simulator.errors.ConfigError` naming the field, the value and the
rule, like CUTLASS's can_implement traces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator.errors import ConfigError
from simulator.kernels.gemm_config import (
    BARRIER_BYTES,
    CLC_RESPONSE_BYTES,
    DEFAULT_SCHEDULER_STAGES,
    MAX_ACCUMULATOR_STAGES,
    PIPELINE_STAGE_BARRIER_BYTES,
    SM100_TILE_SCHEDULERS,
    TMEM_COLUMNS,
    TMEM_LANES,
    GemmConfigBase,
    _ceil_div,
    check_tile_k,
)

if TYPE_CHECKING:  # pragma: no cover
    from simulator.machine.arch import ArchSpec


@dataclass(frozen=True)
class Sm100GemmConfig(GemmConfigBase):
    """One launch of CUTLASS's SM100 TMA warp-specialized persistent GEMM (the seed kernel).

    An *MMA tile* (``mma_tile_m`` x ``mma_tile_n``) is computed by one CTA (1-SM) or by a CTA pair
    (2-SM, ``use_2sm``): the pair splits M (each CTA owns ``cta_tile_m = mma_tile_m / 2`` rows and
    loads half of B). A cluster of ``cluster_m x cluster_n`` CTAs covers
    ``(cluster_m / atom_thr_m) x cluster_n`` MMA tiles.
    """

    # m, n, k, l, dtype_ab, dtype_acc, dtype_c, dtype_d: declared by GemmConfigBase (in that order).
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
    # The stream-K scheduler (PersistentTileSchedulerSm100StreamK::Arguments; simulator.kernels.stream_k):
    # "data_parallel" is the kernel's own scheduler (CUTLASS's default), no fixup.
    decomposition: str = "data_parallel"
    splits: int = 1
    reduction: str = "deterministic"
    scheduler_sm_count: int | None = None   # KernelHardwareInfo::sm_count the scheduler sees (None: the arch's)

    SM_VERSION = 100
    MMA_INSTRUCTION = "tcgen05.mma (mma_sm100_umma.hpp)"
    CLUSTER_POW2_RULE = "cluster.hpp preferred_cluster_can_implement: 'Only support pow2'"
    MAX_CLUSTER_RULE = "sm100_gemm_tma_warpspecialized.hpp MaxClusterSize = 16"
    TILE_SCHEDULERS = SM100_TILE_SCHEDULERS
    MIN_STAGES_RULE = "sm100_mma_warpspecialized.hpp static_assert(Stages >= 2)"

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

    # ------------------------------------------------------------------------------- can_implement
    def _derived_fields(self) -> dict:
        """What :meth:`resolved` fills besides the epilogue tile and stage counts."""
        return {"mma_tile_k": self.tile_k, "accumulator_stages": self.acc_stages,
                "scheduler_stages": self.sched_stages}

    def _check_given_tiles(self) -> None:
        """MMA atom and K-tile shapes, and the 2-SM cluster rule (part of :meth:`check_given`)."""
        # MMA atom shapes (cute/arch/mma_sm100_umma.hpp SS atoms; sm100_common.inl builder asserts).
        tm, tn = self.mma_tile_m, self.mma_tile_n
        if self.use_2sm:
            if tm not in (128, 256):
                raise ConfigError(f"mma_tile_m={tm}: 2-SM tcgen05.mma (SM100_MMA_*_2x1SM_SS) needs M in {{128, 256}}")
            if not (tn % 16 == 0 and 16 <= tn <= 256):
                raise ConfigError(f"mma_tile_n={tn}: 2-SM tcgen05.mma needs N a multiple of 16 in [16, 256]")
        else:
            if tm not in (64, 128):
                raise ConfigError(f"mma_tile_m={tm}: 1-SM tcgen05.mma (SM100_MMA_*_SS) needs M in {{64, 128}}")
            if not (tn % 8 == 0 and 8 <= tn <= 256):
                raise ConfigError(f"mma_tile_n={tn}: 1-SM tcgen05.mma needs N a multiple of 8 in [8, 256]")
        check_tile_k(self.tile_k, self.bits_ab, "mma_tile_k")
        if self.use_2sm and self.cluster_m % 2 != 0:
            raise ConfigError(f"cluster_m={self.cluster_m}: 2-SM MMA needs an even cluster_m (CTA pairs along M; "
                              "cluster.hpp preferred_cluster_can_implement: cluster_shape.x % AtomThrShapeM == 0)")

    def _smem_parts(self) -> list[str]:
        return [f"{self.kernel_smem_carveout_bytes} B kernel carve-out", f"{self.epilogue_smem_bytes} B epilogue"]

    def _separate_refusal(self) -> str:
        return ("the SM100 kernel (the seed) has CUTLASS's reductions only: deterministic or nondeterministic; the "
                "separate reduction is the SM90 twin's")

    def _stream_k_refusal(self) -> str:
        if self.tile_scheduler != "clc":
            return (f"tile_scheduler={self.tile_scheduler!r}: the SM100 stream-K scheduler "
                    "(PersistentTileSchedulerSm100StreamK) hands its units out through CLC; use tile_scheduler='clc'")
        if self.overlapping_accum:
            return ("overlapping_accum=True: not modelled with the stream-K scheduler (the seed's fixup releases "
                    "whole accumulator stages)")
        return ""

    def _check_resources(self, arch: ArchSpec, allow_protocol_experiments: bool) -> None:
        """Accumulators in TMEM; CUTLASS's accumulator-stage rules unless experimenting."""
        cells = self.tmem_cells_needed
        tmem_cells = int(arch.tmem_lanes.value * arch.tmem_columns.value)
        if cells > tmem_cells:
            raise ConfigError(
                f"accumulator_stages={self.accumulator_stages}: TMEM overflow: {self.accumulator_stages} x "
                f"{self.cta_tile_m}x{self.cta_tile_n} {self.dtype_acc} = {cells} cells > {tmem_cells} "
                f"({int(arch.tmem_lanes.value)} lanes x {int(arch.tmem_columns.value)} columns)")
        if not allow_protocol_experiments:
            if self.accumulator_stages > MAX_ACCUMULATOR_STAGES:
                raise ConfigError(f"accumulator_stages={self.accumulator_stages} > {MAX_ACCUMULATOR_STAGES}: "
                                  "CUTLASS caps accumulator stages at 4 (sm100_umma_builder.inl)")
            if self.overlapping_accum and self.accumulator_stages != 1:
                raise ConfigError(f"overlapping_accum=True with accumulator_stages={self.accumulator_stages}: "
                                  "CUTLASS uses overlapping accumulators only when AccumulatorPipelineStageCount "
                                  "== 1 (dispatch_policy.hpp, block-scaled SM100 policies)")

    def warnings(self) -> list[str]:
        """Legal but unusual choices (not errors)."""
        out = []
        if self.tile_k * self.bits_ab // 8 != 128:
            out.append(f"mma_tile_k={self.tile_k}: {self.tile_k * self.bits_ab // 8} B of K per row; CUTLASS's "
                       "default is 128 B (one SW128 swizzle atom); a smaller swizzle is used otherwise")
        return out
