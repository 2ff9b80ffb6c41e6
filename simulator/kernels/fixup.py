"""The stream-K / split-K fixup of both kernel models: partial accumulators through the workspace.

CUTLASS (sm90_tile_scheduler_stream_k.hpp ``fixup_helper``, called by the SM90 cooperative kernel's
consumer warpgroups after ``mma_tail`` and by the SM100 stream-K scheduler's ``tmem_fixup`` in the
seed's epilogue warps before ``collective_epilogue.store``), for a unit that computed K tiles
``[K_idx, K_idx + k_tile_count)`` of a tile that is split (``requires_fixup``):

* not the final split, ``K_idx == 0``: store the partial accumulators to the workspace
  (``BlockStripedReduce::store``), then ``arrive_inc(k_tile_count)`` on the tile's flag;
* not the final split, ``K_idx > 0``: wait (deterministic: ``wait_eq(K_idx)``; nondeterministic:
  ``wait_lt(1)``), add the partials into the workspace atomically (``BlockStripedReduce::reduce``,
  ``red.global.add.f32``), ``arrive_inc(k_tile_count)``; the epilogue is skipped;
* the final split: ``wait_eq(K_idx)``, load the workspace and add it to the accumulators
  (``BlockStripedReduce::load_add``), then the epilogue as for a data-parallel tile.

The SM90 twin's ``separate`` reduction (hw_kernels/rules.py): every non-final split stores its partials
to a slot of its own without waiting, then ``arrive_inc(k_tile_count)``; the final split waits as above
and loads every other split's slot.

SM100 adds the TMEM round trip (``tmem_fixup``): the accumulator stage is waited for and copied to
registers first; a non-final split releases the stage then, the final split copies the sum back to
TMEM for the epilogue.

Timing (cycles): a group's threads move workspace bytes at the kernel's :class:`WorkspaceRates` per SM
(shared evenly by the CTA's reduction groups, which fix up their rows of the same unit at once; by default :data:`WORKSPACE_BYTES_PER_CLK`; the SM90 twin's fall as more
SMs are in a mainloop, ``kernel.mainloop_loading``) and through the L2 channel of the memory model
(:meth:`simulator.machine.memory.MemorySystem.workspace_write`/``workspace_read``); the fence before
the flag's ``red`` waits until the stores are acknowledged (their last byte issued plus one L2 round
trip, ``l2_latency_cycles``), the ``red`` reaches L2 half a round trip later, and a waiter sees the flag
one poll (a round trip) after that; each wait and arrive syncs the group on a named barrier
(:data:`FIXUP_NAMED_BARRIER`).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.kernels import race_hooks
from simulator.machine.constants import Constant
from simulator.machine.curve import interp
from simulator.protocol.arrivals import FixupCounts, fixup_increment, fixup_wait
from simulator.protocol.fixup import FixupLock

_MB = "validation/results/h200_microbench.json"
_MB2 = "validation/results/h200_microbench_v2.json"

#: Plain ld/st.global bytes per clock one SM moves to and from L2: the H200's all-SM plain-load rate from L2
#: (16 MiB footprint, 21.43 TB/s) over its 132 SMs at 1980 MHz. The B200 value is the same per SM (estimate).
WORKSPACE_BYTES_PER_CLK = Constant(
    "workspace_bytes_per_clk_per_sm", round(21.432314763095098e12 / 132 / 1.98e9, 1), "B/clk/SM",
    f"derived: {_MB} l2_read_sweep buffer_mib=16 bytes_per_s (21.43 TB/s, plain loads from all 132 SMs) / 132 SMs / "
    "1.98 GHz; stores and the B200 assumed alike", "measured-here")
#: ``bar.sync`` of the 128 threads of one reduction group (the BarrierManager's NamedBarrierSync).
FIXUP_NAMED_BARRIER = Constant("fixup_named_barrier_cycles", 32.688, "cycles",
                               f"{_MB2} named_barrier.t128.cycles (bar.sync of 128 threads, back to back)",
                               "measured-here")
#: An atomic add of a partial (``red.global.add.f32``) occupies the L2 twice as long as a store: it reads
#: the line it adds to, then writes it.
ATOMIC_L2_COST = Constant("fixup_atomic_l2_cost", 2.0, "x", "not measured: an L2 read-modify-write per line "
                          "(read + write) against a store's write", "estimate")

FIXUP_CONSTANTS = (WORKSPACE_BYTES_PER_CLK, FIXUP_NAMED_BARRIER, ATOMIC_L2_COST)


@dataclass(frozen=True)
class RateCurve:
    """One SM's workspace rate (B/clk) against the number of SMs in a mainloop at once: measured
    points ``(SMs loading, constant)``, linear between them, flat past the ends."""

    points: tuple[tuple[int, Constant], ...]

    @classmethod
    def flat(cls, c: Constant) -> RateCurve:
        return cls(((0, c),))

    def at(self, loading: float) -> float:
        return interp([(n, c.value) for n, c in self.points], loading)

    @property
    def contended(self) -> bool:
        return len(self.points) > 1

    def constants(self) -> tuple[Constant, ...]:
        return tuple(c for _, c in self.points)


@dataclass(frozen=True)
class WorkspaceRates:
    """How fast one SM's threads move workspace bytes (B/clk, shared by the CTA's reduction groups),
    each a :class:`RateCurve` of the SMs loading at once: ``store`` for a first split's partials,
    ``load`` for the final split's read; a middle split adds into the workspace with ``reduce`` when
    deterministic (the SM90 twin reads, adds and writes back: it holds the slice alone; the rate counts
    the bytes read and written) and ``red`` when not (atomic adds); either left out is one atomic pass
    at the store rate (CUTLASS's ``red.global.add``). The default: everything at :data:`WORKSPACE_BYTES_PER_CLK`."""

    store: RateCurve = RateCurve.flat(WORKSPACE_BYTES_PER_CLK)
    load: RateCurve = RateCurve.flat(WORKSPACE_BYTES_PER_CLK)
    reduce: RateCurve | None = None
    red: RateCurve | None = None

    @property
    def contended(self) -> bool:
        return any(c is not None and c.contended for c in (self.store, self.load, self.reduce, self.red))

    def issue_cycles(self, nbytes: float, final: bool, middle: bool, deterministic: bool = True,
                     loading: float = 0.0) -> float:
        if final:
            return nbytes / self.load.at(loading)
        if middle and deterministic and self.reduce is not None:
            return 2 * nbytes / self.reduce.at(loading)        # the bytes read and the bytes written
        if middle and not deterministic and self.red is not None:
            return nbytes / self.red.at(loading)
        return nbytes / self.store.at(loading)

    def constants(self) -> tuple[Constant, ...]:
        seen: dict[str, Constant] = {}
        for curve in (self.store, self.load, self.reduce, self.red):
            for c in curve.constants() if curve is not None else ():
                seen.setdefault(c.name, c)
        return tuple(seen.values())


#: The race detector's record of a nondeterministic first split's store alone (see :meth:`Fixup.run`).
_FIRST_STORE = -1


class Fixup:
    """The fixup flags and workspace slices of one launch (only split tiles have them).

    ``kernel``: the kernel model (``env``, ``mem``, ``races``, ``knobs``, ``stats``); ``decomp``: its
    :class:`~simulator.kernels.stream_k.Decomposition`; ``counts``: the kernel's fixup barrier counts;
    ``group_bytes``: the partial accumulator bytes of one reduction group; ``cluster_size``: CTAs per
    cluster tile (each CTA has its own flags and slices).
    """

    def __init__(self, kernel, decomp, counts: FixupCounts, group_bytes: int, cluster_size: int,
                 l2_latency: float, rates: WorkspaceRates | None = None) -> None:
        self.k = kernel
        self.d = decomp
        self.counts = counts
        self.group_bytes = group_bytes
        self.rates = rates or WorkspaceRates()
        self.contended = self.rates.contended       # the rates depend on the SMs loading: the kernel counts them
        self.share = counts.barriers_per_tile         # reduction groups of a CTA, each fixing up its rows at once
        self.sync = FIXUP_NAMED_BARRIER.value
        self.poll = l2_latency
        self.red_latency = l2_latency / 2
        self.ack = l2_latency
        self.reduction = decomp.params.reduction
        self.arrives = kernel.knobs.releases("fixup")
        self.delta = kernel.knobs.fixup_delta
        self.locks: dict[tuple[int, int, int], FixupLock] = {}
        self.keys: dict[tuple, int] = {}        # (tile, rank, group[, peer: the separate reduction's slot])
        self.peer_index: dict[tuple[int, int], int] = {}   # (tile, k_start) -> position in K order
        self.peer_count: dict[int, int] = {}
        nb = counts.barriers_per_tile
        for tile, peers in decomp.peers.items():
            if len(peers) < 2:
                continue
            self.peer_count[tile] = len(peers)
            for i, (_, a, _c) in enumerate(peers):
                self.peer_index[(tile, a)] = i
            names = tuple((f"unit {u}", a, c) for u, a, c in peers)
            for rank in range(cluster_size):
                for g in range(nb):
                    lock_idx = (tile * cluster_size + rank) * nb + g
                    lock = FixupLock(kernel.env, f"GMEM/fixup[{lock_idx}]", names, self.poll)
                    lock.delta = self.delta
                    self.locks[(tile, rank, g)] = lock
                    if self.reduction == "separate":
                        for p in range(len(peers) - 1):
                            self.keys[(tile, rank, g, p)] = kernel.mem.key_block(("WS", tile, rank, g, p), 1)
                    else:
                        self.keys[(tile, rank, g)] = kernel.mem.key_block(("WS", tile, rank, g), 1)

    def barriers(self):
        return list(self.locks.values())

    def is_final(self, work) -> bool:
        return work.k_start + work.k_count == self.d.k_tiles

    def run(self, role, cta, work, tile, group: int):
        """The fixup of one reduction group (a generator; the caller has the accumulators in registers)."""
        k = self.k
        key = (work.tile_id, cta.rank, group)
        lock = self.locks[key]
        mem = k.mem
        nbytes = self.group_bytes
        final = self.is_final(work)
        peer = self.peer_index[(work.tile_id, work.k_start)]
        separate = self.reduction == "separate"
        ws = self.keys[(*key, peer) if separate and not final else key] if not (separate and final) else None
        env = k.env
        t0 = env.now
        races = k.races
        how = fixup_wait(work.k_start, final, self.reduction)
        if how is not None:
            ev = lock.wait(how[0], how[1], role.who)
            if ev is not None:
                yield from role.block(ev, "fixup", group, tile)
            elif lock.wait_mutation == 0:
                yield env.timeout(self.poll)             # the first poll's round trip
            yield env.timeout(self.sync)                 # the group syncs after thread 0's wait
        now = env.now
        atomic = work.k_start > 0 and not final and not separate
        loading = k.mainloop_loading if self.contended else 0
        # The CTA's groups move their slices at once (the same unit's rows), sharing the SM's rate; the
        # separate reduction's final split reads a slot per other split.
        slots = peer if separate and final else 1
        issue_end = now + self.share * self.rates.issue_cycles(slots * nbytes, final, atomic,
                                                               self.reduction == "deterministic", loading)
        if final:
            if separate:
                land = max(mem.workspace_read(now, self.keys[(*key, p)], nbytes) for p in range(peer))
            else:
                land = mem.workspace_read(now, ws, nbytes)
            done = max(issue_end + self.ack, land)
            if races is not None:
                if separate:
                    for p in range(peer):
                        race_hooks.fixup_read(k, lock, 0, now, done, role, slot=p)
                else:
                    race_hooks.fixup_read(k, lock, self._read_round(peer, True), now, done, role)
            yield env.timeout(done - now)
            role.span("fixup_load", t0, env.now, tile=tile, k_block=work.k_start, stage=group)
            return True
        held = mem.workspace_write(now, ws, nbytes, ATOMIC_L2_COST.value if atomic else 1.0)
        visible = max(issue_end + self.ack, held)
        if races is not None:
            nondet = self.reduction == "nondeterministic"
            if atomic:
                # nondeterministic: the atomic adds need only the first store landed (its own record, so
                # that adds of other middle splits into the same slice are no overwrite of it)
                race_hooks.fixup_read(k, lock, self._read_round(peer, False), now, now, role,
                                      slot=_FIRST_STORE if nondet else None)
            elif nondet and peer == 0:
                race_hooks.fixup_write(k, lock, 0, now, visible, role, slot=_FIRST_STORE)
            if separate:
                race_hooks.fixup_write(k, lock, 0, now, visible, role, slot=peer)
            else:
                race_hooks.fixup_write(k, lock, self._write_round(peer), now, visible, role)
        # arrive_inc: the group syncs, thread 0's fence waits for the stores, its red lands later.
        yield env.timeout(max(issue_end - now, 0.0) + self.sync)
        if visible > env.now:
            yield env.timeout(visible - env.now)
        if self.arrives:
            lock.arrive_at(env.now + self.red_latency, fixup_increment(work.k_count), f"unit {work.unit}")
        role.span("fixup_reduce" if atomic else "fixup_store", t0, env.now, tile=tile, k_block=work.k_start,
                  stage=group)
        return False

    # -- race-detector rounds (see race_hooks.fixup_write): deterministic, peer i writes round i and
    # reads round i - 1; nondeterministic, the first peer writes round 0, the others read it and add
    # into round 1, the final peer reads round 1 (round 0 with two peers). Separate: each non-final peer
    # writes its own slot once (round 0 of that slot's buffer), the final peer reads every slot.
    def _write_round(self, peer: int) -> int:
        if self.reduction == "deterministic":
            return peer
        return 0 if peer == 0 else 1

    def _read_round(self, peer: int, final: bool) -> int:
        if self.reduction == "deterministic":
            return peer - 1
        return 1 if final and peer > 1 else 0


__all__ = ["Fixup", "RateCurve", "WorkspaceRates", "FIXUP_CONSTANTS", "WORKSPACE_BYTES_PER_CLK", "FIXUP_NAMED_BARRIER", "ATOMIC_L2_COST"]
