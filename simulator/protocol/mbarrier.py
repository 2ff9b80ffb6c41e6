"""mbarrier, named barrier and cluster barrier: the synchronisation primitives of the model.

An :class:`MBarrier` follows the PTX ``mbarrier`` object:

* it has an expected arrival count, a *pending* arrival count and a pending transaction count
  (bytes, ``expect_tx`` adds, ``complete_tx`` subtracts; it may go negative transiently when bytes
  land before the expectation is posted);
* the current phase completes when both the pending arrivals and the pending bytes reach zero;
  then the phase number advances, pending arrivals reset to the expected count and pending
  bytes to zero. Arrivals beyond what a phase needs count towards the next phase, exactly as
  per-thread arrivals would in hardware;
* waiting is on a phase *parity*: ``try_wait.parity(P)`` succeeds iff the phase with parity ``P``
  has completed, i.e. the current (incomplete) phase has the other parity. A fresh barrier is in
  phase 0, so a wait on parity 1 passes at once: that is why producers start with phase 1
  (CUTLASS's producer start state).

The model adds two things hardware does not have, both for diagnosis:

* every waiter is registered with *who* waits, since when and for which parity, so that a run
  whose event queue empties while roles still wait can be reported as a deadlock
  (:mod:`simulator.protocol.deadlock`);
* an arrival may say which *round* (phase number) the arriver believes it is arriving for. An
  arrival that lands in a different phase is a protocol violation (an arrival count that is too
  small lets a phase complete early and the surplus spill into the next one): it is recorded in
  :attr:`MBarrier.violations` rather than silently absorbed.

Two mutation switches serve ``wsim check`` (:mod:`simulator.protocol.knobs` sets them; both off by
default, one integer test each on the paths they touch): ``wait_mutation`` (1: every wait passes at
once, a skipped wait; 2: waits on the other parity) and ``tx_override`` (>= 0: the bytes every
expect-tx posts instead of the caller's).

Waits that are already satisfied cost no simulation event: :meth:`MBarrier.wait` returns
``None`` and the caller carries on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import simpy
from simpy.events import NORMAL, Event

from simulator.protocol.clock import EventLoop

#: How many protocol violations one barrier keeps (the count goes on).
MAX_RECORDED_VIOLATIONS = 8
#: ``MBarrier.wait_mutation`` values: the seed's wait, a skipped wait, a wait on the other parity.
WAIT_AS_IS, WAIT_SKIPPED, WAIT_WRONG_PARITY = 0, 1, 2


class Waiter(NamedTuple):
    """One role blocked on a barrier (kept for deadlock reports)."""

    who: str          # e.g. "CTA3.0/MMA"
    parity: int
    since: float      # simulation time (cycles) the wait began
    event: simpy.Event


class _Wait:
    """A blocked role in the barrier's own bookkeeping (``woken``: its wake-up is scheduled)."""

    __slots__ = ("who", "parity", "since", "event", "woken")

    def __init__(self, who: str, parity: int, since: float, event):
        self.who = who
        self.parity = parity
        self.since = since
        self.event = event
        self.woken = False


class _LaterOp:
    """An arrival (``kind`` 0: ``amount`` arrivals) or transaction bytes (``kind`` 1: ``amount``
    bytes) known now that takes effect at cycle ``t``."""

    __slots__ = ("t", "kind", "amount", "who", "round")

    def __init__(self, t: float, kind: int, amount: int, who: str, round: int | None):
        self.t = t
        self.kind = kind
        self.amount = amount
        self.who = who
        self.round = round


@dataclass(frozen=True, slots=True)
class Violation:
    barrier: str
    time: float
    who: str
    arrived_for_phase: int
    barrier_phase: int

    def describe(self) -> str:
        return (f"{self.barrier}: {self.who} arrived for phase {self.arrived_for_phase} at cycle {self.time:.0f} "
                f"but the barrier was in phase {self.barrier_phase} (arrival count too small, or a skipped wait)")


