"""Barrier arrival counts, derived in ONE place from the kernel's facts.

Every mbarrier is initialised with an arrival count; a phase completes when that many arrivals
(and, for transaction barriers, the expected bytes) have landed. A wrong count is a hang or a race,
so the simulator and the CuTe-DSL kernels both take their counts from here. Pure Python: no numpy,
no SimPy, importable from a CuTe-DSL kernel.

Sources (CUTLASS, github.com/NVIDIA/cutlass; paths in that repository, at commit 7107b0553 unless said):
  seed = include/cutlass/gemm/kernel/sm100_gemm_tma_warpspecialized.hpp as of a version with the
    epilogue-throttle cluster barrier, e.g. commit 019c5c979: the kernel this project models. The
    file at 7107b0553 differs: it has no epilogue-throttle barrier (the Epilogue warps wait until MMA,
    Sched, MainloopLoad and EpilogueLoad have finished their prologue; its count is below), and its
    MMA warp acquires the accumulator stage inside the collective's ``mma()`` rather than in the
    kernel's tile loop (``producer_acquire`` before ``collective_mainloop.mma``). Counts here follow
    the seed.
  sm100_pipeline.hpp, sm90_pipeline.hpp = include/cutlass/pipeline/
  sm90 kernels = include/cutlass/gemm/kernel/sm90_gemm_tma_warpspecialized_{cooperative,pingpong}.hpp
  DSL = examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py

Counts are what the *hardware barrier is initialised with* (``initialize_barrier_array_pair_aligned``
arguments), not necessarily the Params field the kernel fills in: e.g. PipelineTmaUmmaAsync ignores
``producer_arv_count`` and uses 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NUM_THREADS_PER_WARP = 32
NUM_THREADS_PER_WARPGROUP = 128

# seed: NumSchedThreads = NumMMAThreads = NumMainloopLoadThreads = NumEpilogueLoadThreads = NumThreadsPerWarp
NUM_SCHED_THREADS = NUM_THREADS_PER_WARP
NUM_MMA_THREADS = NUM_THREADS_PER_WARP
NUM_MAINLOOP_LOAD_THREADS = NUM_THREADS_PER_WARP
NUM_EPILOGUE_LOAD_THREADS = NUM_THREADS_PER_WARP
NUM_EPILOGUE_THREADS = 128  # CollectiveEpilogue::ThreadCount (sm100_epilogue_tma_warpspecialized.hpp)


@dataclass(frozen=True)
class BarrierCounts:
    """Arrivals per phase: ``producer`` on the full barrier, ``consumer`` on the empty barrier."""

    producer: int
    consumer: int


# ============================================================================================ SM100
@dataclass(frozen=True)
class KernelFacts:
    """What the SM100 kernel's barrier counts depend on."""

    cluster_m: int = 2
    cluster_n: int = 1
    use_2sm: bool = True
    read_c: bool = False
    overlapping_accum: bool = False
    num_epilogue_threads: int = NUM_EPILOGUE_THREADS
    threads_per_warp: int = NUM_THREADS_PER_WARP

    def __post_init__(self) -> None:
        if self.cluster_m < 1 or self.cluster_n < 1:
            raise ValueError(f"cluster_m={self.cluster_m}, cluster_n={self.cluster_n}: must be >= 1")
        if self.use_2sm and self.cluster_m % 2:
            raise ValueError(f"cluster_m={self.cluster_m}: 2-SM MMA needs an even cluster_m")

    @classmethod
    def from_config(cls, cfg: Any) -> KernelFacts:
        """From a :class:`simulator.kernels.sm100_config.Sm100GemmConfig` (duck-typed: no import needed)."""
        return cls(cluster_m=cfg.cluster_m, cluster_n=cfg.cluster_n, use_2sm=cfg.use_2sm, read_c=cfg.read_c,
                   overlapping_accum=getattr(cfg, "overlapping_accum", False))

    # seed: one warp each
    @property
    def num_sched_threads(self) -> int:
        return self.threads_per_warp

    @property
    def num_mma_threads(self) -> int:
        return self.threads_per_warp

    @property
    def num_mainloop_load_threads(self) -> int:
        return self.threads_per_warp

    @property
    def num_epilogue_load_threads(self) -> int:
        return self.threads_per_warp

    @property
    def atom_thr_m(self) -> int:
        return 2 if self.use_2sm else 1

    @property
    def cluster_size(self) -> int:
        return self.cluster_m * self.cluster_n

    @property
    def has_mma_peer_cta(self) -> bool:
        """seed: ``has_mma_peer_cta = size(AtomThrShapeMNK{}) == 2``."""
        return self.use_2sm


