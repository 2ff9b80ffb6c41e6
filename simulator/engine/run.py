"""Run a kernel model: build it, run the event loop to quiescence, and collect the result.

``simulate(cfg, arch)`` is the one entry point the CLI, the plots and the tests use. It picks the
kernel model from the config type (``Sm100GemmConfig`` -> the seed's SM100 kernel,
``Sm90GemmConfig`` -> the Hopper twin), validates the config with its ``can_implement``, runs the
event loop until no event is left, and then either reports a deadlock (roles still waiting) or
the predicted time, throughput and where each role spent its time.

Two engines run the same model code (the role processes of ``simulator/kernels``) and give
bit-identical results (``SimResult.fingerprint``; ``tests/test_engine_differential.py``):

* ``"fast"`` (default): :class:`~simulator.engine.fast_env.FastEnv`, an event loop with SimPy's
  event order and none of its per-event machinery, over the compiled core when it is built
  (``simulator/_native.py``; ``result.engine_note`` says which core ran, and why not the compiled one);
* ``"reference"``: SimPy itself (:class:`ReferenceEnvironment`), the readable baseline.
"""

from __future__ import annotations

import gc
import time
from dataclasses import asdict, dataclass, field
from heapq import heappop
from typing import Any

import simpy

from simulator import _native
from simulator.engine.fast_env import FastEnv, checkpoint
from simulator.engine.trace import Trace
from simulator.errors import ConfigError, SimulationLimitError
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec
from simulator.machine.constants import Constant
from simulator.machine.memory import MemorySystem, MemoryTiming
from simulator.protocol.deadlock import DeadlockReport, analyze, barrier_kind
from simulator.protocol.knobs import ProtocolKnobs

#: Width of the bins HBM traffic is counted in for the bandwidth counter track (cycles).
HBM_COUNTER_BIN_CYCLES = 2000.0


@dataclass
class RoleTime:
    role: str
    ctas: int
    active_fraction: float            # role lifetime / kernel time, averaged over CTAs
    wait_fraction: dict[str, float]   # barrier kind -> fraction of kernel time, averaged over CTAs

    @property
    def total_wait_fraction(self) -> float:
        return sum(self.wait_fraction.values())

    @property
    def busy_fraction(self) -> float:
        return max(0.0, self.active_fraction - self.total_wait_fraction)