class MBarrier:
    """A shared-memory mbarrier of one CTA.

    ``owed_by`` describes which roles arrive on it (for reports), e.g.
    ``"MainloopLoad (arrive_and_expect_tx) + TMA bytes"``.
    """

    __slots__ = ("env", "_loop", "name", "expected", "_pending", "_tx", "_phase", "_waiters", "owed_by",
                 "wake_latency", "violations", "violation_count", "arrivals_total", "tx_total",
                 "phase_done_at", "_future", "_op_time", "_unwoken", "wait_mutation", "tx_override")

    def __init__(self, env: simpy.Environment, name: str, count: int, *, owed_by: str = "",
                 wake_latency: float = 0.0):
        if count <= 0:
            raise ValueError(f"mbarrier {name}: arrival count {count} must be positive (PTX mbarrier.init)")
        self.env = env
        # The fast engine's loop, reached directly when compiled (SimPy's environment: None).
        self._loop = env if isinstance(env, EventLoop) else None
        self.name = name
        self.expected = count
        self._pending = count
        self._tx = 0
        self._phase = 0
        self._waiters: list[_Wait] = []
        self.owed_by = owed_by
        self.wake_latency = wake_latency
        self.violations: list[Violation] = []
        self.violation_count = 0
        self.arrivals_total = 0
        self.tx_total = 0
        self.phase_done_at: float = -1.0
        # Arrivals and bytes known now that take effect at a later time (a TMA load's landing, an
        # MMA commit at completion), in the order they take effect (by time, then in the order
        # they were recorded). They are applied whenever the barrier is next used, and a waiter is
        # woken at the predicted completion time, so they cost no event of their own.
        self._future: list[_LaterOp] = []
        self._op_time: float | None = None
        self._unwoken = 0     # waiters that nothing has scheduled to wake yet
        self.wait_mutation = WAIT_AS_IS
        self.tx_override = -1

    # -- state (read from outside: later operations whose time has come are applied first) --
    @property
    def phase(self) -> int:
        """Completed phases so far (the current phase's number)."""
        if self._future:
            self._sync()
        return self._phase

    @property
    def pending(self) -> int:
        """Arrivals the current phase still needs."""
        if self._future:
            self._sync()
        return self._pending

    @property
    def tx(self) -> int:
        """Transaction bytes the current phase still expects (negative: landed before expected)."""
        if self._future:
            self._sync()
        return self._tx

    def test_wait(self, parity: int) -> bool:
        """``mbarrier.test_wait.parity``: has the phase of this parity completed?"""
        if self._future:
            self._sync()
        return (self._phase & 1) != parity

    @property
    def waiters(self) -> tuple[Waiter, ...]:
        """Roles blocked on this barrier that nothing is going to wake yet."""
        return tuple(Waiter(w.who, w.parity, w.since, w.event) for w in self._waiters if not w.woken)

    # -- the event loop ----------------------------------------------------------------------
    def _time(self) -> float:
        loop = self._loop
        return loop._now if loop is not None else self.env._now

    def _new_event(self):
        loop = self._loop
        return loop.event() if loop is not None else self.env.event()

    def _wake(self, ev, delay: float) -> None:
        """Trigger a waiter's event ``delay`` cycles from now (the waiting role resumes then)."""
        loop = self._loop
        if loop is not None:
            loop.schedule(ev, NORMAL, delay)
        else:
            ev._ok = True
            ev._value = None
            self.env.schedule(ev, NORMAL, delay)

    # -- arrivals --------------------------------------------------------------------------
    def arrive(self, count: int = 1, who: str = "", round: int | None = None) -> None:
        """``count`` arrivals (a warp's 32 threads arrive as ``count=32``)."""
        if self._future:
            self._sync()
        self._arrive_now(count, who, round)

    def _arrive_now(self, count: int, who: str, round: int | None) -> None:
        if round is not None and round != self._phase:
            self._violation(who, round)
        self.arrivals_total += count
        pending = self._pending
        if count < pending:                      # the common case: the phase still needs more
            self._pending = pending - count
            return
        while count > 0:
            take = min(count, self._pending)
            self._pending -= take
            count -= take
            if self._pending == 0 and self._tx == 0:
                self._complete_phase()
                if count > 0 and round is not None:
                    # These arrivals were meant for the phase that just completed.
                    self._violation(who, round)
            elif count > 0:
                # The phase still waits for bytes: surplus arrivals cannot move to the next phase
                # before this one completes, so they are lost to it (in hardware, arriving on a
                # barrier with a pending count of zero is undefined behaviour). Record it.
                self._violation(who, self._phase + 1)
                self._pending = 0
                count = 0

    def expect_tx(self, nbytes: int) -> None:
        if self._future:
            self._sync()
        if self.tx_override >= 0:
            nbytes = self.tx_override
        self._tx += nbytes
        if self._unwoken:
            self._schedule_waiters()

    def arrive_and_expect_tx(self, nbytes: int, count: int = 1, who: str = "",
                             round: int | None = None) -> None:
        if self._future:
            self._sync()
        if self.tx_override >= 0:
            nbytes = self.tx_override
        self._tx += nbytes
        self._arrive_now(count, who, round)
        if self._unwoken and self._future:
            self._schedule_waiters()

    def complete_tx(self, nbytes: int) -> None:
        """Bytes landed (TMA, CLC response): the hardware's complete-tx on this barrier."""
        if self._future:
            self._sync()
        self._complete_tx_now(nbytes)

    def _complete_tx_now(self, nbytes: int) -> None:
        self._tx -= nbytes
        self.tx_total += nbytes
        if self._tx == 0 and self._pending == 0:
            self._complete_phase()

    # -- arrivals and bytes that take effect later ----------------------------------------
    def arrive_at(self, t: float, count: int = 1, who: str = "", round: int | None = None) -> None:
        """``count`` arrivals that happen at cycle ``t`` (now or later)."""
        if t <= self._time():
            self.arrive(count, who, round)
            return
        self._later(_LaterOp(t, 0, count, who, round))

    def complete_tx_at(self, t: float, nbytes: int) -> None:
        """``nbytes`` that land at cycle ``t`` (now or later)."""
        if t <= self._time():
            self.complete_tx(nbytes)
            return
        self._later(_LaterOp(t, 1, nbytes, "", None))

    def _later(self, op: _LaterOp) -> None:
        """Record ``op`` after every operation that takes effect at its time or earlier."""
        f = self._future
        i = len(f)
        t = op.t
        while i > 0:
            prev = f[i - 1]
            if prev.t <= t:
                break
            i -= 1
        f.insert(i, op)
        if self._unwoken:
            self._schedule_waiters()

    def _sync(self, until: float | None = None) -> None:
        """Apply the later arrivals and bytes whose time has come, in time order."""
        f = self._future
        now = self._time() if until is None else until
        while f:
            op = f[0]
            if op.t > now:
                break
            del f[0]
            self._op_time = op.t            # the operation happens at its own time
            if op.kind == 0:
                self._arrive_now(op.amount, op.who, op.round)
            else:
                self._complete_tx_now(op.amount)
        self._op_time = None
        if self._unwoken and f:
            self._schedule_waiters()

    def flush(self) -> None:
        """Apply every later arrival and byte (end of a run, before a deadlock analysis)."""
        self._sync(float("inf"))

    def _predict(self) -> float | None:
        """When the current phase will complete from the later operations known now (or None)."""
        p, x = self._pending, self._tx
        for op in self._future:
            if op.kind == 0:
                p -= op.amount
            else:
                x -= op.amount
            if p <= 0 and x == 0:
                return op.t
        return None

    def _schedule_waiters(self) -> None:
        """Wake the waiters of the current phase at its predicted completion (once each)."""
        cur = self._phase & 1
        predicted = False
        t = 0.0
        for w in self._waiters:
            if w.parity == cur and not w.woken:
                if not predicted:
                    when = self._predict()
                    if when is None:
                        return
                    t = when
                    predicted = True
                self._wake(w.event, max(0.0, t + self.wake_latency - self._time()))
                w.woken = True
                self._unwoken -= 1

    def _complete_phase(self) -> None:
        done = self._phase & 1
        self._phase += 1
        self._pending = self.expected
        self._tx = 0
        now = self._time()
        at = now if self._op_time is None else self._op_time
        self.phase_done_at = at
        waiters = self._waiters
        if waiters:
            keep = None
            delay = max(0.0, at + self.wake_latency - now)
            for w in waiters:
                if w.parity == done:
                    if not w.woken:          # not already woken at the predicted completion
                        self._wake(w.event, delay)
                        self._unwoken -= 1
                else:
                    if keep is None:
                        keep = []
                    keep.append(w)
            self._waiters = keep if keep is not None else []

    def _violation(self, who: str, round: int) -> None:
        self.violation_count += 1
        if len(self.violations) < MAX_RECORDED_VIOLATIONS:
            self.violations.append(Violation(self.name, self.env.now, who, round, self._phase))

    # -- waiting ----------------------------------------------------------------------------
    def wait(self, parity: int, who: str) -> simpy.Event | None:
        """``mbarrier.try_wait.parity`` in a loop: ``None`` if already satisfied, else an event."""
        if self._future:
            self._sync()
        if self.wait_mutation:
            if self.wait_mutation == WAIT_SKIPPED:
                return None
            parity ^= 1
        if (self._phase & 1) != parity:
            return None
        ev = self._new_event()
        self._waiters.append(_Wait(who, parity, self._time(), ev))
        self._unwoken += 1
        if self._future:
            self._schedule_waiters()
        return ev

    def __repr__(self) -> str:
        return (f"MBarrier({self.name}, phase={self._phase}, pending={self._pending}/{self.expected}, "
                f"tx={self._tx}, waiters={len(self._waiters)})")


