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

Compiled (``fast_env.pxd``), the queue is a binary heap of the events themselves compared on
typed fields; as plain Python it is ``heapq`` over ``(time, key, event)`` tuples. Both pop events
in the same order.
"""

from __future__ import annotations

from heapq import heappop, heappush

from simulator.errors import SimulationLimitError
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


class FastEnv(EventLoop):
    """The subset of ``simpy.Environment`` the kernel models use, with SimPy's event order.

    ``max_events`` stops a run that processes more events (:class:`SimulationLimitError`);
    ``progress`` (no argument) is called every ``progress_every`` events.
    """

    def __init__(self, max_events: int | None = None, progress=None, progress_every: int = 1 << 16) -> None:
        super().__init__()
        self._queue: list = []
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
        ev._t = t
        ev._key = (priority << _PRIORITY_SHIFT) | self._seq
        if COMPILED:
            self._sift_push(ev)
        else:
            heappush(self._queue, (t, ev._key, ev))

    def _pop(self) -> FastEvent:
        if COMPILED:
            return self._sift_pop()
        return heappop(self._queue)[2]

    def _sift_push(self, ev: FastEvent) -> None:
        """Binary-heap insert of ``ev`` by ``(ev._t, ev._key)`` (compiled: C comparisons)."""
        q = self._queue
        q.append(ev)
        pos = len(q) - 1
        while pos > 0:
            parent_pos = (pos - 1) >> 1
            parent = q[parent_pos]
            if ev._t < parent._t or (ev._t == parent._t and ev._key < parent._key):
                q[pos] = parent
                pos = parent_pos
            else:
                break
        q[pos] = ev

    def _sift_pop(self) -> FastEvent:
        """Remove and return the heap's smallest event."""
        q = self._queue
        last = q.pop()
        n = len(q)
        if n == 0:
            return last
        top = q[0]
        pos = 0
        child = 1
        while child < n:
            c = q[child]
            right = child + 1
            if right < n:
                r = q[right]
                if r._t < c._t or (r._t == c._t and r._key < c._key):
                    child = right
                    c = r
            if c._t < last._t or (c._t == last._t and c._key < last._key):
                q[pos] = c
                pos = child
                child = 2 * pos + 1
            else:
                break
        q[pos] = last
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
        queue = self._queue
        n = 0
        limit = self.max_events
        every = self.progress_every if (self.progress is not None or limit is not None) else 0
        next_check = every if every else -1
        while queue:
            ev = self._pop()
            self._now = ev._t
            n += 1
            if n == next_check:
                next_check += every
                if limit is not None and n > limit:
                    self.events_processed += n
                    raise SimulationLimitError(
                        f"max_events={limit}: the run processed more events than allowed and was stopped "
                        f"at cycle {self._now:,.0f} (raise --max-events, or simulate a smaller problem)")
                if self.progress is not None:
                    self.progress()
            ev.done = True
            proc = ev.proc
            if proc is not None:
                # Resume the waiting process until it waits on an event not processed yet.
                while True:
                    try:
                        nxt = proc.send(None)
                    except StopIteration:
                        break
                    if not nxt.done:
                        nxt.proc = proc
                        break
            elif ev.fn is not None:
                ev.fn(*ev.args)
        self.events_processed += n
