"""SM90 TMA warp-specialized persistent GEMM (cooperative and ping-pong) as a SimPy model.

Read this beside CUTLASS's ``sm90_gemm_tma_warpspecialized_cooperative.hpp`` /
``sm90_gemm_tma_warpspecialized_pingpong.hpp`` (``operator()``), the collective
``sm90_mma_tma_gmma_ss_warpspecialized.hpp`` (``load``, ``mma``, ``mma_tail``) and, for the
epilogue, the hardware twin ``hw_kernels/sm90_gemm.py``: where the twin and CUTLASS differ, the
model follows the twin (see "Differences" below). Each role class is one branch of the kernel's
``warp_group_role`` / ``producer_warp_role`` chain, and each pipeline call is the kernel's call, in
the kernel's order.

Roles (one SimPy process per role per CTA; 384 threads = 3 warpgroups, one CTA per SM):

* ``MainloopLoad`` (producer warpgroup, warp 0): TMA loads of A and B, one K-block per mainloop
  stage, multicast across the cluster (A along the cluster row, B along the column).
* ``EpilogueLoad`` (producer warpgroup, warp 2; only when C is read): TMA loads of C subtiles,
  after the load-order barrier says the mainloop's first tile is issued.
* ``Consumer0``, ``Consumer1`` (math warpgroups, 128 threads each, one process each): wgmma from
  SMEM into register accumulators, then the epilogue of the same tile.
  cooperative: both work on every tile, Consumer0 on rows [0, tile_m/2), Consumer1 on the rest;
  both wait on the same full barrier, both release each stage, both run the epilogue (a named
  barrier per subtile), Consumer0's warp 0 issues the TMA stores.
  ping-pong: each owns whole tiles, alternately (Consumer1 starts at the CTA's second tile); the
  math-order barrier makes their mainloops mutually exclusive and orders their epilogues, so one
  runs its epilogue while the other runs its mainloop (Hopper's counterpart of Blackwell's
  accumulator stages).

Pipelines (producer -> consumer: what one stage carries):

* mainloop ``PipelineTmaAsync``: MainloopLoad (arrive.expect_tx, TMA bytes) -> consumers (one
  arrival per consumer warp, sent to every CTA whose multicast fed the stage): one K-block of A
  (tile_m x tile_k) and B (tile_n x tile_k);
* epi_load ``PipelineTransactionAsync`` (modelled as :class:`PipelineAsync` plus ``expect_tx`` on
  the full barrier): EpilogueLoad (32 arrivals + C bytes) -> the consumers of the tile: one C subtile;
* epilogue store (``PipelineTmaStore``, bulk async groups, no mbarrier): the store thread -> the TMA
  unit: one D subtile, at most ``store_stages - 1`` in flight;
* math_order ``OrderedSequenceBarrier<2, 2>`` (ping-pong only): Consumer0 <-> Consumer1;
* load_order ``OrderedSequenceBarrier<1, 2>``: MainloopLoad -> EpilogueLoad;
* epilogue.barrier (named barrier, the consumer threads of one tile): once per epilogue subtile.

Steady state per role:

* MainloopLoad: ``for tile: for k: mainloop.producer_acquire -> TMA A, TMA B (-> full[s]); [load_order
  .arrive after the first tile]; next tile = linear + grid``; then ``producer_tail``.
* EpilogueLoad: ``load_order.wait; for tile: for subtile: epi_load.producer_acquire -> TMA C ->
  expect_tx -> producer_commit``; then ``producer_tail``.
* Consumer (collective ``mma``, K_PIPE_MMAS = 1): ``[math_order.wait]; consumer_wait(0) -> wgmma(0)
  -> commit; for k >= 1: consumer_wait(k) -> wgmma(k) -> commit -> wait_group(1) ->
  consumer_release(k-1); [math_order.arrive]; mma_tail: wait_group(0) -> consumer_release(last);
  [math_order.wait]; epilogue: for subtile: [epi_load.consumer_wait -> C to registers ->
  consumer_release] -> convert -> stmatrix to SMEM -> (store thread) wait_group.read(store_stages-2)
  -> named barrier -> (store thread) TMA store; [ping-pong: store_tail, math_order.arrive];
  next tile = linear + grid (cooperative) or + 2 x grid (ping-pong)``.

Timing. Time is in SM cycles; every number below is an H200 microbenchmark (the constants name
their keys). The tensor core of an SM is shared by both consumer warpgroups (``Cta.tc_free``, as the
SM100 model's): a warpgroup's K-block batch is ``(rows/64) x (tile_k/k)`` ``wgmma m64nNk``
instructions of ``2*64*N*k / mma_flops_per_clk_per_sm`` cycles each (SS wgmma issues at the math
rate at every N), completing the measured latency for its N (:data:`WGMMA_SS_LATENCY`) after its last
instruction starts. Batches queue first come, first served: on hardware the two cooperative
warpgroups' wgmma interleave instruction by instruction, so there both finish a K-block together,
while here Consumer0's batch finishes half a K-block earlier (same SM throughput, same stage release
time, since a stage is free only when both have released it; Consumer0 then waits that half K-block
at the first epilogue barrier).

TMA loads go through the shared :class:`MemorySystem` (L2 hit/miss by slice, L2 and HBM bandwidth,
a hit on a slice still being filled waits for the fill, a miss lands :data:`TMA_MISS_EXTRA` later)
and through the SM's TMA unit (``Cta.tma_free``: ``tma_load_bytes_per_clk_per_sm`` for every byte it
delivers, once per multicast destination, then :data:`TMA_LOAD_FIXED`). Rows of a box past M or N
are zero-filled: no memory traffic, but they land like the others and their zeros hold the L2 ->
SM path longer than read bytes, once per multicast destination (``tma_zero_fill_l2_cost``,
measured); the zeros of a box partly in bounds land on the SM's TMA unit at a per-SM rate that falls
with the number of CTAs zero-filling at once (:data:`ZERO_FILL_BOX_CYCLES`, measured by SM count). Rows whose
pitch is not a multiple of 128 B cost the L2 :data:`L2_MISALIGNED_COST` times as long per byte, and the TMA
unit that issues them :data:`TMA_MISALIGNED_COST` - 1 times as long again per in-bounds byte it issues (the
straddled lines are its requests; a multicast slice's bytes land on the other SMs at the aligned rate:
measured, h100_microbench_v3h ``...p8208.grid2``). The epilogue
per subtile is the twin's measured sequence (:data:`EPILOGUE_PHASES_1SM`): convert + stmatrix +
fence per warpgroup, the store thread's bulk wait, the named barrier, the TMA store issue (blocking
the store thread); a TMA store reads SMEM through the SM's store engine (``Cta.store_free``,
:data:`TMA_STORE_RATE` + :data:`TMA_STORE_FIXED`), held to the HBM channel, and is written
:data:`TMA_STORE_WRITE_AFTER_READ` later. The grid is the twin's (``min(work, max active clusters)``
over the H200's measured placement domains); ``launcher="cutlass"`` models CUTLASS C++'s host
heuristic, whose extra clusters start as resident ones exit. Not modelled: the kernel prologue
(barrier init, cluster sync, descriptor prefetch: in the measured launch overhead), wgmma and TMA
issue overhead of the producer.

Trace spans (the kinds and wait names of ``validation/hw_trace.py``, so simulated and measured
runs compare directly): ``tma_load`` issue -> bytes landed; ``mma`` (Consumer0/1) one warpgroup's
K-block batch, issue -> completion; ``wait`` on ``mainloop.full``/``mainloop.empty``/``epi_load.*``/
``load_order``/``math_order`` (mbarriers), ``mma.wait_group`` (the consumer idles on wgmma
completion: tensor-core time, not a protocol stall), ``epilogue.barrier`` (named barrier),
``epilogue.store_buffer`` (bulk wait_group.read, and ping-pong's per-tile store_tail),
``epilogue.store_drain`` (final wait_group 0); ``epilogue`` one subtile, start -> TMA store issued;
``tma_store`` issue -> written; ``acc_handoff`` accumulator complete (after mma_tail); ``tile``.

Differences from CUTLASS C++ (the model follows the hardware twin):

* mainloop empty arrival counts use the CuTe-DSL convention (one arrival per consumer warp per
  destination CTA, :func:`simulator.protocol.arrivals.sm90_arrival_counts` default); C++ arrives once per
  warpgroup per destination (all 128 threads for a 1-CTA cluster). Timing is the same.
* epilogue: one named barrier per subtile with the store thread's ``wait_group.read(store_stages-2)``
  before it (the twin); C++ syncs twice per subtile and waits ``StagesD-1`` before writing SMEM.
* with C and D of the same type, C++ reuses C's SMEM for D and releases a C stage only after the
  store that reads it; the model releases it after C is read into registers (no such twin yet).
* the scheduler is CUTLASS's (:class:`simulator.kernels.scheduler.TileRaster`, raster + swizzle), which the
  twin follows too (``hw_kernels/schedule.py``; ``wsim validate`` checks the measured tile order).
* a warpgroup's wgmma issue stalls until the tensor core takes its batch (busy time, not a wait):
  the measured traces show the consumers issuing, not parked in ``wgmma.wait_group``.
* at exit the store thread waits until its stores are *written* (the twin's ``wait_group 0``), so a
  memory-bound run's makespan includes the last write.

Every constant comes from :class:`simulator.machine.arch.ArchSpec` or is a module-level :class:`Constant`
below, and is listed by :meth:`Sm90Timing.constants_used` / ``timing.notes``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import simpy

from simulator.kernels import race_hooks, stream_k
from simulator.kernels.common import Cluster, RoleBase, RunStats
from simulator.kernels.fixup import ATOMIC_L2_COST, FIXUP_NAMED_BARRIER, Fixup, RateCurve, WorkspaceRates
from simulator.kernels.scheduler import (
    StreamKTileScheduler,
    TileRaster,
    WorkTileInfo,
    cta_tile_coord,
    mma_tile_in_problem,
    sm90_cluster_capacity,
    sm90_static_grid,
)
from simulator.kernels.tma_alignment import L2_MISALIGNED_COST, TMA_MISALIGNED_COST, RowPitchCost
from simulator.machine.constants import Constant
from simulator.machine.curve import interp
from simulator.machine.memory import MemorySystem
from simulator.protocol.arrivals import (
    NUM_THREADS_PER_WARP,
    NUM_THREADS_PER_WARPGROUP,
    Sm90KernelFacts,
    sm90_arrival_counts,
    sm90_barrier_counts,
    sm90_fixup_counts,
)
from simulator.protocol.deadlock import barrier_stage
from simulator.protocol.knobs import ProtocolKnobs
from simulator.protocol.mbarrier import MBarrier, NamedBarrier, call_at
from simulator.protocol.pipeline import (
    OrderedSequenceBarrier,
    PipelineAsync,
    PipelineParams,
    PipelineState,
    PipelineTmaAsync,
    make_producer_start_state,
)
from simulator.protocol.races import RaceDetector

#: The pipelines of this kernel that protocol knobs may change (arrival counts, start phase, releases).
SM90_PIPELINES = ("mainloop", "epi_load")

#: wgmma.mma_async: M is 64 rows per warpgroup instruction; K is 32 bytes of A/B per row
#: (k16 for 16-bit, k32 for 8-bit, k8 for tf32) -- PTX ISA, "Asynchronous Warpgroup Level Matrix Shape".
WGMMA_M = 64
WGMMA_K_BYTES = 32
#: CUTLASS sm90 collective mma: ``K_PIPE_MMAS = 1`` wgmma batch kept in flight (warpgroup_wait<1>).
K_PIPE_MMAS = 1
#: cutlass::OrderedSequenceBarrier<StagesPerMathWarpGroup=2, NumMmaWarpGroups=2> (ping-pong kernel).
MATH_ORDER_DEPTH = 2
NUM_MMA_WARPGROUPS = 2

_MB2 = "validation/results/h200_microbench_v2.json"
_MB2E = "validation/results/h200_microbench_v2_epilogue_sync.json"


def _c(name: str, value: float, unit: str, source: str, kind: str = "measured-here") -> Constant:
    return Constant(name, value, unit, source, kind)


#: wgmma SS latency (fence + one wgmma + commit + wait_group 0, one warpgroup) per N, f16 = bf16:
#: ``wgmma.ss.f16.n{N}.latency_cycles``. The issue interval is the math rate at every N
#: (``...issue_interval_cycles`` 33.0/65.1/97.0/128.9, two warpgroups 32.1/64.1/96.1/128.1 per SM:
#: N/2 cycles at 4096 FLOP/clk), so the SMEM-operand bound never binds (unlike SM100 at N=64); the
#: latency beyond the interval grows with N (63/63/66/84), so it is a table, not one constant.
WGMMA_SS_LATENCY = (
    (64, _c("wgmma_ss_latency_n64_cycles", 95.8, "cycles", f"{_MB2} wgmma.ss.f16.n64.latency_cycles")),
    (128, _c("wgmma_ss_latency_n128_cycles", 127.8, "cycles", f"{_MB2} wgmma.ss.f16.n128.latency_cycles")),
    (192, _c("wgmma_ss_latency_n192_cycles", 162.8, "cycles", f"{_MB2} wgmma.ss.f16.n192.latency_cycles")),
    (256, _c("wgmma_ss_latency_n256_cycles", 213.0, "cycles", f"{_MB2} wgmma.ss.f16.n256.latency_cycles")),
)
#: TMA loads. A load of ``b`` bytes that hits L2, alone on one SM, completes ``443.5 + b/110.4``
#: cycles after issue (``tma_load.l2.fixed_cycles_1sm``, ``tma_load.l2.bytes_per_clk_1sm``); one SM
#: streams at most ``arch.tma_load_bytes_per_clk_per_sm`` (106.3 B/clk). Modelled as the SM's TMA unit
#: (a channel at that rate, per CTA) followed by this fixed latency.
TMA_LOAD_FIXED = _c("tma_load_fixed_cycles", 443.5, "cycles",
                    f"{_MB2} tma_load.l2.fixed_cycles_1sm: intercept of TMA load latency against bytes, 1 SM, L2 hit")
#: A TMA load that misses L2 lands later than the model's ``hbm_latency + tma_issue_overhead`` (699.6 +
#: 178): a cold 1 KiB load from HBM on one SM takes 1092.5 cycles, so a miss adds the difference.
TMA_MISS_EXTRA = _c("tma_miss_extra_cycles", round(1092.5 - 699.6 - 178.0, 1), "cycles",
                    f"derived: {_MB2} tma_load.latency.hbm.p8192.1KiB.1sm (1092.5) - load_latency.hbm.f1024MiB.1sm "
                    "(699.6) - tma_issue_overhead_cycles (178)")
#: TMA stores. A store of ``b`` bytes has read its SMEM ``150.5 + b/31.75`` cycles after issue on one
#: SM (the line through ``tma_store.e{16,32,64}.read_cycles_1sm`` = 279.5/408.5/666.5 for 4/8/16
#: KiB) and is written (``wait_group 0``) 6 cycles after that (``write_cycles_1sm``). Modelled as the
#: SM's store engine (a channel at 31.75 B/clk per CTA) plus the fixed part; all SMs together are
#: held to the HBM channel (132 SMs: e64 1008 cycles, HBM-bound).
TMA_STORE_FIXED = _c("tma_store_fixed_cycles", 150.5, "cycles",
                     f"derived: intercept of {_MB2E} tma_store.e16/e32/e64.read_cycles_1sm against bytes")
TMA_STORE_RATE = _c("tma_store_bytes_per_clk", 31.75, "B/clk/SM",
                    f"derived: 1 / slope of {_MB2E} tma_store.e16/e32/e64.read_cycles_1sm against bytes")
TMA_STORE_WRITE_AFTER_READ = _c("tma_store_write_after_read_cycles", 6.0, "cycles",
                                f"{_MB2E} tma_store.e32.write_cycles_1sm - read_cycles_1sm (414.5 - 408.5)")

#: Zero fill against the SMs filling at once: a stream of 128-row x 128 B boxes of a 32-row tensor (96
#: rows zero-filled, 6 boxes in flight, L2-resident), every CTA on the same box, costs each SM this many
#: cycles per box with ``n`` SMs filling: the mean of two H100 runs of v3e
#: ``tma_oob_scaling.h32.box128.lockstep.{n}sm.cycles_per_box`` (they differ by up to 10%, at 132 SMs);
#: the 1-SM and 132-SM ends equal the H200's (v3 ``tma_oob.h32.box128.1sm`` 158, v3b
#: ``tma_oob_shared.h*.lockstep`` 701-744). In-bounds boxes stay at the TMA rate up to 96 SMs (157-159).
_MB3E = ("validation/results/h100_microbench_v3e.json and h100_microbench_v3e_run2.json (python -m "
         "validation.microbench.run --suite v3e, 2026-12-06, two runs)")
ZERO_FILL_BOX_CYCLES = tuple(
    (n, _c(f"zero_fill_box_cycles_{n}sm", round((v1 + v2) / 2, 1), "cycles",
           f"{_MB3E} tma_oob_scaling.h32.box128.lockstep.{n}sm.cycles_per_box (H100): mean of {v1} and {v2}"))
    for n, v1, v2 in ((1, 157.1, 157.4), (8, 157.7, 157.6), (16, 242.4, 230.6), (32, 347.8, 330.6),
                      (64, 510.5, 530.7), (96, 705.2, 738.1), (132, 733.3, 659.8)))
ZERO_FILL_BOX_ROWS, ZERO_FILL_BOX_IN_BOUNDS, ZERO_FILL_ROW_BYTES = 128, 32, 128


def zero_fill_rates(tma_rate: float) -> tuple[float, ...]:
    """Per SM, the bytes/clk its TMA unit zero-fills with ``n`` SMs filling at once, ``n`` = 0 ... 132
    (index ``n``; 0 as 1): the measured box time less its in-bounds rows at ``tma_rate``, over its zero
    rows; linear in ``n`` between the measured counts, flat past the ends."""
    pts = [(n, c.value) for n, c in ZERO_FILL_BOX_CYCLES]
    zero = (ZERO_FILL_BOX_ROWS - ZERO_FILL_BOX_IN_BOUNDS) * ZERO_FILL_ROW_BYTES
    read = ZERO_FILL_BOX_IN_BOUNDS * ZERO_FILL_ROW_BYTES / tma_rate
    return tuple(zero / max(interp(pts, max(n, 1)) - read, 1e-9) for n in range(pts[-1][0] + 1))


#: The twin's stream-K / split-K fixup moves its partials with plain one-word-per-thread ld/st.global
#: (hw_kernels/sm90_gemm.py: store, read-add-write for a middle split, read for the final one), far
#: below the vectorised all-SM L2 read rate the shared default assumes, and slower still while the other
#: SMs load their mainloop operands (the L2 serves both). Per op, two points of the twin's own C_FIXUP
#: records on the H200, every record of the traced split launches pooled: the records with fewer than 8
#: other SMs in a mainloop (quiet) and with at least 100 (busy), their median loaders and median per-SM rate
#: (validation/results/fixup_contention.json "curves", written by ``python -m validation.fixup_contention``
#: from the raw dumps of ``python -m validation.fixup_traces``). Traced on stream-K campaign shapes after
#: their errors were seen: development constants.
_FX = ("validation/results/fixup_contention.json curves['NVIDIA H200'] (python -m validation.fixup_contention; "
       "twin C_FIXUP traces of 2026-12-02, stream-K campaign shapes, chosen after their errors were seen)")


def _ws_curve(op: str, quiet: tuple[float, float, int], busy: tuple[float, float, int]) -> RateCurve:
    """``op``'s rate curve from its quiet and busy points, each (loaders, rate, records)."""
    return RateCurve(tuple(
        (round(lo), _c(f"sm90_workspace_{op}_bytes_per_clk_per_sm_loaders{round(lo)}", rate, "B/clk/SM",
                       f"{_FX} fixup_{op} {what}: median of {n} records (their median loaders {lo:g})"))
        for what, (lo, rate, n) in (("quiet", quiet), ("busy", busy))))


