"""SM100 TMA warp-specialized persistent GEMM: the seed kernel as a SimPy model.

Read this beside the seed, CUTLASS's ``include/cutlass/gemm/kernel/sm100_gemm_tma_warpspecialized.hpp``
(github.com/NVIDIA/cutlass, a version with the epilogue-throttle barrier, e.g. commit 019c5c979; see
:mod:`simulator.protocol.arrivals`), ``operator()``: each role class below is one branch of its
``if (is_participant.X)`` chain, and each pipeline call is the seed's call, in the seed's order.

Roles (``WarpCategory``; one SimPy process per warp role per CTA; the four epilogue warps are one
process that arrives with 128 threads' worth of arrivals):

* ``Sched`` (warp 1, first CTA of the cluster only, CLC scheduler only): waits for the CLC
  throttle, issues ``try_cancel`` for the next cluster, consumes the response like everyone else.
* ``MainloopLoad`` (warp 2): TMA loads of A and B, one K-block per mainloop stage, multicast
  across the cluster; throttles the Sched warp once per tile (CTA 0; with
  ``ProtocolKnobs.clc_throttle`` off, neither this warp nor Sched touches the throttle pipeline).
* ``MMA`` (warp 0): TMEM allocation; on the MMA-leader CTA of a 1-SM/2-SM pair, one accumulator
  stage per tile, one tcgen05.mma K-block per mainloop stage; commits free the mainloop stage
  (multicast to the CTAs whose TMA fed it) and hand the accumulator to the epilogue.
* ``EpilogueLoad`` (warp 3, only when C is read): TMA loads of C subtiles.
* ``Epilogue`` (warps 4-7): per tile, TMEM -> registers -> convert -> SMEM -> TMA store, one
  epilogue subtile at a time; releases the accumulator stage after its last TMEM load.

Pipelines (producer -> consumer: what one stage carries):

* mainloop ``PipelineTmaUmmaAsync``: MainloopLoad (TMA, expect-tx bytes) -> MMA: one K-block of A and B;
* accumulator ``PipelineUmmaAsync``: MMA (1 arrival, commit multicast to the pair) -> Epilogue
  (AtomThrShape x 128 arrivals on the leader): one output tile's accumulator in TMEM;
* clc ``PipelineCLCFetchAsync``: Sched of CTA 0 (16 B response, tx) -> every role of every CTA: next tile id;
* clc_throttle ``PipelineAsync``: MainloopLoad of CTA 0 -> Sched: permission for one more query;
* epi_load ``PipelineTransactionAsync``: EpilogueLoad (TMA, expect-tx bytes) -> Epilogue: one C subtile;
* epi_store ``PipelineTmaStore``: Epilogue -> TMA store unit: one D subtile (bounded outstanding stores).

Plus the load-order barrier (mainloop prologue before C loads), the TMEM-allocation named
barrier (MMA + epilogue), the TMEM-deallocation cluster barrier (MMA peers in 2-SM mode) and the
epilogue-throttle barrier (epilogue waits for the other roles' prologue).

Steady state per role:

* MainloopLoad: ``[throttle.producer_acquire+commit]; for k: mainloop.producer_acquire -> TMA(k);
  fetch_next_work`` per tile.
* MMA (leader): ``fetch_next_work; accumulator.producer_acquire; for k: mainloop.consumer_wait ->
  mma(k) -> commit releases stage; accumulator.producer_commit`` per tile.
* Epilogue: ``fetch_next_work; accumulator.consumer_wait; for each subtile: [epi_load.consumer_wait]
  -> TMEM load -> convert -> SMEM -> epi_store.producer_acquire -> TMA store; accumulator
  .consumer_release after the last TMEM load`` per tile.
* Sched: ``throttle.consumer_wait+release; clc.producer_acquire -> try_cancel; fetch_next_work``.

Time is in SM cycles. Every constant comes from :class:`simulator.machine.arch.ArchSpec` and is listed by
:meth:`Sm100Timing.constants_used`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import simpy

from simulator.kernels import race_hooks, stream_k
from simulator.kernels.common import NUM_THREADS_PER_WARP, Cluster, ConfigSnapshot, RoleBase, RunStats
from simulator.kernels.fixup import FIXUP_CONSTANTS, Fixup
from simulator.kernels.launch import LateStart
from simulator.kernels.scheduler import (
    ClcHardware,
    StreamKTileScheduler,
    TileRaster,
    WorkTileInfo,
    cta_tile_coord,
    max_resident_clusters,
    mma_tile_in_problem,
    static_grid_clusters,
)
from simulator.kernels.tma_alignment import L2_MISALIGNED_COST, TMA_MISALIGNED_COST, RowPitchCost
from simulator.machine.memory import MemorySystem
from simulator.protocol.arrivals import (
    KernelFacts,
    sm100_arrival_counts,
    sm100_barrier_counts,
    sm100_fixup_counts,
)
from simulator.protocol.deadlock import barrier_stage
from simulator.protocol.knobs import ProtocolKnobs
from simulator.protocol.mbarrier import ClusterBarrier, MBarrier, NamedBarrier, call_at
from simulator.protocol.pipeline import (
    OrderedSequenceBarrier,
    PipelineAsync,
    PipelineCLCFetchAsync,
    PipelineParams,
    PipelineState,
    PipelineTmaUmmaAsync,
    PipelineTransactionAsync,
    PipelineUmmaAsync,
    make_producer_start_state,
)
from simulator.protocol.races import RaceDetector

CLC_RESPONSE_BYTES = 16  # sizeof(CLCResponse): the try_cancel response is 16 bytes


@dataclass(frozen=True)
class Sm100Timing:
    """Per-operation costs in cycles, derived from the arch constants and the config."""

    kblock_mma_cycles: float       # tensor-core time of one K-block on one MMA (CTA or CTA pair)
    mma_instr_cycles: float        # issue interval of one tcgen05.mma instruction
    mma_drain_cycles: float        # completion latency beyond the issue interval
    epi_tmem_cycles: float         # tcgen05.ld of one epilogue subtile, TMEM -> registers
    epi_convert_cycles: float      # scale and convert one subtile to D's type
    epi_smem_cycles: float         # registers -> SMEM (before the TMA store)
    clc_latency: float
    remote_latency: float
    wake_latency: float
    notes: tuple[str, ...]
    tma_ingress_bytes_per_clk: float = 0.0   # per-SM TMA bytes landing in SMEM per cycle (0: no limit)
    epi_sync_cycles: float = 0.0             # per epilogue subtile: fence + named-barrier syncs around the store
    epi_tile_cycles: float = 0.0             # per output tile: the epilogue's tail beyond its subtiles
    store_read_bytes_per_clk: float = 0.0    # TMA store: SMEM read rate (assumed = the measured TMA load rate)
    tma_row_cost: float = 1.0                # TMA ingress occupancy per byte (> 1: rows straddle cache lines)
    l2_row_cost: float = 1.0                 # L2 -> SM occupancy per byte (> 1: rows straddle cache lines)

    @classmethod
    def derive(cls, cfg, arch) -> Sm100Timing:
        ab_bytes = (cfg.bits_ab // 8)
        # tcgen05.mma consumes 32 bytes of K per instruction (K=16 for 16-bit, 32 for 8-bit types).
        instr_k = 32 // ab_bytes
        n_instr = max(1, cfg.tile_k // instr_k)
        rate = arch.mma_flops_per_clk_per_sm.value * (arch.mma_fp8_factor.value if ab_bytes == 1 else 1.0)
        # One instruction of the CTA (pair): the FLOPs of its share on one SM at the SM's rate ...
        flops_per_sm = 2.0 * cfg.cta_tile_m * cfg.mma_tile_n * instr_k
        compute = flops_per_sm / rate
        # ... or the SMEM operand reads of an SS MMA, if slower: each SM reads the A rows it holds and
        # the B columns it holds -- all N in 1-SM mode, N/2 in 2-SM mode, where the pair exchanges its
        # halves of B (SemiAnalysis umma_throughput, 2-SM SS 128x64x16: 25.7 cycles, (64 + 32) x 32 B /
        # 128 B/clk = 24; all of N would give 32).
        b_cols = cfg.mma_tile_n // cfg.atom_thr_m
        smem = (cfg.cta_tile_m + b_cols) * instr_k * ab_bytes / arch.smem_read_bytes_per_clk.value
        instr = max(compute, smem)
        notes = [f"tcgen05.mma {cfg.mma_tile_m}x{cfg.mma_tile_n}x{instr_k}: {instr:.1f} cycles/instr "
                 f"({'SMEM-operand' if smem > compute else 'math'} bound), {n_instr} per K-block"]
        drain = max(0.0, arch.mma_latency_cycles.value - instr)
        rows_cost = RowPitchCost.of(cfg.k, cfg.bits_ab)
        notes.append(rows_cost.note("; measured on the H200, assumed alike on SM100"))
        if not rows_cost.aligned:
            notes += [f"{c.name} = {c.value:g} {c.unit} (estimate on SM100: {c.kind} on the H200: {c.source})"
                      for c in (TMA_MISALIGNED_COST, L2_MISALIGNED_COST)]
        acc_bytes = 4
        elems = cfg.epi_tile[0] * cfg.epi_tile[1]
        tmem = elems * acc_bytes / arch.tmem_load_bytes_per_clk.value if arch.tmem_load_bytes_per_clk.value else 0.0
        cvt = elems / arch.epilogue_convert_elems_per_clk.value
        smem_w = elems * (cfg.bits_d / 8) / arch.smem_read_bytes_per_clk.value
        return cls(
            kblock_mma_cycles=n_instr * instr,
            mma_instr_cycles=instr,
            mma_drain_cycles=drain,
            epi_tmem_cycles=tmem,
            epi_convert_cycles=cvt,
            epi_smem_cycles=smem_w,
            clc_latency=arch.clc_query_latency_cycles.value,
            remote_latency=arch.remote_arrive_latency_cycles.value,
            wake_latency=arch.mbarrier_arrive_latency_cycles.value,
            notes=tuple(notes),
            tma_ingress_bytes_per_clk=arch.tma_load_bytes_per_clk_per_sm.value,
            epi_sync_cycles=arch.epilogue_subtile_sync_cycles.value,
            epi_tile_cycles=arch.epilogue_tile_cycles.value,
            store_read_bytes_per_clk=(arch.tma_load_bytes_per_clk_per_sm.value
                                      or arch.smem_read_bytes_per_clk.value),
            tma_row_cost=rows_cost.tma_cost,
            l2_row_cost=rows_cost.l2_cost,
        )

    @staticmethod
    def constants_used() -> tuple[str, ...]:
        return ("sm_count", "clock_ghz", "mma_flops_per_clk_per_sm", "mma_fp8_factor", "mma_latency_cycles",
                "smem_read_bytes_per_clk", "tmem_load_bytes_per_clk", "epilogue_convert_elems_per_clk",
                "hbm_bytes_per_s", "hbm_latency_cycles", "l2_bytes", "l2_bytes_per_s", "l2_latency_cycles",
                "tma_issue_overhead_cycles", "mbarrier_arrive_latency_cycles", "remote_arrive_latency_cycles",
                "clc_query_latency_cycles", "launch_overhead_ns", "tma_load_bytes_per_clk_per_sm", "gpc_count",
                "epilogue_subtile_sync_cycles", "epilogue_tile_cycles")


class Cta:
    """One CTA's barrier storage, pipelines and per-CTA facts."""

    def __init__(self, kernel: Sm100GemmTmaWarpSpecialized, cluster: Cluster, rank: int):
        k = self.kernel = kernel
        cfg = k.cfg
        env = k.env
        self.env = env
        self.cluster = cluster
        self.rank = rank
        self.cx = rank % cfg.cluster_m           # block_id_in_cluster.x (M)
        self.cy = rank // cfg.cluster_m          # block_id_in_cluster.y (N)
        self.sm = cluster.first_sm + rank
        self.atom = cfg.atom_thr_m
        self.is_first_cta = rank == 0
        self.is_mma_leader = (self.cx % self.atom) == 0
        self.leader_rank = rank - (self.cx % self.atom)
        self.tag = f"SM{self.sm}"
        facts = k.facts
        counts = k.counts
        knobs = k.knobs
        t = k.timing
        wl, rl = t.wake_latency, t.remote_latency

        def pp(name: str, stages: int, tx: int = 0) -> PipelineParams:
            c = counts[name]
            return PipelineParams(name, stages, knobs.count(name, "full", c.producer),
                                  knobs.count(name, "empty", c.consumer), tx,
                                  k.owed[name][0], k.owed[name][1])

        self.mainloop = PipelineTmaUmmaAsync(env, pp("mainloop", cfg.mainloop_stages, cfg.tma_transaction_bytes),
                                             rank, wake_latency=wl, remote_latency=rl)
        self.accumulator = PipelineUmmaAsync(env, pp("accumulator", cfg.accumulator_stages), rank,
                                             wake_latency=wl, remote_latency=rl)
        self.clc = PipelineCLCFetchAsync(env, pp("clc", cfg.scheduler_stages, CLC_RESPONSE_BYTES), rank,
                                         wake_latency=wl, remote_latency=rl)
        self.clc_throttle = PipelineAsync(env, pp("clc_throttle", cfg.scheduler_stages), rank, wake_latency=wl)
        self.epi_load = PipelineTransactionAsync(env, pp("epi_load", cfg.epilogue_load_stages,
                                                 cfg.epi_c_subtile_bytes), rank, wake_latency=wl)
        for p in self.pipelines():
            p.rank = rank
        bc = sm100_barrier_counts(facts, cta_rank=rank)
        self.load_order = OrderedSequenceBarrier(env, "load_order", bc["load_order"], rank)
        self.tmem_alloc = NamedBarrier(env, f"CTA{rank}/tmem_alloc", bc["tmem_alloc"],
                                       owed_by="MMA x32 + Epilogue x128")
        # Initialised only where the seed initialises it (2-SM peer, or overlapping accumulators).
        self.tmem_dealloc = (ClusterBarrier(env, f"CTA{rank}/tmem_dealloc", bc["tmem_dealloc"],
                                            owed_by=("Epilogue x128 (this CTA and the peer)" if cfg.overlapping_accum
                                                     else "MMA of the peer CTA"),
                                            remote_latency=rl, wake_latency=wl)
                             if bc["tmem_dealloc"] > 0 else None)
        self.epilogue_throttle = ClusterBarrier(env, f"CTA{rank}/epilogue_throttle", bc["epilogue_throttle"],
                                                owed_by="MMA, Sched (CTA0), MainloopLoad, EpilogueLoad (if C)",
                                                wake_latency=wl)
        # SMEM copies of the CLC responses, one per scheduler stage (written when the bytes land).
        self.clc_response: list[WorkTileInfo | None] = [None] * cfg.scheduler_stages
        # Tensor-core availability (MMA leader of a pair).
        self.tc_free = 0.0
        self.ingress_free = 0.0      # this SM's TMA ingress (bytes landing in its SMEM) is busy until then
        self.load_plan = k.mainloop_load_plan(self)
        self.load_bytes = sum(b for _, b in self.load_plan[3])
        self.roles: list[Role] = []

    def pipelines(self):
        return (self.mainloop, self.accumulator, self.clc, self.clc_throttle, self.epi_load)

    def barriers(self) -> list:
        out: list = []
        for p in self.pipelines():
            out += p.barriers()
        out += [self.load_order.barrier, self.tmem_alloc, self.epilogue_throttle]
        if self.tmem_dealloc is not None:
            out.append(self.tmem_dealloc)
        return out