@dataclass
class SimResult:
    arch: ArchSpec
    config: Any
    knobs: ProtocolKnobs
    cycles: float                     # makespan of the CTAs (first start to last role exit)
    time_ns: float                    # cycles / clock + launch overhead
    launch_overhead_ns: float
    flops: int
    tflops: float
    peak_tflops: float
    hbm_read_bytes: int
    hbm_write_bytes: int
    compulsory_bytes: int
    l2_hit_rate: float
    tensor_core_utilization: float
    role_times: list[RoleTime]
    tiles_expected: int
    tiles_done: list[tuple[int, int, int, int]]
    tx_expected: int
    tx_landed: int
    clc_queries: int
    deadlock: DeadlockReport | None
    violations: list[str]
    violation_count: int
    constants: tuple[Constant, ...]
    timing_notes: tuple[str, ...]
    events: int
    wall_s: float
    trace: Trace | None = None
    meta: dict = field(default_factory=dict)
    engine: str = "reference"         # the engine that ran: "fast" or "reference"
    engine_note: str = ""             # how it ran, where that matters (e.g. fast engine without its compiled core)
    l2_hits: int = 0
    l2_misses: int = 0
    role_cycles: dict = field(default_factory=dict)   # role -> lifetime cycles summed over CTAs
    wait_cycles: dict = field(default_factory=dict)   # (role, barrier kind) -> wait cycles summed over CTAs
    tc_busy_cycles: float = 0.0
    l2_load_bytes: int = 0            # bytes of every TMA load (L2 -> SM traffic, hits and misses)

    @property
    def ok(self) -> bool:
        return self.deadlock is None and self.violation_count == 0

    @property
    def peak_fraction(self) -> float:
        return self.tflops / self.peak_tflops if self.peak_tflops else 0.0

    @property
    def hbm_bytes(self) -> int:
        return self.hbm_read_bytes + self.hbm_write_bytes

    def fingerprint(self) -> dict:
        """Everything two engines must agree on exactly for the same launch: time, memory traffic,
        L2 hits, every role's lifetime and wait cycles per barrier, the tiles in completion order,
        transaction bytes, CLC queries, violations and the deadlock report."""
        return {
            "cycles": self.cycles, "time_ns": self.time_ns,
            "hbm_read_bytes": self.hbm_read_bytes, "hbm_write_bytes": self.hbm_write_bytes,
            "l2_hits": self.l2_hits, "l2_misses": self.l2_misses,
            "role_cycles": sorted(self.role_cycles.items()), "wait_cycles": sorted(self.wait_cycles.items()),
            "tc_busy_cycles": self.tc_busy_cycles, "tiles_done": list(self.tiles_done),
            "tx_expected": self.tx_expected, "tx_landed": self.tx_landed, "clc_queries": self.clc_queries,
            "violation_count": self.violation_count, "violations": list(self.violations),
            "deadlock": self.deadlock.to_dict() if self.deadlock is not None else None,
        }

    def tile_check(self) -> tuple[int, int]:
        """(tiles computed once, tiles computed more than once) over (m, n, l, half) work units."""
        seen: dict[tuple, int] = {}
        for t in self.tiles_done:
            seen[t] = seen.get(t, 0) + 1
        return sum(1 for v in seen.values() if v == 1), sum(1 for v in seen.values() if v > 1)

    def to_dict(self) -> dict:
        return {
            "arch": self.arch.name,
            "config": asdict(self.config),
            "knobs": self.knobs.describe(),
            "ok": self.ok,
            "deadlock": self.deadlock.to_dict() if self.deadlock else None,
            "violations": self.violations,
            "violation_count": self.violation_count,
            "cycles": self.cycles,
            "time_ns": self.time_ns,
            "launch_overhead_ns": self.launch_overhead_ns,
            "flops": self.flops,
            "tflops": self.tflops,
            "peak_tflops": self.peak_tflops,
            "peak_fraction": self.peak_fraction,
            "hbm_read_bytes": self.hbm_read_bytes,
            "hbm_write_bytes": self.hbm_write_bytes,
            "compulsory_bytes": self.compulsory_bytes,
            "l2_hit_rate": self.l2_hit_rate,
            "tensor_core_utilization": self.tensor_core_utilization,
            "roles": {r.role: {"ctas": r.ctas, "active": r.active_fraction, "busy": r.busy_fraction,
                               "wait": r.wait_fraction} for r in self.role_times},
            "tiles_expected": self.tiles_expected,
            "tiles_done": len(self.tiles_done),
            "clc_queries": self.clc_queries,
            "constants": [{"name": c.name, "value": c.value, "unit": c.unit, "kind": c.kind, "source": c.source}
                          for c in self.constants],
            "timing_notes": list(self.timing_notes),
            "events": self.events,
            "wall_s": self.wall_s,
            "engine": self.engine,
            "engine_note": self.engine_note,
        }


def _kernel_class(cfg):
    if isinstance(cfg, Sm100GemmConfig):
        from simulator.kernels.sm100_tma_ws import Sm100GemmTmaWarpSpecialized
        return Sm100GemmTmaWarpSpecialized
    if isinstance(cfg, Sm90GemmConfig):
        from simulator.kernels.sm90_tma_ws import Sm90GemmTmaWarpSpecialized
        return Sm90GemmTmaWarpSpecialized
    raise ConfigError(f"config of type {type(cfg).__name__}: expected Sm100GemmConfig or Sm90GemmConfig")


