"""The seed kernel (CUTLASS ``sm100_gemm_tma_warpspecialized.hpp``) in CuTe DSL, for Blackwell (sm_100a).

D[M, N, L] = A[M, K, L] @ B[N, K, L]^T: A and B K-major, bf16 or fp16 in, fp32 accumulate in TMEM,
D (N-major) in the input type. There is no Blackwell GPU in this project: the kernel is compiled
for sm_100a on a CPU and its PTX is inspected (tests/test_hw_sm100_compile.py), never run.
hw_kernels/SM100.md maps every role and barrier to the seed and to the SimPy model
(simulator/kernels/sm100_tma_ws.py); every arrival count comes from ``simulator.protocol.arrivals``.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.memory
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_utils
from cutlass.cute.nvgpu import cpasync, tcgen05
from cutlass.cutlass_dsl import Int32
from cutlass.tensor_utils import LayoutEnum
from cutlass.utils.static_persistent_tile_scheduler import WorkTileInfo

from simulator.errors import ConfigError
from simulator.kernels.gemm_config import SMEM_CAPACITY_BYTES
from simulator.protocol.arrivals import KernelFacts, sm100_arrival_counts, sm100_barrier_counts

THREADS_PER_WARP = 32
CLC_RESPONSE_BYTES = 16  # sizeof(CLCResponse): the try_cancel answer is one 16-byte word
CLC_RESPONSE_WORDS = CLC_RESPONSE_BYTES // 4
TMEM_COLUMNS = 512  # 128 lanes x 512 columns of 32 bits per SM
TMEM_LANES = 128
MAX_CLUSTER_SIZE = 16  # non-portable cluster size limit on SM100
# Bytes of SMEM the kernel keeps besides A/B/D tiles: barriers, CLC responses, TMEM base pointer,
# and the 1 KB alignment slack of the swizzled SMEM tensors.
SMEM_RESERVED_BYTES = 1024 + 256

DTYPES = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16}


class Sm100TmaWsGemm:
    """Persistent TMA warp-specialized tcgen05 GEMM with CLC scheduling: the seed's structure.

    Roles (seed ``WarpCategory``; 8 warps, 256 threads per CTA):

    * warp 0 ``MMA``: allocates TMEM (all columns), and on the MMA-leader CTA of a 1-SM CTA or 2-SM
      pair issues one ``tcgen05.mma`` K-block per mainloop stage into one accumulator stage per tile;
      frees TMEM at the end (after a handshake with the peer CTA in 2-SM mode).
    * warp 1 ``Sched`` (first CTA of the cluster only): ``clusterlaunchcontrol.try_cancel`` for the
      next cluster, multicast to every CTA of the cluster, throttled by the CLC throttle pipeline.
    * warp 2 ``MainloopLoad``: TMA loads of A and B (multicast across the cluster), one K-block per
      stage; on CTA 0 also the producer of the CLC throttle, once per tile.
    * warp 3 ``EpilogueLoad``: idle (no C operand: ``is_participant.epi_load`` is false in the seed).
    * warps 4-7 ``Epilogue``: TMEM -> registers -> convert -> SMEM -> TMA store, one subtile at a time.

    Pipelines (producer -> consumer: what one stage carries):

    * ``mainloop`` PipelineTmaUmma (stages from SMEM): MainloopLoad (TMA, expect-tx) -> MMA: one
      K-block of A and B (the pair's halves land on the leader's full barrier);
    * ``accumulator`` PipelineUmmaAsync (TMEM stages): MMA (tcgen05.commit, multicast to the pair)
      -> Epilogue (every epilogue thread of both CTAs arrives on the leader): one tile's accumulator;
    * ``clc`` PipelineClcFetchAsync: Sched of CTA 0 (try_cancel, 16 B tx per CTA) -> every role of
      every CTA (+ Sched itself): the next work tile;
    * ``clc_throttle`` PipelineAsync: MainloopLoad of CTA 0 -> Sched: permission for one more query;
    * ``epi_store`` PipelineTmaStore: Epilogue -> TMA store unit: one D subtile in SMEM.

    Single barriers: ``epilogue_throttle`` (MMA, Sched, MainloopLoad -> Epilogue: prologue done),
    ``tmem_alloc`` (named: MMA + Epilogue), ``tmem_dealloc`` (cluster: the MMA warps of a 2-SM pair).

    Steady state per role (the seed's ``operator()`` branches):

    * MainloopLoad: ``[clc_throttle.producer_acquire + producer_commit]; for k: mainloop
      .producer_acquire -> TMA A, B; fetch_next_work`` per tile; ``producer_tail``.
    * MMA: ``fetch_next_work; accumulator.producer_acquire; for k: mainloop.consumer_wait -> mma ->
      consumer_release; accumulator.producer_commit`` per tile; ``producer_tail``; dealloc.
    * Epilogue: ``fetch_next_work; accumulator.consumer_wait; for each subtile: TMEM load ->
      [accumulator.consumer_release after the last] -> convert -> epi_store.producer_acquire -> SMEM ->
      TMA store -> producer_commit`` per tile; ``epi_store.producer_tail``.
    * Sched: ``clc_throttle.consumer_wait + consumer_release; clc.producer_acquire -> try_cancel;
      fetch_next_work`` per tile; ``clc.producer_tail``.
    """

    # seed WarpCategory
    MMA_WARP = 0
    SCHED_WARP = 1
    MAINLOOP_LOAD_WARP = 2
    EPILOGUE_LOAD_WARP = 3
    EPILOGUE_WARPS = (4, 5, 6, 7)
    THREADS_PER_CTA = THREADS_PER_WARP * 8
    NUM_EPILOGUE_THREADS = THREADS_PER_WARP * len(EPILOGUE_WARPS)
    # Hardware named barriers (id 0 is __syncthreads).
    TMEM_ALLOC_BARRIER_ID = 1
    EPILOGUE_BARRIER_ID = 2

    def __init__(self, mma_tile_mn: tuple[int, int] = (256, 256), use_2sm: bool = True,
                 cluster_mn: tuple[int, int] = (2, 1), mainloop_stages: int | None = None,
                 accumulator_stages: int = 2, scheduler_stages: int = 2, epi_tile_mn: tuple[int, int] = (128, 32),
                 store_stages: int = 2, tile_k: int | None = None, dtype: str = "bf16"):
        Sm100TmaWsGemm.can_implement(None, None, None, mma_tile_mn=mma_tile_mn, use_2sm=use_2sm, tile_k=tile_k,
                                     cluster_mn=cluster_mn, mainloop_stages=mainloop_stages,
                                     accumulator_stages=accumulator_stages, scheduler_stages=scheduler_stages,
                                     epi_tile_mn=epi_tile_mn, store_stages=store_stages, dtype=dtype)
        self.mma_tile_mn = tuple(mma_tile_mn)
        self.use_2sm = use_2sm
        self.atom_thr_m = 2 if use_2sm else 1
        self.cluster_mn = tuple(cluster_mn)
        self.cluster_size = cluster_mn[0] * cluster_mn[1]
        self.tile_k = tile_k  # None: 128 bytes of K (set in _setup_attributes)
        self.mainloop_stages = mainloop_stages  # None: as many as fit in SMEM (set in _setup_attributes)
        self.accumulator_stages = accumulator_stages
        self.scheduler_stages = scheduler_stages
        self.epi_tile_mn = tuple(epi_tile_mn)
        self.store_stages = store_stages
        self.dtype = dtype
        self.acc_dtype = cutlass.Float32
        self.cta_group = tcgen05.CtaGroup.TWO if use_2sm else tcgen05.CtaGroup.ONE
        # The counts every barrier is initialised with; checked against what this kernel's code does.
        self.facts = KernelFacts(cluster_m=cluster_mn[0], cluster_n=cluster_mn[1], use_2sm=use_2sm,
                                 read_c=False, overlapping_accum=False, num_epilogue_threads=self.NUM_EPILOGUE_THREADS,
                                 threads_per_warp=THREADS_PER_WARP)
        self.arrival_counts = sm100_arrival_counts(self.facts)
        self.barrier_counts = {rank: sm100_barrier_counts(self.facts, rank) for rank in range(self.cluster_size)}
        self._check_counts(self._counts_this_code_arrives_with(mcast_peers=None))

    # ------------------------------------------------------------------------------------ setup
    def _setup_attributes(self, tiled_mma: cute.TiledMma) -> None:
        """Shapes, SMEM layouts and counts that depend on the operand types (set inside __call__)."""
        # tcgen05 consumes 32 bytes of K per instruction; by default a stage holds 4 of them (128 B
        # of K per row: one SW128 swizzle atom, CUTLASS's default tile K).
        mma_inst_k = cute.size(tiled_mma.shape_mnk, mode=[2])
        self.mma_tiler = (*self.mma_tile_mn, self.tile_k if self.tile_k is not None else mma_inst_k * 4)
        # A 2-SM MMA tile is split along M: each CTA of the pair owns half of its rows.
        self.cta_tile_shape_mnk = (self.mma_tiler[0] // self.atom_thr_m, self.mma_tiler[1], self.mma_tiler[2])
        # (V, M, N, K) cluster layout: V = the CTAs of one MMA atom (the 2-SM pair).
        self.cluster_layout_vmnk = cute.tiled_divide(cute.make_layout((*self.cluster_mn, 1)),
                                                     (tiled_mma.thr_id.shape,))
        # A is multicast along the cluster's N mode (same rows), B along its M mode (same columns).
        self.num_mcast_ctas_a = cute.size(self.cluster_layout_vmnk.shape[2])
        self.num_mcast_ctas_b = cute.size(self.cluster_layout_vmnk.shape[1])
        self.kernel_counts = self._counts_this_code_arrives_with(self.num_mcast_ctas_a + self.num_mcast_ctas_b - 1)
        self._check_counts(self.kernel_counts)

        # (MMA, MMA_M, MMA_N, ACC_STAGE): the accumulator stages, to size the TMEM allocation.
        acc_fake = tiled_mma.make_fragment_C(
            cute.append(tiled_mma.partition_shape_C(self.mma_tiler[:2]), self.accumulator_stages))
        self.num_tmem_cols = cutlass.memory.get_num_tmem_alloc_cols(acc_fake)
        if self.num_tmem_cols > TMEM_COLUMNS:
            raise ConfigError(f"accumulator_stages={self.accumulator_stages}: the accumulators need "
                              f"{self.num_tmem_cols} TMEM columns, an SM has {TMEM_COLUMNS}")

        self.epi_tile = self.epi_tile_mn
        # SMEM per stage, from the DSL's own layouts (swizzle atoms included).
        a_one = sm100_utils.make_smem_layout_a(tiled_mma, self.mma_tiler, self.ab_dtype, 1)
        b_one = sm100_utils.make_smem_layout_b(tiled_mma, self.mma_tiler, self.ab_dtype, 1)
        d_one = sm100_utils.make_smem_layout_epi(self.d_dtype, self.d_layout, self.epi_tile, 1)
        self.a_stage_bytes = cute.size_in_bytes(self.ab_dtype, a_one)
        self.b_stage_bytes = cute.size_in_bytes(self.ab_dtype, b_one)
        d_stage_bytes = cute.size_in_bytes(self.d_dtype, d_one)
        ab_stage_bytes = self.a_stage_bytes + self.b_stage_bytes
        fixed_bytes = d_stage_bytes * self.store_stages + SMEM_RESERVED_BYTES
        if self.mainloop_stages is None:
            # Stages from SMEM: what is left after the epilogue buffers and the barriers.
            self.mainloop_stages = (SMEM_CAPACITY_BYTES - fixed_bytes) // ab_stage_bytes
        self.smem_bytes = ab_stage_bytes * self.mainloop_stages + fixed_bytes
        if self.smem_bytes > SMEM_CAPACITY_BYTES or self.mainloop_stages < 2:
            raise ConfigError(f"mainloop_stages={self.mainloop_stages}: {self.smem_bytes} B of SMEM needed "
                              f"({ab_stage_bytes} B per stage), the SM100 limit is {SMEM_CAPACITY_BYTES} B "
                              "per CTA and the mainloop needs >= 2 stages")
        # The leader's full barrier counts the bytes of both CTAs of the pair (seed TmaTransactionBytes).
        self.tma_transaction_bytes = ab_stage_bytes * self.atom_thr_m
        self.a_smem_layout_staged = sm100_utils.make_smem_layout_a(tiled_mma, self.mma_tiler, self.ab_dtype,
                                                                   self.mainloop_stages)
        self.b_smem_layout_staged = sm100_utils.make_smem_layout_b(tiled_mma, self.mma_tiler, self.ab_dtype,
                                                                   self.mainloop_stages)
        self.d_smem_layout_staged = sm100_utils.make_smem_layout_epi(self.d_dtype, self.d_layout, self.epi_tile,
                                                                     self.store_stages)

    # ------------------------------------------------------------------------------------ host
    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, d: cute.Tensor, raster_n: Int32, log_swizzle: Int32,
                 major_div_s: Int32, first_res_minor: Int32, grid_x: Int32, grid_y: Int32, stream):
        """Build the TMA descriptors and launch one CTA per output CTA tile (CLC cancels the surplus).

        ``raster_n, log_swizzle, major_div_s, first_res_minor, grid_x, grid_y``: the problem's CLC
        order, ``hw_kernels.schedule.clc_schedule(...).kernel_args()`` (raster and swizzle are run-time
        arguments: one compile serves every raster and swizzle)."""
        self.ab_dtype = a.element_type
        self.d_dtype = d.element_type
        if cutlass.const_expr(a.element_type != b.element_type):
            raise TypeError(f"A is {a.element_type} but B is {b.element_type}: tcgen05 needs one A/B type")
        self.d_layout = LayoutEnum.from_tensor(d)
        a_major = LayoutEnum.from_tensor(a).mma_major_mode()
        b_major = LayoutEnum.from_tensor(b).mma_major_mode()
        tiled_mma = sm100_utils.make_trivial_tiled_mma(self.ab_dtype, self.ab_dtype, a_major, b_major, self.acc_dtype,
                                                       self.cta_group, self.mma_tile_mn)
        self._setup_attributes(tiled_mma)

        # TMA loads: multicast (and, for 2-SM, the pair-aware op that signals the leader's barrier).
        a_op = sm100_utils.cluster_shape_to_tma_atom_A(self.cluster_mn, tiled_mma.thr_id)
        b_op = sm100_utils.cluster_shape_to_tma_atom_B(self.cluster_mn, tiled_mma.thr_id)
        tma_atom_a, tma_tensor_a = cute.nvgpu.make_tiled_tma_atom_A(
            a_op, a, cute.slice_(self.a_smem_layout_staged, (None, None, None, 0)), self.mma_tiler, tiled_mma,
            self.cluster_layout_vmnk.shape)
        tma_atom_b, tma_tensor_b = cute.nvgpu.make_tiled_tma_atom_B(
            b_op, b, cute.slice_(self.b_smem_layout_staged, (None, None, None, 0)), self.mma_tiler, tiled_mma,
            self.cluster_layout_vmnk.shape)
        # TMA store of one epilogue subtile.
        tma_atom_d, tma_tensor_d = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), d, cute.select(self.d_smem_layout_staged, mode=[0, 1]),
            self.epi_tile)

        # CLC launches the whole problem (one CTA per CTA tile, rounded up to whole clusters), transposed
        # for AlongN (seed: possibly_transpose_grid); try_cancel then steals clusters that have not
        # started, which makes the kernel persistent.
        grid = (grid_x * self.cluster_mn[0], grid_y * self.cluster_mn[1], d.shape[2])

        self.kernel(tiled_mma, tma_atom_a, tma_tensor_a, tma_atom_b, tma_tensor_b, tma_atom_d, tma_tensor_d,
                    self.cluster_layout_vmnk, self.a_smem_layout_staged, self.b_smem_layout_staged,
                    self.d_smem_layout_staged, raster_n, log_swizzle, major_div_s, first_res_minor).launch(
            grid=grid, block=[self.THREADS_PER_CTA, 1, 1], cluster=(*self.cluster_mn, 1), stream=stream)

    # ------------------------------------------------------------------------------------ device
    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tma_atom_a: cute.CopyAtom, mA_mkl: cute.Tensor,
               tma_atom_b: cute.CopyAtom, mB_nkl: cute.Tensor, tma_atom_d: cute.CopyAtom, mD_mnl: cute.Tensor,
               cluster_layout_vmnk: cute.Layout, a_smem_layout_staged: cute.ComposedLayout,
               b_smem_layout_staged: cute.ComposedLayout, d_smem_layout_staged: cute.ComposedLayout,
               raster_n: Int32, log_swizzle: Int32, major_div_s: Int32, first_res_minor: Int32):
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        # The problem's CLC order (hw_kernels/schedule.py ClcSchedule.kernel_args), used by every
        # swizzle_and_rasterize.
        order = (raster_n, log_swizzle, major_div_s, first_res_minor)
        tidx, _, _ = cute.arch.thread_idx()
        cta_rank_in_cluster = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        is_first_cta_in_cluster = cta_rank_in_cluster == 0
        # seed: cta_coord_v = rank % size<0>(AtomThrID); the even CTA of a 2-SM pair leads the MMA.
        cta_coord_v = cta_rank_in_cluster % self.atom_thr_m
        is_mma_leader_cta = cta_coord_v == 0
        mma_peer_cta_rank = cta_rank_in_cluster ^ 1
        block_in_cluster_coord_vmnk = cluster_layout_vmnk.get_flat_coord(cta_rank_in_cluster)

        # seed: the Sched warp prefetches the TMA descriptors.
        if warp_idx == self.SCHED_WARP:
            cpasync.prefetch_descriptor(tma_atom_a)
            cpasync.prefetch_descriptor(tma_atom_b)
            cpasync.prefetch_descriptor(tma_atom_d)

        @cute.struct
        class SharedStorage:
            mainloop_mbar: cute.struct.MemRange[cutlass.Int64, self.mainloop_stages * 2]
            accumulator_mbar: cute.struct.MemRange[cutlass.Int64, self.accumulator_stages * 2]
            clc_mbar: cute.struct.MemRange[cutlass.Int64, self.scheduler_stages * 2]
            clc_throttle_mbar: cute.struct.MemRange[cutlass.Int64, self.scheduler_stages * 2]
            tmem_dealloc_mbar: cutlass.Int64
            epilogue_throttle_mbar: cutlass.Int64
            tmem_base_ptr: cutlass.Int32
            clc_response: cute.struct.Align[
                cute.struct.MemRange[cutlass.Int32, CLC_RESPONSE_WORDS * self.scheduler_stages], CLC_RESPONSE_BYTES]

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(SharedStorage)

        # ---- pipelines: counts from simulator.protocol.arrivals (checked against this code in _setup_attributes)
        counts = self.arrival_counts
        mainloop = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.mainloop_mbar.data_ptr(), num_stages=self.mainloop_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, counts["mainloop"].producer),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, counts["mainloop"].consumer),
            tx_count=self.tma_transaction_bytes, cta_layout_vmnk=cluster_layout_vmnk, defer_sync=True)
        accumulator = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.accumulator_mbar.data_ptr(), num_stages=self.accumulator_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, counts["accumulator"].producer),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, counts["accumulator"].consumer),
            cta_layout_vmnk=cluster_layout_vmnk, defer_sync=True)
        clc = pipeline.PipelineClcFetchAsync.create(
            barrier_storage=storage.clc_mbar.data_ptr(), num_stages=self.scheduler_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, counts["clc"].producer),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, counts["clc"].consumer),
            tx_count=CLC_RESPONSE_BYTES, cta_layout_vmnk=cluster_layout_vmnk, defer_sync=True)
        # Initialised in every CTA (uniform SMEM layout) but used only by CTA 0's MainloopLoad and Sched.
        clc_throttle = pipeline.PipelineAsync.create(
            barrier_storage=storage.clc_throttle_mbar.data_ptr(), num_stages=self.scheduler_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, counts["clc_throttle"].producer),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, counts["clc_throttle"].consumer),
            defer_sync=True)
        tmem_alloc_barrier = pipeline.NamedBarrier(barrier_id=self.TMEM_ALLOC_BARRIER_ID,
                                                   num_threads=self.barrier_counts[0]["tmem_alloc"])
        epilogue_barrier = pipeline.NamedBarrier(barrier_id=self.EPILOGUE_BARRIER_ID,
                                                 num_threads=self.NUM_EPILOGUE_THREADS)
        epilogue_throttle = storage.epilogue_throttle_mbar.ptr
        tmem_dealloc = storage.tmem_dealloc_mbar.ptr
        # seed: the MMA warp initialises the epilogue-throttle and TMEM-deallocation barriers; the
        # throttle counts the Sched warp only where it runs (CTA 0).
        throttle_cta0 = self.barrier_counts[0]["epilogue_throttle"]
        throttle_peer = self.barrier_counts[1]["epilogue_throttle"] if self.cluster_size > 1 else throttle_cta0
        if warp_idx == self.MMA_WARP:
            with cute.arch.elect_one():
                if is_first_cta_in_cluster:
                    cute.arch.mbarrier_init(epilogue_throttle, throttle_cta0)
                else:
                    cute.arch.mbarrier_init(epilogue_throttle, throttle_peer)
                if cutlass.const_expr(self.use_2sm):
                    cute.arch.mbarrier_init(tmem_dealloc, self.barrier_counts[0]["tmem_dealloc"])
        # Barrier inits must be visible cluster-wide before any remote arrive (pipeline_init_arrive_relaxed).
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster_mn, is_relaxed=True)

        # ---- SMEM tensors
        # (MMA, MMA_M, MMA_K, STAGE)
        sA = smem.allocate_tensor(element_type=self.ab_dtype, layout=a_smem_layout_staged.outer,
                                  byte_alignment=128, swizzle=a_smem_layout_staged.inner)
        # (MMA, MMA_N, MMA_K, STAGE)
        sB = smem.allocate_tensor(element_type=self.ab_dtype, layout=b_smem_layout_staged.outer,
                                  byte_alignment=128, swizzle=b_smem_layout_staged.inner)
        # (EPI_TILE_M, EPI_TILE_N, STAGE)
        sD = smem.allocate_tensor(element_type=self.d_dtype, layout=d_smem_layout_staged.outer,
                                  byte_alignment=128, swizzle=d_smem_layout_staged.inner)

        # ---- global tensors tiled by the MMA tile, then partitioned for this CTA of the atom
        # (bM, bK, RestM, RestK, RestL)
        gA_mkl = cute.local_tile(mA_mkl, cute.slice_(self.mma_tiler, (None, 0, None)), (None, None, None))
        # (bN, bK, RestN, RestK, RestL)
        gB_nkl = cute.local_tile(mB_nkl, cute.slice_(self.mma_tiler, (0, None, None)), (None, None, None))
        # (bM, bN, RestM, RestN, RestL)
        gD_mnl = cute.local_tile(mD_mnl, cute.slice_(self.mma_tiler, (None, None, 0)), (None, None, None))
        k_tile_count = cute.size(gA_mkl, mode=[3])
        thr_mma = tiled_mma.get_slice(cta_coord_v)
        # (MMA, MMA_M, MMA_K, RestM, RestK, RestL)
        tCgA = thr_mma.partition_A(gA_mkl)
        # (MMA, MMA_N, MMA_K, RestN, RestK, RestL)
        tCgB = thr_mma.partition_B(gB_nkl)
        # (MMA, MMA_M, MMA_N, RestM, RestN, RestL)
        tCgD = thr_mma.partition_C(gD_mnl)

        # TMA partitions: A is shared by the CTAs along the cluster's N mode, B along its M mode.
        # ((ATOM_V, REST_V), STAGE), ((ATOM_V, REST_V), RestM, RestK, RestL)
        tAsA, tAgA = cpasync.tma_partition(
            tma_atom_a, block_in_cluster_coord_vmnk[2],
            cute.make_layout(cute.slice_(cluster_layout_vmnk, (0, 0, None, 0)).shape),
            cute.group_modes(sA, 0, 3), cute.group_modes(tCgA, 0, 3))
        # ((ATOM_V, REST_V), STAGE), ((ATOM_V, REST_V), RestN, RestK, RestL)
        tBsB, tBgB = cpasync.tma_partition(
            tma_atom_b, block_in_cluster_coord_vmnk[1],
            cute.make_layout(cute.slice_(cluster_layout_vmnk, (0, None, 0, 0)).shape),
            cute.group_modes(sB, 0, 3), cute.group_modes(tCgB, 0, 3))
        a_mcast_mask = None
        b_mcast_mask = None
        if cutlass.const_expr(self.num_mcast_ctas_a > 1 or self.num_mcast_ctas_b > 1 or self.use_2sm):
            a_mcast_mask = cpasync.create_tma_multicast_mask(cluster_layout_vmnk, block_in_cluster_coord_vmnk,
                                                             mcast_mode=2)
            b_mcast_mask = cpasync.create_tma_multicast_mask(cluster_layout_vmnk, block_in_cluster_coord_vmnk,
                                                             mcast_mode=1)

        # MMA operands: descriptors of the SMEM stages; the accumulator layout without its TMEM address.
        # (MMA, MMA_M, MMA_K, STAGE)
        tCrA = tiled_mma.make_fragment_A(sA)
        # (MMA, MMA_N, MMA_K, STAGE)
        tCrB = tiled_mma.make_fragment_B(sB)
        # (MMA, MMA_M, MMA_N, ACC_STAGE)
        tCtAcc_layout = tiled_mma.make_fragment_C(
            cute.append(tiled_mma.partition_shape_C(self.mma_tiler[:2]), self.accumulator_stages))

        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster_mn)

        work_tile_info = self._initial_work_tile_info(order)
        clc_consumer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.scheduler_stages)
        # One 16-byte response per CLC stage; indexed as Int128 so that every slot keeps its alignment.
        clc_response = cute.recast_ptr(storage.clc_response.data_ptr(), dtype=cutlass.Int128)

        # ================================================================ MainloopLoad (warp 2)
        if warp_idx == self.MAINLOOP_LOAD_WARP:
            cute.arch.mbarrier_arrive(epilogue_throttle)  # prologue done: let the epilogue start
            mainloop_producer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer,
                                                                   self.mainloop_stages)
            throttle_producer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer,
                                                                   self.scheduler_stages)
            while work_tile_info.is_valid_tile:
                # One CLC query per tile, and no further ahead than the loads: skewed clusters do
                # not run off with the work (seed: "Throttle CLC query").
                if is_first_cta_in_cluster:
                    clc_throttle.producer_acquire(throttle_producer_state)
                    clc_throttle.producer_commit(throttle_producer_state)
                    throttle_producer_state.advance()
                mma_m, mma_n, mma_l = self._mma_tile_coord(work_tile_info)
                # ((ATOM_V, REST_V), RestK)
                tAgA_tile = tAgA[(None, mma_m, None, mma_l)]
                # ((ATOM_V, REST_V), RestK)
                tBgB_tile = tBgB[(None, mma_n, None, mma_l)]
                for k_tile in cutlass.range(k_tile_count, unroll=1):
                    mainloop.producer_acquire(mainloop_producer_state)
                    full_barrier = mainloop.producer_get_barrier(mainloop_producer_state)
                    cute.copy(tma_atom_a, tAgA_tile[(None, k_tile)], tAsA[(None, mainloop_producer_state.index)],
                              tma_bar_ptr=full_barrier, mcast_mask=a_mcast_mask)
                    cute.copy(tma_atom_b, tBgB_tile[(None, k_tile)], tBsB[(None, mainloop_producer_state.index)],
                              tma_bar_ptr=full_barrier, mcast_mask=b_mcast_mask)
                    mainloop.producer_commit(mainloop_producer_state)  # no-op: the TMA bytes complete it
                    mainloop_producer_state.advance()
                work_tile_info, clc_consumer_state = self._fetch_next_work(clc, clc_consumer_state, clc_response,
                                                                            order)
            # load_tail: every stage's empty barrier, so no MMA commit lands after this CTA exits.
            mainloop.producer_tail(mainloop_producer_state)

        # ================================================================ Sched (warp 1, CTA 0)
        if warp_idx == self.SCHED_WARP and is_first_cta_in_cluster:
            cute.arch.mbarrier_arrive(epilogue_throttle)
            clc_producer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer,
                                                              self.scheduler_stages)
            throttle_consumer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer,
                                                                   self.scheduler_stages)
            while work_tile_info.is_valid_tile:
                clc_throttle.consumer_wait(throttle_consumer_state)
                clc_throttle.consumer_release(throttle_consumer_state)
                throttle_consumer_state.advance()
                # advance_to_next_work: arm every CTA's full barrier (16 B), then one multicast try_cancel.
                clc.producer_acquire(clc_producer_state)
                with cute.arch.elect_one():
                    cute.arch.issue_clc_query(clc.producer_get_barrier(clc_producer_state),
                                              clc_response + clc_producer_state.index)
                clc_producer_state.advance()
                work_tile_info, clc_consumer_state = self._fetch_next_work(clc, clc_consumer_state, clc_response,
                                                                            order)
            clc.producer_tail(clc_producer_state)

        # ================================================================ MMA (warp 0)
        if warp_idx == self.MMA_WARP:
            # All 512 columns, whatever the stages use (seed: Sm100TmemCapacityColumns; one CTA per
            # SM); cta_group::2 allocates in both CTAs of the pair.
            cute.arch.alloc_tmem(TMEM_COLUMNS, storage.tmem_base_ptr.ptr, is_two_cta=self.use_2sm)
            cute.arch.sync_warp()
            tmem_alloc_barrier.arrive()
            tmem_ptr = cute.arch.retrieve_tmem_ptr(self.acc_dtype, alignment=16,
                                                   ptr_to_buffer_holding_addr=storage.tmem_base_ptr.ptr)
            # (MMA, MMA_M, MMA_N, ACC_STAGE)
            tCtAcc_base = cute.make_tensor(tmem_ptr, tCtAcc_layout.layout)
            cute.arch.mbarrier_arrive(epilogue_throttle)
            mainloop_consumer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer,
                                                                   self.mainloop_stages)
            acc_producer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer,
                                                              self.accumulator_stages)
            num_kblocks = cute.size(tCrA, mode=[2])
            while work_tile_info.is_valid_tile:
                # seed order: fetch the next tile first, then compute this one.
                next_work_tile_info, clc_consumer_state = self._fetch_next_work(clc, clc_consumer_state,
                                                                                clc_response, order)
                if is_mma_leader_cta:
                    accumulator.producer_acquire(acc_producer_state)
                    # (MMA, MMA_M, MMA_N)
                    tCtAcc = tCtAcc_base[(None, None, None, acc_producer_state.index)]
                    for k_tile in cutlass.range(k_tile_count, unroll=1):
                        mainloop.consumer_wait(mainloop_consumer_state)
                        for kblock in cutlass.range_constexpr(num_kblocks):
                            # The first instruction of a tile overwrites the accumulator stage.
                            if cutlass.const_expr(kblock == 0):
                                tiled_mma.set(tcgen05.Field.ACCUMULATE, k_tile != 0)
                            else:
                                tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                            stage_kblock = (None, None, kblock, mainloop_consumer_state.index)
                            cute.gemm(tiled_mma, tCtAcc, tCrA[stage_kblock], tCrB[stage_kblock], tCtAcc)
                        # tcgen05.commit: the stage is free once these MMAs have read it (multicast).
                        mainloop.consumer_release(mainloop_consumer_state)
                        mainloop_consumer_state.advance()
                    accumulator.producer_commit(acc_producer_state)
                acc_producer_state.advance()
                work_tile_info = next_work_tile_info
            # Let the next CTA on this SM allocate TMEM while this one drains.
            cute.arch.relinquish_tmem_alloc_permit(is_two_cta=self.use_2sm)
            if is_mma_leader_cta:
                # The base class's tail: wait on every stage (the epilogues of both CTAs released them).
                pipeline.PipelineAsync.producer_tail(accumulator, acc_producer_state)
            if cutlass.const_expr(self.use_2sm):
                # seed: the leader waits for the follower, then lets it go; neither frees TMEM the
                # other CTA's MMAs or epilogue may still touch.
                if is_mma_leader_cta:
                    cute.arch.mbarrier_wait(tmem_dealloc, 0)
                    cute.arch.mbarrier_arrive(tmem_dealloc, mma_peer_cta_rank)
                else:
                    cute.arch.mbarrier_arrive(tmem_dealloc, mma_peer_cta_rank)
                    cute.arch.mbarrier_wait(tmem_dealloc, 0)
            cute.arch.dealloc_tmem(tmem_ptr, TMEM_COLUMNS, is_two_cta=self.use_2sm)

        # ================================================================ Epilogue (warps 4-7)
        if warp_idx >= self.EPILOGUE_WARPS[0]:
            # Throttle: the loads and the first MMAs go first.
            cute.arch.mbarrier_wait(epilogue_throttle, 0)
            tmem_alloc_barrier.arrive_and_wait()
            tmem_ptr = cute.arch.retrieve_tmem_ptr(self.acc_dtype, alignment=16,
                                                   ptr_to_buffer_holding_addr=storage.tmem_base_ptr.ptr)
            epi_tidx = tidx - self.EPILOGUE_WARPS[0] * THREADS_PER_WARP
            # ((ATOM_M, MMA_M), (ATOM_N, MMA_N), ACC_STAGE)
            tAcc = self._group_mma_modes(cute.make_tensor(tmem_ptr, tCtAcc_layout.layout))
            # ((ATOM_M, MMA_M), (ATOM_N, MMA_N), RestM, RestN, RestL)
            gD = self._group_mma_modes(tCgD)
            # (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N, ACC_STAGE)
            tAcc_epi = cute.flat_divide(tAcc, self.epi_tile)
            # (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N, RestM, RestN, RestL)
            gD_epi = cute.flat_divide(gD, self.epi_tile)
            # TMEM -> registers: each warp reads its own 32 TMEM lanes (warp w: lanes 32 * (w % 4)).
            t2r_atom = sm100_utils.get_tmem_load_op(self.cta_tile_shape_mnk, self.d_layout, self.d_dtype,
                                                    self.acc_dtype, self.epi_tile, self.use_2sm)
            tiled_t2r = tcgen05.make_tmem_copy(t2r_atom, tAcc_epi[(None, None, 0, 0, 0)])
            thr_t2r = tiled_t2r.get_slice(epi_tidx)
            # (T2R, T2R_M, T2R_N, EPI_M, EPI_N, ACC_STAGE)
            tTR_tAcc = thr_t2r.partition_S(tAcc_epi)
            # (T2R, T2R_M, T2R_N, EPI_M, EPI_N, RestM, RestN, RestL)
            tTR_gD = thr_t2r.partition_D(gD_epi)
            # (T2R, T2R_M, T2R_N)
            tTR_rAcc = cute.make_rmem_tensor(tTR_gD[(None, None, None, 0, 0, 0, 0, 0)].shape, self.acc_dtype)
            tTR_rD = cute.make_rmem_tensor(tTR_rAcc.shape, self.d_dtype)
            # registers -> SMEM, in the layout the TMEM load left the values in.
            r2s_atom = sm100_utils.get_smem_store_op(self.d_layout, self.d_dtype, self.acc_dtype, tiled_t2r)
            tiled_r2s = cute.make_tiled_copy_D(r2s_atom, tiled_t2r)
            # (R2S, R2S_M, R2S_N, STORE_STAGE)
            tRS_sD = tiled_r2s.get_slice(epi_tidx).partition_D(sD)
            # (R2S, R2S_M, R2S_N)
            tRS_rD = tiled_r2s.retile(tTR_rD)
            # SMEM -> global, one subtile per TMA store.
            # ((ATOM_V, REST_V), STORE_STAGE), ((ATOM_V, REST_V), EPI_M, EPI_N, RestM, RestN, RestL)
            bSG_sD, bSG_gD = cpasync.tma_partition(tma_atom_d, 0, cute.make_layout(1),
                                                   cute.group_modes(sD, 0, 2), cute.group_modes(gD_epi, 0, 2))
            epi_store = pipeline.PipelineTmaStore.create(
                num_stages=self.store_stages,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.NUM_EPILOGUE_THREADS))
            # One thread issues the TMA stores and owns their bulk async-group (commit and wait are
            # per thread), as the seed's epilogue does; the others only write SMEM.
            is_store_thread = epi_tidx == 0
            acc_consumer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer,
                                                              self.accumulator_stages)
            store_count = Int32(0)
            while work_tile_info.is_valid_tile:
                next_work_tile_info, clc_consumer_state = self._fetch_next_work(clc, clc_consumer_state,
                                                                                clc_response, order)
                mma_m, mma_n, mma_l = self._mma_tile_coord(work_tile_info)
                # (T2R, T2R_M, T2R_N, EPI_SUBTILE)
                tTR_tAcc_tile = cute.group_modes(
                    tTR_tAcc[(None, None, None, None, None, acc_consumer_state.index)], 3, 5)
                # ((ATOM_V, REST_V), EPI_SUBTILE)
                bSG_gD_tile = cute.group_modes(bSG_gD[(None, None, None, mma_m, mma_n, mma_l)], 1, 3)
                num_subtiles = cute.size(tTR_tAcc_tile, mode=[3])
                accumulator.consumer_wait(acc_consumer_state)
                for subtile in cutlass.range_constexpr(num_subtiles):
                    cute.copy(tiled_t2r, tTR_tAcc_tile[(None, None, None, subtile)], tTR_rAcc)
                    if cutlass.const_expr(subtile == num_subtiles - 1):
                        # The whole accumulator is in registers: hand the TMEM stage back to the MMA
                        # (every thread arrives, on the leader CTA's barrier in 2-SM mode).
                        cute.arch.fence_view_async_tmem_load()
                        accumulator.consumer_release(acc_consumer_state)
                    tRS_rD.store(tiled_r2s.retile(tTR_rAcc).load().to(self.d_dtype))
                    buffer = store_count % self.store_stages
                    # The store that last used this SMEM buffer has read it (tma_store_wait<stages-1>).
                    if is_store_thread:
                        epi_store.producer_acquire()
                    epilogue_barrier.arrive_and_wait()
                    cute.copy(tiled_r2s, tRS_rD, tRS_sD[(None, None, None, buffer)])
                    # Generic-proxy SMEM writes must be visible to the TMA (async proxy) before it reads.
                    cute.arch.fence_proxy("async.shared", space="cta")
                    epilogue_barrier.arrive_and_wait()
                    if is_store_thread:
                        cute.copy(tma_atom_d, bSG_sD[(None, buffer)], bSG_gD_tile[(None, subtile)])
                        epi_store.producer_commit()
                    store_count += 1
                acc_consumer_state.advance()
                work_tile_info = next_work_tile_info
            # store_tail: the TMA unit has read every SMEM buffer before the CTA (and its SMEM) goes.
            if is_store_thread:
                epi_store.producer_tail()

    # ------------------------------------------------------------------------------------ helpers
    @cute.jit
    def _initial_work_tile_info(self, order) -> WorkTileInfo:
        """The tile of this CTA's own launch slot (seed ``initial_work_tile_info``)."""
        bidx, bidy, bidz = cute.arch.block_idx()
        cta_x, cta_y, _ = cute.arch.block_in_cluster_idx()
        return self._swizzle_and_rasterize(bidx - cta_x, bidy - cta_y, bidz, cutlass.Boolean(True), order)

    @cute.jit
    def _swizzle_and_rasterize(self, first_x: Int32, first_y: Int32, l_idx: Int32, valid, order) -> WorkTileInfo:
        """seed ``swizzle_and_rasterize``: launch slot of a cluster's CTA 0 -> this CTA's tile.

        In clusters: swizzle in strips of ``1 << log_swizzle`` over the largest swizzle-divisible
        sub-grid (residual clusters keep their slot), transpose for AlongN, then add this CTA's place
        in the cluster. Mirrored integer for integer by ``hw_kernels.schedule.ClcSchedule.cta_tile``.
        """
        raster_n, log_s, major_div_s, first_res_minor = order
        cm, cn = self.cluster_mn
        major = first_x // cm
        minor = first_y // cn
        if major < (major_div_s << log_s) and minor < first_res_minor:
            mask = (Int32(1) << log_s) - 1
            new_major = (major >> log_s) + major_div_s * (minor & mask)
            new_minor = (major & mask) + ((minor >> log_s) << log_s)
            major = new_major
            minor = new_minor
        tile_m = major
        tile_n = minor
        if raster_n != 0:
            tile_m = minor
            tile_n = major
        cta_x, cta_y, _ = cute.arch.block_in_cluster_idx()
        return WorkTileInfo((tile_m * cm + cta_x, tile_n * cn + cta_y, l_idx), valid)

    @cute.jit
    def _fetch_next_work(self, clc: pipeline.PipelineClcFetchAsync, state: pipeline.PipelineState,
                         clc_response: cute.Pointer, order):
        """seed ``scheduler.fetch_next_work``: wait for the response, decode it, release the stage.

        The cancelled cluster's first CTA id (its launch slot), swizzled and rasterized as the seed
        does (``_swizzle_and_rasterize``), is this cluster's next tile; a failed cancel (no cluster
        left to steal) is the invalid tile that ends the loop.
        """
        clc.consumer_wait(state)
        m_idx, n_idx, l_idx, is_canceled = cute.arch.clc_response(clc_response + state.index)
        # The response was read through the generic proxy; the next try_cancel writes it through the
        # async proxy once the stage is released.
        cute.arch.fence_proxy("async.shared", space="cta")
        clc.consumer_release(state)
        state.advance()
        work = self._swizzle_and_rasterize(m_idx, n_idx, l_idx, is_canceled != 0, order)
        return work, state

    def _mma_tile_coord(self, work: WorkTileInfo):
        """CTA tile -> MMA tile: the two CTAs of a 2-SM pair share one MMA tile along M."""
        m, n, l = work.tile_idx  # noqa: E741 (CUTLASS's name for the batch mode)
        return m // self.atom_thr_m, n, l

    @staticmethod
    def _group_mma_modes(t: cute.Tensor) -> cute.Tensor:
        """((ATOM_M, ATOM_N), MMA_M, MMA_N, ...) -> ((ATOM_M, MMA_M), (ATOM_N, MMA_N), ...): M and N
        as single modes, so that an epilogue tile can divide them."""
        shape, stride = t.layout.shape, t.layout.stride
        return cute.make_tensor(t.iterator, cute.make_layout(
            ((shape[0][0], shape[1]), (shape[0][1], shape[2]), *shape[3:]),
            stride=((stride[0][0], stride[1]), (stride[0][1], stride[2]), *stride[3:])))

    # ------------------------------------------------------------------------------------ counts, config
    @classmethod
    def from_config(cls, cfg, dtype: str = "bf16") -> Sm100TmaWsGemm:
        """From a :class:`simulator.kernels.sm100_config.Sm100GemmConfig`: the simulated and the compiled kernel share
        tile, cluster and stage counts (stages resolved as CUTLASS's builders would)."""
        r = cfg.resolved()
        if r.read_c:
            raise ConfigError("read_c=True: this kernel has no EpilogueLoad role yet (C is not read); "
                              "use read_c=False")
        if r.tile_scheduler != "clc":
            raise ConfigError(f"tile_scheduler={r.tile_scheduler!r}: this kernel implements only 'clc'")
        return cls(mma_tile_mn=(r.mma_tile_m, r.mma_tile_n), use_2sm=r.use_2sm, cluster_mn=(r.cluster_m, r.cluster_n),
                   mainloop_stages=r.mainloop_stages, accumulator_stages=r.accumulator_stages,
                   scheduler_stages=r.scheduler_stages, epi_tile_mn=(r.epilogue_tile_m, r.epilogue_tile_n),
                   store_stages=r.epilogue_store_stages, tile_k=r.mma_tile_k, dtype=dtype)

    def parameters(self) -> dict:
        """The constructor's arguments (for :meth:`can_implement` with a problem shape)."""
        return {"mma_tile_mn": self.mma_tile_mn, "use_2sm": self.use_2sm, "cluster_mn": self.cluster_mn,
                "mainloop_stages": self.mainloop_stages, "accumulator_stages": self.accumulator_stages,
                "scheduler_stages": self.scheduler_stages, "epi_tile_mn": self.epi_tile_mn,
                "store_stages": self.store_stages, "tile_k": self.tile_k, "dtype": self.dtype}

    def _counts_this_code_arrives_with(self, mcast_peers: int | None) -> dict[str, int]:
        """What the kernel code arrives with, per barrier phase (keys as in ``simulator.protocol.arrivals``).

        ``mcast_peers``: the MMA-leaders whose commits free one of this CTA's mainloop stages, as
        the DSL's cluster layout sees them (None before the layout exists: the formula then).
        """
        w = THREADS_PER_WARP
        cm, cn = self.cluster_mn
        if mcast_peers is None:
            mcast_peers = cm // self.atom_thr_m + cn - 1
        # Roles that call fetch_next_work (each thread of them arrives on CTA 0's clc empty barrier):
        # Sched once, and in every CTA the MMA warp, the MainloopLoad warp and the epilogue warps.
        per_cta_clc = w * (1 + 1 + len(self.EPILOGUE_WARPS))
        return {
            "mainloop.producer": 1,              # elect_one arrive_and_expect_tx on the MMA-leader
            "mainloop.consumer": mcast_peers,    # one tcgen05.commit per MMA-leader sharing our tiles
            "accumulator.producer": 1,           # one tcgen05.commit (multicast to the pair)
            "accumulator.consumer": self.atom_thr_m * self.NUM_EPILOGUE_THREADS,  # every epilogue thread
            "clc.producer": 1,                   # Sched lane i arrives (expect 16 B) on CTA i
            "clc.consumer": w + self.cluster_size * per_cta_clc,
            "clc_throttle.producer": w,          # all lanes of CTA 0's MainloopLoad warp
            "clc_throttle.consumer": w,          # all lanes of the Sched warp
            "epilogue_throttle.cta0": w * 3,     # MMA + Sched + MainloopLoad warps, every lane
            "epilogue_throttle.peer": w * 2,     # MMA + MainloopLoad (no Sched outside CTA 0)
            "tmem_alloc": w + self.NUM_EPILOGUE_THREADS,
            "tmem_dealloc": w if self.use_2sm else 0,
        }

    def _check_counts(self, mine: dict[str, int]) -> None:
        """Raise if the code's arrivals differ from ``simulator.protocol.arrivals`` (never substitute a count)."""
        a, b0 = self.arrival_counts, self.barrier_counts[0]
        model = {
            "mainloop.producer": a["mainloop"].producer, "mainloop.consumer": a["mainloop"].consumer,
            "accumulator.producer": a["accumulator"].producer, "accumulator.consumer": a["accumulator"].consumer,
            "clc.producer": a["clc"].producer, "clc.consumer": a["clc"].consumer,
            "clc_throttle.producer": a["clc_throttle"].producer, "clc_throttle.consumer": a["clc_throttle"].consumer,
            "epilogue_throttle.cta0": b0["epilogue_throttle"],
            "epilogue_throttle.peer": self.barrier_counts[1]["epilogue_throttle"] if self.cluster_size > 1
            else mine["epilogue_throttle.peer"],
            "tmem_alloc": b0["tmem_alloc"], "tmem_dealloc": b0["tmem_dealloc"],
        }
        bad = {k: (mine[k], model[k]) for k in model if mine[k] != model[k]}
        if bad:
            raise RuntimeError("barrier arrival counts of the CuTe-DSL kernel differ from simulator.protocol.arrivals "
                               f"(kernel, model): {bad}; fix the kernel or the model, do not substitute")

    # ------------------------------------------------------------------------------------ rules
    @staticmethod
    def can_implement(m: int | None, n: int | None, k: int | None, l: int = 1, *,  # noqa: E741
                      mma_tile_mn: tuple[int, int] = (256, 256), use_2sm: bool = True,
                      cluster_mn: tuple[int, int] = (2, 1), mainloop_stages: int | None = None,
                      accumulator_stages: int = 2, scheduler_stages: int = 2, epi_tile_mn: tuple[int, int] = (128, 32),
                      store_stages: int = 2, tile_k: int | None = None, dtype: str = "bf16") -> None:
        """Raise :class:`simulator.errors.ConfigError` naming the first value that breaks a rule.

        ``m, n, k`` may be None to check only the kernel parameters (the constructor does that).
        """
        if dtype not in DTYPES:
            raise ConfigError(f"dtype={dtype!r}: this kernel takes A/B/D in {sorted(DTYPES)} (fp32 accumulate)")
        tm, tn = mma_tile_mn
        if use_2sm:
            if tm not in (128, 256):
                raise ConfigError(f"mma_tile_m={tm}: 2-SM tcgen05.mma (cta_group::2) needs M in {{128, 256}}")
        elif tm not in (64, 128):
            raise ConfigError(f"mma_tile_m={tm}: 1-SM tcgen05.mma (cta_group::1) needs M in {{64, 128}}")
        if not (tn % 32 == 0 and 32 <= tn <= 256):
            raise ConfigError(f"mma_tile_n={tn}: this kernel needs N a multiple of 32 in [32, 256] "
                              "(tcgen05 allows multiples of 16; the epilogue's TMEM loads need 32)")
        cm, cn = cluster_mn
        for name, v in (("cluster_m", cm), ("cluster_n", cn)):
            if v < 1 or v & (v - 1):
                raise ConfigError(f"{name}={v}: cluster dimensions must be powers of two >= 1")
        if cm * cn > MAX_CLUSTER_SIZE:
            raise ConfigError(f"cluster_m x cluster_n={cm * cn}: at most {MAX_CLUSTER_SIZE} CTAs per cluster")
        if use_2sm and cm % 2:
            raise ConfigError(f"cluster_m={cm}: 2-SM MMA needs an even cluster_m (CTA pairs along M)")
        cta_m = tm // (2 if use_2sm else 1)
        em, en = epi_tile_mn
        if em <= 0 or en <= 0 or cta_m % em or tn % en:
            raise ConfigError(f"epi_tile=({em}, {en}): must divide the CTA tile ({cta_m}, {tn})")
        if tile_k is not None and not (tile_k % 16 == 0 and 16 <= tile_k <= 128):
            raise ConfigError(f"tile_k={tile_k}: a stage holds whole tcgen05 K-blocks (16 elements of 16 bits) "
                              "and at most one 128-byte swizzle atom: a multiple of 16 in [16, 128]")
        for name, v, lo in (("mainloop_stages", 2 if mainloop_stages is None else mainloop_stages, 2), ("accumulator_stages", accumulator_stages, 1),
                            ("scheduler_stages", scheduler_stages, 1), ("store_stages", store_stages, 1)):
            if v < lo:
                raise ConfigError(f"{name}={v}: must be >= {lo}")
        # fp32 accumulator: a CTA tile of 128 rows takes one TMEM column per N element; 64 rows
        # (2-SM M=128, 1-SM M=64) fold into half the columns (CUTLASS: stages = 128 x 512 / (CTA_M x CTA_N)).
        cols = accumulator_stages * tn * min(cta_m, TMEM_LANES) // TMEM_LANES
        if cols > TMEM_COLUMNS:
            raise ConfigError(f"accumulator_stages={accumulator_stages}: {accumulator_stages} stages of a "
                              f"{cta_m}x{tn} fp32 accumulator take {cols} TMEM columns, more than the "
                              f"{TMEM_COLUMNS} an SM has")
        elem_bytes = 2
        for name, v in (("m", m), ("n", n), ("k", k), ("l", l)):
            if v is not None and v < 1:
                raise ConfigError(f"{name}={v}: problem dimensions must be >= 1")
        # TMA: every stride but the contiguous one must be a multiple of 16 bytes.
        if k is not None and (k * elem_bytes) % 16:
            raise ConfigError(f"k={k}: A and B are K-major, so TMA needs K x {elem_bytes} B to be a multiple "
                              f"of 16 B (K a multiple of {16 // elem_bytes})")
        if n is not None and (n * elem_bytes) % 16:
            raise ConfigError(f"n={n}: D is N-major, so the TMA store needs N x {elem_bytes} B to be a multiple "
                              f"of 16 B (N a multiple of {16 // elem_bytes})")