class Role(RoleBase):
    """An SM100 role: adds the CLC ``fetch_next_work`` every role calls once per tile."""

    def __init__(self, cta: Cta):
        super().__init__(cta)
        self.clc_state = PipelineState(self.k.cfg.scheduler_stages)

    def fetch_next_work(self, work: WorkTileInfo):
        """``scheduler.fetch_next_work`` and the ``if (increment_pipe) ++clc_pipe_consumer_state``
        every role of the seed runs right after it: a generator returning ``(next_work,
        increment_pipe)``, with this role's CLC consumer state already advanced when a response
        was consumed (the caller needs ``increment_pipe`` only to know that a query was used up)."""
        k = self.k
        if k.cfg.tile_scheduler == "static":
            return k.static_next(self.cta.cluster, work), False
        if k.sk is not None:
            # A stream-K unit spanning several tiles: its next tile, no CLC response consumed.
            nxt = k.sk.continue_work(work)
            if nxt is not None:
                return nxt, False
        st = self.clc_state
        full = self.cta.clc.full[st.index]
        ev = full.wait(st.phase, self.who)
        if ev is not None:
            t0 = self.env.now
            yield ev
            self._waited("clc.full", st.index, t0)
        nxt = self.cta.clc_response[st.index]
        if nxt is None:
            # Only a broken protocol reads a stage before any response landed in it (wsim check's
            # mutations): its SMEM holds no tile id; taken as "no more work".
            nxt = WorkTileInfo.invalid()
        if self.races is not None:                    # race detectors (wsim check): the response is read now
            race_hooks.clc_read(k, self.cta, st, self)
        if k.knobs.releases("clc"):
            self.cta.clc.consumer_release(st, self.who, self.threads)
        st.advance()
        return nxt, True

    def tile_of(self, work: WorkTileInfo) -> tuple[int, int, int]:
        return self.k.cta_tile(work, self.cta)