class NamedBarrier:
    """``bar.sync``/``bar.arrive`` on a hardware named barrier of one CTA.

    ``count`` threads must arrive; those that called :meth:`arrive_and_wait` are released when the
    last one arrives. Reusable: it resets after each release. Threads beyond ``count`` in one
    generation count towards the next one (their warps would be released by a later use, or hang):
    recorded as a protocol violation. ``wait_mutation`` = 1 (``wsim check``): arrive without waiting.
    """

    __slots__ = ("env", "name", "expected", "pending", "_waiters", "owed_by", "generation", "wait_mutation",
                 "violations", "violation_count")

    def __init__(self, env: simpy.Environment, name: str, count: int, *, owed_by: str = ""):
        if count <= 0:
            raise ValueError(f"named barrier {name}: thread count {count} must be positive")
        self.env = env
        self.name = name
        self.expected = count
        self.pending = count
        self._waiters: list[Waiter] = []
        self.owed_by = owed_by
        self.generation = 0
        self.wait_mutation = WAIT_AS_IS
        self.violations: list[Violation] = []
        self.violation_count = 0

    @property
    def waiters(self) -> tuple[Waiter, ...]:
        return tuple(Waiter(*w) for w in self._waiters)

    def arrive(self, count: int, who: str = "") -> None:
        self.pending -= count
        if self.pending <= 0:
            surplus = -self.pending
            self.pending = self.expected
            self.generation += 1
            for w in self._waiters:
                w[3].succeed()
            self._waiters = []
            if surplus:
                # These threads belong to the generation that just completed.
                self.pending -= surplus
                self.violation_count += 1
                if len(self.violations) < MAX_RECORDED_VIOLATIONS:
                    self.violations.append(Violation(self.name, self.env.now, who, self.generation - 1,
                                                     self.generation))

    def arrive_and_wait(self, count: int, who: str) -> simpy.Event | None:
        if self.wait_mutation or self.pending - count <= 0:
            self.arrive(count, who)
            return None
        ev = self.env.event()
        self._waiters.append((who, self.generation & 1, self.env.now, ev))
        self.pending -= count
        return ev

    def __repr__(self) -> str:
        return f"NamedBarrier({self.name}, pending={self.pending}/{self.expected}, waiters={len(self._waiters)})"