SM90_WORKSPACE_STORE = _ws_curve("store", (0.0, 26.7, 36), (130.9, 17.4, 1248))
SM90_WORKSPACE_LOAD = _ws_curve("load", (0.0, 63.3, 168), (128.0, 18.9, 746))
SM90_WORKSPACE_REDUCE = _ws_curve("reduce", (0.0, 46.8, 207), (128.6, 21.9, 6039))

#: A nondeterministic middle split's atomic adds (red.global.add.f32) are not traced on the H200. The H100
#: microbenchmark (v3i: 8 SMs, the twin's one-word accesses, n other SMs streaming unpaced TMA loads from L2)
#: times them against stores of the same slices: as fast alone (30.5 against 29.1 B/clk/SM) and slower under
#: load (9.7 against 12.8 with 124 SMs loading). The H200 curve is the store curve at each end times that
#: ratio (H100 ratio on H200 points: not measured on an H200). Added after the nondeterministic campaign's
#: split-K error was seen to grow with the splits (its rows are development rows for it): ``chosen``.
RED_STORE_RATIO_QUIET = (30.5, 29.1)     # h100_microbench_v3i fixup_l2.{red,store}.ws8.load0.pace0.n64.l2
RED_STORE_RATIO_BUSY = (9.7, 12.8)       # ... .ws8.load124.pace0.n64.l2 (in the traces' units: fixup_contention.md)
_V3I = ("validation/results/h100_microbench_v3i.json (python -m validation.microbench.run --suite v3i, H100) in "
        "the traces' units (validation/results/fixup_contention.md, 'The same accesses isolated')")