class MainloopLoad(Role):
    name = "MainloopLoad"

    def run(self):
        cta: Cta = self.cta
        k: Sm100GemmTmaWarpSpecialized = self.k
        cfg = k.cfg
        knobs = k.knobs
        pipe: PipelineTmaUmmaAsync = cta.mainloop
        state: PipelineState = make_producer_start_state(cfg.mainloop_stages, phase=knobs.start_phase("mainloop"))
        throttle_state = make_producer_start_state(cfg.scheduler_stages, phase=knobs.start_phase("clc_throttle"))
        who = self.who
        is_mma_leader = cta.is_mma_leader
        stats: RunStats = self.stats
        tx_bytes = cfg.tma_transaction_bytes
        do_load_order_arrive = cfg.read_c
        cta.epilogue_throttle.arrive(self.threads, who=self.who, round=0)
        requires_clc_query = True
        work = k.initial_work(cta.cluster)
        # CTA 0 grants the Sched warp one query per tile; with the throttle off neither side takes part.
        throttled = cfg.tile_scheduler == "clc" and cta.is_first_cta and knobs.clc_throttle
        k_tiles = cfg.k_tiles
        prologue = min(cfg.mainloop_stages, k_tiles)
        races = self.races
        while True:
            tile = self.tile_of(work)
            if throttled and requires_clc_query:
                ev = cta.clc_throttle.producer_acquire(throttle_state, self.who)
                if ev is not None:
                    t0 = self._time()
                    yield ev
                    self._waited("clc_throttle.empty", throttle_state.index, t0, tile)
                cta.clc_throttle.producer_commit(throttle_state, self.who, self.threads)
                throttle_state.advance()
            t_tile = self._time()
            loads = k.tile_loads(cta, tile)
            kb0 = work.k_start
            kn = work.k_count if work.k_count else k_tiles
            prologue = min(cfg.mainloop_stages, kn)
            for kb in range(kb0, kb0 + kn):
                if kb - kb0 == prologue and do_load_order_arrive:
                    cta.load_order.arrive(self.who, self.threads)
                    do_load_order_arrive = False
                ev = pipe.producer_acquire(state, who)
                if ev is not None:
                    t0 = self._time()
                    yield ev
                    self._waited("mainloop.empty", state.index, t0, tile, kb)
                if is_mma_leader:
                    pipe.producer_acquire_expect(state, who, True)
                    stats.tx_expected += tx_bytes
                land = k.issue_mainloop_tma(cta, tile, loads, kb, state.index, self)
                if races is not None:                  # race detectors (wsim check)
                    race_hooks.mainloop_write(k, cta, state, land, self)
                state.advance()
            if do_load_order_arrive:
                cta.load_order.arrive(self.who, self.threads)
                do_load_order_arrive = False
            self.span("tile", t_tile, self._time(), tile=tile)
            res = yield from self.fetch_next_work(work)
            work, requires_clc_query = res
            if not work.is_valid:
                break
        # load_tail: wait until every stage was released once more.
        for bar, ev in pipe.producer_tail_waits(state, self.who):
            yield from self.block(ev, "mainloop.empty", barrier_stage(bar.name))