class ClusterBarrier(MBarrier):
    """``cutlass::arch::ClusterBarrier``: an mbarrier that CTAs of the cluster arrive on remotely.

    Remote arrivals are delayed by ``remote_latency`` cycles (SM-to-SM distributed shared memory).
    """

    __slots__ = ("remote_latency",)

    def __init__(self, env: simpy.Environment, name: str, count: int, *, owed_by: str = "",
                 remote_latency: float = 0.0, wake_latency: float = 0.0):
        super().__init__(env, name, count, owed_by=owed_by, wake_latency=wake_latency)
        self.remote_latency = remote_latency

    def arrive_remote(self, count: int = 1, *, who: str = "", round: int | None = None) -> None:
        """An arrival from another CTA: it lands ``remote_latency`` cycles from now."""
        if self.remote_latency <= 0:
            self.arrive(count, who=who, round=round)
            return
        call_at(self.env, self.remote_latency, _arrive_later, self, count, who, round)


def _arrive_later(bar: MBarrier, count: int, who: str, round: int | None) -> None:
    bar.arrive(count, who=who, round=round)


class _Call(Event):
    """A bare event that runs one function when it fires (no process, no closure)."""

    def __init__(self, env: simpy.Environment, fn, args: tuple):
        self.env = env
        self.callbacks = [self._fire]
        self._ok = True
        self._value = None
        self._fn = fn
        self._args = args

    def _fire(self, _ev) -> None:
        self._fn(*self._args)


def call_at(env: simpy.Environment, delay: float, fn, *args) -> None:
    """Run ``fn(*args)`` ``delay`` cycles from now with one bare event (no process)."""
    if isinstance(env, EventLoop):                     # the fast engine's own bare event
        env.call_later(delay if delay > 0 else 0.0, fn, args)
        return
    env.schedule(_Call(env, fn, args), NORMAL, delay if delay > 0 else 0.0)