def _red_point(store: tuple[int, Constant], ratio: tuple[float, float], what: str) -> tuple[int, Constant]:
    lo, c = store
    red, st = ratio
    return lo, _c(f"sm90_workspace_red_bytes_per_clk_per_sm_loaders{lo}", round(c.value * red / st, 1), "B/clk/SM",
                  f"derived: {c.name} ({c.value:g}) x the H100's red / store rate {what} ({red:g} / {st:g}, {_V3I}); "
                  "H100 ratio on H200 points, added after the nondeterministic split-K rows' errors were seen",
                  "chosen")


SM90_WORKSPACE_RED = RateCurve((_red_point(SM90_WORKSPACE_STORE.points[0], RED_STORE_RATIO_QUIET, "with no SM loading"),
                                _red_point(SM90_WORKSPACE_STORE.points[1], RED_STORE_RATIO_BUSY, "with 124 SMs loading")))
SM90_WORKSPACE_RATES = WorkspaceRates(SM90_WORKSPACE_STORE, SM90_WORKSPACE_LOAD, reduce=SM90_WORKSPACE_REDUCE,
                                      red=SM90_WORKSPACE_RED)

#: The twin's epilogue per 128 x EN fp16 subtile, measured on one SM (``epilogue.{coop,pp}.e{EN}.*_1sm``
#: in h200_microbench_v2_epilogue_sync.json): the store thread's clock between steps -- convert +
#: stmatrix into the store buffer, fence.proxy.async, the bulk wait_group.read instruction, the
#: named barrier, the TMA store issue (it blocks the issuing thread) -- and the uninstrumented
#: steady-state time per subtile. Raw values: schedule -> EN -> (stmatrix, fence, wait_read, barrier,
#: store_issue, subtile).
EPILOGUE_PHASES_1SM = {
    "cooperative": {16: (21.8, 31.1, 44.3, 53.4, 80.6, 200.2), 32: (57.3, 32.5, 44.2, 54.1, 93.0, 276.7),
                    64: (131.8, 46.3, 50.4, 55.3, 106.6, 521.5)},
    "pingpong": {16: (31.2, 18.4, 44.1, 51.2, 66.9, 211.9), 32: (65.3, 41.2, 43.8, 51.5, 66.8, 296.9),
                 64: (140.6, 36.8, 64.7, 52.0, 66.0, 531.2)},
}
EPILOGUE_SUBTILE_ROWS = 128     # the measured subtiles are 128 x EN (the twin's epilogue tile)
EPILOGUE_MEASURED_BITS = 16     # ... of fp16


def _epilogue_phases(schedule: str, subtile_bytes: float) -> tuple[float, float, float, float]:
    """(convert + stmatrix + fence, bulk-wait instruction, named barrier, store issue) in cycles for a
    subtile of ``subtile_bytes`` bytes of D: the measured phases, scaled so that their sum (with the
    store engine's time, where that is longer) is the measured uninstrumented subtile time (the clock
    reads of the phase measurement cost a few cycles each), interpolated linearly in bytes between
    the measured 4/8/16 KiB subtiles (and extrapolated beyond them)."""
    table = EPILOGUE_PHASES_1SM[schedule]
    pts = []
    for en in sorted(table):
        stm, fence, wait, bar, issue, total = table[en]
        nbytes = EPILOGUE_SUBTILE_ROWS * en * EPILOGUE_MEASURED_BITS // 8
        store_engine = nbytes / TMA_STORE_RATE.value
        phase_sum = stm + fence + wait + bar + issue
        scale = total / phase_sum if phase_sum >= store_engine else 1.0
        pts.append((nbytes, ((stm + fence) * scale, wait * scale, bar * scale, issue * scale)))
    lo, hi = (pts[0], pts[1]) if subtile_bytes <= pts[1][0] else (pts[-2], pts[-1])
    for a, b in zip(pts, pts[1:], strict=False):
        if a[0] <= subtile_bytes <= b[0]:
            lo, hi = a, b
    w = (subtile_bytes - lo[0]) / (hi[0] - lo[0])
    return tuple(max(0.0, x + w * (y - x)) for x, y in zip(lo[1], hi[1], strict=True))


def _wgmma_latency(n: int, scale: float) -> float:
    """wgmma SS latency at N (linear between the measured N, clamped outside), times ``scale``."""
    return interp([(nn, c.value) for nn, c in WGMMA_SS_LATENCY], n) * scale


MODULE_CONSTANTS: tuple[Constant, ...] = tuple(c for _, c in WGMMA_SS_LATENCY) + tuple(
    c for _, c in ZERO_FILL_BOX_CYCLES) + (
    TMA_LOAD_FIXED, TMA_MISS_EXTRA, TMA_MISALIGNED_COST, L2_MISALIGNED_COST, TMA_STORE_FIXED, TMA_STORE_RATE,
    TMA_STORE_WRITE_AFTER_READ)