def default_arch_for(cfg) -> ArchSpec:
    return ArchSpec.h200() if isinstance(cfg, Sm90GemmConfig) else ArchSpec.b200()


class ReferenceEnvironment(simpy.Environment):
    """SimPy's environment with a tighter ``run()`` loop until the queue is empty.

    Same semantics as ``Environment.run()`` without ``until``: pop the next event, run its
    callbacks, re-raise a failed event nobody defused. It only drops the per-event method call
    and exception-handler set-up of ``step()``, and counts the events it processes.
    """

    def __init__(self, max_events: int | None = None, progress=None, progress_every: int = 1 << 16) -> None:
        super().__init__()
        self.events_processed = 0
        self.max_events = max_events
        self.progress = progress          # called every ``progress_every`` events (no argument)
        self.progress_every = progress_every

    def run(self, until=None):  # noqa: D401 - same contract as simpy.Environment.run
        if until is not None:
            return super().run(until)
        queue = self._queue
        pop = heappop
        n = 0
        limit = self.max_events
        every = self.progress_every if (self.progress is not None or limit is not None) else 0
        next_check = every if every else -1
        while queue:
            self._now, _, _, event = pop(queue)
            n += 1
            if n == next_check:
                next_check += every
                checkpoint(self, n, limit)
            callbacks, event.callbacks = event.callbacks, None
            for callback in callbacks:
                callback(event)
            if not event._ok and not hasattr(event, "_defused"):
                self.events_processed += n
                exc = type(event._value)(*event._value.args)
                exc.__cause__ = event._value
                raise exc
        self.events_processed += n
        return None


#: Default event budget of one run (``simulate(max_events=...)``, ``wsim simulate --max-events``).
DEFAULT_MAX_EVENTS = 50_000_000


def estimate_events(cfg) -> int:
    """A rough count (within ~2x) of the events simulating resolved ``cfg`` takes, before running it.

    Counted per CTA K-block (loader and MMA/consumer wake-ups), per epilogue subtile and per CTA;
    the factors were read off runs of both kernels (2048-8192 problems). Used to refuse runs that
    would exceed ``max_events`` before they start, and to size progress reports.
    """
    tiles = cfg.tiles_m * cfg.tiles_n * cfg.l
    cta_tiles = tiles * cfg.atom_thr_m
    cta_kblocks = cta_tiles * cfg.k_tiles
    if cfg.arch_name == "sm90":
        consumers = 2 if cfg.schedule == "cooperative" else 1
        return int((2 + 2 * consumers) * cta_kblocks + 4 * cta_tiles * cfg.epi_subtiles + 50 * cta_tiles)
    return int(2 * cta_kblocks + 3 * cta_tiles * cfg.epi_subtiles + 50 * cta_tiles)


