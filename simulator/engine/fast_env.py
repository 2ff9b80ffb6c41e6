"""The fast engine's event loop: SimPy's event order without SimPy's per-event machinery.

The kernel models are written once, as SimPy-style generator processes (``yield env.timeout(d)``,
``yield event``), and run unchanged on either engine. :class:`FastEnv` provides the part of
``simpy.Environment`` they use (``now``, ``timeout``, ``event``, ``schedule``, ``process``, plus
``call_later`` for bare callbacks) and orders events exactly as SimPy does, so that every
same-cycle tie (which load reserves the HBM channel first, which CLC query is answered first)
resolves the same way and results are bit-identical:

* an event is queued under the key ``(time, priority, sequence)``: process starts have priority
  URGENT (0), everything else NORMAL (1), and the sequence number counts ``schedule`` calls, as
  SimPy's event id does;
* a timeout is queued when it is created (SimPy: in ``Timeout.__init__``), a process start when
  the process is created, a barrier's waiter when the barrier schedules it;
* popping an event resumes the one process waiting on it, at once, until that process yields
  again; a process that yields an event already processed carries on at once (SimPy does too).

What it leaves out changes no order: events nobody waits on are never queued (SimPy queues a
finished process's own event, which nothing in the models waits for; skipping it only leaves a
gap in the sequence numbers), and there is no failure propagation (the models never fail an event;
an exception inside a process propagates straight out of :meth:`FastEnv.run`).

Compiled (``fast_env.pxd``), the queue is a binary heap over C arrays of times and keys beside a
list of the events; as plain Python it is ``heapq`` over ``(time, key, event)`` tuples. Both pop
events in the same order (keys are unique).
"""

from __future__ import annotations

from array import array
from heapq import heappop, heappush

from simulator.errors import events_exceeded
from simulator.protocol.clock import EventLoop

#: SimPy's priorities (``simpy.events.URGENT`` / ``NORMAL``).
URGENT = 0
NORMAL = 1

#: The queue key is ``priority << _PRIORITY_SHIFT | sequence``: priority first, then sequence.
_PRIORITY_SHIFT = 56

#: True when this module runs compiled (then the queue holds events, not tuples).
COMPILED = not __file__.endswith(".py")


class FastEvent:
    """An event of :class:`FastEnv`: at most one waiting process, or a function to call."""

    __slots__ = ("env", "proc", "fn", "args", "done", "_ok", "_value", "_t", "_key")

    def __init__(self, env: FastEnv):
        self.env = env
        self.proc = None       # the generator waiting on this event
        self.fn = None         # or a function to call when it fires (``call_later``)
        self.args = ()
        self.done = False      # processed (popped from the queue)
        self._ok = True
        self._value = None
        self._t = 0.0          # queue key: time, then priority << 56 | sequence
        self._key = 0

    @property
    def triggered(self) -> bool:
        return self.done

    def succeed(self, value=None) -> FastEvent:
        """Trigger the event now (``simpy.Event.succeed``)."""
        self._ok = True
        self._value = value
        self.env.schedule(self, NORMAL, 0.0)
        return self


def checkpoint(env, n: int, limit) -> None:
    """Every ``progress_every`` events of either engine's run loop: stop a run past ``limit``
    (``SimulationLimitError``, counting the ``n`` events it processed) and report progress."""
    if limit is not None and n > limit:
        env.events_processed += n
        raise events_exceeded(limit, env.now)
    if env.progress is not None:
        env.progress()


