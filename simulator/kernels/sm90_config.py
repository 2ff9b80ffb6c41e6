"""The SM90 kernel's configuration: CUTLASS's ``KernelTmaWarpSpecializedCooperative`` / ``Pingpong``
(the Hopper twin).

``None`` fields are filled by :meth:`Sm90GemmConfig.resolved` with the values CUTLASS's collective
builders compute (stage counts, epilogue tile); every derivation cites the CUTLASS file it follows.
``can_implement`` raises :class:`~simulator.errors.ConfigError` naming the field, the value and the
rule, like CUTLASS's can_implement traces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator.errors import ConfigError
from simulator.kernels.gemm_config import (
    PIPELINE_STAGE_BARRIER_BYTES,
    SM90_CONSUMER_REGISTERS,
    SM90_SCHEDULES,
    SM90_TILE_SCHEDULERS,
    GemmConfigBase,
    _ceil_div,
    _round_up,
    canonical_dtype,
    check_tile_k,
)

if TYPE_CHECKING:  # pragma: no cover
    from simulator.machine.arch import ArchSpec

#: tile_m of the twin's cooperative kernel with one math warpgroup (hw_kernels/sm90_gemm.py): the stream-K
#: scheduler's 64-row tiles for M <= 64, which CUTLASS's cooperative kernel does not build.
COOPERATIVE_ONE_WG_TILE_M = 64


@dataclass(frozen=True)
class Sm90GemmConfig(GemmConfigBase):
    """One launch of CUTLASS's SM90 TMA warp-specialized persistent GEMM (cooperative or pingpong).

    cooperative (``KernelTmaWarpSpecializedCooperative``): two consumer warpgroups split one tile's M
    (tile_m a multiple of 128, 64 rows per warpgroup per wgmma); at tile_m = 64 one consumer warpgroup holds
    the whole tile (the twin's extension, so that the stream-K scheduler reaches M <= 64: CUTLASS's
    cooperative kernel static_asserts tile M >= 128). pingpong
    (``KernelTmaWarpSpecializedPingpong``): each consumer warpgroup owns a whole tile and the two
    alternate mainloop/epilogue through an ordered barrier. ``tile_n`` None -> 256 (cooperative) or
    128 (pingpong: a 128x256 fp32 accumulator would need 256 registers per thread of one warpgroup,
    over the 232-register budget).
    """

    # m, n, k, l, dtype_ab, dtype_acc, dtype_c, dtype_d: declared by GemmConfigBase (in that order).
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
    # The stream-K scheduler (PersistentTileSchedulerSm90StreamK::Arguments; simulator.kernels.stream_k):
    # "data_parallel" is the kernel's own scheduler (CUTLASS's default), no fixup.
    decomposition: str = "data_parallel"
    splits: int = 1
    reduction: str = "deterministic"
    scheduler_sm_count: int | None = None   # KernelHardwareInfo::sm_count the scheduler sees (None: the arch's)

    SM_VERSION = 90
    MMA_INSTRUCTION = "wgmma (mma_sm90_gmma.hpp)"
    CLUSTER_POW2_RULE = "tile_scheduler_params.h divmod_cluster_shape_* are FastDivmodU64Pow2"
    TILE_SCHEDULERS = SM90_TILE_SCHEDULERS
    TILE_SCHEDULER_RULE = "the SM90 model has only the static persistent scheduler"
    MIN_STAGES_RULE = "sm90_mma_tma_gmma_ss_warpspecialized.hpp static_assert(Stages >= 2)"

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
        """Math warpgroups of one CTA: two, but one in the twin's 64-row cooperative kernel."""
        return 1 if self.schedule == "cooperative" and self.tile_m == COOPERATIVE_ONE_WG_TILE_M else 2

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
        """Threads holding one tile's accumulators: 128 per math warpgroup (cooperative: all of them) or 128
        (pingpong)."""
        return 128 * self.num_consumer_warpgroups if self.schedule == "cooperative" else 128

    @property
    def accumulator_registers_per_thread(self) -> int:
        """tile_m x tile_n x acc bytes / 4 B per register / consumer threads holding the tile."""
        return self.tile_m * self.cta_tile_n * (self.bits_acc // 8) // 4 // self.consumer_threads_per_tile

    def _derived_fields(self) -> dict:
        """What :meth:`resolved` fills besides the epilogue tile and stage counts."""
        return {"tile_n": self.cta_tile_n, "tile_k": self.cta_tile_k}

    def _check_given_tiles(self) -> None:
        """Schedule, wgmma tile and K-tile shapes, accumulator registers (part of :meth:`check_given`)."""
        if self.schedule not in SM90_SCHEDULES:
            raise ConfigError(f"schedule={self.schedule!r}: unknown; valid: {', '.join(SM90_SCHEDULES)}")
        tm, tn = self.tile_m, self.cta_tile_n
        # wgmma: M = 64 per warpgroup instruction, N a multiple of 8 in [8, 256] (mma_sm90_gmma.hpp).
        if self.schedule == "cooperative":
            if tm % 128 != 0 and tm != COOPERATIVE_ONE_WG_TILE_M:
                raise ConfigError(f"tile_m={tm}: cooperative schedule splits M over 2 consumer warpgroups of "
                                  "64-row wgmma: tile_m must be a multiple of 128 (sm90 cooperative kernel), "
                                  f"or {COOPERATIVE_ONE_WG_TILE_M} (the twin's one-warpgroup cooperative kernel)")
        elif tm % 64 != 0:
            raise ConfigError(f"tile_m={tm}: pingpong needs tile_m a multiple of 64 (wgmma M = 64)")
        if not (tn % 8 == 0 and 8 <= tn <= 256):
            raise ConfigError(f"tile_n={tn}: wgmma needs N a multiple of 8 in [8, 256]")
        check_tile_k(self.cta_tile_k, self.bits_ab, "tile_k")
        regs = self.accumulator_registers_per_thread
        if regs > SM90_CONSUMER_REGISTERS:
            raise ConfigError(
                f"tile_m x tile_n={tm}x{tn}: {canonical_dtype(self.dtype_acc)} accumulators need {regs} registers "
                f"per thread over {self.consumer_threads_per_tile} consumer threads > {SM90_CONSUMER_REGISTERS} "
                "(consumer warpgroup register budget MmaRegisterRequirement = warpgroup_reg_alloc<232>)")

    def _smem_parts(self) -> list[str]:
        return [f"{_round_up(self.epilogue_smem_bytes, 128)} B epilogue"]

    def _stream_k_refusal(self) -> str:
        if self.schedule != "cooperative":
            return (f"schedule={self.schedule!r}: the stream-K scheduler runs only in the cooperative kernel "
                    "(sm90_gemm_tma_warpspecialized_pingpong.hpp: \"Ping-pong kernel does not currently support "
                    "stream-K scheduler.\")")
        return ""
