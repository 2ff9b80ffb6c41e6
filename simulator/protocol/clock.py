"""The part of an event loop the model calls directly: the current time, new events, scheduling.

A barrier wakes the roles that wait on it by scheduling their events; it reads the time to stamp
waits and to apply arrivals recorded for later. SimPy's ``Environment`` provides that as it is
(``_now``, ``event()``, ``schedule()``). The fast engine's loop derives from :class:`EventLoop`, so
that the compiled barriers (``mbarrier.pxd``) reach it with C calls instead of attribute lookups.
"""

from __future__ import annotations

#: SimPy's NORMAL priority (``simpy.events.NORMAL``): everything but process starts.
NORMAL = 1


class EventLoop:
    """An event loop as the barriers see it (subclassed by ``simulator.engine.fast_env.FastEnv``)."""

    def __init__(self) -> None:
        self._now = 0.0

    @property
    def now(self) -> float:
        return self._now

    def event(self):
        """A new, untriggered event a process can wait on."""
        raise NotImplementedError

    def schedule(self, event, priority: int = NORMAL, delay: float = 0.0) -> None:
        """Trigger ``event`` ``delay`` cycles from now (``priority``: SimPy's)."""
        raise NotImplementedError

    def timeout(self, delay: float, value=None):
        """A new event that triggers ``delay`` cycles from now."""
        raise NotImplementedError

    def call_later(self, delay: float, fn, args: tuple) -> None:
        """Call ``fn(*args)`` ``delay`` cycles from now (one bare event, no process)."""
        raise NotImplementedError
