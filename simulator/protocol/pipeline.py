"""CUTLASS's producer/consumer pipelines, modelled on :class:`~simulator.protocol.mbarrier.MBarrier`.

Each pipeline object belongs to one CTA and owns that CTA's ``full`` and ``empty`` barrier arrays
(one of each per stage), like the ``SharedStorage`` of the C++ pipelines. Pipelines that signal
other CTAs of the cluster (multicast MMA commits, CLC responses, releases to CTA 0) reach their
peers through :attr:`Pipeline.peers`, the same pipeline object of every CTA in the cluster,
indexed by CTA rank, set by the kernel model once all CTAs exist.

The method names and their semantics follow ``include/cutlass/pipeline/sm90_pipeline.hpp`` and
``sm100_pipeline.hpp``:

* ``producer_acquire(state)``: wait until the stage is empty (``empty[i]`` phase parity =
  ``state.phase``); TMA pipelines then post the expected transaction bytes on ``full[i]``;
* ``producer_commit(state)``: arrive on ``full[i]`` (TMA pipelines: the bytes themselves complete
  the phase, so commit is a no-op there);
* ``consumer_wait(state)``: wait until ``full[i]`` completed the phase of ``state.phase``;
* ``consumer_release(state)``: arrive on ``empty[i]`` (of the producer's CTA, or multicast);
* ``producer_tail(state)``: wait until every stage has been released once more, so that a producer
  CTA does not exit while a consumer in its cluster may still arrive on its barriers.

Waits return ``None`` when already satisfied and a SimPy event otherwise; the calling role process
yields it (and records the wait span). Arrivals carry the arriver's *round* (``state.count //
stages``) so that an arrival that lands in the wrong phase is flagged as a protocol violation.
"""

from __future__ import annotations

from dataclasses import dataclass

import simpy

from simulator.protocol.clock import EventLoop
from simulator.protocol.mbarrier import MBarrier, call_at


class PipelineState:
    """``cutlass::PipelineState<Stages>``: stage index, phase bit and a running count."""

    __slots__ = ("stages", "index", "phase", "count")

    def __init__(self, stages: int, index: int = 0, phase: int = 0, count: int = 0):
        self.stages = stages
        self.index = index
        self.phase = phase
        self.count = count

    def advance(self) -> PipelineState:
        """``++state``: next stage; the phase flips when the index wraps."""
        self.index += 1
        self.count += 1
        if self.index == self.stages:
            self.index = 0
            self.phase ^= 1
        return self

    def advance_by(self, n: int) -> PipelineState:
        """``state.advance(n)`` of the C++ PipelineState: the phase flips once per wrap of the index."""
        wraps, self.index = divmod(self.index + n, self.stages)
        self.phase ^= wraps & 1
        self.count += n
        return self

    def copy(self) -> PipelineState:
        return PipelineState(self.stages, self.index, self.phase, self.count)

    @property
    def round(self) -> int:
        """How many times this stage index has been used before: the barrier phase it targets."""
        return self.count // self.stages

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PipelineState) and (self.index, self.phase, self.count, self.stages)
                == (other.index, other.phase, other.count, other.stages))

    def __repr__(self) -> str:
        return f"PipelineState(index={self.index}, phase={self.phase}, count={self.count})"


def make_producer_start_state(stages: int, *, phase: int = 1) -> PipelineState:
    """``cutlass::make_producer_start_state``: index 0, phase 1, so the first acquire of each
    stage passes on a fresh barrier (the consumer's start state is index 0, phase 0).

    ``phase`` is exposed only for "what if" experiments (a producer started in the wrong phase).
    """
    return PipelineState(stages, 0, phase, 0)


@dataclass(frozen=True, slots=True)
class PipelineParams:
    name: str              # e.g. "mainloop"
    stages: int
    producer_count: int    # arrivals that complete a full barrier phase
    consumer_count: int    # arrivals that complete an empty barrier phase
    transaction_bytes: int = 0
    producer_owed_by: str = ""
    consumer_owed_by: str = ""