class FastEnv(EventLoop):
    """The subset of ``simpy.Environment`` the kernel models use, with SimPy's event order.

    ``max_events`` stops a run that processes more events (:class:`SimulationLimitError`);
    ``progress`` (no argument) is called every ``progress_every`` events.
    """

    def __init__(self, max_events: int | None = None, progress=None, progress_every: int = 1 << 16) -> None:
        super().__init__()
        self._queue: list = []        # plain Python: a heapq of (time, key, event)
        self._n = 0                   # events queued
        # Compiled: the heap's times and keys (C arrays, through the typed views _tv/_kv) and its
        # events (_queue), all with the same capacity.
        self._times = array("d")
        self._keys = array("q")
        self._tv = self._times
        self._kv = self._keys
        self._seq = 0
        self.events_processed = 0
        self.max_events = max_events
        self.progress = progress
        self.progress_every = progress_every

    def event(self) -> FastEvent:
        return FastEvent(self)

    # -- the queue ---------------------------------------------------------------------------
    def _push(self, ev: FastEvent, t: float, priority: int) -> None:
        self._seq += 1
        key = (priority << _PRIORITY_SHIFT) | self._seq
        ev._t = t
        if COMPILED:
            self._sift_push(ev, t, key)
        else:
            heappush(self._queue, (t, key, ev))
            self._n += 1

    def _pop(self) -> FastEvent:
        if COMPILED:
            return self._sift_pop()
        self._n -= 1
        return heappop(self._queue)[2]

    def _grow(self) -> None:
        """Double the heap's capacity (compiled only)."""
        extra = max(64, len(self._queue))
        # The typed views must let go of the arrays while they grow.
        self._tv = self._kv = None
        self._times.extend(array("d", [0.0]) * extra)
        self._keys.extend(array("q", [0]) * extra)
        self._tv = self._times
        self._kv = self._keys
        self._queue.extend([None] * extra)

    def _sift_push(self, ev: FastEvent, t: float, key: int) -> None:
        """Binary-heap insert by ``(t, key)`` (compiled: C comparisons on the arrays)."""
        if self._n == len(self._queue):
            self._grow()
        times, keys, evs = self._tv, self._kv, self._queue
        pos = self._n
        self._n = pos + 1
        while pos > 0:
            parent = (pos - 1) >> 1
            pt = times[parent]
            if t < pt or (t == pt and key < keys[parent]):
                times[pos] = pt
                keys[pos] = keys[parent]
                evs[pos] = evs[parent]
                pos = parent
            else:
                break
        times[pos] = t
        keys[pos] = key
        evs[pos] = ev

    def _sift_pop(self) -> FastEvent:
        """Remove and return the event with the smallest ``(time, key)``."""
        times, keys, evs = self._tv, self._kv, self._queue
        n = self._n - 1
        self._n = n
        top = evs[0]
        last_t = times[n]
        last_k = keys[n]
        last = evs[n]
        evs[n] = None
        if n == 0:
            return top
        pos = 0
        child = 1
        while child < n:
            right = child + 1
            if right < n and (times[right] < times[child]
                              or (times[right] == times[child] and keys[right] < keys[child])):
                child = right
            ct = times[child]
            if ct < last_t or (ct == last_t and keys[child] < last_k):
                times[pos] = ct
                keys[pos] = keys[child]
                evs[pos] = evs[child]
                pos = child
                child = 2 * pos + 1
            else:
                break
        times[pos] = last_t
        keys[pos] = last_k
        evs[pos] = last
        return top

    # -- scheduling (the simpy.Environment interface) -----------------------------------------
    def schedule(self, event: FastEvent, priority: int = NORMAL, delay: float = 0.0) -> None:
        """Trigger ``event`` ``delay`` cycles from now."""
        self._push(event, self._now + delay, priority)

    def timeout(self, delay: float, value=None) -> FastEvent:
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        ev = FastEvent(self)
        ev._value = value
        self._push(ev, self._now + delay, NORMAL)
        return ev

    def call_later(self, delay: float, fn, args: tuple) -> None:
        """Call ``fn(*args)`` ``delay`` cycles from now (a bare event: no process)."""
        ev = FastEvent(self)
        ev.fn = fn
        ev.args = args
        self._push(ev, self._now + delay, NORMAL)

    def process(self, generator) -> FastEvent:
        """Start a process: it runs up to its first ``yield`` at the current time, before the
        NORMAL events of that time (SimPy's ``Initialize`` event is URGENT)."""
        ev = FastEvent(self)
        ev.proc = generator
        self._push(ev, self._now, URGENT)
        return ev

    def run(self) -> None:
        """Process events until none is left."""
        n = 0
        limit = self.max_events
        every = self.progress_every if (self.progress is not None or limit is not None) else 0
        next_check = every if every else -1
        while self._n:
            ev = self._pop()
            self._now = ev._t
            n += 1
            if n == next_check:
                next_check += every
                checkpoint(self, n, limit)
            ev.done = True
            proc = ev.proc
            if proc is not None:
                # Resume the waiting process until it waits on an event not processed yet.
                while True:
                    try:
                        nxt = next(proc)       # = proc.send(None)
                    except StopIteration:
                        break
                    if not nxt.done:
                        nxt.proc = proc
                        break
            elif ev.fn is not None:
                ev.fn(*ev.args)
        self.events_processed += n
