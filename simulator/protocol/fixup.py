"""The stream-K / split-K fixup barrier: one 32-bit flag per (output tile, reduction group) in global memory.

CUTLASS's fixup (``fixup_helper`` in include/cutlass/gemm/kernel/sm90_tile_scheduler_stream_k.hpp) syncs
the peers of a split tile through ``cutlass/barrier.h`` ``GenericBarrier`` (behind
``NamedBarrierManager``), not an mbarrier:

* the flag is an ``int`` in the scheduler's workspace, zeroed before the launch (``initialize_workspace``:
  "Only the barrier workspace needs to be cleared for stream-K");
* ``arrive_inc(v)``: the group's threads sync on a named barrier, then thread 0 runs
  ``fence.acq_rel.gpu; red.relaxed.gpu.global.add.s32 [flag], v``: a peer adds the K tiles it computed
  (:func:`simulator.protocol.arrivals.fixup_increment`);
* ``wait_eq(v)`` / ``wait_lt(v)``: thread 0 spins on ``ld.global.acquire.gpu`` until the flag equals
  ``v`` (resp. is no longer below ``v``), then the group syncs: the peer whose K range starts at K_idx
  waits for flag == K_idx, i.e. every peer before it has arrived.

:class:`FixupLock` models one flag: arrivals land at a known time (the red reaching L2), a waiter wakes
one poll round trip after the flag holds its value (a spin loop of back-to-back acquire loads sees it
then, on average; a wait that is already satisfied still costs its first poll). It exposes what the
deadlock report reads from a barrier (``name``, ``waiters``, ``pending``, ``expected``, ``owed_by``) and the
``wsim check`` switches (``wait_mutation``: skipped wait; ``delta``: every arrival adds one more or less).
"""

from __future__ import annotations

from simulator.protocol.mbarrier import WAIT_AS_IS, WAIT_SKIPPED, Waiter, call_at

#: Wait conditions of GenericBarrier: ``eq`` (wait_eq: flag == target), ``ge`` (wait_lt: flag >= target).
WAIT_OPS = ("eq", "ge")


class _FixupWait:
    __slots__ = ("who", "target", "op", "since", "event")

    def __init__(self, who: str, target: int, op: str, since: float, event) -> None:
        self.who = who
        self.target = target
        self.op = op
        self.since = since
        self.event = event


class FixupLock:
    """One fixup flag (``lock_idx = tile_idx x num_barriers + barrier_idx``, the kernel's name for it).

    ``peers``: (who computes it, K_idx, k_tile_count) of every unit of the tile in K order, for reports.
    """

    __slots__ = ("env", "name", "value", "peers", "poll", "_waiters", "arrived", "wait_mutation", "delta",
                 "arrivals_total")

    def __init__(self, env, name: str, peers: tuple[tuple[str, int, int], ...], poll_latency: float) -> None:
        self.env = env
        self.name = name
        self.value = 0
        self.peers = peers
        self.poll = poll_latency
        self._waiters: list[_FixupWait] = []
        self.arrived: list[str] = []
        self.wait_mutation = WAIT_AS_IS
        self.delta = 0
        self.arrivals_total = 0

    # -- what deadlock.analyze reads ----------------------------------------------------------
    @property
    def waiters(self) -> tuple[Waiter, ...]:
        return tuple(Waiter(w.who, w.target, w.since, w.event) for w in self._waiters)

    @property
    def expected(self) -> int:
        return self._waiters[0].target if self._waiters else 0

    @property
    def pending(self) -> int:
        return max(0, self.expected - self.value)

    @property
    def phase(self) -> int:
        return self.value

    @property
    def owed_by(self) -> str:
        missing = [f"{who} (K tiles {a}-{a + c - 1})" for who, a, c in self.peers[:-1] if who not in self.arrived]
        head = f"the tile's earlier peers adding their K tiles (flag now {self.value})"
        return head + (": not yet arrived: " + ", ".join(missing[:4]) if missing else ": all arrived")

    def wait_detail(self, w: Waiter) -> str:
        return (f"spins until the flag {'==' if self._op_of(w) == 'eq' else '>='} {w.parity} (the flag is "
                f"{self.value})")

    def _op_of(self, w: Waiter) -> str:
        for x in self._waiters:
            if x.event is w.event:
                return x.op
        return "eq"

    # -- protocol ------------------------------------------------------------------------------
    def arrive_at(self, t: float, amount: int, who: str) -> None:
        """``arrive_inc(amount)``: the red lands in L2 at cycle ``t`` (now or later)."""
        delay = t - self.env.now
        call_at(self.env, delay if delay > 0 else 0.0, self._land, amount + self.delta, who)

    def _land(self, amount: int, who: str) -> None:
        self.value += amount
        self.arrivals_total += 1
        self.arrived.append(who)
        keep = []
        for w in self._waiters:
            if self._holds(w.op, w.target):
                call_at(self.env, self.poll, w.event.succeed)
            else:
                keep.append(w)
        self._waiters = keep

    def _holds(self, op: str, target: int) -> bool:
        return self.value == target if op == "eq" else self.value >= target

    def wait(self, op: str, target: int, who: str):
        """``wait_eq(target)`` (op "eq") or ``wait_lt(target)`` (op "ge": wait while below): None if the
        wait passes at its first poll (the caller spends :attr:`poll` cycles), else an event that fires
        one poll after the flag holds the value."""
        if op not in WAIT_OPS:
            raise ValueError(f"fixup wait op {op!r}: valid: {', '.join(WAIT_OPS)}")
        if self.wait_mutation == WAIT_SKIPPED or self._holds(op, target):
            return None
        ev = self.env.event()
        self._waiters.append(_FixupWait(who, target, op, self.env.now, ev))
        return ev

    def flush(self) -> None:
        """Nothing is deferred inside the flag (arrivals are events): present for the run's end-of-run sweep."""

    def __repr__(self) -> str:
        return f"FixupLock({self.name}, value={self.value}, waiters={len(self._waiters)})"


__all__ = ["FixupLock", "WAIT_OPS"]