class Mma(Role):
    name = "MMA"

    def __init__(self, cta: Cta):
        super().__init__(cta)
        if not cta.is_mma_leader:
            # In 2-SM mode the peer CTA's MMA warp issues nothing: it only follows the schedule.
            self.stat_name = "MMA (2-SM peer)"

    def run(self):
        cta: Cta = self.cta
        k: Sm100GemmTmaWarpSpecialized = self.k
        cfg, t, knobs = k.cfg, k.timing, k.knobs
        # TMEM allocation, then tell the epilogue where the accumulators are.
        cta.tmem_alloc.arrive(self.threads, self.who)
        cta.epilogue_throttle.arrive(self.threads, who=self.who, round=0)
        ml: PipelineTmaUmmaAsync = cta.mainloop
        acc: PipelineUmmaAsync = cta.accumulator
        ml_state: PipelineState = PipelineState(cfg.mainloop_stages)
        ml_stages = cfg.mainloop_stages
        acc_state = make_producer_start_state(cfg.accumulator_stages, phase=knobs.start_phase("accumulator"))
        work = k.initial_work(cta.cluster)
        release_ml = knobs.releases("mainloop")
        overlapping = cfg.overlapping_accum
        mcast = k.mainloop_release_targets(cta)
        pair = [cta.leader_rank + i for i in range(cta.atom)]
        who = self.who
        stats: RunStats = self.stats
        kblock_cycles, drain = t.kblock_mma_cycles, t.mma_drain_cycles
        traced = self.tr is not None
        races = self.races
        while True:
            tile = self.tile_of(work)
            res = yield from self.fetch_next_work(work)
            next_work = res[0]
            if cta.is_mma_leader:
                if not overlapping:
                    # Wait for the TMEM accumulator stage to be empty (producer phase flipped).
                    ev = acc.producer_acquire(acc_state, self.who)
                    if ev is not None:
                        t0 = self._time()
                        yield ev
                        self._waited("accumulator.empty", acc_state.index, t0, tile)
                t_tile = self._time()
                done = self._time()
                first = done
                kb0 = work.k_start
                kn = work.k_count if work.k_count else cfg.k_tiles
                for kb in range(kb0, kb0 + kn):
                    ev = ml.consumer_wait(ml_state, who)
                    if ev is not None:
                        t0 = self._time()
                        yield ev
                        self._waited("mainloop.full", ml_state.index, t0, tile, kb)
                    if overlapping and kb == kb0:
                        # Overlapping accumulators: the first K-block's data is in; now wait until the
                        # epilogue has read the TMEM column this tile shares with the previous one.
                        ev = acc.producer_acquire(acc_state, self.who)
                        if ev is not None:
                            t0 = self._time()
                            yield ev
                            self._waited("accumulator.empty", acc_state.index, t0, tile)
                    now = self._time()
                    start = cta.tc_free if cta.tc_free > now else now
                    end = start + kblock_cycles
                    cta.tc_free = end
                    done = end + drain
                    if races is not None:              # race detectors (wsim check): the MMA reads the stage
                        if kb == 0:
                            first = start
                        race_hooks.stage_read(k, cta, "mainloop", ml_state, start, done, self)
                    stats.mma_kblocks += 1
                    stats.tc_busy_cycles += kblock_cycles
                    if traced:
                        self.span("mma", start, done, tile=tile, k_block=kb, stage=ml_state.index)
                    if release_ml:
                        # umma_arrive_multicast: the commit lands when these MMAs complete.
                        ml.release_stage_at(done, ml_state.index, ml_state.count // ml_stages, mcast, who, 1)
                    ml_state.advance()
                # accumulator producer_commit: umma commit to both CTAs of the pair.
                acc.producer_commit_to_at(done, acc_state.copy(), pair, self.who)
                if races is not None:                  # race detectors (wsim check): the tile's accumulator
                    race_hooks.accumulator_write(k, cta, acc_state, first, done, self)
                self.span("acc_handoff", done, done, tile=tile, stage=acc_state.index)
                self.span("tile", t_tile, done, tile=tile)
            acc_state.advance()
            work = next_work
            if not work.is_valid:
                break
        if overlapping:
            # The epilogue warps (of this CTA and the peer) signal when TMEM can be freed.
            ev = cta.tmem_dealloc.wait(0, self.who)
            if ev is not None:
                t0 = self._time()
                yield ev
                self._waited("tmem_dealloc", -1, t0)
            if races is not None:
                race_hooks.tmem_free(k, cta, self._time(), self)
            return
        # Tail: the leader waits for the epilogues to release every accumulator stage.
        if cta.is_mma_leader:
            for bar, ev in acc.producer_tail_waits(acc_state, self.who):
                yield from self.block(ev, "accumulator.empty", barrier_stage(bar.name))
        if cta.atom == 2:
            # Leader does wait + arrive, follower does arrive + wait (tmem_deallocation_result_barrier).
            peer = cta.cluster.ctas[cta.rank ^ 1]
            if not cta.is_mma_leader:
                peer.tmem_dealloc.arrive_remote(self.threads, who=self.who, round=0)
            ev = cta.tmem_dealloc.wait(0, self.who)
            if ev is not None:
                t0 = self._time()
                yield ev
                self._waited("tmem_dealloc", -1, t0)
            if cta.is_mma_leader:
                peer.tmem_dealloc.arrive_remote(self.threads, who=self.who, round=0)
        if races is not None:                          # race detectors (wsim check): TMEM is freed now
            race_hooks.tmem_free(k, cta, self._time(), self)


class EpilogueLoad(Role):
    name = "EpilogueLoad"

    def run(self):
        cta, k, env = self.cta, self.k, self.env
        cfg, knobs = k.cfg, k.knobs
        pipe = cta.epi_load
        state = make_producer_start_state(cfg.epilogue_load_stages, phase=knobs.start_phase("epi_load"))
        cta.epilogue_throttle.arrive(self.threads, who=self.who, round=0)
        work = k.initial_work(cta.cluster)
        do_load_order_wait = True
        races = self.races
        while True:
            tile = self.tile_of(work)
            compute_epilogue = not work.k_count or k.fixup.is_final(work)
            res = yield from self.fetch_next_work(work)
            next_work = res[0]
            if not compute_epilogue:
                work = next_work
                if not work.is_valid:
                    break
                continue
            if do_load_order_wait:
                ev = cta.load_order.wait(self.who)
                if ev is not None:
                    t0 = env.now
                    yield ev
                    self._waited("load_order", -1, t0, tile)
                do_load_order_wait = False
            for s in range(cfg.epi_subtiles):
                ev = pipe.producer_acquire(state, self.who)
                if ev is not None:
                    t0 = env.now
                    yield ev
                    self._waited("epi_load.empty", state.index, t0, tile, s)
                pipe.producer_expect_transaction(state)
                land = k.issue_c_load(cta, tile, s, state.copy(), self)
                if races is not None:                  # race detectors (wsim check)
                    race_hooks.c_write(k, cta, state, land, self)
                pipe.producer_commit(state, self.who, self.threads)
                state.advance()
            work = next_work
            if not work.is_valid:
                break
        # load_tail: producer_tail on the C-load pipeline.
        for bar, ev in pipe.producer_tail_waits(state, self.who):
            yield from self.block(ev, "epi_load.empty", barrier_stage(bar.name))


class Epilogue(Role):
    name = "Epilogue"
    threads = 128

    def run(self):
        cta, k, env = self.cta, self.k, self.env
        cfg, t, knobs = k.cfg, k.timing, k.knobs
        ev = cta.epilogue_throttle.wait(0, self.who)
        if ev is not None:
            t0 = self._time()
            yield ev
            self._waited("epilogue_throttle", -1, t0)
        ev = cta.tmem_alloc.arrive_and_wait(self.threads, self.who)
        if ev is not None:
            t0 = self._time()
            yield ev
            self._waited("tmem_alloc", -1, t0)
        acc = cta.accumulator
        acc_state = PipelineState(cfg.accumulator_stages)
        ld_state = PipelineState(cfg.epilogue_load_stages)
        stores: list[float] = []          # SMEM-read completion of committed TMA stores, oldest first
        store_stages = cfg.epilogue_store_stages
        release_acc = knobs.releases("accumulator")
        release_ld = knobs.releases("epi_load")
        overlapping = cfg.overlapping_accum
        reuse_c = cfg.read_c and cfg.reuse_smem_c
        n_sub = cfg.epi_subtiles
        sub_m = -(-cfg.cta_tile_m // cfg.epi_tile[0])
        work = k.initial_work(cta.cluster)
        races = self.races
        t_acc = 0.0
        t_c = 0.0
        while True:
            tile = self.tile_of(work)
            res = yield from self.fetch_next_work(work)
            next_work = res[0]
            # collective_epilogue.store: subtiles iterate M fastest, then N. The accumulator stage
            # is released after the last TMEM load (overlapping accumulators: after the last M
            # subtile of the first N column, which is the TMEM column the next tile shares).
            t_tile = self._time()
            if work.k_count:
                # scheduler.fixup (tmem_fixup): the accumulator to registers, the fixup, and only the
                # final split goes on to the epilogue.
                final = yield from self.fixup(work, tile, acc_state)
                if not final:
                    self.span("tile", t_tile, self._time(), tile=tile)
                    work = next_work
                    if not work.is_valid:
                        break
                    continue
            release_at = (sub_m - 1) if overlapping else (n_sub - 1)
            for s in range(n_sub):
                if cfg.read_c:
                    ev = cta.epi_load.consumer_wait(ld_state, self.who)
                    if ev is not None:
                        t0 = self._time()
                        yield ev
                        self._waited("epi_load.full", ld_state.index, t0, tile, s)
                    # C is in registers. Without SMEM reuse the buffer goes back to the EpilogueLoad
                    # warp now; with reuse (C wider than 8 bit) D is staged in it, so it is released
                    # once the TMA store of this subtile has read it (below).
                    ld_release = ld_state.copy()
                    if races is not None:              # race detectors (wsim check): C read from now
                        t_c = self._time()
                        if not reuse_c:                # ... into registers, at once
                            race_hooks.stage_read(k, cta, "epi_load", ld_state, t_c, t_c, self)
                    if release_ld and not reuse_c:
                        cta.epi_load.consumer_release(ld_state, self.who, self.threads)
                    ld_state.advance()
                if s == 0:
                    ev = acc.consumer_wait(acc_state, self.who)
                    if ev is not None:
                        t0 = self._time()
                        yield ev
                        self._waited("accumulator.full", acc_state.index, t0, tile)
                    if races is not None:
                        t_acc = self._time()
                t0 = self._time()
                yield self._sleep(t.epi_tmem_cycles)        # tcgen05.ld TMEM -> registers
                if races is not None:                       # race detectors (wsim check): TMEM read
                    race_hooks.accumulator_read(k, cta, acc_state, t_acc, s == release_at, s == n_sub - 1, self)
                if s == release_at:
                    if release_acc:
                        acc.consumer_release_to(acc_state, cta.leader_rank, self.who, self.threads)
                    self.span("acc_handoff", self._time(), self._time(), tile=tile, stage=acc_state.index)
                    if overlapping:
                        acc_state.advance()
                yield self._sleep(t.epi_convert_cycles)     # scale, convert to D's type
                # epi_store producer_acquire: returns when at most StagesD-1 committed stores are pending.
                while len(stores) >= store_stages:
                    first = stores.pop(0)
                    if first > self._time():
                        tw = self._time()
                        yield self._sleep(first - self._time())
                        self._waited("epi_store", s % store_stages, tw, tile, s)
                yield self._sleep(t.epi_smem_cycles + t.epi_sync_cycles)   # registers -> SMEM, fence, sync
                self.span("epilogue", t0, self._time(), tile=tile, k_block=s, stage=acc_state.index)
                smem_free = k.issue_store(cta, tile, s, self)
                stores.append(smem_free)
                if races is not None and cfg.read_c and reuse_c:   # the C stage holds D until the store read it
                    race_hooks.stage_read(k, cta, "epi_load", ld_release, t_c, smem_free, self)
                if cfg.read_c and reuse_c and release_ld:
                    call_at(env, smem_free - self._time(), cta.epi_load.consumer_release, ld_release, self.who,
                            self.threads)
            if t.epi_tile_cycles:
                # The epilogue's per-tile tail (arch.epilogue_tile_cycles): the barrier after the last
                # subtile, the accumulator stage's release, the scheduler's advance, the next wake.
                yield self._sleep(t.epi_tile_cycles)
            if mma_tile_in_problem(tile[0], tile[1], cfg):
                self.stats.tiles_done.append((tile[0], tile[1], tile[2], cta.cx % cta.atom))
            self.span("tile", t_tile, self._time(), tile=tile)
            if not overlapping:
                acc_state.advance()
            work = next_work
            if not work.is_valid:
                break
        if overlapping:
            # Signal to the (peer) MMA that the whole TMEM allocation can be freed.
            if cta.atom == 2:
                cta.cluster.ctas[cta.rank ^ 1].tmem_dealloc.arrive_remote(self.threads, who=self.who, round=0)
            cta.tmem_dealloc.arrive(self.threads, who=self.who, round=0)
        # store_tail: wait for every outstanding store.
        if stores and max(stores) > self._time():
            t0 = self._time()
            yield self._sleep(max(stores) - self._time())
            self._waited("epi_store", -1, t0)


    def fixup(self, work, tile, acc_state: PipelineState):
        """The SM100 stream-K scheduler's ``tmem_fixup``: wait for the accumulator stage, copy it TMEM ->
        registers; a non-final split releases the stage (and advances past it) before the fixup, the final
        split copies the sum back to TMEM after it. Returns whether this split computes the epilogue."""
        cta, k = self.cta, self.k
        ev = cta.accumulator.consumer_wait(acc_state, self.who)
        if ev is not None:
            t0 = self._time()
            yield ev
            self._waited("accumulator.full", acc_state.index, t0, tile)
        t_acc = self._time()
        yield self._sleep(k.tmem_tile_cycles)          # copy(tmem_load, tCtAcc, tCrAcc): the whole CTA tile
        final = k.fixup.is_final(work)
        if not final:
            if self.races is not None:                 # race detectors (wsim check): TMEM read
                race_hooks.accumulator_read(k, cta, acc_state, t_acc, True, True, self)
            if k.knobs.releases("accumulator"):
                cta.accumulator.consumer_release_to(acc_state, cta.leader_rank, self.who, self.threads)
            acc_state.advance()
        final = yield from k.fixup.run(self, cta, work, tile, 0)
        if final:
            yield self._sleep(k.tmem_tile_cycles)      # copy(tmem_store, tCrAcc, tCtAcc): the sum back to TMEM
        return final


class Sched(Role):
    name = "Sched"

    def run(self):
        cta, k, env = self.cta, self.k, self.env
        cfg, knobs = k.cfg, k.knobs
        cta.epilogue_throttle.arrive(self.threads, who=self.who, round=0)
        if cfg.tile_scheduler != "clc":
            return
        clc = cta.clc
        prod = make_producer_start_state(cfg.scheduler_stages, phase=knobs.start_phase("clc"))
        thr = PipelineState(cfg.scheduler_stages)
        requires_clc_query = True
        work = k.initial_work(cta.cluster)
        while True:
            if requires_clc_query:
                if knobs.clc_throttle:
                    ev = cta.clc_throttle.consumer_wait(thr, self.who)
                    if ev is not None:
                        t0 = env.now
                        yield ev
                        self._waited("clc_throttle.full", thr.index, t0)
                    if knobs.releases("clc_throttle"):
                        cta.clc_throttle.consumer_release(thr, self.who, self.threads)
                    thr.advance()
                # advance_to_next_work: acquire the stage, expect 16 B in every CTA, try_cancel.
                ev = clc.producer_acquire(prod, self.who)
                if ev is not None:
                    t0 = env.now
                    yield ev
                    self._waited("clc.empty", prod.index, t0)
                clc.producer_acquire_expect(prod, self.who)
                k.issue_clc_query(cta.cluster, prod.index, self)
                if self.races is not None:             # race detectors (wsim check)
                    race_hooks.clc_write(k, cta.cluster, prod, self)
                prod.advance()
            res = yield from self.fetch_next_work(work)
            work, requires_clc_query = res
            if not work.is_valid:
                break
        for bar, ev in clc.producer_tail_waits(prod, self.who):
            yield from self.block(ev, "clc.empty", barrier_stage(bar.name))


class Sm100GemmTmaWarpSpecialized:
    """The kernel: resident clusters, their CTAs, and the shared memory system and CLC hardware."""

    def __init__(self, env: simpy.Environment, cfg, arch, memory: MemorySystem, *,
                 knobs: ProtocolKnobs | None = None, trace=None, trace_sms=None, races: RaceDetector | None = None,
                 late_start: LateStart | None = None):
        self.env = env
        self.races = races       # the race detectors (wsim check), or None: then no role calls race_hooks
        self.config = cfg
        self.cfg = cfg = ConfigSnapshot(cfg)
        self.arch = arch
        self.mem = memory
        self.knobs = knobs or ProtocolKnobs()
        self.trace = trace
        self._trace_sms = None if trace_sms is None else frozenset(trace_sms)
        self.timing = Sm100Timing.derive(cfg, arch)
        # Per-K-block constants of issue_mainloop_tma, read once.
        # Rows that straddle cache lines occupy the SM's TMA ingress longer per byte (a slower rate).
        self._ingress_rate = self.timing.tma_ingress_bytes_per_clk / self.timing.tma_row_cost
        self._l2_cost = self.timing.l2_row_cost
        self._ingress_lat = memory.t.l2_latency + memory.t.tma_overhead
        self._a_dests = cfg.cluster_n
        self._b_dests = cfg.cluster_m // cfg.atom_thr_m
        self.facts = KernelFacts.from_config(cfg)
        self.counts = sm100_arrival_counts(self.facts)
        self.owed = _owed_by(cfg)
        self.stats = RunStats()
        # The scheduler picks its tile mapping from the config's type (CLC or static), so it gets
        # the config itself, not the snapshot.
        self.raster = TileRaster.from_config(self.config)
        self.grid_clusters = self.raster.num_clusters
        # The stream-K scheduler (PersistentTileSchedulerSm100StreamK) over CLC, unless the config keeps
        # the seed's own scheduler: its work units, and the fixup of the tiles they split.
        self.decomp = stream_k.for_config(self.config, arch)
        self.sk = StreamKTileScheduler(self.config, self.decomp) if self.decomp is not None else None
        self.fixup = None
        if self.sk is not None:
            self.grid_clusters = self.decomp.grid_units
        if cfg.tile_scheduler == "clc":
            resident = min(self.grid_clusters, max_resident_clusters(self.config, arch))
        else:
            resident = static_grid_clusters(self.config, arch, self.grid_clusters)
        # SMs that start late (simulator.kernels.launch): their clusters launch after the delay; with
        # CLC the hardware places only the on-time clusters at launch (ids 0..R'-1).
        late = late_start.late_clusters(resident, cfg.cluster_size) if late_start is not None else range(0)
        self.late_clusters = len(late)
        self.late_sms = (late.start * cfg.cluster_size, late.stop * cfg.cluster_size) if late else None
        self.late_launched = 0
        on_time = resident - len(late) if cfg.tile_scheduler == "clc" else resident
        self.clc_hw = ClcHardware(self.grid_clusters, on_time)
        self.clusters: list[Cluster] = []
        self.roles: list[Role] = []
        for ci in range(resident):
            cl = Cluster(ci, ci * cfg.cluster_size)
            self.clusters.append(cl)
            for r in range(cfg.cluster_size):
                cl.ctas.append(Cta(self, cl, r))
            for p in ("mainloop", "accumulator", "clc", "clc_throttle", "epi_load"):
                peers = [getattr(c, p) for c in cl.ctas]
                for c in cl.ctas:
                    getattr(c, p).peers = peers
            for c in cl.ctas:
                # Where this CTA's K-block loads complete-tx: the full barriers of each receiving
                # MMA leader and the bytes it gets (load_plan), resolved once.
                c.tma_dests = [(cl.ctas[lead].mainloop.full, nbytes) for lead, nbytes in c.load_plan[3]]
        for cl in self.clusters:
            for c in cl.ctas:
                roles: list[Role] = [Mma(c), MainloopLoad(c), Epilogue(c)]
                if c.is_first_cta:
                    roles.insert(1, Sched(c))
                if cfg.read_c:
                    roles.append(EpilogueLoad(c))
                c.roles = roles
        if self.sk is not None:
            acc_bytes = max(1, cfg.bits_acc // 8)
            tile_bytes = cfg.cta_tile_m * cfg.cta_tile_n * acc_bytes
            self.fixup = Fixup(self, self.decomp, sm100_fixup_counts(self.facts), tile_bytes, cfg.cluster_size,
                               arch.l2_latency_cycles.value)
            # tcgen05.ld of the whole CTA tile for the fixup (and tcgen05.st back, assumed at the same rate).
            rate = arch.tmem_load_bytes_per_clk.value
            self.tmem_tile_cycles = tile_bytes / rate if rate else 0.0
            self.timing = replace(self.timing, notes=self.timing.notes + (
                "decomposition: " + self.decomp.summary(),) + self.decomp.params.notes + tuple(
                f"{c.name} = {c.value:g} {c.unit} ({c.kind}: {c.source})" for c in FIXUP_CONSTANTS) + (
                f"fixup TMEM copy of a {cfg.cta_tile_m}x{cfg.cta_tile_n} accumulator: {self.tmem_tile_cycles:.0f} "
                "cycles each way (tmem_load_bytes_per_clk; the store back assumed at the load's rate)",))
        for cl in self.clusters:
            if cl.index in late:
                env.process(self._launch_late(cl, late_start.delay_cycles(arch.clock_ghz.value)))
            else:
                self._launch(cl)

    # -- launch ---------------------------------------------------------------------------
    def _launch(self, cl: Cluster) -> None:
        for c in cl.ctas:
            self.roles += c.roles
            for r in c.roles:
                self.env.process(r.process())

    def _launch_late(self, cl: Cluster, delay: float):
        """A cluster whose SMs are busy at launch: it starts ``delay`` cycles later. Static: with its
        own tiles. CLC: as the next cluster of the grid not yet launched or cancelled, if one is left."""
        yield self.env.timeout(delay)
        if self.cfg.tile_scheduler == "clc":
            cid = self.clc_hw.launch_pending()
            if cid is None:
                return
            cl.launch_id = cid
        self.late_launched += 1
        self._launch(cl)

    # -- scheduling -----------------------------------------------------------------------
    def traced(self, sm: int) -> bool:
        return self._trace_sms is None or sm in self._trace_sms

    def initial_work(self, cluster: Cluster) -> WorkTileInfo:
        if self.sk is not None:
            return self.sk.unit_work(cluster.launch_id)
        return self.raster.work(cluster.launch_id)

    def static_next(self, cluster: Cluster, work: WorkTileInfo) -> WorkTileInfo:
        # Static persistent: resident cluster i takes linear ids i, i + R, i + 2R, ...
        nxt = work.linear + len(self.clusters)
        return self.raster.work(nxt)

    def cta_tile(self, work: WorkTileInfo, cta: Cta) -> tuple[int, int, int]:
        """The MMA tile a CTA (pair) computes in this cluster tile: (m, n, l) in MMA-tile units."""
        return cta_tile_coord(work, cta.rank, self.config)

    def issue_clc_query(self, cluster: Cluster, stage: int, role: Role) -> None:
        """``clusterlaunchcontrol.try_cancel``: the answer lands in every CTA's SMEM after the latency."""
        nxt = self.clc_hw.try_cancel()
        if nxt is None:
            work = WorkTileInfo.invalid()
        elif self.sk is not None:
            work = self.sk.unit_work(nxt)               # convert_work: the unit of that linear id
        else:
            work = self.raster.work(nxt)
        self.stats.clc_queries += 1
        lat = self.timing.clc_latency
        now = self.env.now
        role.span("clc_query", now, now + lat, stage=stage)

        def land() -> None:
            for c in cluster.ctas:
                c.clc_response[stage] = work
                c.clc.full[stage].complete_tx(CLC_RESPONSE_BYTES)
        call_at(self.env, lat, land)

    # -- data movement --------------------------------------------------------------------
    def mainloop_release_targets(self, cta: Cta) -> list[int]:
        """CTAs whose TMA multicast fed this MMA leader (their empty barriers get its commit)."""
        cfg = self.cfg
        out = set()
        for cy in range(cfg.cluster_n):              # A issuers: this pair's rows, every column
            for i in range(cfg.atom_thr_m):
                out.add((cta.leader_rank % cfg.cluster_m) + i + cy * cfg.cluster_m)
        for cx in range(cfg.cluster_m):              # B issuers: every row, this column
            out.add(cx + cta.cy * cfg.cluster_m)
        return sorted(out)

    def mainloop_load_plan(self, cta: Cta) -> tuple:
        """What one CTA's K-block loads carry and where they land (fixed for the whole run):
        its slice of A (multicast along its cluster row) and of B (along its cluster column), and
        the bytes each receiving MMA-leader's full barrier gets from it."""
        cfg = self.cfg
        atom = cfg.atom_thr_m
        half = cta.cx % atom
        a_slice = cfg.a_stage_bytes_per_cta // cfg.cluster_n
        b_slices = cfg.cluster_m // atom
        b_slice = cfg.b_stage_bytes_per_cta // b_slices
        per_leader: dict[int, int] = {}
        for cy in range(cfg.cluster_n):                # A goes to (cx, every cy)
            r = cta.cx + cy * cfg.cluster_m
            per_leader[r - half] = per_leader.get(r - half, 0) + a_slice
        for p in range(b_slices):                      # B goes to (same half, every pair, cy)
            r = p * atom + half + cta.cy * cfg.cluster_m
            per_leader[r - half] = per_leader.get(r - half, 0) + b_slice
        return half, a_slice, b_slice, tuple(per_leader.items())

    def tile_loads(self, cta: Cta, tile) -> tuple:
        """What a CTA's K-block loads of one tile read: the L2 keys of K-block 0 (K-block ``kb``
        is ``key + kb``) and the in-bounds bytes of its A and B slices (rows and columns past M and
        N are zero-filled by TMA, not fetched)."""
        cfg = self.cfg
        m_tile, n_tile, l_idx = tile
        half, a_slice, b_slice, _ = cta.load_plan
        atom = cfg.atom_thr_m
        a_block = m_tile * atom + half
        kt = cfg.k_tiles
        mem = self.mem
        return (mem.key_block(("A", l_idx, a_block, cta.cy), kt), self._in_bounds_a(a_block, a_slice),
                mem.key_block(("B", l_idx, n_tile * atom + half, cta.cx // atom), kt),
                self._in_bounds_b(n_tile, b_slice))

    def issue_mainloop_tma(self, cta: Cta, tile, loads, kb, stage, role: Role) -> float:
        """The TMA loads one CTA issues for one K-block; their bytes complete-tx on the full
        barrier of the MMA leader of every receiving CTA when they land (returned)."""
        mem = self.mem
        now = role._time()
        a_key, a_bytes, b_key, b_bytes = loads
        cost = self._l2_cost
        a_land = mem.load_scaled(now, a_key + kb, a_bytes, cost)
        b_land = mem.load_scaled(now, b_key + kb, b_bytes, cost)
        land = a_land if a_land > b_land else b_land
        rate = self._ingress_rate
        if rate:
            # The SM's TMA ingress: one stage's A and B land in this CTA's SMEM (its own slices are
            # multicast to its peers, and theirs land here: the same bytes per stage, in bounds).
            ing_bytes = a_bytes * self._a_dests + b_bytes * self._b_dests
            start = cta.ingress_free if cta.ingress_free > now else now
            cta.ingress_free = start + ing_bytes / rate
            lat = self._ingress_lat
            if cta.ingress_free + lat > land:
                land = cta.ingress_free + lat
        # The bytes complete-tx on each receiving MMA leader's full barrier when they land.
        for fulls, nbytes in cta.tma_dests:
            full: MBarrier = fulls[stage]
            full.complete_tx_at(land, nbytes)
        self.stats.tx_landed += cta.load_bytes
        if role.tr is not None:
            role.span("tma_load", now, land, tile=tile, k_block=kb, stage=stage)
        return land

    def _in_bounds_a(self, a_block: int, nbytes: int) -> int:
        """HBM/L2 bytes of an A slice: rows past M are zero-filled by TMA, not fetched."""
        tm = self.cfg.cta_tile_m
        rows = self.cfg.m - a_block * tm
        return nbytes if rows >= tm else max(0, nbytes * rows // tm)

    def _in_bounds_b(self, n_tile: int, nbytes: int) -> int:
        tn = self.cfg.mma_tile_n
        cols = self.cfg.n - n_tile * tn
        return nbytes if cols >= tn else max(0, nbytes * cols // tn)

    def issue_c_load(self, cta: Cta, tile, s: int, state: PipelineState, role: Role) -> float:
        """A TMA load of one C subtile: only its bytes inside M x N are read (TMA clips the box at the
        tensor's bounds and zero-fills the rest); the transaction counts the whole box. Returns when
        it lands."""
        cfg, env = self.cfg, self.env
        now = env.now
        c_key = self.mem.key_block(("C", tile[2], tile[0], tile[1], cta.rank), cfg.epi_subtiles) + s
        land = self.mem.load(now, c_key, self._subtile_in_bounds(cta, tile, s, cfg.bits_c))
        bar = cta.epi_load.full[state.index]
        call_at(env, land - now, bar.complete_tx, cfg.epi_c_subtile_bytes)
        role.span("epi_load", now, land, tile=tile, k_block=s, stage=state.index)
        return land

    def issue_store(self, cta: Cta, tile, s: int, role: Role) -> float:
        """A TMA store of one D subtile; returns when it has finished reading SMEM. TMA clips the
        store at the tensor's bounds: only the subtile's bytes inside M x N are read and written
        (the SM90 model's rule, ``Sm90GemmTmaWarpSpecialized.issue_store``)."""
        cfg, now = self.cfg, self.env.now
        nbytes = self._subtile_in_bounds(cta, tile, s, cfg.bits_d)
        # The store engine has read the subtile from SMEM once its bytes have streamed out at the SM's
        # TMA rate (no DRAM latency: that is the cold *load* figure, not a store's).
        smem_read = now + nbytes / self.timing.store_read_bytes_per_clk
        done = self.mem.store(now, nbytes) if nbytes else smem_read
        # The grid is complete only when its last global write has landed.
        if done > self.stats.end_cycle:
            self.stats.end_cycle = done
        role.span("tma_store", now, done, tile=tile, k_block=s)
        return smem_read

    def _subtile_in_bounds(self, cta: Cta, tile, s: int, bits: int) -> int:
        """Bytes of epilogue subtile ``s`` of this CTA's part of MMA tile ``tile`` inside M x N
        (subtiles run M-fastest within N; a CTA of a 2-SM pair holds rows ``half`` of the tile)."""
        cfg = self.cfg
        em, en = cfg.epi_tile
        epi_n, epi_m = divmod(s, -(-cfg.cta_tile_m // em))
        row0 = (tile[0] * cfg.atom_thr_m + cta.cx % cfg.atom_thr_m) * cfg.cta_tile_m + epi_m * em
        col0 = tile[1] * cfg.cta_tile_n + epi_n * en
        rows = min(em, max(0, cfg.m - row0))
        cols = min(en, max(0, cfg.n - col0))
        return rows * cols * bits // 8

    # -- results --------------------------------------------------------------------------
    def all_barriers(self):
        for cl in self.clusters:
            for c in cl.ctas:
                yield from c.barriers()
        if self.fixup is not None:
            yield from self.fixup.barriers()

    def unfinished_roles(self) -> list[Role]:
        return [r for r in self.roles if not r.done]


def _owed_by(cfg) -> dict[str, tuple[str, str]]:
    """Who owes the arrivals of each pipeline's full and empty barriers (for deadlock reports)."""
    pair = "2-SM pair" if cfg.atom_thr_m == 2 else "CTA"
    c_part = " + EpilogueLoad x32 per CTA" if cfg.read_c else ""
    return {
        "mainloop": (f"MainloopLoad of the MMA-leader CTA (arrive_and_expect_tx) + TMA bytes from the "
                     f"{cfg.cluster_size}-CTA cluster's multicast",
                     "MMA commits (umma_arrive_multicast) of the MMA leaders in this CTA's cluster row and column"),
        "accumulator": (f"MMA commit of the {pair}'s leader", f"Epilogue x128 of each CTA of the {pair}"),
        "clc": ("Sched of CTA 0 (arrive_and_expect_tx) + 16 B try_cancel response",
                f"Sched x32 (CTA 0) + per CTA: MainloopLoad x32, MMA x32, Epilogue x128{c_part}"),
        "clc_throttle": ("MainloopLoad of CTA 0 (x32)", "Sched of CTA 0 (x32)"),
        "epi_load": ("EpilogueLoad (arrive_and_expect_tx) + TMA bytes", "Epilogue x128"),
    }


__all__ = ["Sm100GemmTmaWarpSpecialized", "Sm100Timing", "RunStats", "NUM_THREADS_PER_WARP"]
