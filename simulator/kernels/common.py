"""Pieces every kernel model shares: run statistics and the warp-role process base class."""

from __future__ import annotations

from simulator.protocol.clock import EventLoop

NUM_THREADS_PER_WARP = 32


class RunStats:
    """Counters every role updates whether or not a trace is kept."""

    def __init__(self) -> None:
        self.wait_cycles: dict[tuple[str, str], float] = {}   # (role, barrier kind) -> cycles
        self.role_cycles: dict[str, float] = {}              # role -> sum of (end - start) over CTAs
        self.role_count: dict[str, int] = {}
        self.tiles_done: list[tuple[int, int, int, int]] = []   # (m, n, l, cta) per epilogue tile
        self.mma_kblocks = 0
        self.tc_busy_cycles = 0.0
        self.tx_expected = 0
        self.tx_landed = 0
        self.clc_queries = 0
        self.end_cycle = 0.0

    def add_wait(self, role: str, barrier: str, cycles: float) -> None:
        key = (role, barrier)
        self.wait_cycles[key] = self.wait_cycles.get(key, 0.0) + cycles



class Cluster:
    """One resident cluster: its index, its first SM and its CTAs (filled in by the kernel model)."""

    def __init__(self, index: int, first_sm: int):
        self.index = index
        self.first_sm = first_sm
        self.ctas: list = []
        # The grid's cluster id it runs as (its first tile): its index, unless it launched late
        # under CLC and took the next cluster not yet launched (simulator.kernels.launch).
        self.launch_id = index


class _WaitTotal:
    """Cycles one role has waited on one barrier kind (a mutable cell: one lookup per wait)."""

    __slots__ = ("cycles",)

    def __init__(self) -> None:
        self.cycles = 0.0


class RoleBase:
    """Base of the warp-role processes: waiting with bookkeeping, tracing, lifetime accounting.

    A subclass sets ``name`` (the seed's role name) and ``threads`` (how many threads arrive when
    the role arrives on a barrier), and implements ``run()`` as a SimPy generator. ``self.cta``
    must provide ``sm``, ``rank``, ``cluster.index`` and ``kernel`` (with ``env``, ``stats``,
    ``trace`` and ``traced(sm)``).
    """

    name = "Role"
    threads = NUM_THREADS_PER_WARP

    def __init__(self, cta):
        self.cta = cta
        self.k = cta.kernel
        self.env = cta.env
        self._loop = self.env if isinstance(self.env, EventLoop) else None   # the fast engine's loop
        self.who = f"CTA{cta.cluster.index}.{cta.rank}/{self.name}"
        self.tr = self.k.trace if (self.k.trace is not None and self.k.traced(cta.sm)) else None
        self.stats = self.k.stats
        self.done = False
        self.start_cycle = 0.0
        # Statistics key; a model may refine it (e.g. the idle MMA warp of a 2-SM peer CTA).
        self.stat_name = self.name
        # Wait cycles per barrier kind, merged into the run statistics when the role finishes.
        self.wait_acc: dict[str, _WaitTotal] = {}
        # The kernel's race detectors (simulator.protocol.races), or None (the default: no hook runs).
        self.races = getattr(self.k, "races", None)

    # ``env.now`` and ``env.timeout`` for the roles' hot loops: compiled, they go straight to the
    # fast engine's loop instead of through a Python attribute lookup.
    def _time(self) -> float:
        """The current cycle (``env.now``)."""
        loop = self._loop
        return loop._now if loop is not None else self.env._now

    def _sleep(self, delay: float):
        """``env.timeout(delay)``: yield it to resume ``delay`` cycles from now."""
        loop = self._loop
        return loop.timeout(delay) if loop is not None else self.env.timeout(delay)

    def _waited(self, barrier: str, stage: int, t0: float, tile=None, k_block: int = -1) -> None:
        """Account a finished wait (and trace it): ``barrier`` is the barrier kind, e.g. ``mainloop.full``."""
        loop = self._loop
        now = loop._now if loop is not None else self.env._now
        acc = self.wait_acc.get(barrier)
        if acc is None:
            acc = self.wait_acc[barrier] = _WaitTotal()
        acc.cycles += now - t0
        if self.tr is not None and now > t0:
            c = self.cta
            self.tr.add(c.sm, c.rank, c.cluster.index, self.name, "wait", t0, now, tile=tile,
                        k_block=k_block, stage=stage, barrier=barrier)

    def block(self, ev, barrier: str, stage: int, tile=None, k_block: int = -1):
        """Yield ``ev`` (a barrier wait) if the wait is not already satisfied, and account it.

        For waits off the per-K-block hot path; the hot loops inline the same three lines."""
        if ev is not None:
            t0 = self.env.now
            yield ev
            self._waited(barrier, stage, t0, tile, k_block)

    def span(self, kind: str, start: float, end: float, **kw) -> None:
        if self.tr is not None:
            c = self.cta
            self.tr.add(c.sm, c.rank, c.cluster.index, self.name, kind, start, end, **kw)

    def run(self):
        raise NotImplementedError

    def process(self):
        self.start_cycle = self.env.now
        yield from self.run()
        self.done = True
        end = self.env.now
        s = self.stats
        key = self.stat_name
        for barrier, acc in self.wait_acc.items():
            s.add_wait(key, barrier, acc.cycles)
        s.role_cycles[key] = s.role_cycles.get(key, 0.0) + (end - self.start_cycle)
        s.role_count[key] = s.role_count.get(key, 0) + 1
        if end > s.end_cycle:
            s.end_cycle = end


class ConfigSnapshot:
    """A config's fields and derived properties evaluated once, as plain attributes.

    The config dataclasses compute derived values (tile counts, stage bytes, ...) in properties,
    which is clear but too slow for the simulator's inner loops; a kernel model reads this copy.
    """

    def __init__(self, cfg) -> None:
        from dataclasses import fields as dc_fields

        self.config = cfg
        for f in dc_fields(cfg):
            setattr(self, f.name, getattr(cfg, f.name))
        for name in dir(type(cfg)):
            if name.startswith("_") or name in self.__dict__:
                continue
            if isinstance(getattr(type(cfg), name, None), property):
                try:
                    setattr(self, name, getattr(cfg, name))
                except Exception:  # noqa: BLE001 - a property that does not apply to this config
                    pass