@dataclass(frozen=True)
class Sm90Timing:
    """Per-operation costs in cycles, derived from the arch constants and the config."""

    wgmma_instr_cycles: float      # one wgmma m64nNk instruction on the SM's tensor core
    wgmma_per_kblock: int          # instructions one consumer warpgroup issues per K-block
    kblock_wg_cycles: float        # tensor-core time of one warpgroup's K-block batch
    wgmma_drain_cycles: float      # completion latency beyond the last instruction's issue interval
    epi_alu_cycles: float          # per subtile and warpgroup: convert + stmatrix + fence (+ C read)
    epi_wait_cycles: float         # the store thread's bulk wait_group.read instruction
    epi_barrier_cycles: float      # the named barrier of the tile's consumer threads
    epi_store_issue_cycles: float  # issuing the TMA store blocks the store thread this long
    tma_rate: float                # B/clk one SM's TMA unit streams (aligned or not; 0: no limit)
    l2_cost: float                 # L2 -> SM occupancy per byte (1: rows aligned to 128 B)
    wake_latency: float
    remote_latency: float
    notes: tuple[str, ...]

    @classmethod
    def derive(cls, cfg, arch) -> Sm90Timing:
        ab_bytes = max(1, cfg.bits_ab // 8)
        instr_k = WGMMA_K_BYTES // ab_bytes
        n = cfg.cta_tile_n
        rate = arch.mma_flops_per_clk_per_sm.value * (arch.mma_fp8_factor.value if ab_bytes == 1 else 1.0)
        smem_bw = arch.smem_read_bytes_per_clk.value
        # wgmma SS issues at the math rate at every N (measured); the operand reads never bind.
        instr = 2.0 * WGMMA_M * n * instr_k / rate
        coop = cfg.schedule == "cooperative"
        rows = cfg.tile_m // cfg.num_consumer_warpgroups if coop else cfg.tile_m
        per_kblock = max(1, rows // WGMMA_M) * max(1, cfg.cta_tile_k // instr_k)
        # Latency per N, scaled by the arch's (N=128) value so that an override still acts.
        lat = _wgmma_latency(n, arch.mma_latency_cycles.value / WGMMA_SS_LATENCY[1][1].value)
        drain = max(0.0, lat - instr)
        em, en = cfg.epi_tile
        d_bytes = em * en * cfg.bits_d / 8
        alu, wait, bar, issue = _epilogue_phases(cfg.schedule, d_bytes)
        elems = em * en // (cfg.num_consumer_warpgroups if coop else 1)
        c_read = elems * (cfg.bits_c / 8) / smem_bw if cfg.read_c else 0.0
        rows_cost = RowPitchCost.of(cfg.k, cfg.bits_ab)
        tma_rate = arch.tma_load_bytes_per_clk_per_sm.value / rows_cost.tma_cost
        l2_cost = rows_cost.l2_cost
        notes = (
            f"wgmma m64n{n}k{instr_k}: {instr:.1f} cycles/instr (math rate), latency {lat:.1f}, {per_kblock} per "
            f"warpgroup per K-block ({cfg.schedule}: {rows} rows per warpgroup)",
            f"epilogue subtile {em}x{en}: convert+stmatrix+fence {alu:.1f}" + (f" + C read {c_read:.1f}" if c_read
                                                                             else "")
            + f", bulk wait {wait:.1f}, named barrier {bar:.1f}, TMA store issue {issue:.1f} cycles "
            f"(measured on one SM, {_MB2E} epilogue.{'coop' if coop else 'pp'}.e*.*_1sm)",
            rows_cost.note() + ("" if rows_cost.aligned else
                                f": the TMA factor on the bytes a CTA issues ({tma_rate:g} B/clk/SM), its "
                                f"multicast peers' slices landing at the aligned "
                                f"{arch.tma_load_bytes_per_clk_per_sm.value:g} B/clk/SM"),
        ) + tuple(f"{c.name} = {c.value:g} {c.unit} ({c.kind}: {c.source})" for c in MODULE_CONSTANTS)
        return cls(
            wgmma_instr_cycles=instr,
            wgmma_per_kblock=per_kblock,
            kblock_wg_cycles=per_kblock * instr,
            wgmma_drain_cycles=drain,
            epi_alu_cycles=alu + c_read,
            epi_wait_cycles=wait,
            epi_barrier_cycles=bar,
            epi_store_issue_cycles=issue,
            tma_rate=tma_rate,
            l2_cost=l2_cost,
            wake_latency=arch.mbarrier_arrive_latency_cycles.value,
            remote_latency=arch.remote_arrive_latency_cycles.value,
            notes=notes,
        )

    @staticmethod
    def constants_used() -> tuple[str, ...]:
        return ("sm_count", "clock_ghz", "mma_flops_per_clk_per_sm", "mma_fp8_factor", "mma_latency_cycles",
                "smem_read_bytes_per_clk", "hbm_bytes_per_s", "hbm_latency_cycles", "l2_bytes", "l2_bytes_per_s",
                "l2_latency_cycles", "tma_issue_overhead_cycles", "mbarrier_arrive_latency_cycles",
                "remote_arrive_latency_cycles", "launch_overhead_ns", "tma_load_bytes_per_clk_per_sm",
                "gpc_count", "tma_zero_fill_l2_cost") + tuple(c.name for c in MODULE_CONSTANTS)


class MathWarpGroupOrderBarrier:
    """``cutlass::OrderedSequenceBarrier<SequenceDepth, SequenceLength>`` (ping-pong: <2, 2>).

    ``Depth x Length`` mbarriers of ``group_size`` arrivals. Group ``g`` keeps its own stage
    (a ``PipelineState<Depth>`` starting at index 0, phase 1 for group 0 so that its first wait
    passes, phase 0 for the others); ``wait`` waits on barrier ``[stage.index][g]``, ``arrive``
    arrives on ``[stage.index][(g + 1) % Length]`` and advances the stage. With Depth 2 the
    ping-pong kernel's two waits per tile (before the mainloop, before the epilogue) use
    barrier rows 0 and 1: mainloops alternate, and so do epilogues.
    """

    def __init__(self, env: simpy.Environment, name: str, cta: int, *, depth: int, length: int,
                 group_size: int, wake_latency: float = 0.0):
        self.depth = depth
        self.length = length
        owed = " / ".join(f"Consumer{(g + length - 1) % length} (x{group_size}) for Consumer{g}" for g in range(length))
        self.barriers = [MBarrier(env, f"CTA{cta}/{name}[{i}]", group_size, owed_by=owed, wake_latency=wake_latency)
                         for i in range(depth * length)]

    def start_state(self, group_id: int) -> PipelineState:
        return PipelineState(self.depth, 0, 1 if group_id == 0 else 0, 0)

    def wait(self, stage: PipelineState, group_id: int, who: str) -> simpy.Event | None:
        return self.barriers[stage.index * self.length + group_id].wait(stage.phase, who)

    def arrive(self, stage: PipelineState, group_id: int, who: str, count: int) -> None:
        signalling = (group_id + 1) % self.length
        # The n-th arrival of group g on this barrier completes its phase n: round = count // depth.
        self.barriers[stage.index * self.length + signalling].arrive(count, who=who, round=stage.round)
        stage.advance()


class Cta:
    """One CTA's barrier storage, pipelines and per-SM resources."""

    def __init__(self, kernel: Sm90GemmTmaWarpSpecialized, cluster: Cluster, rank: int):
        k = self.kernel = kernel
        cfg, env, knobs, t = k.cfg, k.env, k.knobs, k.timing
        self.env = env
        self.cluster = cluster
        self.rank = rank
        self.cx = rank % cfg.cluster_m          # block_id_in_cluster.x (M)
        self.cy = rank // cfg.cluster_m         # block_id_in_cluster.y (N)
        self.sm = cluster.first_sm + rank
        wl, rl = t.wake_latency, t.remote_latency

        def pp(name: str, stages: int, tx: int = 0) -> PipelineParams:
            c = k.counts[name]
            return PipelineParams(name, stages, knobs.count(name, "full", c.producer),
                                  knobs.count(name, "empty", c.consumer), tx, k.owed[name][0], k.owed[name][1])

        self.mainloop = PipelineTmaAsync(env, pp("mainloop", cfg.mainloop_stages, cfg.tma_transaction_bytes), rank,
                                         wake_latency=wl, remote_latency=rl)
        # PipelineTransactionAsync: plain arrivals both ways, the producer also posts C's bytes.
        self.epi_load = PipelineAsync(env, pp("epi_load", cfg.epilogue_load_stages, cfg.epi_c_subtile_bytes), rank,
                                      wake_latency=wl)
        self.mainloop.rank = self.epi_load.rank = rank
        bc = k.barrier_counts
        self.load_order = OrderedSequenceBarrier(env, "load_order", bc["load_order"], rank)
        self.epilogue_barrier = NamedBarrier(env, f"CTA{rank}/epilogue.barrier", bc["epilogue_named"],
                                             owed_by="the consumer warpgroups of the tile (x128 each)")
        self.math_order = (MathWarpGroupOrderBarrier(env, "math_order", rank, depth=MATH_ORDER_DEPTH,
                                                     length=NUM_MMA_WARPGROUPS, group_size=bc["math_wg_order"],
                                                     wake_latency=wl)
                           if cfg.schedule == "pingpong" else None)
        # Per-SM resources: the tensor core (shared by the two consumer warpgroups), the TMA unit's
        # load requests and its store engine (each busy until then).
        self.tc_free = 0.0
        self.tma_free = 0.0
        self.store_free = 0.0
        self.roles: list[Role] = []
        # Set by the kernel once the cluster's CTAs exist: who receives this CTA's multicast loads.
        self.a_dst: list[Cta] = []
        self.b_dst: list[Cta] = []
        self.landed_bytes = 0

    def pipelines(self):
        return (self.mainloop, self.epi_load)

    def barriers(self) -> list:
        out: list = self.mainloop.barriers() + self.epi_load.barriers()
        out += [self.load_order.barrier, self.epilogue_barrier]
        if self.math_order is not None:
            out += self.math_order.barriers
        return out


class Role(RoleBase):
    """An SM90 role: waits with bookkeeping, and the static scheduler's tile coordinates."""

    def tile_of(self, work: WorkTileInfo) -> tuple[int, int, int]:
        return cta_tile_coord(work, self.cta.rank, self.k.cfg)

    def sleep_until(self, when: float, barrier: str, stage: int = -1, tile=None, k_block: int = -1):
        """Block until ``when`` on something that is not an mbarrier (wgmma.wait_group, bulk groups)."""
        now = self._time()
        if when > now:
            yield self._sleep(when - now)
            self._waited(barrier, stage, now, tile, k_block)


class MainloopLoad(Role):
    name = "MainloopLoad"
    threads = NUM_THREADS_PER_WARP

    def run(self):
        cta: Cta = self.cta
        k: Sm90GemmTmaWarpSpecialized = self.k
        cfg = k.cfg
        pipe: PipelineTmaAsync = cta.mainloop
        state: PipelineState = make_producer_start_state(cfg.mainloop_stages, phase=k.knobs.start_phase("mainloop"))
        tx = k.tx_bytes
        who = self.who
        stats: RunStats = self.stats
        do_load_order_arrive = True
        work = k.initial_work(cta.cluster)
        races = self.races
        while work.is_valid:
            tile = self.tile_of(work)
            t_tile = self._time()
            loads = k.tile_loads(cta, tile)
            zero_fill = loads[6] > 0
            if zero_fill:
                k._zf_active += 1
            k.mainloop_loading += 1
            kb0 = work.k_start
            kn = work.k_count if work.k_count else k.k_tiles
            for kb in range(kb0, kb0 + kn):
                ev = pipe.producer_acquire(state, who)
                if ev is not None:
                    t0 = self._time()
                    yield ev
                    self._waited("mainloop.empty", state.index, t0, tile, kb)
                # producer_acquire's second half: the leader thread's arrive.expect_tx on full[s].
                pipe.producer_acquire_expect(state, who, True)
                stats.tx_expected += tx
                land = k.issue_mainloop_tma(cta, tile, loads, kb, state.index, self)
                if races is not None:                  # race detectors (wsim check)
                    race_hooks.sm90_mainloop_write(k, cta, state, land, self)
                pipe.producer_commit(state, who)   # no-op: the TMA bytes complete the phase
                state.advance()
            self.span("tile", t_tile, self._time(), tile=tile)
            k.mainloop_loading -= 1
            if zero_fill:
                k._zf_active -= 1
            # Signal the epilogue load warp once the first tile's loads are issued.
            if do_load_order_arrive:
                cta.load_order.arrive(self.who, self.threads)
                do_load_order_arrive = False
            work = k.next_work(work, 1)
        # load_tail: every stage released once more, so no peer still arrives on our barriers.
        for bar, ev in pipe.producer_tail_waits(state, self.who):
            yield from self.block(ev, "mainloop.empty", barrier_stage(bar.name))


class EpilogueLoad(Role):
    name = "EpilogueLoad"
    threads = NUM_THREADS_PER_WARP

    def run(self):
        cta, k, env = self.cta, self.k, self.env
        cfg = k.cfg
        pipe = cta.epi_load
        state = make_producer_start_state(cfg.epilogue_load_stages, phase=k.knobs.start_phase("epi_load"))
        nbytes = cfg.epi_c_subtile_bytes
        do_load_order_wait = True
        work = k.initial_work(cta.cluster)
        while work.is_valid:
            tile = self.tile_of(work)
            if do_load_order_wait:
                yield from self.block(cta.load_order.wait(self.who), "load_order", -1, tile)
                do_load_order_wait = False
            if work.k_count and not k.fixup.is_final(work):
                # compute_epilogue is false for a non-final split: no C is loaded for it.
                work = k.next_work(work, 1)
                continue
            t_tile = env.now
            for s in range(cfg.epi_subtiles):
                ev = pipe.producer_acquire(state, self.who)
                if ev is not None:
                    t0 = env.now
                    yield ev
                    self._waited("epi_load.empty", state.index, t0, tile, s)
                land = k.issue_c_load(cta, tile, s, state.index, self)
                if self.races is not None:             # race detectors (wsim check)
                    race_hooks.sm90_stage_write(k, cta, "epi_load", state, land, nbytes, self)
                # producer_expect_transaction, then producer_commit: every lane of the warp arrives.
                pipe.full[state.index].expect_tx(nbytes)
                self.stats.tx_expected += nbytes
                pipe.producer_commit(state, self.who, self.threads)
                state.advance()
            self.span("tile", t_tile, env.now, tile=tile)
            work = k.next_work(work, 1)
        for bar, ev in pipe.producer_tail_waits(state, self.who):
            yield from self.block(ev, "epi_load.empty", barrier_stage(bar.name))


class Consumer(Role):
    """A math warpgroup (``Consumer0`` or ``Consumer1``): collective mma, mma_tail, epilogue."""

    threads = NUM_THREADS_PER_WARPGROUP

    def __init__(self, cta: Cta, wg: int):
        self.name = f"Consumer{wg}"
        self.wg = wg
        super().__init__(cta)
        k = self.k
        cfg = k.cfg
        self.pingpong = cfg.schedule == "pingpong"
        # Who issues TMA stores: warp 0 of the tile's consumer threads (cooperative: Consumer0's).
        self.issues_stores = self.pingpong or wg == 0
        # Records the tile as done: every consumer in ping-pong, Consumer0 in cooperative.
        self.records_tiles = self.pingpong or wg == 0
        self.release_targets = k.mainloop_release_targets(cta)
        # Mainloop empty arrivals per release per destination CTA: one per warp of this warpgroup
        # (the count arrivals.py derives for the whole stage, split over its consumers and peers).
        c = k.counts["mainloop"].consumer
        wgs = cfg.num_consumer_warpgroups if not self.pingpong else 1
        self.release_count = max(1, c // (len(self.release_targets) * wgs))
        self.releases_mainloop = k.knobs.releases("mainloop")
        # TMA store pipeline of the store thread (PipelineTmaStore: bulk groups, no mbarrier).
        self.stores: list[float] = []     # SMEM read-out times of stores possibly still reading
        self.last_write = 0.0             # when the latest-finishing store is written
        self.read_starts: list[float] = []   # race detectors: when each unreleased stage's first read began

    def run(self):
        cta, k = self.cta, self.k
        cfg = k.cfg
        ml_state = PipelineState(cfg.mainloop_stages)
        ld_state = PipelineState(cfg.epilogue_load_stages)
        work = k.initial_work(cta.cluster)
        step = 1
        tile_no = self.wg if self.pingpong else 0   # this CTA's tiles in order (the store buffers' ring)
        order = cta.math_order
        order_state = None
        if self.pingpong:
            step = NUM_MMA_WARPGROUPS
            order_state = order.start_state(self.wg)
            if self.wg == 1:
                # Consumer1 starts at the CTA's second tile, its pipeline states past Consumer0's.
                work = k.next_work(work, 1)
                ml_state.advance_by(k.k_tiles)
                ld_state.advance_by(cfg.epi_subtiles)
        while work.is_valid:
            tile = self.tile_of(work)
            t_tile = self._time()
            if order is not None:
                # Order the two math warpgroups' mainloops one after the other.
                yield from self.block(order.wait(order_state, self.wg, self.who), "math_order", order_state.index, tile)
            kb0 = work.k_start
            kn = work.k_count if work.k_count else k.k_tiles
            done_last, release = yield from self.mma(ml_state, tile, kb0, kn)
            if order is not None:
                # Cue the other warpgroup's mainloop: its wgmma issue may start behind our last batch.
                order.arrive(order_state, self.wg, self.who, self.threads)
            # mma_tail: wait_group(0), then release the last stage.
            yield from self.sleep_until(done_last, "mma.wait_group", release.index, tile, kb0 + kn - 1)
            self.consumer_release(release)
            self.span("acc_handoff", self._time(), self._time(), tile=tile, stage=release.index)
            ml_state.advance_by(kn * step)
            if work.k_count:
                # A split tile: TileScheduler::fixup on this warpgroup's rows; only the final split
                # computes the epilogue (compute_epilogue).
                final = yield from k.fixup.run(self, cta, work, tile, self.wg)
                if not final:
                    self.span("tile", t_tile, self._time(), tile=tile)
                    work = k.next_work(work, step)
                    continue
            if order is not None:
                # Order the epilogues: ours after the other warpgroup's previous one.
                yield from self.block(order.wait(order_state, self.wg, self.who), "math_order", order_state.index, tile)
            yield from self.epilogue(tile, ld_state, tile_no)
            if order is not None:
                # store_tail: the SMEM store buffers are shared, so drain ours before the other's epilogue.
                if self.stores:
                    yield from self.sleep_until(self.stores[-1], "epilogue.store_buffer", -1, tile)
                    self._retire_stores()
                order.arrive(order_state, self.wg, self.who, self.threads)
                ld_state.advance_by(cfg.epi_subtiles)
            if self.records_tiles and mma_tile_in_problem(tile[0], tile[1], cfg):
                self.stats.tiles_done.append((tile[0], tile[1], tile[2], 0))
            self.span("tile", t_tile, self._time(), tile=tile)
            work = k.next_work(work, step)
            tile_no += step
        if self.issues_stores:
            # The store thread's final wait_group 0: every store written.
            yield from self.sleep_until(self.last_write, "epilogue.store_drain")

    # -- collective mma ---------------------------------------------------------------------
    def mma(self, state: PipelineState, tile, kb0: int, kn: int):
        """``CollectiveMma::mma`` with K_PIPE_MMAS = 1 over K-blocks ``kb0 .. kb0 + kn - 1``: a generator
        returning (completion of the last batch, the release state of the last stage)."""
        cta: Cta = self.cta
        k: Sm90GemmTmaWarpSpecialized = self.k
        t = k.timing
        pipe: PipelineTmaAsync = cta.mainloop
        read: PipelineState = state.copy()
        release: PipelineState = state.copy()
        stats: RunStats = self.stats
        who = self.who
        count_kblocks = self.records_tiles
        prev_done = 0.0
        traced = self.tr is not None
        kblock_cycles, drain = t.kblock_wg_cycles, t.wgmma_drain_cycles
        races = self.races
        for kb in range(kb0, kb0 + kn):
            ev = pipe.consumer_wait(read, who)
            if ev is not None:
                t0 = self._time()
                yield ev
                self._waited("mainloop.full", read.index, t0, tile, kb)
            # warpgroup_arrive; wgmma x n; commit_group: the batch queues on the SM's tensor core.
            now = self._time()
            start = cta.tc_free if cta.tc_free > now else now
            end = start + kblock_cycles
            cta.tc_free = end
            done = end + drain
            stats.tc_busy_cycles += kblock_cycles
            if races is not None:                      # race detectors: this batch reads the stage from start
                self.read_starts.append(start)
            if count_kblocks:
                stats.mma_kblocks += 1
            if traced:
                self.span("mma", now, done, tile=tile, k_block=kb, stage=read.index)
            if kb - kb0 >= K_PIPE_MMAS:
                # The warpgroup cannot run ahead of the tensor core: issuing its wgmma batch stalls
                # until the tensor core takes it (``start``; busy, not a barrier wait). Then
                # warpgroup_wait<K_PIPE_MMAS> waits until the previous K-block's batch is complete ...
                target = prev_done if prev_done > start else start
                if target > self._time():
                    t0 = self._time()
                    yield self._sleep(target - t0)
                    if prev_done > start:
                        self._waited("mma.wait_group", release.index, start if start > t0 else t0, tile, kb - 1)
                # ... so its stage can go back to the producers (UNLOCK smem_pipe_release).
                self.consumer_release(release)
                release.advance()
            elif start > self._time():
                # First K-block: the issue stalls behind the other warpgroup's batch, if any.
                yield self._sleep(start - self._time())
            prev_done = done
            read.advance()
        return prev_done, release

    def consumer_release(self, state: PipelineState) -> None:
        """PipelineTmaAsync::consumer_release: an arrival on the empty barrier of every CTA whose
        multicast fed this stage (this CTA's cluster row and column)."""
        if self.races is not None:                     # race detectors: the stage was read until now
            race_hooks.sm90_stage_read(self.k, self.cta, "mainloop", state, self.read_starts.pop(0), self._time(), self)
        if self.releases_mainloop:
            cta: Cta = self.cta
            cta.mainloop.consumer_release_to(state, self.release_targets, self.who, self.release_count)

    # -- epilogue ---------------------------------------------------------------------------
    def epilogue(self, tile, ld_state: PipelineState, tile_no: int = 0):
        """``CollectiveEpilogue::store`` as the hardware twin orders it, one subtile at a time
        (``tile_no``: the CTA's tile count, which numbers the subtiles in the store-buffer ring)."""
        cta, k = self.cta, self.k
        cfg, t = k.cfg, k.timing
        races = self.races
        writers = 1 if self.pingpong else cfg.num_consumer_warpgroups   # consumer warpgroups that write a subtile
        t_w = 0.0
        release_ld = k.knobs.releases("epi_load")
        allowed = max(0, cfg.epilogue_store_stages - 2)
        for s in range(cfg.epi_subtiles):
            t0 = self._time()
            if cfg.read_c:
                ev = cta.epi_load.consumer_wait(ld_state, self.who)
                if ev is not None:
                    tw = self._time()
                    yield ev
                    self._waited("epi_load.full", ld_state.index, tw, tile, s)
                if self.races is not None:             # race detectors: C read into registers now
                    race_hooks.sm90_stage_read(k, cta, "epi_load", ld_state, self._time(), self._time(), self)
                if release_ld:
                    # C is in registers (its SMEM read is in epi_subtile_cycles): free the stage.
                    cta.epi_load.consumer_release(ld_state, self.who, self.threads)
                ld_state.advance()
            # visit + convert + stmatrix into the store buffer, fence.proxy.async (each warpgroup its
            # share, both at once in the cooperative kernel: the measured time has both running).
            if races is not None:
                t_w = self._time()
            yield self._sleep(t.epi_alu_cycles)
            if races is not None:                      # race detectors: this share of the store buffer
                race_hooks.sm90_store_buffer(k, cta, tile_no * cfg.epi_subtiles + s, t_w, self._time(), True,
                                             writers, self)
            if self.issues_stores:
                # cp.async.bulk.wait_group.read(store_stages - 2): the buffer the next subtile writes is
                # free. The instruction itself takes epi_wait_cycles; beyond that the thread waits for
                # the store's SMEM read.
                now = self._time()
                ready = now + t.epi_wait_cycles
                self._retire_stores()
                if len(self.stores) > allowed:
                    need = self.stores[len(self.stores) - allowed - 1]
                    if need > ready:
                        yield self._sleep(need - now)
                        self._waited("epilogue.store_buffer", s % cfg.epilogue_store_stages, now, tile, s)
                        ready = need
                if ready > self._time():
                    yield self._sleep(ready - self._time())
                self._retire_stores()
            ev = cta.epilogue_barrier.arrive_and_wait(self.threads, self.who)
            yield from self.block(ev, "epilogue.barrier", -1, tile, s)
            yield self._sleep(t.epi_barrier_cycles)
            if self.issues_stores:
                read_out, written = k.issue_store(cta, tile, s, self)
                if races is not None:                  # the TMA store reads the buffer until read_out
                    race_hooks.sm90_store_buffer(k, cta, tile_no * cfg.epi_subtiles + s, self._time(), read_out, False,
                                                 writers, self)
                self.stores.append(read_out)
                if written > self.last_write:
                    self.last_write = written
                # The store issue blocks the issuing thread (the others go on to the next subtile).
                yield self._sleep(t.epi_store_issue_cycles)
            self.span("epilogue", t0, self._time(), tile=tile, k_block=s)

    def _retire_stores(self) -> None:
        """Forget stores whose SMEM read is done (read-out times grow in issue order)."""
        now = self._time()
        st = self.stores
        while st and st[0] <= now:
            st.pop(0)


class Sm90GemmTmaWarpSpecialized:
    """The kernel: resident clusters of the static persistent grid, their CTAs and roles."""

    def __init__(self, env: simpy.Environment, cfg, arch, memory: MemorySystem, *,
                 knobs: ProtocolKnobs | None = None, trace=None, trace_sms=None, launcher: str = "dsl",
                 races: RaceDetector | None = None):
        # Who sized the grid (:data:`simulator.kernels.scheduler.SM90_GRID_LAUNCHERS`): "dsl", the
        # hardware twin (CuTe DSL: min(work, max active clusters)); "cutlass", CUTLASS C++'s host
        # heuristic, whose grid can exceed what the hardware runs at once.
        self.launcher = launcher
        self.races = races       # the race detectors (wsim check), or None: then no role calls race_hooks
        self.env = env
        self.cfg = cfg = cfg.resolved(arch)   # idempotent: engine.simulate passes a resolved config
        self.arch = arch
        self.mem = memory
        self.knobs = knobs or ProtocolKnobs()
        self.knobs.check(SM90_PIPELINES)
        self.trace = trace
        self._trace_sms = None if trace_sms is None else frozenset(trace_sms)
        self.timing = Sm90Timing.derive(cfg, arch)
        self.facts = Sm90KernelFacts.from_config(cfg)
        self.counts = sm90_arrival_counts(self.facts)
        self.barrier_counts = sm90_barrier_counts(self.facts)
        if cfg.schedule == "pingpong":
            self.barrier_counts.setdefault("math_wg_order", NUM_THREADS_PER_WARPGROUP)
        self.owed = _owed_by(cfg)
        self.stats = RunStats()
        # Per-launch facts read in the hot loops (config properties recompute them on every access).
        self.k_tiles = cfg.k_tiles
        self.k_tail_num = cfg.k - (cfg.k_tiles - 1) * cfg.cta_tile_k   # K columns of the last K-block
        self.tx_bytes = cfg.tma_transaction_bytes
        self.a_slice = cfg.a_stage_bytes_per_cta // cfg.cluster_n
        self.b_slice = cfg.b_stage_bytes_per_cta // cfg.cluster_m
        self.tile_k = cfg.cta_tile_k
        # Per-subtile constants of issue_store and _subtile_in_bounds, read once.
        self._epi_m, self._epi_n = cfg.epi_tile
        self._epi_per_m = cfg.tile_m // self._epi_m
        self._tile_m, self._tile_n, self._m, self._n = cfg.tile_m, cfg.cta_tile_n, cfg.m, cfg.n
        self._d_bytes = cfg.epi_d_subtile_bytes
        self._store_stages = cfg.epilogue_store_stages
        # The SM's TMA unit (loads), its store engine, and the fixed parts of their latencies.
        t = self.timing
        self._tma_rate = t.tma_rate
        # Landing runs at the unit's aligned rate; a misaligned pitch adds request time per byte issued.
        self._tma_land_rate = arch.tma_load_bytes_per_clk_per_sm.value
        self._tma_issue_extra = (self._tma_land_rate / t.tma_rate - 1.0) / self._tma_land_rate if t.tma_rate > 0 else 0.0
        self._a_dests = cfg.cluster_n        # A is multicast along the cluster row, B along the column
        self._b_dests = cfg.cluster_m
        self._l2_cost = t.l2_cost
        self._tma_fixed = TMA_LOAD_FIXED.value
        self._zf_cost = arch.tma_zero_fill_l2_cost.value
        # Zero fill's per-SM rate by the number of CTAs filling at once (ZERO_FILL_BOX_CYCLES), and that number.
        self._zf_rates = zero_fill_rates(arch.tma_load_bytes_per_clk_per_sm.value)
        self._zf_active = 0
        # CTAs whose producer is inside a tile's loads (its MainloopLoad "tile" span): the fixup's rates fall with it.
        self.mainloop_loading = 0
        # The memory system as TMA sees it on SM90: a miss lands TMA_MISS_EXTRA later than a plain
        # load's latency, and a hit on a slice still being filled waits for the fill.
        memory.miss_extra = TMA_MISS_EXTRA.value
        memory.fill_wait = True
        self._store_rate = TMA_STORE_RATE.value
        self._store_fixed = TMA_STORE_FIXED.value
        self._store_write = TMA_STORE_WRITE_AFTER_READ.value
        self.raster = TileRaster.from_config(cfg, "static")
        self.grid_clusters = self.raster.num_clusters
        # The stream-K scheduler (PersistentTileSchedulerSm90StreamK), unless the config keeps the kernel's
        # own static scheduler: its work units, and the fixup of the tiles they split.
        self.decomp = stream_k.for_config(cfg, arch, self.launcher)
        self.sk = StreamKTileScheduler(cfg, self.decomp) if self.decomp is not None else None
        self.fixup = None
        # The persistent grid the launcher asks for, and how many of its clusters run at once
        # (the rest start as resident clusters exit: only CUTLASS C++'s heuristic grid can exceed it).
        if self.sk is None:
            grid, resident = sm90_static_grid(cfg, arch, self.grid_clusters, self.launcher)
        else:
            grid = self.decomp.grid_clusters
            resident = min(grid, sm90_cluster_capacity(cfg.cluster_size, arch))
            acc_bytes = cfg.bits_acc // 8
            self.fixup = Fixup(self, self.decomp, sm90_fixup_counts(self.facts),
                               cfg.tile_m // cfg.num_consumer_warpgroups * cfg.cta_tile_n * acc_bytes, cfg.cluster_size,
                               arch.l2_latency_cycles.value, SM90_WORKSPACE_RATES)
            self.timing = replace(self.timing, notes=self.timing.notes + (
                "decomposition: " + self.decomp.summary(),) + self.decomp.params.notes + tuple(
                f"{c.name} = {c.value:g} {c.unit} ({c.kind}: {c.source})"
                for c in (*SM90_WORKSPACE_RATES.constants(), FIXUP_NAMED_BARRIER, ATOMIC_L2_COST)))
        self.resident_clusters = resident
        self.clusters: list[Cluster] = []
        self.roles: list[Role] = []
        for ci in range(grid):
            cl = Cluster(ci, (ci % resident) * cfg.cluster_size)
            self.clusters.append(cl)
            cl.ctas = [Cta(self, cl, r) for r in range(cfg.cluster_size)]
            for p in ("mainloop", "epi_load"):
                peers = [getattr(c, p) for c in cl.ctas]
                for c in cl.ctas:
                    getattr(c, p).peers = peers
            for c in cl.ctas:
                # Multicast receivers of this CTA's loads: A to its cluster row, B to its column.
                c.a_dst = [cl.ctas[c.cx + cy * cfg.cluster_m] for cy in range(cfg.cluster_n)]
                c.b_dst = [cl.ctas[cx + c.cy * cfg.cluster_m] for cx in range(cfg.cluster_m)]
                c.landed_bytes = self.a_slice * len(c.a_dst) + self.b_slice * len(c.b_dst)
        for cl in self.clusters:
            for c in cl.ctas:
                roles: list[Role] = [MainloopLoad(c)]
                if cfg.read_c:
                    roles.append(EpilogueLoad(c))
                roles += [Consumer(c, wg) for wg in range(cfg.num_consumer_warpgroups)]
                c.roles = roles
                self.roles += roles
        if grid <= resident:
            for r in self.roles:
                env.process(r.process())
        else:
            self._waiting: list[Cluster] = self.clusters[resident:]
            self._live: dict[int, int] = {}
            for cl in self.clusters:
                self._live[cl.index] = sum(len(c.roles) for c in cl.ctas)
            for cl in self.clusters[:resident]:
                self._launch(cl)

    # -- launch -----------------------------------------------------------------------------
    def _launch(self, cl: Cluster) -> None:
        for c in cl.ctas:
            for r in c.roles:
                self.env.process(self._run_role(r, cl))

    def _run_role(self, role, cl: Cluster):
        """A role of a grid that does not fit at once: when the last role of its cluster exits, the
        next waiting cluster starts on the freed SMs (in grid order)."""
        yield from role.process()
        self._live[cl.index] -= 1
        if self._live[cl.index] == 0 and self._waiting:
            self._launch(self._waiting.pop(0))

    # -- scheduling -----------------------------------------------------------------------
    def traced(self, sm: int) -> bool:
        return self._trace_sms is None or sm in self._trace_sms

    def initial_work(self, cluster: Cluster) -> WorkTileInfo:
        if self.sk is not None:
            return self.sk.unit_work(cluster.index)
        return self.raster.work(cluster.index)

    def next_work(self, work: WorkTileInfo, advance_count: int) -> WorkTileInfo:
        """``advance_to_next_work(advance_count)``: linear id + advance_count x grid, then
        ``get_current_work`` (invalid past the padded grid). With the stream-K scheduler
        (``fetch_next_work``): the unit's next tile if it has one (``continue_current_work``), else the
        unit ``advance_count`` grids on."""
        if self.sk is not None:
            nxt = self.sk.continue_work(work)
            if nxt is not None:
                return nxt
            return self.sk.unit_work(work.unit + advance_count * len(self.clusters))
        return self.raster.work(work.linear + advance_count * len(self.clusters))

    # -- data movement --------------------------------------------------------------------
    def mainloop_release_targets(self, cta: Cta) -> list[int]:
        """CTAs whose TMA multicast feeds this CTA's stages: its cluster row (A) and column (B)."""
        cfg = self.cfg
        out = {cta.cx + cy * cfg.cluster_m for cy in range(cfg.cluster_n)}
        out |= {cx + cta.cy * cfg.cluster_m for cx in range(cfg.cluster_m)}
        return sorted(out)

    def tile_loads(self, cta: Cta, tile) -> tuple:
        """What this CTA's TMA loads of one tile read from memory: (L2 key of its A slice's K-block
        0 (K-block ``kb`` is ``key + kb``), in-bounds bytes of its A slice, the same for B, then the
        zero fill of each slice, then the zeros of partly in-bounds boxes landing on this CTA). TMA
        zero-fills the slice's rows past M (N): they cost no memory traffic but still land (transaction
        bytes, on the SM's TMA unit) and hold the L2 -> SM path (``tma_zero_fill_l2_cost``). A CTA's
        slice is its rows of the tile (A: its share ``cy`` of ``cluster_n``, B: ``cx`` of ``cluster_m``)."""
        cfg = self.cfg
        m_tile, n_tile, l_idx = tile
        a_rows = cfg.tile_m // cfg.cluster_n
        b_rows = cfg.cta_tile_n // cfg.cluster_m
        a_bytes = _in_bounds(self.a_slice, cfg.m - m_tile * cfg.tile_m - cta.cy * a_rows, a_rows)
        b_bytes = _in_bounds(self.b_slice, cfg.n - n_tile * cfg.cta_tile_n - cta.cx * b_rows, b_rows)
        # The zeros landing on this CTA from boxes partly in bounds (the measured kind, ZERO_FILL_BOX_CYCLES):
        # its cluster row's A slices and its column's B slices all reach it (multicast spreads issuing, not
        # landing). A box wholly past the tensor lands at the TMA unit's rate.
        landed_zeros = (_partial_box_zeros(self.a_slice, cfg.m - m_tile * cfg.tile_m, a_rows, cfg.cluster_n)
                        + _partial_box_zeros(self.b_slice, cfg.n - n_tile * cfg.cta_tile_n, b_rows, cfg.cluster_m))
        mem = self.mem
        return (mem.key_block(("A", l_idx, m_tile, cta.cy), self.k_tiles), a_bytes,
                mem.key_block(("B", l_idx, n_tile, cta.cx), self.k_tiles), b_bytes,
                self.a_slice - a_bytes, self.b_slice - b_bytes, landed_zeros)

    def issue_mainloop_tma(self, cta: Cta, tile, loads, kb, stage, role: Role) -> float:
        """The two TMA loads one CTA issues for a K-block: its 1/cluster_n slice of A, multicast to
        its cluster row (same m), and its 1/cluster_m slice of B, multicast to its column (same n).
        Each slice's bytes complete-tx on the full barrier of every receiving CTA."""
        mem = self.mem
        now = role._time()
        a_key, a_bytes, b_key, b_bytes, a_fill, b_fill, zbytes = loads
        if kb == self.k_tiles - 1 and self.k_tail_num != self.tile_k:
            # The last K-block reaches past K: TMA zero-fills the rest.
            a_bytes = a_bytes * self.k_tail_num // self.tile_k
            b_bytes = b_bytes * self.k_tail_num // self.tile_k
        # A's load is issued before B's (two statements: compiled, max(f(), g()) may call g first).
        cost = self._l2_cost
        a_land = mem.load_scaled(now, a_key + kb, a_bytes, cost)
        b_land = mem.load_scaled(now, b_key + kb, b_bytes, cost)
        land = a_land if a_land > b_land else b_land
        # Rows past M (N) are zero-filled: their zeros come back over the L2 -> SM path, to every
        # destination of the multicast (a cluster saves no zero fill: measured, 1x2 at M = 64 runs
        # as 1x1 does, v3b mainloop.fp16_64x28672x4096.n64.c1x2.wgmma).
        if a_fill or b_fill:
            z_land = mem.zero_fill(now, a_fill * self._a_dests + b_fill * self._b_dests, self._zf_cost)
            if z_land > land:
                land = z_land
        # The SM's TMA unit lands this CTA's slices (zero fill included) at its rate, once per
        # destination of its multicast (the bytes landing per SM per stage are the same whatever the
        # cluster shape, as in the SM100 model's ingress), plus the extra line requests of the
        # misaligned rows it issues itself; they land a fixed latency later.
        if self._tma_rate > 0.0:
            start = cta.tma_free if cta.tma_free > now else now
            busy = ((self.a_slice * self._a_dests + self.b_slice * self._b_dests - zbytes) / self._tma_land_rate
                    + (a_bytes + b_bytes) * self._tma_issue_extra)
            if zbytes:
                # Zeros land at the per-SM rate the SMs filling at once leave each (measured), at most the unit's.
                n = self._zf_active if self._zf_active < len(self._zf_rates) else len(self._zf_rates) - 1
                zrate = self._zf_rates[n] if self._zf_rates[n] < self._tma_rate else self._tma_rate
                busy += zbytes / zrate
            cta.tma_free = start + busy
            sm_land = cta.tma_free + self._tma_fixed
            if sm_land > land:
                land = sm_land
        # Each slice's bytes complete-tx on the full barrier of every receiving CTA when they land.
        a, b = self.a_slice, self.b_slice
        for c in cta.a_dst:
            dst: Cta = c
            full: MBarrier = dst.mainloop.full[stage]
            full.complete_tx_at(land, a)
        for c in cta.b_dst:
            dst = c
            full = dst.mainloop.full[stage]
            full.complete_tx_at(land, b)
        self.stats.tx_landed += cta.landed_bytes
        if role.tr is not None:
            role.span("tma_load", now, land, tile=tile, k_block=kb, stage=stage)
        return land

    def issue_c_load(self, cta: Cta, tile, s: int, stage: int, role: Role) -> float:
        cfg, env = self.cfg, self.env
        now = env.now
        nbytes = cfg.epi_c_subtile_bytes
        c_key = self.mem.key_block(("C", tile[2], tile[0], tile[1]), cfg.epi_subtiles) + s
        land = self.mem.load(now, c_key, self._subtile_in_bounds(tile, s, cfg.bits_c))
        bar = cta.epi_load.full[stage]
        stats = self.stats

        def landed() -> None:
            bar.complete_tx(nbytes)
            stats.tx_landed += nbytes
        call_at(env, land - now, landed)
        role.span("epi_load", now, land, tile=tile, k_block=s, stage=stage)
        return land

    def issue_store(self, cta: Cta, tile, s: int, role: Role) -> tuple[float, float]:
        """A TMA store of one D subtile: returns (SMEM read out, written). The SM's store engine reads
        the subtile out of SMEM at its rate, a fixed latency on top; the memory system must have
        taken the bytes (the HBM channel: write-through) before the read completes; the store is
        written (``wait_group 0``) a few cycles after."""
        now = role._time()
        # TMA clips the store at the problem's edge: only in-bounds bytes are read and written.
        nbytes = self._subtile_in_bounds(tile, s, self.cfg.bits_d)
        start = cta.store_free if cta.store_free > now else now
        cta.store_free = start + nbytes / self._store_rate
        read_out = cta.store_free + self._store_fixed
        if nbytes:
            accepted = self.mem.store_accepted(now, nbytes)
            if accepted > read_out:
                read_out = accepted
        written = read_out + self._store_write
        if role.tr is not None:
            role.span("tma_store", now, written, tile=tile, k_block=s, stage=s % self._store_stages)
        return read_out, written

    def _subtile_in_bounds(self, tile, s: int, bits: int) -> int:
        """Bytes of epilogue subtile ``s`` of ``tile`` inside M x N (subtiles run M-fastest within
        N, the C++ epilogue's ``for epi_n: for epi_m`` order)."""
        em, en = self._epi_m, self._epi_n
        epi_n, epi_m = divmod(s, self._epi_per_m)
        rows = min(em, max(0, self._m - tile[0] * self._tile_m - epi_m * em))
        cols = min(en, max(0, self._n - tile[1] * self._tile_n - epi_n * en))
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


def _partial_box_zeros(nbytes: int, extent_left: int, box_extent: int, boxes: int) -> int:
    """Zero-filled bytes of the boxes (``boxes`` of ``box_extent`` rows, ``nbytes`` each, one after the
    other from ``extent_left`` rows before the tensor's end) that are partly in bounds."""
    out = 0
    for i in range(boxes):
        inb = _in_bounds(nbytes, extent_left - i * box_extent, box_extent)
        if 0 < inb < nbytes:
            out += nbytes - inb
    return out


def _in_bounds(nbytes: int, extent_left: int, tile_extent: int) -> int:
    """Bytes of a box of ``tile_extent`` rows that lie inside the problem (``extent_left`` rows remain)."""
    rows = min(tile_extent, max(0, extent_left))
    return nbytes * rows // tile_extent


def _owed_by(cfg) -> dict[str, tuple[str, str]]:
    """Who owes the arrivals of each pipeline's full and empty barriers (for deadlock reports)."""
    consumers = "Consumer0 + Consumer1" if cfg.schedule == "cooperative" else "the tile's consumer warpgroup"
    mc = cfg.cluster_m + cfg.cluster_n - 1
    return {
        "mainloop": (f"MainloopLoad (arrive.expect_tx) + TMA bytes from the {cfg.cluster_size}-CTA cluster's multicast",
                     f"{consumers}: one arrival per warp from each of the {mc} CTA(s) in this CTA's cluster "
                     "row and column"),
        "epi_load": ("EpilogueLoad x32 (producer_commit) + TMA bytes of one C subtile", f"{consumers} (x128 each)"),
    }


__all__ = ["Sm90GemmTmaWarpSpecialized", "Sm90Timing", "MathWarpGroupOrderBarrier", "RunStats", "SM90_PIPELINES"]