def sm100_arrival_counts(f: KernelFacts) -> dict[str, BarrierCounts]:
    """Full/empty barrier arrival counts of the SM100 kernel's pipelines (per CTA, per stage)."""
    # mainloop: PipelineTmaUmmaAsync::init_barriers (sm100_pipeline.hpp): producer_arv_cnt = 1 (the
    # MMA-leader's elected MainloopLoad thread: arrive_and_expect_tx, seed `is_leader`), consumer =
    # multicast_consumer_arrival_count = cluster_m / atom_m + cluster_n / atom_n - 1 (one umma commit
    # per MMA-leader in this CTA's row and column of MMA tiles).
    mainloop = BarrierCounts(1, f.cluster_m // f.atom_thr_m + f.cluster_n - 1)
    # accumulator: PipelineUmmaAsync::init_barriers with the seed's params: producer_arv_count = 1
    # (umma_arrive / umma_arrive_multicast_2x1SM commit), consumer_arv_count =
    # size(AtomThrShapeMNK) * NumEpilogueThreads (both CTAs' epilogue threads arrive on the leader).
    accumulator = BarrierCounts(1, f.atom_thr_m * f.num_epilogue_threads)
    # clc: PipelineCLCFetchAsync (sm100_pipeline.hpp) with the seed's params: producer_arv_count = 1 per
    # CTA (Sched lane i < cluster_size does arrive_and_expect_tx(16 B) on CTA i's full barrier;
    # producer_acquire), consumer_arv_count = NumSchedThreads + cluster_size * (MainloopLoad + Epilogue +
    # MMA) [+ cluster_size * EpilogueLoad if C is read]; consumer_release arrives on producer_blockid 0.
    clc_consumers = f.num_sched_threads + f.cluster_size * (
        f.num_mainloop_load_threads + f.num_epilogue_threads + f.num_mma_threads)
    if f.read_c:
        clc_consumers += f.cluster_size * f.num_epilogue_load_threads
    clc = BarrierCounts(1, clc_consumers)
    # clc_throttle: PipelineAsync (sm90_pipeline.hpp init_barriers uses the params as given):
    # producer_arv_count = NumMainloopLoadThreads (CTA 0's MainloopLoad warp, producer_commit by all
    # 32 lanes), consumer_arv_count = NumSchedThreads; dst_blockid = 0.
    clc_throttle = BarrierCounts(f.num_mainloop_load_threads, f.num_sched_threads)
    # epi_load: CollectiveEpilogue::LoadPipeline is PipelineTransactionAsync<StagesC>
    # (sm100_epilogue_tma_warpspecialized.hpp), NOT PipelineTmaAsync: its init_barriers uses the seed's
    # producer_arv_count = NumEpilogueLoadThreads (every lane of the EpilogueLoad warp arrives in
    # producer_commit; one lane sets expect_tx) and consumer_arv_count = NumEpilogueThreads.
    epi_load = BarrierCounts(f.num_epilogue_load_threads, f.num_epilogue_threads)
    return {"mainloop": mainloop, "accumulator": accumulator, "clc": clc, "clc_throttle": clc_throttle,
            "epi_load": epi_load}


def sm100_barrier_counts(f: KernelFacts, cta_rank: int = 0) -> dict[str, int]:
    """Single-count barriers of the SM100 kernel, for the CTA with rank ``cta_rank`` in its cluster."""
    first = cta_rank == 0  # seed: is_first_cta_in_cluster (Sched participates only there)
    epilogue_throttle = (f.num_mma_threads + (f.num_sched_threads if first else 0)
                         + f.num_mainloop_load_threads + (f.num_epilogue_load_threads if f.read_c else 0))
    # seed: TmemAllocBarrier NamedBarrier(NumMMAThreads + NumEpilogueThreads)
    tmem_alloc = f.num_mma_threads + f.num_epilogue_threads
    # seed: tmem_deallocation_result_barrier.init(...) by the MMA warp:
    #   not overlapping: NumMMAThreads, only when there is an MMA peer CTA (else never initialised: 0)
    #   overlapping:     NumEpilogueThreads * 2 with a peer, else NumEpilogueThreads
    if not f.overlapping_accum:
        tmem_dealloc = f.num_mma_threads if f.has_mma_peer_cta else 0
    else:
        tmem_dealloc = f.num_epilogue_threads * (2 if f.has_mma_peer_cta else 1)
    # seed: LoadOrderBarrier = OrderedSequenceBarrier<1,2>, group_size = NumMainloopLoadThreads
    load_order = f.num_mainloop_load_threads
    return {"epilogue_throttle": epilogue_throttle, "tmem_alloc": tmem_alloc, "tmem_dealloc": tmem_dealloc,
            "load_order": load_order}


def sm100_arrival_table(f: KernelFacts) -> list[tuple[str, str, int, str]]:
    """(pipeline, barrier, count, who arrives) for every barrier, for deadlock reports."""
    c = sm100_arrival_counts(f)
    b0 = sm100_barrier_counts(f, 0)
    b1 = sm100_barrier_counts(f, 1) if f.cluster_size > 1 else None
    pair = "2-SM pair" if f.use_2sm else "CTA"
    peers_m = f.cluster_m // f.atom_thr_m
    per_cta = f"MainloopLoad x{f.num_mainloop_load_threads}, Epilogue x{f.num_epilogue_threads}, " \
              f"MMA x{f.num_mma_threads}" + (f", EpilogueLoad x{f.num_epilogue_load_threads}" if f.read_c else "")
    rows: list[tuple[str, str, int, str]] = [
        ("mainloop", "full", c["mainloop"].producer,
         "MainloopLoad x1 of the MMA-leader CTA (arrive_and_expect_tx) + TMA tx bytes of the pair's A/B"),
        ("mainloop", "empty", c["mainloop"].consumer,
         f"MMA x1 (umma commit) of each MMA-leader sharing this CTA's tiles: {peers_m} along M + "
         f"{f.cluster_n} along N - 1"),
        ("accumulator", "full", c["accumulator"].producer, f"MMA x1 (umma commit) of the {pair}'s leader"),
        ("accumulator", "empty", c["accumulator"].consumer,
         f"Epilogue x{f.num_epilogue_threads} of each of the {f.atom_thr_m} CTA(s) of the {pair}"),
        ("clc", "full", c["clc"].producer, "Sched x1 of CTA0 (arrive_and_expect_tx 16 B) + the try_cancel response"),
        ("clc", "empty", c["clc"].consumer,
         f"Sched x{f.num_sched_threads} (CTA0) + per CTA ({f.cluster_size}): {per_cta}"),
        ("clc_throttle", "full", c["clc_throttle"].producer, f"MainloopLoad x{f.num_mainloop_load_threads} of CTA0"),
        ("clc_throttle", "empty", c["clc_throttle"].consumer, f"Sched x{f.num_sched_threads} of CTA0"),
        ("epi_load", "full", c["epi_load"].producer,
         f"EpilogueLoad x{f.num_epilogue_load_threads} (producer_commit) + TMA tx bytes of one C subtile"),
        ("epi_load", "empty", c["epi_load"].consumer, f"Epilogue x{f.num_epilogue_threads}"),
        ("epilogue_throttle", "cta0", b0["epilogue_throttle"],
         "MMA x32 + Sched x32 + MainloopLoad x32" + (" + EpilogueLoad x32" if f.read_c else "")),
    ]
    if b1 is not None:
        rows.append(("epilogue_throttle", "cta>0", b1["epilogue_throttle"],
                     "MMA x32 + MainloopLoad x32" + (" + EpilogueLoad x32" if f.read_c else "")))
    rows += [
        ("tmem_alloc", "named", b0["tmem_alloc"], f"MMA x{f.num_mma_threads} + Epilogue x{f.num_epilogue_threads}"),
        ("tmem_dealloc", "cluster", b0["tmem_dealloc"],
         ("MMA x32 of the peer CTA" if not f.overlapping_accum else
          "Epilogue x128 of this CTA" + (" and of the peer CTA" if f.has_mma_peer_cta else ""))
         if b0["tmem_dealloc"] else "not initialised (no MMA peer CTA)"),
        ("load_order", "ordered", b0["load_order"], f"MainloopLoad x{f.num_mainloop_load_threads}"),
    ]
    return rows


# ============================================================================================= SM90
@dataclass(frozen=True)
class Sm90KernelFacts:
    cluster_m: int = 2
    cluster_n: int = 1
    schedule: str = "cooperative"
    num_consumer_warpgroups: int = 2
    read_c: bool = False

    def __post_init__(self) -> None:
        if self.schedule not in ("cooperative", "pingpong"):
            raise ValueError(f"schedule={self.schedule!r}: valid: cooperative, pingpong")
        if self.cluster_m < 1 or self.cluster_n < 1:
            raise ValueError(f"cluster_m={self.cluster_m}, cluster_n={self.cluster_n}: must be >= 1")

    @classmethod
    def from_config(cls, cfg: Any) -> Sm90KernelFacts:
        return cls(cluster_m=cfg.cluster_m, cluster_n=cfg.cluster_n, schedule=cfg.schedule, read_c=cfg.read_c,
                   num_consumer_warpgroups=getattr(cfg, "num_consumer_warpgroups", 2))

    @property
    def cluster_size(self) -> int:
        return self.cluster_m * self.cluster_n

    @property
    def mcast_size(self) -> int:
        """CTAs whose consumers free a stage of this CTA: its cluster row + column (cluster_m + cluster_n - 1)."""
        return self.cluster_m + self.cluster_n - 1

    @property
    def consumer_warpgroups_per_stage(self) -> int:
        """Warpgroups that read one mainloop stage: all (cooperative) or one (pingpong)."""
        return self.num_consumer_warpgroups if self.schedule == "cooperative" else 1

    @property
    def consumer_threads(self) -> int:
        """C++ ``mainloop_pipeline_params.num_consumers``: NumMMAThreads (cooperative) or
        NumThreadsPerWarpGroup (pingpong)."""
        return self.consumer_warpgroups_per_stage * NUM_THREADS_PER_WARPGROUP


def sm90_mainloop_empty_count_cpp(f: Sm90KernelFacts) -> int:
    """C++ PipelineTmaAsync::init_barriers (sm90_pipeline.hpp): cluster of 1 -> num_consumers (every
    consumer thread arrives); else (cluster_m + cluster_n - 1) x ceil(num_consumers / 128) (one
    signalling thread per warpgroup per destination CTA, spread_arrivals_to_warpgroup)."""
    if f.cluster_size == 1:
        return f.consumer_threads
    return f.mcast_size * -(-f.consumer_threads // NUM_THREADS_PER_WARPGROUP)


def sm90_mainloop_empty_count_dsl(f: Sm90KernelFacts) -> int:
    """CuTe-DSL convention (dense_gemm_persistent.py): consumer_arrive_cnt = mcast_size x
    num_mma_warp_groups x 4 warps (each consumer warp's elected lane arrives once per peer CTA),
    used even for a cluster of 1. For pingpong one warpgroup consumes a stage."""
    return f.mcast_size * f.consumer_warpgroups_per_stage * (NUM_THREADS_PER_WARPGROUP // NUM_THREADS_PER_WARP)


def sm90_arrival_counts(f: Sm90KernelFacts, convention: str = "dsl") -> dict[str, BarrierCounts]:
    """Full/empty arrival counts of the SM90 kernel's pipelines.

    ``convention="dsl"`` (default): the counts the CuTe-DSL Hopper kernel uses; ``"cpp"``: CUTLASS C++.
    mainloop full: 1 producer arrival (arrive_and_expect_tx; C++ num_producers = 1) + tx bytes.
    epi_load (PipelineTransactionAsync, counts as given): producer = EpilogueLoad warp (32),
    consumer = the threads that read C: 256 (cooperative, NumMMAThreads) or 128 (pingpong,
    NumThreadsPerWarpGroup).
    order (pingpong only): OrderedSequenceBarrier<2, 2> between the math warpgroups, group_size = 128.
    """
    if convention not in ("dsl", "cpp"):
        raise ValueError(f"convention={convention!r}: valid: dsl, cpp")
    empty = sm90_mainloop_empty_count_dsl(f) if convention == "dsl" else sm90_mainloop_empty_count_cpp(f)
    out = {
        "mainloop": BarrierCounts(1, empty),
        "epi_load": BarrierCounts(NUM_THREADS_PER_WARP, f.consumer_threads),
    }
    if f.schedule == "pingpong":
        out["order"] = BarrierCounts(NUM_THREADS_PER_WARPGROUP, NUM_THREADS_PER_WARPGROUP)
    return out


def sm90_barrier_counts(f: Sm90KernelFacts) -> dict[str, int]:
    """Single-count barriers: load_order (OrderedSequenceBarrier<1,2>, group_size = NumThreadsPerWarp),
    math-warpgroup order (pingpong: group_size = NumThreadsPerWarpGroup), epilogue named barrier
    (the consumer threads of one tile)."""
    out = {"load_order": NUM_THREADS_PER_WARP, "epilogue_named": f.consumer_threads}
    if f.schedule == "pingpong":
        out["math_wg_order"] = NUM_THREADS_PER_WARPGROUP
    return out


# ================================================================== stream-K / split-K fixup (both kernels)
@dataclass(frozen=True)
class FixupCounts:
    """The fixup barrier of a kernel (:mod:`simulator.protocol.fixup`): ``barriers_per_tile`` flags per
    output tile (the kernel's ``NumFixupBarriers``: one per reduction group), each synced by ``threads``
    threads (the BarrierManager's named-barrier ThreadCount around thread 0's wait and arrive)."""

    barriers_per_tile: int
    threads: int


def sm90_fixup_counts(f: Sm90KernelFacts) -> FixupCounts:
    """sm90 cooperative kernel: ``NumFixupBarriers = NumMmaWarpGroups``, and each consumer warpgroup calls
    ``TileScheduler::fixup(..., NumMmaWarpGroups, consumer_warp_group_idx)`` on its own rows; the SM90
    stream-K scheduler's ``fixup`` uses ``NamedBarrierManager<NumThreadsPerWarpGroup, StreamkBarrier0, 2>``."""
    return FixupCounts(f.num_consumer_warpgroups, NUM_THREADS_PER_WARPGROUP)


def sm100_fixup_counts(f: KernelFacts) -> FixupCounts:
    """seed: ``NumFixupBarriers = 1``; the SM100 stream-K scheduler's ``tmem_fixup``:
    ``ThreadsForFixup = NumThreadsPerWarpGroup`` (the four epilogue warps),
    ``NamedBarrierManager<ThreadsForFixup, StreamkBarrier0, 1>``."""
    return FixupCounts(1, f.num_epilogue_threads)


def fixup_increment(k_tile_count: int, separate_reduction: bool = False) -> int:
    """What a peer adds to its tile's flag (sched ``fixup_helper``): "If separate reduction is being
    performed, each participating stream-K unit increments the barrier by only 1. Otherwise, increment
    by the K tile count that this unit has processed"."""
    return 1 if separate_reduction else k_tile_count


def fixup_wait(k_idx: int, final: bool, reduction: str) -> tuple[str, int] | None:
    """What a peer whose K range starts at ``k_idx`` waits for before touching the workspace (sched
    ``fixup_helper``), as (op, value) for :meth:`simulator.protocol.fixup.FixupLock.wait`, or None:
    the first peer stores without waiting; the final peer waits until every earlier peer has added
    (``wait_eq(K_idx)``); a middle peer, deterministic: the same (turnstile in K order),
    nondeterministic: until the first peer has stored (``wait_lt(1)``: flag >= 1), separate (the SM90
    twin's: every non-final peer stores a slot of its own): not at all."""
    if final or (k_idx > 0 and reduction == "deterministic"):
        return "eq", k_idx
    if k_idx == 0 or reduction == "separate":
        return None
    return "ge", 1


__all__ = [
    "FixupCounts", "sm90_fixup_counts", "sm100_fixup_counts", "fixup_increment", "fixup_wait",
    "BarrierCounts", "KernelFacts", "Sm90KernelFacts", "sm100_arrival_counts", "sm100_barrier_counts",
    "sm100_arrival_table", "sm90_arrival_counts", "sm90_barrier_counts", "sm90_mainloop_empty_count_cpp",
    "sm90_mainloop_empty_count_dsl", "NUM_THREADS_PER_WARP", "NUM_THREADS_PER_WARPGROUP", "NUM_EPILOGUE_THREADS",
]
