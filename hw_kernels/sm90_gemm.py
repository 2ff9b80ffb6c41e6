"""A persistent TMA warp-specialized GEMM for Hopper (sm_90a) in CuTe DSL, instrumented.

D[M, N] = A[M, K] @ B[N, K]^T, A and B K-major (``torch.matmul(a, b.t())``), fp16 or bf16 in,
fp32 accumulate, D in the input type. See hw_kernels/README.md for the record layout and for how the
SM90 model mirrors this kernel.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.memory
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass._mlir import ir
from cutlass.cute.nvgpu import cpasync, warpgroup
from cutlass.cutlass_dsl import Int32, Int64
from cutlass.tensor_utils import LayoutEnum

from . import records as R
from . import rules
from .schedule import SEGMENT_WORDS

WARPS_PER_WG = 4
THREADS_PER_WG = 128
#: Named barriers of the stream-K fixup, one per consumer warpgroup (CUTLASS ReservedNamedBarriers
#: StreamkBarrier0/1); id 1 (cooperative) or 1-2 (ping-pong) is the epilogue's.
FIXUP_BARRIER_ID = 3


def fixup_counts(consumer_wgs: int = 2) -> tuple[int, int]:
    """(flags per tile, threads per flag) of the stream-K fixup, from ``simulator.protocol.arrivals``: one flag
    per consumer warpgroup (NumFixupBarriers = NumMmaWarpGroups), synced by its 128 threads."""
    mine = (consumer_wgs, THREADS_PER_WG)
    try:
        from simulator.protocol.arrivals import Sm90KernelFacts, sm90_fixup_counts
    except ImportError:  # the kernel also runs from a tree without the simulator
        return mine
    c = sm90_fixup_counts(Sm90KernelFacts(schedule="cooperative", num_consumer_warpgroups=consumer_wgs))
    theirs = (int(c.barriers_per_tile), int(c.threads))
    if theirs != mine:
        raise ValueError(f"simulator.protocol.arrivals gives fixup counts {theirs}, this kernel needs {mine}")
    return theirs


def arrival_counts(cluster_m: int, cluster_n: int, schedule: str, consumer_wgs: int = 2) -> dict[str, int]:
    """Arrival counts of the kernel's barriers, from ``simulator.protocol.arrivals`` (the model and the kernel
    must agree; ``convention="dsl"``).

    What this kernel does, and what the model must return: mainloop full = 1 (the producer thread's
    arrive.expect_tx; the TMA bytes complete the phase); mainloop empty = one arrive per consumer warp
    of the warpgroups that read a stage (``consumer_wgs`` cooperative, 1 ping-pong) from every CTA this CTA's
    TMA multicasts into = 4 x wgs x (cluster_m + cluster_n - 1); epilogue named barrier = the threads of
    one tile (128 x wgs); math order barrier (ping-pong) = 128 per arrival.
    """
    wgs = consumer_wgs if schedule == "cooperative" else 1
    mine = {"full": 1, "empty": WARPS_PER_WG * wgs * (cluster_m + cluster_n - 1),
            "epilogue": THREADS_PER_WG * wgs, "order": THREADS_PER_WG}
    try:
        from simulator.protocol.arrivals import Sm90KernelFacts, sm90_arrival_counts, sm90_barrier_counts
    except ImportError:  # the kernel also runs from a tree without the simulator
        return mine
    facts = Sm90KernelFacts(cluster_m=cluster_m, cluster_n=cluster_n, schedule=schedule,
                            num_consumer_warpgroups=consumer_wgs)
    counts = sm90_arrival_counts(facts, convention="dsl")
    ml = counts["mainloop"]
    theirs = {"full": int(ml.producer), "empty": int(ml.consumer),
              "epilogue": int(sm90_barrier_counts(facts)["epilogue_named"]),
              "order": int(counts["order"].producer) if "order" in counts else THREADS_PER_WG}
    if theirs != mine:
        raise ValueError(f"simulator.protocol.arrivals gives arrivals {theirs}, this kernel needs {mine} "
                         f"(cluster {cluster_m}x{cluster_n}, {schedule})")
    return theirs


def mainloop_arrival_counts(cluster_m: int, cluster_n: int, consumer_wgs: int) -> tuple[int, int, int]:
    """(full, empty, epilogue) arrivals of the cooperative schedule (``consumer_wgs`` = 2) or
    ping-pong (1 warpgroup per stage)."""
    c = arrival_counts(cluster_m, cluster_n, "cooperative" if consumer_wgs == 2 else "pingpong")
    return c["full"], c["empty"], c["epilogue"]


def _lo32(v):
    """The low 32 bits of a DSL integer (or a Python int) as an Int32 record word."""
    if isinstance(v, int):
        return Int32(v & 0xFFFFFFFF if v < 1 << 31 else v - (1 << 32))
    if isinstance(v, Int32):
        return v
    return Int32(Int64(v))


class Sm90TmaWsGemm:
    """Persistent TMA warp-specialized GEMM: CUTLASS's KernelTmaWarpSpecializedCooperative and
    KernelTmaWarpSpecializedPingpong (``schedule``).

    Roles (384 threads = 3 warpgroups, one CTA per SM):
      * MainloopLoad: warp 0 of warpgroup 0 (one elected lane issues). Warps 1-3 idle; warpgroup 0
        gives registers away (setmaxnreg 40).
      * Consumer0, Consumer1: warpgroups 1 and 2 (setmaxnreg 232).
        cooperative: both work on every 128 x tile_n tile, rows 0-63 and 64-127 (one wgmma m64nNk16
        atom each), and run its epilogue together; thread 128 issues the TMA stores.
        ping-pong: each owns whole tile_m x tile_n tiles (tile_m / 64 m64 atoms: two at 128 rows, one
        at 64), alternately (Consumer0 the CTA's 1st, 3rd, ... tile); a math-order barrier serializes
        their mainloops and orders their epilogues, so one's epilogue overlaps the other's mainloop;
        thread 0 of the owner stores.

    Pipelines (producer -> consumer: what a stage carries; arrival counts from simulator.protocol.arrivals):
      * mainloop (PipelineTmaAsync, ``mainloop_stages``): MainloopLoad -> the consumer(s) of the tile:
        one K-block, A[tile_m, tile_k] + B[tile_n, tile_k]. Full barrier: 1 arrival
        (arrive.expect_tx) + the bytes of both loads; empty barrier: one arrival per consumer warp
        reading the stage (8 cooperative, 4 ping-pong) per CTA fed by this CTA's multicast
        (x (cluster_m + cluster_n - 1)). A is multicast along the cluster's N dimension, B along M;
        each CTA issues 1/cluster_n of A and 1/cluster_m of B.
      * epilogue store (PipelineTmaStore, ``epilogue_store_stages`` SMEM buffers of tile_m x
        ``epilogue_tile_n``): consumers -> TMA store unit (cp.async.bulk commit/wait_group.read).
      * epilogue named barrier: the tile's consumer threads (256, id 1 / 128, id 1 or 2), per subtile.
      * math order (ping-pong; PipelineOrder = OrderedSequenceBarrier<2, 2>, 128 arrivals): turn 0 =
        mainloop, turn 1 = epilogue; each arrive hands the turn to the other warpgroup.

    Steady state, per role:
      * MainloopLoad, per tile (all of the CTA's, in order) and K-block: producer_acquire (wait
        empty, arrive.expect_tx on full) -> TMA A, TMA B -> next stage. At the end: producer_tail.
      * Consumer, per tile: [ping-pong: wait mainloop turn] -> K-block 0: wait full -> wgmma ->
        commit; K-blocks k >= 1: wait full -> wgmma -> commit -> wait_group(1) -> release k-1;
        [ping-pong: hand over the mainloop turn] -> wait_group(0) -> release last (accumulator
        ready) -> [ping-pong: wait epilogue turn] -> per subtile: registers -> convert -> stmatrix ->
        fence.proxy.async -> (store thread) wait_group.read(stages - 2) -> named barrier -> (store
        thread) TMA store + commit -> [ping-pong: store thread wait_group.read(0), hand over the
        epilogue turn, skip the other warpgroup's tile in the pipeline state]. At exit the store
        thread waits for all its stores (wait_group 0).

    Tile order: CUTLASS's static persistent scheduler (raster + swizzle), hw_kernels/schedule.py.
    """

    def __init__(self, tile_m: int = 128, tile_n: int = 256, tile_k: int = 64, cluster_m: int = 2,
                 cluster_n: int = 1, schedule: str = "cooperative", mainloop_stages: int | None = None,
                 raster: str = "heuristic", swizzle: int = 1, epilogue_tile_n: int = 32,
                 epilogue_store_stages: int = 4, instrument: int = R.LEVEL_OFF, instrument_roles: str = "all",
                 decomposition: str = "data_parallel", splits: int = 1, reduction: str = "deterministic",
                 fixup_vec: int = 1):
        problems = self.config_problems(tile_m, tile_n, tile_k, cluster_m, cluster_n, schedule, raster,
                                        swizzle, epilogue_tile_n, epilogue_store_stages, instrument, decomposition,
                                        splits, reduction, fixup_vec)
        if instrument_roles not in ("all", "producer", "consumers"):
            problems.append(f"instrument_roles={instrument_roles!r}: must be 'all', 'producer' or 'consumers'")
        if problems:
            raise ValueError("; ".join(problems))
        self.tile_m, self.tile_n, self.tile_k = tile_m, tile_n, tile_k
        self.cluster_m, self.cluster_n = cluster_m, cluster_n
        self.schedule = schedule
        self.mainloop_stages = mainloop_stages
        self.raster, self.swizzle = raster, swizzle
        # raster and swizzle are resolved per problem on the host (hw_kernels/schedule.py) and passed
        # to the kernel as integers; they are kept here for naming only.
        self.epi_n, self.store_stages = epilogue_tile_n, epilogue_store_stages
        self.instrument = instrument
        self.fixup_vec = fixup_vec
        # level: the data records written (LEVEL_SPAN writes none); span: every role writes its header
        # and footer (clock64 + globaltimer at role start and end), at every level but LEVEL_OFF.
        self.level = R.record_level(instrument)
        self.span = instrument != R.LEVEL_OFF
        # Diagnostics: which roles write K-block records at level >= 2 ("all", "producer", "consumers").
        self.kblock_producer = self.level >= R.LEVEL_KBLOCK and instrument_roles in ("all", "producer")
        self.kblock_consumers = self.level >= R.LEVEL_KBLOCK and instrument_roles in ("all", "consumers")
        self.acc_dtype = cutlass.Float32
        # Consumer warpgroups: cooperative, tile_m / 64 stacked along M (64 rows each: two, or one at tile_m =
        # 64, the twin's own kernel for stream-K at small M); ping-pong, two that take turns.
        self.consumer_wgs = tile_m // 64 if schedule == "cooperative" else 2
        self.consumer_warps = self.consumer_wgs * WARPS_PER_WG
        self.threads = (1 + self.consumer_wgs) * THREADS_PER_WG
        # 40 + 2 x 232 registers x 128 threads = 64,512 <= 65,536: the producer warpgroup only
        # needs addresses and barrier state, the consumers hold a 64 x 256 fp32 accumulator each.
        self.producer_regs, self.consumer_regs = 40, 232
        self.epi_barrier_id = 1
        self.mcast_a = cluster_n  # A[tile_m, :] is shared by the CTAs of one cluster row
        self.mcast_b = cluster_m  # B[tile_n, :] is shared by the CTAs of one cluster column
        self.pingpong = schedule == "pingpong"
        counts = arrival_counts(cluster_m, cluster_n, schedule, self.consumer_wgs)
        self.arrivals = (counts["full"], counts["empty"], counts["epilogue"])
        self.order_arrivals = counts["order"]
        self.smem_capacity = cutlass.memory.get_smem_capacity_in_bytes("sm_90")
        # The stream-K scheduler: the units come from a host-built work table (hw_kernels/schedule.py
        # StreamKSchedule, the model's decomposition); a split tile's partials go through the workspace.
        self.stream_k = decomposition != "data_parallel"
        self.deterministic = reduction == "deterministic"
        self.separate = reduction == "separate"
        self.fixup_flags_per_tile, self.fixup_threads = fixup_counts(self.consumer_wgs)

    def _setup_attributes(self):
        """Everything that depends on the element types: MMA, stage count, SMEM layouts."""
        # wgmma m64nNk16: cooperative, one atom per consumer warpgroup stacked along M (64 rows each);
        # ping-pong, one atom repeated tile_m / 64 times along M inside one warpgroup (a whole tile:
        # two repeats at tile_m = 128, one at 64).
        self.tiled_mma = sm90_utils.make_trivial_tiled_mma(
            self.ab_dtype, self.ab_dtype, cute.nvgpu.OperandMajorMode.K, cute.nvgpu.OperandMajorMode.K,
            self.acc_dtype, (1 if self.pingpong else self.consumer_wgs, 1, 1), tiler_mn=(64, self.tile_n))
        self.tile_shape_mnk = (self.tile_m, self.tile_n, self.tile_k)
        # Epilogue subtile: every row of the tile (ping-pong at tile_m = 64: CUTLASS's min(64, tile_m) rows,
        # sm90_builder.inl sm90_compute_tile_shape_or_override) x epilogue_tile_n columns.
        self.epi_tile = (self.tile_m, self.epi_n)
        ab_stage_bytes = (self.tile_m + self.tile_n) * self.tile_k * self.ab_dtype.width // 8
        fit = rules.mainloop_stages_that_fit(self.tile_m, self.tile_n, self.tile_k, self.epi_n, self.store_stages,
                                             self.ab_dtype.width, self.c_dtype.width, self.smem_capacity)
        self.stages = fit if self.mainloop_stages is None else self.mainloop_stages
        if self.stages < 2 or self.stages > fit:
            raise ValueError(f"mainloop_stages={self.stages}: must be in [2, {fit}] for tile "
                             f"{self.tile_m}x{self.tile_n}x{self.tile_k} ({ab_stage_bytes} B per stage)")
        self.tx_bytes = ab_stage_bytes

        def k_major_staged(rows, dtype):
            atom = warpgroup.make_smem_layout_atom(
                sm90_utils.get_smem_layout_atom(LayoutEnum.ROW_MAJOR, dtype, self.tile_k), dtype)
            return cute.tile_to_shape(atom, (rows, self.tile_k, self.stages), order=(0, 1, 2))

        self.a_smem_staged = k_major_staged(self.tile_m, self.ab_dtype)
        self.b_smem_staged = k_major_staged(self.tile_n, self.ab_dtype)
        c_atom = warpgroup.make_smem_layout_atom(
            sm90_utils.get_smem_layout_atom(LayoutEnum.ROW_MAJOR, self.c_dtype, self.epi_n),
            self.c_dtype)
        self.c_smem_staged = cute.tile_to_shape(c_atom, (*self.epi_tile, self.store_stages),
                                                order=(0, 1, 2))

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, trace: cute.Tensor,
                 trace_capacity: Int32, log_swizzle: Int32, n_major: Int32, n_clusters: Int32,
                 raster_n: Int32, work: cute.Tensor, workspace: cute.Tensor, flags: cute.Tensor, work_stride: Int32,
                 max_active_clusters: cutlass.Constexpr, stream):
        """Launch on ``stream``: a (M, K), b (N, K), c (M, N), all row-major; ``trace`` an int32
        buffer of ``ctas x 3 x trace_capacity x 8`` words (any size when instrument == 0);
        ``log_swizzle, n_major, n_clusters, raster_n``: the problem's static schedule
        (``hw_kernels.schedule.static_schedule(...).kernel_args()``). Stream-K: ``work`` the work
        table (``StreamKSchedule``, rows of ``work_stride`` words, ``n_clusters`` rows), ``workspace``
        the partial accumulators (float32), ``flags`` the fixup flags (int32, zero at launch)."""
        self.ab_dtype = a.element_type
        self.c_dtype = c.element_type
        if cutlass.const_expr(a.element_type != b.element_type):
            raise TypeError(f"A is {a.element_type}, B is {b.element_type}: must match")
        self._setup_attributes()

        # TMA descriptors. A and B loads are multicast when the cluster has peers to share with.
        a_op = cpasync.CopyBulkTensorTileG2SMulticastOp() if self.mcast_a > 1 else cpasync.CopyBulkTensorTileG2SOp()
        b_op = cpasync.CopyBulkTensorTileG2SMulticastOp() if self.mcast_b > 1 else cpasync.CopyBulkTensorTileG2SOp()
        tma_a, gA_tma = cpasync.make_tiled_tma_atom(
            a_op, a, cute.slice_(self.a_smem_staged, (None, None, 0)), (self.tile_m, self.tile_k),
            num_multicast=self.mcast_a)
        tma_b, gB_tma = cpasync.make_tiled_tma_atom(
            b_op, b, cute.slice_(self.b_smem_staged, (None, None, 0)), (self.tile_n, self.tile_k),
            num_multicast=self.mcast_b)
        tma_c, gC_tma = cpasync.make_tiled_tma_atom(
            cpasync.CopyBulkTensorTileS2GOp(), c, cute.slice_(self.c_smem_staged, (None, None, 0)),
            self.epi_tile)

        # Persistent grid: (cluster_m, cluster_n, persistent clusters); never more clusters than
        # work units, never more than fit on the GPU at once.
        persistent = cutlass.min(n_clusters, max_active_clusters)

        @cute.struct
        class SharedStorage:
            mainloop_barriers: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
            order_barriers: cute.struct.MemRange[cutlass.Int64, 4]  # ping-pong math order (2 x 2)
            sA: cute.struct.Align[cute.struct.MemRange[self.ab_dtype, cute.cosize(self.a_smem_staged)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[self.ab_dtype, cute.cosize(self.b_smem_staged)], 1024]
            sC: cute.struct.Align[cute.struct.MemRange[self.c_dtype, cute.cosize(self.c_smem_staged)], 1024]

        self.shared_storage = SharedStorage
        self.kernel(tma_a, gA_tma, tma_b, gB_tma, tma_c, gC_tma, self.tiled_mma, self.a_smem_staged,
                    self.b_smem_staged, self.c_smem_staged, trace, trace_capacity, log_swizzle, n_major,
                    n_clusters, raster_n, work, workspace, flags, work_stride).launch(
            grid=(self.cluster_m, self.cluster_n, persistent),
            block=(self.threads, 1, 1),
            cluster=(self.cluster_m, self.cluster_n, 1),
            min_blocks_per_mp=1,
            stream=stream,
        )

    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
               tma_c: cute.CopyAtom, mC: cute.Tensor, tiled_mma: cute.TiledMma,
               a_smem_staged: cute.ComposedLayout, b_smem_staged: cute.ComposedLayout,
               c_smem_staged: cute.ComposedLayout, trace: cute.Tensor, trace_capacity: Int32,
               log_swizzle: Int32, n_major: Int32, n_clusters: Int32, raster_n: Int32, work: cute.Tensor,
               workspace: cute.Tensor, flags: cute.Tensor, work_stride: Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, bidz = cute.arch.block_idx()
        _, _, n_persistent = cute.arch.grid_dim()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        wg = cute.arch.make_warp_uniform(tidx // THREADS_PER_WG)
        level = self.level

        if warp == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            cpasync.prefetch_descriptor(tma_c)

        cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        cta_layout = cute.make_layout((self.cluster_m, self.cluster_n, 1))
        cta_coord = cta_layout.get_flat_coord(cta_rank)
        # A goes to every CTA of this cluster row (same cta_m), B to every CTA of this column.
        a_mask = cute.make_layout_image_mask(cta_layout, cta_coord, mode=1) if self.mcast_a > 1 else 0
        b_mask = cute.make_layout_image_mask(cta_layout, cta_coord, mode=0) if self.mcast_b > 1 else 0

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        mainloop = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.mainloop_barriers.data_ptr(),
            num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.arrivals[0]),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.arrivals[1]),
            tx_count=self.tx_bytes,
            cta_layout_vmnk=cute.make_layout((1, self.cluster_m, self.cluster_n, 1)),
            defer_sync=True,
        )
        # Ping-pong: the math-order barrier (CUTLASS OrderedSequenceBarrier<2, 2>): stage 0 of each
        # warpgroup's ring is its mainloop turn, stage 1 its epilogue turn; each arrive hands the
        # turn to the other warpgroup. Consumer0 starts with both turns granted.
        order = None
        if cutlass.const_expr(self.pingpong):
            order = pipeline.PipelineOrder.create(
                depth=2, length=2, group_id=wg - 1,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.order_arrivals),
                barrier_storage=storage.order_barriers.data_ptr(), defer_sync=True)
        # Peers arrive on our barriers (multicast TMA, remote empty arrivals): everyone in the
        # cluster must see initialized barriers before any role starts.
        pipeline.pipeline_init_arrive(cluster_shape_mn=(self.cluster_m, self.cluster_n), is_relaxed=True)

        # (tile_m, tile_k, stages) / (tile_n, tile_k, stages), swizzled for wgmma
        sA = storage.sA.get_tensor(a_smem_staged.outer, swizzle=a_smem_staged.inner)
        sB = storage.sB.get_tensor(b_smem_staged.outer, swizzle=b_smem_staged.inner)
        # (tile_m, epi_n, store_stages)
        sC = storage.sC.get_tensor(c_smem_staged.outer, swizzle=c_smem_staged.inner)

        # (tile_m, tile_k, tiles_m, k_tiles)
        gA = cute.local_tile(mA, (self.tile_m, self.tile_k), (None, None))
        # (tile_n, tile_k, tiles_n, k_tiles)
        gB = cute.local_tile(mB, (self.tile_n, self.tile_k), (None, None))
        # (tile_m, tile_n, tiles_m, tiles_n)
        gC = cute.local_tile(mC, (self.tile_m, self.tile_n), (None, None))
        k_tiles = cute.size(gA, mode=[3])

        # TMA views: this CTA's share of each multicast load. (tma values, stages) in SMEM and
        # (tma values, tiles, k_tiles) in GMEM.
        tAsA, tAgA = cpasync.tma_partition(
            tma_a, cta_coord[1], cute.make_layout(self.cluster_n),
            cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cpasync.tma_partition(
            tma_b, cta_coord[0], cute.make_layout(self.cluster_m),
            cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))

        # Instrumentation: one slice of records per (CTA, role); the elected writer of each role
        # keeps its position in a register.
        cta_linear = bidx + self.cluster_m * (bidy + self.cluster_n * bidz)
        role_slot = wg  # 0 = MainloopLoad, 1 = Consumer0, 2 = Consumer1
        slice_base = (cta_linear * R.ROLES_PER_CTA + role_slot) * trace_capacity
        writer = (tidx % THREADS_PER_WG) == 0
        t_start = self._now64()
        gt_start = self._gt()
        if cutlass.const_expr(self.span):
            # The header now, not with the footer: otherwise its clock words stay live in registers
            # through the whole role (written at the end, the span level measured +2.5% on the
            # 128x128 ping-pong at 4096^3; validation/results/h200_campaign.md has this version's).
            if writer:
                self._header(trace, slice_base, cta_rank, cta_linear, t_start, gt_start)

        pipeline.pipeline_init_wait(cluster_shape_mn=(self.cluster_m, self.cluster_n))

        if wg == 0:
            cute.arch.setmaxregister_decrease(self.producer_regs)
        if warp == 0:
            # ---------------- MainloopLoad ----------------
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
            pos = Int32(R.FIRST_DATA_RECORD)
            tiles_done = Int32(0)
            if cutlass.const_expr(self.stream_k):
                # The units of the stream-K scheduler, from the work table: each segment is K-blocks
                # k0 .. k0 + kn - 1 of one tile (a unit spanning tiles has several segments).
                row = bidz * work_stride
                for it in cutlass.range(work[row], unroll=1):
                    e = row + 1 + it * SEGMENT_WORDS
                    tm = work[e] * self.cluster_m + bidx
                    tn = work[e + 1] * self.cluster_n + bidy
                    k0 = work[e + 2]
                    kn = work[e + 3]
                    tAgA_t = tAgA[(None, tm, None)]
                    tBgB_t = tBgB[(None, tn, None)]
                    tile_word = tm | (tn << 16)
                    t_tile0 = self._now(R.LEVEL_TILE)
                    gt_tile0 = self._gt_lo()
                    for k in cutlass.range(k0, k0 + kn, unroll=1):
                        mainloop.producer_acquire(state)
                        bar = mainloop.producer_get_barrier(state)
                        cute.copy(tma_a, tAgA_t[(None, k)], tAsA[(None, state.index)], tma_bar_ptr=bar,
                                  mcast_mask=a_mask)
                        cute.copy(tma_b, tBgB_t[(None, k)], tBsB[(None, state.index)], tma_bar_ptr=bar,
                                  mcast_mask=b_mask)
                        mainloop.producer_commit(state)
                        state.advance()
                    if cutlass.const_expr(level >= R.LEVEL_TILE):
                        t_tile1 = self._now(R.LEVEL_TILE)
                        gt_tile1 = self._gt_lo()
                        if writer:
                            self._record(trace, slice_base, pos, trace_capacity, R.P_TILE, tile_word,
                                         t_tile0, t_tile1, Int64(gt_tile0), Int64(gt_tile1), Int64(kn), t_tile1)
                        pos += 1
                    tiles_done += 1
            else:
                c_id = bidz
                while c_id < n_clusters:
                    tm, tn = self._tile_of(c_id, log_swizzle, n_major, raster_n, bidx, bidy)
                    # (tma values, k_tiles) of this tile
                    tAgA_t = tAgA[(None, tm, None)]
                    tBgB_t = tBgB[(None, tn, None)]
                    tile_word = tm | (tn << 16)
                    t_tile0 = self._now(R.LEVEL_TILE)
                    gt_tile0 = self._gt_lo()
                    for k in cutlass.range(k_tiles, unroll=1):
                        t0 = self._now(R.LEVEL_KBLOCK, self.kblock_producer)
                        mainloop.producer_acquire(state)
                        t1 = self._now(R.LEVEL_KBLOCK, self.kblock_producer)
                        bar = mainloop.producer_get_barrier(state)
                        cute.copy(tma_a, tAgA_t[(None, k)], tAsA[(None, state.index)], tma_bar_ptr=bar,
                                  mcast_mask=a_mask)
                        cute.copy(tma_b, tBgB_t[(None, k)], tBsB[(None, state.index)], tma_bar_ptr=bar,
                                  mcast_mask=b_mask)
                        mainloop.producer_commit(state)
                        if cutlass.const_expr(self.kblock_producer):
                            t2 = self._now(R.LEVEL_KBLOCK, self.kblock_producer)
                            if writer:
                                self._record(trace, slice_base, pos, trace_capacity,
                                             R.P_KBLOCK | (state.index << 8) | (k << 16), tile_word,
                                             t0, t1, t2, t2, t2, t2)
                            pos += 1
                        state.advance()
                    if cutlass.const_expr(level >= R.LEVEL_TILE):
                        t_tile1 = self._now(R.LEVEL_TILE)
                        gt_tile1 = self._gt_lo()
                        if writer:
                            self._record(trace, slice_base, pos, trace_capacity, R.P_TILE, tile_word,
                                         t_tile0, t_tile1, Int64(gt_tile0), Int64(gt_tile1), Int64(k_tiles),
                                         t_tile1)
                        pos += 1
                    tiles_done += 1
                    c_id += n_persistent
            t_tail0 = self._now(R.LEVEL_TILE)
            mainloop.producer_tail(state)
            if cutlass.const_expr(level >= R.LEVEL_TILE):
                t_tail1 = self._now(R.LEVEL_TILE)
                if writer:
                    self._record(trace, slice_base, pos, trace_capacity, R.P_TAIL, 0,
                                 t_tail0, t_tail1, t_tail1, t_tail1, t_tail1, t_tail1)
                pos += 1
            if cutlass.const_expr(self.span):
                if writer:
                    self._footer(trace, slice_base, pos, trace_capacity, tiles_done)

        if wg > 0:
            # ---------------- Consumer0 / Consumer1 ----------------
            cute.arch.setmaxregister_increase(self.consumer_regs)
            # Thread index inside the MMA: 0..255 over both warpgroups (cooperative) or 0..127 inside
            # this warpgroup (ping-pong).
            mma_tid = tidx % THREADS_PER_WG if self.pingpong else tidx - THREADS_PER_WG
            thr_mma = tiled_mma.get_slice(mma_tid)
            # (MMA, MMA_M, MMA_K, stages): this warpgroup's rows of A (64 cooperative, tile_m
            # ping-pong), all of B
            tCsA = thr_mma.partition_A(sA)
            tCsB = thr_mma.partition_B(sB)
            tCrA = tiled_mma.make_fragment_A(tCsA)
            tCrB = tiled_mma.make_fragment_B(tCsB)
            # (MMA, MMA_M, MMA_N): this thread's accumulator (64 or tile_m x tile_n per warpgroup)
            acc = cute.make_rmem_tensor(thr_mma.partition_C(gC[(None, None, 0, 0)]).shape, self.acc_dtype)
            k_blocks = cute.size(tCrA, mode=[2])

            # Epilogue: accumulator registers -> stmatrix -> sC buffer -> TMA store.
            r2s_atom = sm90_utils.sm90_get_smem_store_op(LayoutEnum.ROW_MAJOR, elem_ty_d=self.c_dtype,
                                                         elem_ty_acc=self.acc_dtype)
            stm_atom = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(False, 4), self.c_dtype)
            r2s = cute.make_tiled_copy_S(r2s_atom, cute.make_tiled_copy_C_atom(stm_atom, tiled_mma))
            thr_r2s = r2s.get_slice(mma_tid)
            # (R2S, R2S_M, R2S_N, store_stages)
            tRS_sC = thr_r2s.partition_D(sC)
            # ((R2S_V, R2S_N * subtiles), R2S_M): the accumulator as the stmatrix copy sees it; the
            # N chunks of the whole tile sit inside mode 0, the M repeats (ping-pong: tile_m / 64 m64
            # wgmma per warpgroup) in mode 1.
            tRS_acc = r2s.retile(acc)
            # (R2S_V, R2S_M, R2S_N): one subtile's registers (all tile_m rows, epilogue_tile_n columns)
            sub_shape = cute.shape(thr_r2s.partition_S(sC))[:3]
            sub_f32 = cute.make_rmem_tensor(sub_shape, self.acc_dtype)
            sub_out = cute.make_rmem_tensor(sub_shape, self.c_dtype)
            sub_v = cute.size(sub_f32, mode=[0])
            sub_m = cute.size(sub_f32, mode=[1])
            sub_nc = cute.size(sub_f32, mode=[2])
            acc_nc = cute.size(tRS_acc, mode=[0]) // sub_v
            # (checked on the GPU by validation.collect's correctness grid for both schedules)
            n_sub = self.tile_n // self.epi_n
            epi_barrier = pipeline.NamedBarrier(barrier_id=self.epi_barrier_id, num_threads=self.arrivals[2])
            # The thread that issues (and waits for) the TMA stores of a tile: thread 0 of
            # Consumer0 (cooperative) or of the warpgroup that owns the tile (ping-pong).
            is_store_thread = writer if self.pingpong else tidx == THREADS_PER_WG

            read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            pos = Int32(R.FIRST_DATA_RECORD)
            tiles_done = Int32(0)
            sub_count = Int32(0)
            c_id = bidz
            c_step = n_persistent
            ord_state = pipeline.PipelineState(2, Int32(0), Int32(0), Int32(wg == 1))
            if cutlass.const_expr(self.pingpong):
                # Ping-pong: this warpgroup takes every other tile of the CTA's sequence; Consumer1
                # starts at the second, past the stages the first tile's K-blocks occupy.
                c_step = 2 * n_persistent
                if wg == 2:
                    c_id = bidz + n_persistent
                    read = self._skip(read, k_tiles)
                    release = self._skip(release, k_tiles)
            if cutlass.const_expr(self.stream_k):
                # ---- the stream-K scheduler's segments (cooperative), from the work table ----
                row = bidz * work_stride
                wgi = wg - 1
                t_wg = tidx % THREADS_PER_WG
                n_acc = cute.size(acc)
                fv = self.fixup_vec
                assert n_acc % fv == 0, f"{n_acc} accumulators per thread: not whole {fv}-float chunks"
                fix_barrier = pipeline.NamedBarrier(barrier_id=FIXUP_BARRIER_ID + wgi, num_threads=self.fixup_threads)
                csize = self.cluster_m * self.cluster_n
                for it in cutlass.range(work[row], unroll=1):
                    e = row + 1 + it * SEGMENT_WORDS
                    tm = work[e] * self.cluster_m + bidx
                    tn = work[e + 1] * self.cluster_n + bidy
                    k0 = work[e + 2]
                    kn = work[e + 3]
                    tile_id = work[e + 4]
                    tile_word = tm | (tn << 16)
                    t_tile0 = self._now(R.LEVEL_TILE)
                    gt_tile0 = self._gt_lo()
                    acc.fill(0.0)
                    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
                    warpgroup.fence()
                    mainloop.consumer_wait(read)
                    for kb in cutlass.range_constexpr(k_blocks):
                        cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, read.index)],
                                  tCrB[(None, None, kb, read.index)], acc)
                    warpgroup.commit_group()
                    read.advance()
                    for _k in cutlass.range(1, kn, unroll=1):
                        mainloop.consumer_wait(read)
                        for kb in cutlass.range_constexpr(k_blocks):
                            cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, read.index)],
                                      tCrB[(None, None, kb, read.index)], acc)
                        warpgroup.commit_group()
                        warpgroup.wait_group(1)
                        mainloop.consumer_release(release)
                        release.advance()
                        read.advance()
                    warpgroup.wait_group(0)
                    mainloop.consumer_release(release)
                    release.advance()
                    t_acc = self._now(R.LEVEL_TILE)
                    final = k0 + kn == k_tiles
                    if kn != k_tiles:
                        # TileScheduler::fixup of this warpgroup's rows: one flag and one workspace
                        # slice per (CTA tile, warpgroup), moved fixup_vec floats per thread at a time.
                        lock = (tile_id * csize + cta_rank) * self.fixup_flags_per_tile + wgi
                        ws_base = lock * (n_acc * THREADS_PER_WG)
                        f0 = self._now(R.LEVEL_TILE)
                        op = Int32(0)
                        place = Int32(0)
                        slot = n_acc * THREADS_PER_WG
                        if cutlass.const_expr(self.separate):
                            # This segment's own slot (hw_kernels/schedule.py StreamKSchedule); the slots of
                            # one tile lie csize x flags-per-tile slices apart.
                            place = work[e + 6]
                            ws_base = ((work[e + 5] * csize + cta_rank) * self.fixup_flags_per_tile + wgi) * slot
                            slot = csize * self.fixup_flags_per_tile * slot
                        self._fixup_wait(flags, lock, k0, final, t_wg)
                        fix_barrier.arrive_and_wait()
                        f1 = self._now(R.LEVEL_TILE)
                        if final:
                            # BlockStripedReduce::load_add (separate: every other split's slot, in K order),
                            # then the flag back to 0 for the next launch (every peer has arrived: nothing
                            # else reads it).
                            op = Int32(R.FIXUP_LOAD)
                            if cutlass.const_expr(self.separate):
                                for p in cutlass.range(place, unroll=1):
                                    self._ws_load_add(workspace, ws_base - (place - p) * slot, t_wg, acc, n_acc)
                            else:
                                self._ws_load_add(workspace, ws_base, t_wg, acc, n_acc)
                            if t_wg == 0:
                                cute.arch.store(flags.iterator + lock, Int32(0), sem="relaxed", scope="gpu")
                        else:
                            if cutlass.const_expr(self.separate):
                                op = Int32(R.FIXUP_STORE)        # its own slot: no read-add-write
                                for j in cutlass.range_constexpr(n_acc // fv):
                                    self._ws_store(workspace, ws_base, j, t_wg, acc)
                            else:
                                if k0 == 0:
                                    op = Int32(R.FIXUP_STORE)
                                    for j in cutlass.range_constexpr(n_acc // fv):
                                        self._ws_store(workspace, ws_base, j, t_wg, acc)
                                else:
                                    op = Int32(R.FIXUP_REDUCE)
                                    self._fixup_reduce(workspace, ws_base, t_wg, acc, n_acc)
                            # arrive_inc(k_tile_count): the group syncs, thread 0 fences and adds.
                            fix_barrier.arrive_and_wait()
                            if t_wg == 0:
                                cute.arch.fence_acq_rel_gpu()
                                cute.arch.red(flags.iterator + lock, kn, op="add", dtype="s32", sem="relaxed",
                                              scope="gpu")
                        if cutlass.const_expr(level >= R.LEVEL_TILE):
                            f2 = self._now(R.LEVEL_TILE)
                            if writer:
                                self._record(trace, slice_base, pos, trace_capacity, R.C_FIXUP | (op << 8) | (k0 << 16),
                                             tile_word, f0, f1, f2, Int64(lock), Int64(kn), f2)
                            pos += 1
                    if final:
                        bSG_sC, bSG_gC = cpasync.tma_partition(
                            tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2),
                            cute.zipped_divide(gC[(None, None, tm, tn)], self.epi_tile))
                        for j in cutlass.range_constexpr(n_sub):
                            for n in cutlass.range_constexpr(sub_nc):
                                for mm in cutlass.range_constexpr(sub_m):
                                    for v in cutlass.range_constexpr(sub_v):
                                        sub_f32[v + sub_v * (mm + sub_m * n)] = tRS_acc[
                                            v + sub_v * (j * sub_nc + n) + sub_v * acc_nc * mm]
                            sub_out.store(sub_f32.load().to(self.c_dtype))
                            buf = (sub_count + j) % self.store_stages
                            cute.copy(r2s, sub_out, tRS_sC[(None, None, None, buf)])
                            cute.arch.fence_proxy("async.shared", space="cta")
                            if is_store_thread:
                                cute.arch.cp_async_bulk_wait_group(self.store_stages - 2, read=True)
                            epi_barrier.arrive_and_wait()
                            if is_store_thread:
                                cute.copy(tma_c, bSG_sC[(None, buf)], bSG_gC[(None, j)])
                                cute.arch.cp_async_bulk_commit_group()
                        sub_count += n_sub
                    if cutlass.const_expr(level >= R.LEVEL_TILE):
                        t_end = self._now(R.LEVEL_TILE)
                        gt_end = self._gt_lo()
                        if writer:
                            self._record(trace, slice_base, pos, trace_capacity, R.C_TILE, tile_word,
                                         t_tile0, t_acc, t_end, Int64(gt_tile0), Int64(gt_end), Int64(kn))
                        pos += 1
                    tiles_done += 1
            else:
                while c_id < n_clusters:
                    tm, tn = self._tile_of(c_id, log_swizzle, n_major, raster_n, bidx, bidy)
                    tile_word = tm | (tn << 16)
                    t_tile0 = self._now(R.LEVEL_TILE)
                    gt_tile0 = self._gt_lo()
                    o0 = t_tile0
                    o1 = t_tile0
                    if cutlass.const_expr(self.pingpong):
                        order.wait(ord_state)  # my mainloop turn
                        o1 = self._now(R.LEVEL_TILE)
                    acc.fill(0.0)
                    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
                    warpgroup.fence()

                    # K-block 0: nothing older to retire. Each K-block's record is written one
                    # iteration later, after the next K-block's wgmma are queued: between wait_group(1)
                    # returning and the next issue the tensor cores have only one K-block of work left,
                    # so code there stalls them (measured: ~45 cycles per K-block when written here).
                    f0 = self._now(R.LEVEL_KBLOCK, self.kblock_consumers)
                    mainloop.consumer_wait(read)
                    f1 = self._now(R.LEVEL_KBLOCK, self.kblock_consumers)
                    for kb in cutlass.range_constexpr(k_blocks):
                        cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, read.index)],
                                  tCrB[(None, None, kb, read.index)], acc)
                    warpgroup.commit_group()
                    f2 = self._now(R.LEVEL_KBLOCK, self.kblock_consumers)
                    prev_w0 = R.C_KBLOCK | (read.index << 8)
                    p0 = f0
                    p1 = f1
                    p2 = f2
                    p3 = f2
                    p4 = f2
                    read.advance()
                    # K-blocks 1..: keep one wgmma group in flight, release the stage it finished.
                    for k in cutlass.range(1, k_tiles, unroll=1):
                        t0 = self._now(R.LEVEL_KBLOCK, self.kblock_consumers)
                        mainloop.consumer_wait(read)
                        t1 = self._now(R.LEVEL_KBLOCK, self.kblock_consumers)
                        for kb in cutlass.range_constexpr(k_blocks):
                            cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, read.index)],
                                      tCrB[(None, None, kb, read.index)], acc)
                            if cutlass.const_expr(kb == 0 and self.kblock_consumers):
                                # The previous K-block's record, written between this K-block's wgmma:
                                # the tensor cores then have a K-block and more queued, so the stores
                                # cost no tensor time (after wait_group(1) they would; ptxas sinks
                                # stores placed after commit_group below the wait).
                                if writer:
                                    self._record(trace, slice_base, pos, trace_capacity, prev_w0, tile_word,
                                                 p0, p1, p2, p3, p4, p4)
                                pos += 1
                        warpgroup.commit_group()
                        t2 = self._now(R.LEVEL_KBLOCK, self.kblock_consumers)
                        warpgroup.wait_group(1)
                        t3 = self._now(R.LEVEL_KBLOCK, self.kblock_consumers)
                        mainloop.consumer_release(release)
                        t4 = self._now(R.LEVEL_KBLOCK, self.kblock_consumers)
                        prev_w0 = R.C_KBLOCK | (read.index << 8) | (k << 16)
                        p0 = t0
                        p1 = t1
                        p2 = t2
                        p3 = t3
                        p4 = t4
                        release.advance()
                        read.advance()
                    if cutlass.const_expr(self.pingpong):
                        # arrive on a copy and advance explicitly: the DSL carries a loop variable across
                        # iterations only when the loop body assigns it or calls a method on it.
                        order.arrive(ord_state.clone())  # the other warpgroup's mainloop may start
                        ord_state.advance()
                    warpgroup.wait_group(0)
                    mainloop.consumer_release(release)
                    release.advance()
                    if cutlass.const_expr(self.kblock_consumers):
                        if writer:
                            self._record(trace, slice_base, pos, trace_capacity, prev_w0, tile_word,
                                         p0, p1, p2, p3, p4, p4)
                        pos += 1
                    t_acc = self._now(R.LEVEL_TILE)
                    o3 = t_acc
                    if cutlass.const_expr(self.pingpong):
                        order.wait(ord_state)  # my epilogue turn (after the other's epilogue)
                        o3 = self._now(R.LEVEL_TILE)

                    # (tma values, subtiles) of this output tile, subtiles of tile_m x epi_n
                    bSG_sC, bSG_gC = cpasync.tma_partition(
                        tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2),
                        cute.zipped_divide(gC[(None, None, tm, tn)], self.epi_tile))
                    for j in cutlass.range_constexpr(n_sub):
                        # subtile (v, m, n) <- accumulator (v, N chunk j * sub_nc + n, m)
                        for n in cutlass.range_constexpr(sub_nc):
                            for mm in cutlass.range_constexpr(sub_m):
                                for v in cutlass.range_constexpr(sub_v):
                                    sub_f32[v + sub_v * (mm + sub_m * n)] = tRS_acc[
                                        v + sub_v * (j * sub_nc + n) + sub_v * acc_nc * mm]
                        sub_out.store(sub_f32.load().to(self.c_dtype))
                        buf = (sub_count + j) % self.store_stages
                        cute.copy(r2s, sub_out, tRS_sC[(None, None, None, buf)])
                        # stmatrix writes through the generic proxy, TMA reads through the async proxy.
                        cute.arch.fence_proxy("async.shared", space="cta")
                        # (level 3) few clock reads here: each is volatile and costs the epilogue its
                        # overlap between subtiles.
                        e1 = self._now(R.LEVEL_EPILOGUE)
                        e4 = e1
                        if is_store_thread:
                            # Stores <= g-1 issued; allow store_stages-2 in flight so that the buffer
                            # the next subtile writes (after the barrier below) has been read out.
                            cute.arch.cp_async_bulk_wait_group(self.store_stages - 2, read=True)
                            if cutlass.const_expr(level >= R.LEVEL_EPILOGUE):
                                e4 = self._now(R.LEVEL_EPILOGUE)
                        if cutlass.const_expr(self.pingpong):
                            cute.arch.barrier(barrier_id=self.epi_barrier_id + wg - 1,
                                              number_of_threads=self.arrivals[2])
                        else:
                            epi_barrier.arrive_and_wait()
                        e2 = self._now(R.LEVEL_EPILOGUE)
                        e3 = e2
                        if is_store_thread:
                            cute.copy(tma_c, bSG_sC[(None, buf)], bSG_gC[(None, j)])
                            cute.arch.cp_async_bulk_commit_group()
                            if cutlass.const_expr(level >= R.LEVEL_EPILOGUE):
                                e3 = self._now(R.LEVEL_EPILOGUE)
                        if cutlass.const_expr(level >= R.LEVEL_EPILOGUE):
                            if writer:
                                self._record(trace, slice_base, pos, trace_capacity,
                                             R.C_EPI | (buf << 8) | (j << 16), tile_word, e1, e1, e2, e3, e4, e4)
                            pos += 1
                    if cutlass.const_expr(self.pingpong):
                        # store_tail: the other warpgroup's epilogue reuses the SMEM buffers next.
                        if is_store_thread:
                            cute.arch.cp_async_bulk_wait_group(0, read=True)
                        order.arrive(ord_state.clone())
                        ord_state.advance()
                        # Skip the other warpgroup's next tile in the mainloop pipeline.
                        read = self._skip(read, k_tiles)
                        release = self._skip(release, k_tiles)
                    else:
                        sub_count += n_sub
                    if cutlass.const_expr(level >= R.LEVEL_TILE):
                        t_end = self._now(R.LEVEL_TILE)
                        gt_end = self._gt_lo()
                        if writer:
                            self._record(trace, slice_base, pos, trace_capacity, R.C_TILE, tile_word,
                                         t_tile0, t_acc, t_end, Int64(gt_tile0), Int64(gt_end), Int64(k_tiles))
                        pos += 1
                    if cutlass.const_expr(self.pingpong and level >= R.LEVEL_TILE):
                        if writer:
                            self._record(trace, slice_base, pos, trace_capacity, R.C_ORDER, tile_word,
                                         o0, o1, t_acc, o3, o3, o3)
                        pos += 1
                    tiles_done += 1
                    c_id += c_step

            if is_store_thread:
                s0 = self._now(R.LEVEL_TILE)
                cute.arch.cp_async_bulk_wait_group(0, read=False)
                if cutlass.const_expr(level >= R.LEVEL_TILE):
                    s1 = self._now(R.LEVEL_TILE)
                    self._record(trace, slice_base, pos, trace_capacity, R.C_STORE_TAIL, 0,
                                 s0, s1, s1, s1, s1, s1)
            if cutlass.const_expr(level >= R.LEVEL_TILE):
                if is_store_thread:
                    pos += 1
            if cutlass.const_expr(self.span):
                if writer:
                    self._footer(trace, slice_base, pos, trace_capacity, tiles_done)

    # ------------------------------------------------------------------ helpers
    def _now(self, level: int, enabled: bool = True):
        """The SM clock (low 32 bits: one register, CS2R.32) when the instrumentation level records this
        timestamp, else a constant: a clock read is volatile, so an unused one would still cost an
        instruction in the production kernel."""
        return cute.arch.clock() if self.level >= level and enabled else Int32(0)

    def _now64(self):
        """Full clock64 at role start (header): every instrumented level, LEVEL_SPAN included."""
        return cute.arch.clock64() if self.span else Int64(0)

    def _gt(self):
        return cute.arch.globaltimer() if self.span else Int64(0)

    def _gt_lo(self):
        return cute.arch.globaltimer_lo() if self.level >= R.LEVEL_TILE else Int32(0)

    @cute.jit
    def _tile_of(self, c_id: Int32, log_swizzle: Int32, n_major: Int32, raster_n: Int32, cta_m: Int32,
                 cta_n: Int32):
        """Tile (m, n) of linear cluster id ``c_id`` for this CTA (CUTLASS's SM90 static scheduler:
        swizzle strips along the raster's minor mode; hw_kernels/schedule.py)."""
        offset = c_id & ((1 << log_swizzle) - 1)
        extra = c_id >> log_swizzle
        major = extra % n_major
        minor = ((extra // n_major) << log_swizzle) + offset
        cm = major
        cn = minor
        if raster_n != 0:
            cm = minor
            cn = major
        return cm * self.cluster_m + cta_m, cn * self.cluster_n + cta_n

    @cute.jit
    def _fixup_wait(self, flags: cute.Tensor, lock: Int32, k0: Int32, final, t_wg: Int32):
        """Thread 0 of the warpgroup spins (ld.global.acquire.gpu) until the earlier peers' partials are
        in: flag == K_idx for the final split and, deterministic, every middle one (wait_eq); a
        nondeterministic middle split only until the first peer stored (wait_lt(1)); a separate middle
        split (its own slot) and the first split (K_idx 0) do not wait."""
        if t_wg == 0:
            if k0 > 0:
                ptr = flags.iterator + lock
                if final:
                    v = cute.arch.load(ptr, Int32, sem="acquire", scope="gpu")
                    while v != k0:
                        v = cute.arch.load(ptr, Int32, sem="acquire", scope="gpu")
                elif cutlass.const_expr(self.deterministic):
                    v = cute.arch.load(ptr, Int32, sem="acquire", scope="gpu")
                    while v != k0:
                        v = cute.arch.load(ptr, Int32, sem="acquire", scope="gpu")
                elif cutlass.const_expr(not self.separate):
                    v = cute.arch.load(ptr, Int32, sem="acquire", scope="gpu")
                    while v < 1:
                        v = cute.arch.load(ptr, Int32, sem="acquire", scope="gpu")

    @cute.jit
    def _ws_ptr(self, workspace: cute.Tensor, ws_base: Int32, j: cutlass.Constexpr, t_wg: Int32):
        """Chunk ``j`` of thread ``t_wg`` in the slice at ``ws_base``: accumulator ``j * fixup_vec + q`` lies at
        ``(j * 128 + t_wg) * fixup_vec + q``, so one access of a warp covers 32 x fixup_vec contiguous floats
        (chunks are aligned: the workspace is 16-byte aligned and a slice a multiple of 512 floats)."""
        fv = self.fixup_vec
        off = cute.assume(ws_base + (j * THREADS_PER_WG + t_wg) * fv, divby=fv)
        return workspace.iterator + off

    @cute.jit
    def _ws_load(self, workspace: cute.Tensor, ws_base: Int32, j: cutlass.Constexpr, t_wg: Int32):
        """One chunk into registers, read around L1 (another SM wrote it): ld.global.cg(.v4).f32."""
        fv = self.fixup_vec
        ptr = self._ws_ptr(workspace, ws_base, j, t_wg)
        chunk = cute.make_rmem_tensor((fv,), cutlass.Float32)
        if cutlass.const_expr(fv == 1):
            chunk[0] = cute.arch.load(ptr, cutlass.Float32, cop="cg")
        else:
            vec = ir.VectorType.get([fv], cutlass.Float32.mlir_type)
            chunk.store(cute.TensorSSA(cute.arch.load(ptr, vec, cop="cg"), (fv,), cutlass.Float32))
        return chunk

    @cute.jit
    def _ws_store(self, workspace: cute.Tensor, ws_base: Int32, j: cutlass.Constexpr, t_wg: Int32,
                  acc: cute.Tensor, add=None):
        """Chunk ``j`` of ``acc`` (plus ``add``, a loaded chunk, if given): st.global(.v4).f32."""
        fv = self.fixup_vec
        chunk = cute.make_rmem_tensor((fv,), cutlass.Float32)
        for q in cutlass.range_constexpr(fv):
            if cutlass.const_expr(add is None):
                chunk[q] = acc[j * fv + q]
            else:
                chunk[q] = acc[j * fv + q] + add[q]
        ptr = self._ws_ptr(workspace, ws_base, j, t_wg)
        if cutlass.const_expr(fv == 1):
            cute.arch.store(ptr, chunk[0])
        else:
            cute.arch.store(ptr, chunk.load())

    @cute.jit
    def _fixup_reduce(self, workspace: cute.Tensor, ws_base: Int32, t_wg: Int32, acc: cute.Tensor,
                      n_acc: cutlass.Constexpr):
        """A middle split adds its partials into the workspace: deterministic, a plain read-add-write
        (the turnstile gives it the slice alone); nondeterministic, atomic adds (red.global.add.f32,
        BlockStripedReduce::reduce), one per element at the same places."""
        fv = self.fixup_vec
        for j in cutlass.range_constexpr(n_acc // fv):
            if cutlass.const_expr(self.deterministic):
                self._ws_store(workspace, ws_base, j, t_wg, acc, self._ws_load(workspace, ws_base, j, t_wg))
            else:
                ptr = self._ws_ptr(workspace, ws_base, j, t_wg)
                for q in cutlass.range_constexpr(fv):
                    cute.arch.atomic_add(ptr + q, acc[j * fv + q], sem="relaxed", scope="gpu")

    @cute.jit
    def _ws_load_add(self, workspace: cute.Tensor, ws_base: Int32, t_wg: Int32, acc: cute.Tensor,
                     n_acc: cutlass.Constexpr):
        """Add the slice at ``ws_base`` to the accumulators (BlockStripedReduce::load_add)."""
        fv = self.fixup_vec
        for j in cutlass.range_constexpr(n_acc // fv):
            v = self._ws_load(workspace, ws_base, j, t_wg)
            for q in cutlass.range_constexpr(fv):
                acc[j * fv + q] = acc[j * fv + q] + v[q]

    @staticmethod
    def _skip(state, n: Int32):
        """``state`` advanced by ``n`` stages (index wraps, phase flips once per wrap)."""
        total = state.index + n
        wraps = total // state.stages
        return pipeline.PipelineState(state.stages, state.count + n, total % state.stages,
                                      state.phase ^ (wraps & 1))

    @cute.jit
    def _record(self, trace: cute.Tensor, base: Int32, pos: Int32, cap: Int32, w0, w1, t2, t3, t4, t5,
                t6, t7):
        """Write one 8-word record at ``pos`` of this slice (timestamps truncated to 32 bits);
        records past the slice's capacity are dropped (the footer counts them)."""
        if pos < cap:
            # Two 16-byte stores: records are 32-byte aligned (the buffer is, and records are 32 B).
            rec = cute.make_rmem_tensor((R.RECORD_WORDS,), Int32)
            rec[0] = _lo32(w0)
            rec[1] = _lo32(w1)
            rec[2] = _lo32(t2)
            rec[3] = _lo32(t3)
            rec[4] = _lo32(t4)
            rec[5] = _lo32(t5)
            rec[6] = _lo32(t6)
            rec[7] = _lo32(t7)
            off = cute.assume((base + pos) * R.RECORD_WORDS, divby=R.RECORD_WORDS)
            dst = cute.make_tensor(trace.iterator + off, cute.make_layout(R.RECORD_WORDS))
            cute.autovec_copy(rec, dst)

    @cute.jit
    def _header(self, trace: cute.Tensor, base: Int32, cta_rank: Int32, cta_linear: Int32, t_start: Int64,
                gt_start: Int64):
        """Header (record 0) of this slice, written at role start: SM id, full 64-bit clocks."""
        off = base * R.RECORD_WORDS
        trace[off + 0] = Int32(R.HEADER)
        trace[off + 1] = cute.arch.smid()
        trace[off + 2] = _lo32(t_start)
        trace[off + 3] = _lo32(t_start >> 32)
        trace[off + 4] = _lo32(gt_start)
        trace[off + 5] = _lo32(gt_start >> 32)
        trace[off + 6] = cta_rank
        trace[off + 7] = cta_linear

    @cute.jit
    def _footer(self, trace: cute.Tensor, base: Int32, pos: Int32, cap: Int32, tiles_done: Int32):
        """Footer (record 1) of this slice, written at role end, with full 64-bit clocks."""
        t_end = cute.arch.clock64()
        gt_end = cute.arch.globaltimer()
        off = (base + 1) * R.RECORD_WORDS
        written = pos  # records 0 .. pos-1 (header and footer included)
        dropped = Int32(0)
        if written > cap:
            dropped = written - cap
            written = cap
        trace[off + 0] = Int32(R.FOOTER)
        trace[off + 1] = written
        trace[off + 2] = _lo32(t_end)
        trace[off + 3] = _lo32(t_end >> 32)
        trace[off + 4] = _lo32(gt_end)
        trace[off + 5] = _lo32(gt_end >> 32)
        trace[off + 6] = tiles_done
        trace[off + 7] = dropped

    # The rules live in hw_kernels/rules.py (pure Python: the host checks a problem without the DSL).
    config_problems = staticmethod(rules.config_problems)
    can_implement = staticmethod(rules.can_implement)