class Pipeline:
    """Barrier storage of one pipeline in one CTA, with the generic protocol steps."""

    kind = "Pipeline"

    def __init__(self, env: simpy.Environment, params: PipelineParams, cta: int, *,
                 wake_latency: float = 0.0, remote_latency: float = 0.0, has_empty: bool = True):
        if params.stages < 1:
            raise ValueError(f"{params.name}: stage count {params.stages} must be at least 1")
        self.env = env
        self._loop = env if isinstance(env, EventLoop) else None   # the fast engine's loop
        self.params = params
        self.name = params.name
        self.stages = params.stages
        self.cta = cta
        self.remote_latency = remote_latency
        self.full = [MBarrier(env, f"CTA{cta}/{params.name}.full[{i}]", params.producer_count,
                              owed_by=params.producer_owed_by, wake_latency=wake_latency)
                     for i in range(params.stages)]
        self.empty = ([MBarrier(env, f"CTA{cta}/{params.name}.empty[{i}]", params.consumer_count,
                                owed_by=params.consumer_owed_by, wake_latency=wake_latency)
                       for i in range(params.stages)] if has_empty else [])
        self.peers: list[Pipeline] = [self]
        self.rank = 0

    def barriers(self) -> list[MBarrier]:
        return self.full + self.empty

    # -- producer ------------------------------------------------------------------------
    def producer_acquire(self, state: PipelineState, who: str) -> simpy.Event | None:
        bar = self.empty[state.index]
        return bar.wait(state.phase, who)

    def producer_commit(self, state: PipelineState, who: str, count: int = 1) -> None:
        bar = self.full[state.index]
        bar.arrive(count, who, state.count // state.stages)

    def producer_tail_waits(self, state: PipelineState, who: str):
        """The waits of ``producer_tail``: one per stage, in order (a generator of events/None)."""
        st = state.copy()
        for _ in range(self.stages):
            yield self.empty[st.index], self.empty[st.index].wait(st.phase, who)
            st.advance()

    # -- consumer ------------------------------------------------------------------------
    def consumer_wait(self, state: PipelineState, who: str) -> simpy.Event | None:
        bar = self.full[state.index]
        return bar.wait(state.phase, who)

    def consumer_release(self, state: PipelineState, who: str, count: int = 1) -> None:
        bar = self.empty[state.index]
        bar.arrive(count, who, state.count // state.stages)

    # -- helpers -------------------------------------------------------------------------
    def _arrive(self, bar: MBarrier, dst_rank: int, count: int, who: str, round: int) -> None:
        """Arrive on ``bar``; a barrier in another CTA is reached after the remote latency."""
        if dst_rank == self.rank or self.remote_latency <= 0:
            bar.arrive(count, who=who, round=round)
        else:
            call_at(self.env, self.remote_latency, _arrive_kw, bar, count, who, round)

    def stages_full(self) -> int:
        """Stages whose full barrier completed more phases than the empty barrier (occupancy)."""
        if not self.empty:
            return 0
        for b in self.full + self.empty:
            b.test_wait(0)  # applies operations whose time has come
        return sum(1 for f, e in zip(self.full, self.empty, strict=True) if f.phase > e.phase)


def _arrive_kw(bar: MBarrier, count: int, who: str, round: int) -> None:
    bar.arrive(count, who, round)


def _arrive_all(bars: list, count: int, who: str, round: int) -> None:
    for bar in bars:
        bar.arrive(count, who, round)


class PipelineAsync(Pipeline):
    """``cutlass::PipelineAsync``: plain arrive/wait both ways; ``dst_blockid`` CTA holds the
    barriers both sides use (the CLC throttle lives in CTA 0)."""

    kind = "PipelineAsync"


class PipelineTmaAsync(Pipeline):
    """``cutlass::PipelineTmaAsync``: the producer's leader posts ``transaction_bytes`` on
    ``full[i]`` in ``producer_acquire`` and TMA bytes complete the phase; consumers release to
    the empty barriers of the CTAs that multicast into them."""

    kind = "PipelineTmaAsync"

    def producer_acquire_expect(self, state: PipelineState, who: str, is_leader: bool = True,
                                nbytes: int | None = None) -> None:
        """The second half of ``producer_acquire`` (after the empty wait): expect the bytes."""
        if is_leader:
            bar = self.full[state.index]
            bar.arrive_and_expect_tx(self.params.transaction_bytes if nbytes is None else nbytes, 1, who,
                                     state.count // state.stages)

    def producer_commit(self, state: PipelineState, who: str, count: int = 1) -> None:
        """No-op: the TMA unit's complete-tx completes the phase."""

    def consumer_release_to(self, state: PipelineState, dst_ranks, who: str, count: int = 1) -> None:
        self.release_stage(state.index, state.count // state.stages, dst_ranks, who, count)

    def release_stage_at(self, t: float, index: int, round: int, dst_ranks, who: str, count: int = 1) -> None:
        """``release_stage`` that happens at cycle ``t`` (an MMA commit when the MMAs complete):
        recorded on the barriers now, taking effect then, with no event of its own."""
        lat = self.remote_latency
        for r in dst_ranks:
            peer = self.peers[r]
            bar = peer.empty[index]
            bar.arrive_at(t if r == self.rank else t + lat, count, who, round)

    def release_stage(self, index: int, round: int, dst_ranks, who: str, count: int = 1) -> None:
        """Arrive on ``empty[index]`` of each CTA in ``dst_ranks``: this CTA's at once, the others
        (one multicast) after the remote latency."""
        remote = None
        for r in dst_ranks:
            peer = self.peers[r]
            bar = peer.empty[index]
            if r == self.rank or self.remote_latency <= 0:
                bar.arrive(count, who, round)
            else:
                if remote is None:
                    remote = []
                remote.append(bar)
        if remote is not None:
            loop = self._loop
            if loop is not None:
                loop.call_later(self.remote_latency, _arrive_all, (remote, count, who, round))
            else:
                call_at(self.env, self.remote_latency, _arrive_all, remote, count, who, round)


class PipelineTransactionAsync(Pipeline):
    """``cutlass::PipelineTransactionAsync`` (the SM100 epilogue's C-load pipeline): the producer
    acquires (empty wait only), one thread posts the expected bytes
    (``producer_expect_transaction``), and every producer thread arrives in ``producer_commit``."""

    kind = "PipelineTransactionAsync"

    def producer_expect_transaction(self, state: PipelineState, nbytes: int | None = None) -> None:
        self.full[state.index].expect_tx(self.params.transaction_bytes if nbytes is None else nbytes)


class PipelineTmaUmmaAsync(PipelineTmaAsync):
    """``cutlass::PipelineTmaUmmaAsync`` (SM100 mainloop): TMA producer, tcgen05.mma consumer.

    The consumer's release is ``umma_arrive_multicast``: when the MMAs that read the stage
    complete, one arrival lands on the empty barrier of every CTA whose TMA multicast fed them."""

    kind = "PipelineTmaUmmaAsync"


class PipelineUmmaAsync(Pipeline):
    """``cutlass::PipelineUmmaAsync`` (SM100 accumulator): MMA producer (commit multicast to the
    CTA pair's full barriers), epilogue consumers (every thread arrives on the MMA-leader's
    empty barrier)."""

    kind = "PipelineUmmaAsync"

    def producer_commit_to_at(self, t: float, state: PipelineState, dst_ranks, who: str) -> None:
        """``producer_commit_to`` at cycle ``t`` (when the tile's last MMAs complete)."""
        lat = self.remote_latency
        rnd = state.count // state.stages
        for r in dst_ranks:
            peer = self.peers[r]
            bar = peer.full[state.index]
            bar.arrive_at(t if r == self.rank else t + lat, 1, who, rnd)

    def producer_commit_to(self, state: PipelineState, dst_ranks, who: str) -> None:
        """umma commit to the full barriers of the pair: this CTA's at once, the peer's after the
        remote latency."""
        remote = []
        for r in dst_ranks:
            if r == self.rank or self.remote_latency <= 0:
                self.peers[r].full[state.index].arrive(1, who=who, round=state.round)
            else:
                remote.append(self.peers[r].full[state.index])
        if remote:
            call_at(self.env, self.remote_latency, _arrive_all, remote, 1, who, state.round)

    def consumer_release_to(self, state: PipelineState, dst_rank: int, who: str, count: int) -> None:
        self._arrive(self.peers[dst_rank].empty[state.index], dst_rank, count, who, state.round)


class PipelineCLCFetchAsync(Pipeline):
    """``cutlass::PipelineCLCFetchAsync``: the Sched warp of CTA 0 acquires a stage (CTA 0's empty
    barrier), posts 16 expected bytes on the full barrier of every CTA of the cluster (lane i
    for CTA i), and issues ``clusterlaunchcontrol.try_cancel`` whose response is multicast into
    every CTA's SMEM; every consumer warp of every CTA reads its own copy and releases to CTA 0."""

    kind = "PipelineCLCFetchAsync"

    def producer_acquire_expect(self, state: PipelineState, who: str) -> None:
        for r, peer in enumerate(self.peers):
            self._arrive_expect(peer.full[state.index], r, who, state.round)

    def _arrive_expect(self, bar: MBarrier, dst_rank: int, who: str, round: int) -> None:
        nbytes = self.params.transaction_bytes
        if dst_rank == self.rank or self.remote_latency <= 0:
            bar.arrive_and_expect_tx(nbytes, who=who, round=round)
        else:
            call_at(self.env, self.remote_latency,
                    lambda: bar.arrive_and_expect_tx(nbytes, who=who, round=round))

    def consumer_release(self, state: PipelineState, who: str, count: int = 1) -> None:
        self._arrive(self.peers[0].empty[state.index], 0, count, who, state.round)


class OrderedSequenceBarrier:
    """``cutlass::OrderedSequenceBarrier<1, 2>`` as the seed uses it: group 0 (MainloopLoad)
    arrives once its mainloop prologue loads are issued; group 1 (EpilogueLoad) waits for that
    before it loads C."""

    def __init__(self, env: simpy.Environment, name: str, group_size: int, cta: int):
        self.barrier = MBarrier(env, f"CTA{cta}/{name}", group_size, owed_by="MainloopLoad (group 0)")

    def arrive(self, who: str, count: int) -> None:
        self.barrier.arrive(count, who=who, round=0)

    def wait(self, who: str) -> simpy.Event | None:
        return self.barrier.wait(0, who)