def simulate(cfg=None, arch: ArchSpec | None = None, *, knobs: ProtocolKnobs | None = None,
             trace: bool = False, trace_sms=None, count_events: bool = False,
             allow_protocol_experiments: bool = False, engine: str = "fast",
             max_events: int | None = DEFAULT_MAX_EVENTS, progress=None, clock=None) -> SimResult:
    """Simulate one GEMM launch. ``cfg`` defaults to the SM100 default (8192^3 BF16 on B200).

    ``clock``: the SM clock -- "max" (the arch's, default), "sustained" (a documented under-load
    clock) or GHz (:func:`simulator.machine.clocks.with_clock`).

    ``allow_protocol_experiments`` (implied by non-default ``knobs``) relaxes the ``can_implement``
    rules that protect the protocol rather than the hardware (e.g. CUTLASS's ``Stages >= 2``), so
    that "what if" questions can be simulated; hardware limits (SMEM, TMEM, cluster size) still hold.

    ``max_events`` (None: unlimited) refuses a run whose :func:`estimate_events` exceeds it and stops
    one that processes more, with :class:`~simulator.errors.SimulationLimitError`. ``progress``, if
    given, is called now and then with the fraction of output tiles finished (0..1).
    ``engine``: "fast" (default) or "reference" (SimPy): same model code, identical results; the
    fast engine covers every model feature (knobs, traces, deadlocks, violations).
    """
    if engine not in ("reference", "fast"):
        raise ConfigError(f"engine={engine!r}: unknown; valid: fast, reference")
    engine_note = ""
    if engine == "fast":      # which core ran: "compiled core", or why it is pure Python
        engine_note = _native.status() + ("" if _native.COMPILED else ": same results, slower")
    cfg = cfg if cfg is not None else Sm100GemmConfig()
    arch = arch if arch is not None else default_arch_for(cfg)
    if clock is not None:
        from simulator.machine.clocks import with_clock
        arch = with_clock(arch, clock)
    if isinstance(cfg, Sm100GemmConfig) and arch.sm_version != 100:
        raise ConfigError(f"arch {arch.name} (sm_{arch.sm_version}): the SM100 kernel needs an SM100 arch (b200)")
    if isinstance(cfg, Sm90GemmConfig) and arch.sm_version != 90:
        raise ConfigError(f"arch {arch.name} (sm_{arch.sm_version}): the SM90 kernel needs an SM90 arch (h200)")
    knobs = knobs or ProtocolKnobs()
    knobs.check()
    cfg = cfg.resolved(arch)
    cfg.can_implement(arch, allow_protocol_experiments=allow_protocol_experiments or not knobs.is_default)
    knobs.check_applies(cfg)   # a knob aimed at a pipeline this run never uses is an error, not a no-op
    kernel_cls = _kernel_class(cfg)
    if max_events is not None:
        if not isinstance(max_events, int) or isinstance(max_events, bool) or max_events < 1:
            raise ConfigError(f"max_events={max_events!r}: must be a positive integer (or None for no limit)")
        est = estimate_events(cfg)
        if est > max_events:
            raise SimulationLimitError(
                f"max_events={max_events:,}: this run needs about {est:,} events (estimate; "
                f"{cfg.tiles_m * cfg.tiles_n * cfg.l:,} output tiles x {cfg.k_tiles:,} K-blocks); "
                "raise --max-events to run it anyway, or simulate a smaller problem")

    env = FastEnv(max_events=max_events) if engine == "fast" else ReferenceEnvironment(max_events=max_events)
    clk = arch.clock_ghz.value
    timing = MemoryTiming(
        hbm_bytes_per_cycle=arch.hbm_bytes_per_clk,
        l2_bytes_per_cycle=arch.l2_bytes_per_clk,
        hbm_latency=arch.hbm_latency_cycles.value,
        l2_latency=arch.l2_latency_cycles.value,
        tma_overhead=arch.tma_issue_overhead_cycles.value,
        l2_bytes=int(arch.l2_bytes.value),
    )
    mem = MemorySystem(timing, bin_cycles=HBM_COUNTER_BIN_CYCLES if trace else 0.0)
    tr = None
    if trace:
        tr = Trace({"source": "simulated", "arch": arch.name, "kernel": kernel_cls.__name__,
                    "config": asdict(cfg)}, clock_ghz=clk)
    t0 = time.perf_counter()
    kernel = kernel_cls(env, cfg, arch, mem, knobs=knobs, trace=tr, trace_sms=trace_sms)
    if progress is not None:
        expected = max(1, cfg.tiles_m * cfg.tiles_n * cfg.l * cfg.atom_thr_m)
        stats_ = kernel.stats
        env.progress = lambda: progress(min(1.0, len(stats_.tiles_done) / expected))
    # The run allocates many short-lived objects and frees them itself: the cyclic garbage
    # collector only costs time here (results do not depend on it).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        env.run()
    finally:
        if gc_was_enabled:
            gc.enable()
    wall = time.perf_counter() - t0
    stats = kernel.stats
    for bar in kernel.all_barriers():   # apply arrivals and bytes recorded for later times
        flush = getattr(bar, "flush", None)
        if flush is not None:
            flush()
    deadlock = analyze(kernel, env.now)
    violations: list[str] = []
    vcount = 0
    suspects: list[str] = []            # barrier kinds that saw arrivals in the wrong phase
    for bar in kernel.all_barriers():
        n = getattr(bar, "violation_count", 0)
        if n:
            vcount += n
            violations += [v.describe() for v in bar.violations]
            if barrier_kind(bar.name) not in suspects:
                suspects.append(barrier_kind(bar.name))
    if deadlock is not None:
        deadlock.suspects = suspects
    cycles = stats.end_cycle
    launch_ns = arch.launch_overhead_ns.value
    time_ns = cycles / clk + launch_ns
    flops = cfg.flops
    tflops = flops / time_ns / 1e3 if time_ns > 0 else 0.0
    dtype_factor = arch.mma_fp8_factor.value if cfg.bits_ab == 8 else 1.0
    peak = arch.peak_flops * dtype_factor / 1e12
    n_sm = len(kernel.clusters) * cfg.cluster_size
    roles = []
    for name, total in sorted(stats.role_cycles.items()):
        n = stats.role_count[name]
        denom = max(cycles, 1e-9) * n
        waits = {b: c / denom for (r, b), c in stats.wait_cycles.items() if r == name and c > 0}
        roles.append(RoleTime(name, n, total / denom, waits))
    tc_units = n_sm // cfg.atom_thr_m
    tc_util = stats.tc_busy_cycles / (max(cycles, 1e-9) * tc_units) if tc_units else 0.0
    if tr is not None:
        _add_counters(tr, mem, kernel)
        tr.meta.update({"time_ns": time_ns, "cycles": cycles, "launch_overhead_ns": launch_ns,
                        "constants": {c.name: [c.value, c.unit, c.kind, c.source] for c in arch.constants()}})
    loads = mem.l2_hits + mem.l2_misses
    return SimResult(
        arch=arch, config=cfg, knobs=knobs, cycles=cycles, time_ns=time_ns, launch_overhead_ns=launch_ns,
        flops=flops, tflops=tflops, peak_tflops=peak,
        hbm_read_bytes=mem.hbm_read_bytes, hbm_write_bytes=mem.hbm_write_bytes,
        compulsory_bytes=cfg.compulsory_bytes, l2_hit_rate=mem.l2_hits / loads if loads else 0.0,
        tensor_core_utilization=tc_util, role_times=roles,
        tiles_expected=cfg.tiles_m * cfg.tiles_n * cfg.l * cfg.atom_thr_m,
        tiles_done=stats.tiles_done, tx_expected=stats.tx_expected, tx_landed=stats.tx_landed,
        clc_queries=stats.clc_queries, deadlock=deadlock, violations=violations, violation_count=vcount,
        constants=tuple(arch.constants()), timing_notes=kernel.timing.notes,
        events=env.events_processed, wall_s=wall, trace=tr, engine=engine, engine_note=engine_note,
        l2_hits=mem.l2_hits, l2_misses=mem.l2_misses, role_cycles=dict(stats.role_cycles),
        wait_cycles=dict(stats.wait_cycles), tc_busy_cycles=stats.tc_busy_cycles,
        l2_load_bytes=mem.load_bytes,
    )


def _add_counters(tr: Trace, mem: MemorySystem, kernel) -> None:
    """HBM bandwidth in use (device-wide) from the channel's per-bin byte counts."""
    clk = tr.clock_ghz or 1.0
    bins = mem.hbm.bins
    if not bins:
        return
    width = mem.hbm.bin_cycles
    for b in range(min(bins), max(bins) + 2):
        nbytes = bins.get(b, 0.0)
        gbps = nbytes / (width / clk)  # bytes per ns == GB/s
        tr.add_counter(-1, "hbm_gbps", gbps, cycle=b * width)
