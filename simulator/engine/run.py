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
from simulator.kernels.launch import check_late_start
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec, as_arch
from simulator.machine.constants import Constant
from simulator.machine.memory import MemorySystem, MemoryTiming
from simulator.protocol.deadlock import DeadlockReport, analyze, barrier_kind
from simulator.protocol.knobs import ProtocolKnobs
from simulator.protocol.races import RaceDetector

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
    first_violation_cycle: float | None = None        # when the first wrong-phase arrival landed
    race_check: bool = False                          # whether the race detectors ran (simulator.protocol.races)
    races: list[str] = field(default_factory=list)    # the first races found, described
    race_count: int = 0
    race_kinds: dict = field(default_factory=dict)    # race kind -> how many
    first_race_cycle: float | None = None
    decomposition: str = ""                            # the stream-K scheduler's work units ("": data-parallel)
    workspace_write_bytes: int = 0                    # partial accumulators into the stream-K workspace
    workspace_read_bytes: int = 0                     # ... and out of it (L2 atomics read what they add to)
    l2_load_bytes: int = 0            # bytes of every TMA load (L2 -> SM traffic, hits and misses)
    #: With ``clock="predicted"``: the clock the power model settled on, the power there, what limited
    #: it and the power model's constants (:meth:`simulator.engine.power_clock.PredictedClock.summary`).
    clock_prediction: dict | None = None

    @property
    def ok(self) -> bool:
        return self.deadlock is None and self.violation_count == 0 and self.race_count == 0

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
            "races": list(self.races), "race_count": self.race_count, "race_kinds": sorted(self.race_kinds.items()),
            "workspace_write_bytes": self.workspace_write_bytes, "workspace_read_bytes": self.workspace_read_bytes,
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
            "first_violation_cycle": self.first_violation_cycle,
            "race_check": self.race_check,
            "races": self.races,
            "race_count": self.race_count,
            "race_kinds": self.race_kinds,
            "first_race_cycle": self.first_race_cycle,
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
            "late_start": self.meta.get("late_start"),
            "clock_prediction": self.clock_prediction,
        } | ({"decomposition": self.decomposition, "workspace_write_bytes": self.workspace_write_bytes,
              "workspace_read_bytes": self.workspace_read_bytes} if self.decomposition else {})


#: The event loops ``simulate(engine=...)`` runs on.
ENGINES = ("fast", "reference")


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
        consumers = cfg.num_consumer_warpgroups if cfg.schedule == "cooperative" else 1
        return int((2 + 2 * consumers) * cta_kblocks + 4 * cta_tiles * cfg.epi_subtiles + 50 * cta_tiles)
    return int(2 * cta_kblocks + 3 * cta_tiles * cfg.epi_subtiles + 50 * cta_tiles)


# ------------------------------------------------------------------------------- argument checks
def check_run_options(*, engine: Any = None, max_events: Any = ...) -> None:
    """``engine`` and ``max_events`` as ``simulate``, ``run_sweep`` and ``tune`` take them (None for
    the engine, ``...`` for the budget: the caller's default)."""
    if engine is not None and (not isinstance(engine, str) or engine not in ENGINES):
        raise ConfigError(f"engine={engine!r}: unknown; valid: {', '.join(ENGINES)}")
    if max_events is not ... and max_events is not None and (
            not isinstance(max_events, int) or isinstance(max_events, bool) or max_events < 1):
        raise ConfigError(f"max_events={max_events!r}: must be a positive integer (or None for no limit)")


def check_event_budget(cfg, max_events: int | None) -> None:
    """Refuse resolved ``cfg`` when its :func:`estimate_events` exceeds ``max_events`` (None: no limit)."""
    if max_events is None:
        return
    est = estimate_events(cfg)
    if est > max_events:
        raise SimulationLimitError(
            f"max_events={max_events:,}: this run needs about {est:,} events (estimate; "
            f"{cfg.tiles_m * cfg.tiles_n * cfg.l:,} output tiles x {cfg.k_tiles:,} K-blocks); "
            "raise --max-events to run it anyway, or simulate a smaller problem")


def sms_in_run(cfg, arch: ArchSpec) -> int:
    """How many SMs a run of resolved ``cfg`` uses: resident clusters x cluster size (SMs 0..n-1)."""
    from simulator.kernels.scheduler import make_scheduler

    return make_scheduler(cfg, arch).resident_clusters * cfg.cluster_size


def check_trace_sms_list(trace_sms: Any, cfg, arch: ArchSpec) -> list[int]:
    """``simulate(trace_sms=...)``: a list of SM numbers (ints >= 0), at least one of them used by the
    run of resolved ``cfg`` (SMs 0 .. n-1); SMs outside the run record nothing."""
    if isinstance(trace_sms, (str, bytes)) or not isinstance(trace_sms, (list, tuple, set, frozenset, range)):
        raise ConfigError(f"trace_sms={trace_sms!r}: expected a list of SM numbers, e.g. [0, 1], got "
                          f"{type(trace_sms).__name__}")
    sms = list(trace_sms)
    for s in sms:
        if not isinstance(s, int) or isinstance(s, bool) or s < 0:
            raise ConfigError(f"trace_sms={trace_sms!r}: SM {s!r} is not an SM number (an integer >= 0)")
    n = sms_in_run(cfg, arch)
    if not any(s < n for s in sms):
        raise ConfigError(f"trace_sms={trace_sms!r}: selects no SM of this run, which uses SMs 0-{n - 1}")
    return sms


def _check_simulate_args(cfg, knobs, flags: dict[str, Any], progress) -> None:
    """The types of ``simulate``'s arguments (the config and knobs are checked by their own rules later)."""
    if not isinstance(cfg, (Sm100GemmConfig, Sm90GemmConfig)):
        hint = " (build one from a dict: Sm100GemmConfig(**d))" if isinstance(cfg, dict) else ""
        raise ConfigError(f"cfg={cfg!r}: expected a Sm100GemmConfig or Sm90GemmConfig, got "
                          f"{type(cfg).__name__}{hint}")
    if knobs is not None and not isinstance(knobs, ProtocolKnobs):
        raise ConfigError(f"knobs={knobs!r}: expected a ProtocolKnobs, got {type(knobs).__name__} (e.g. "
                          "ProtocolKnobs.make(arrival_counts={'clc.empty': 3}), or ProtocolKnobs.from_mapping "
                          "for a [knobs] table)")
    for name, v in flags.items():
        if not isinstance(v, bool):
            raise ConfigError(f"{name}={v!r}: expected True or False, got {type(v).__name__}")
    if progress is not None and not callable(progress):
        raise ConfigError(f"progress={progress!r}: expected a function of the fraction done (or None)")


def simulate(cfg=None, arch: ArchSpec | str | None = None, *, knobs: ProtocolKnobs | None = None,
             trace: bool = False, trace_sms=None, count_events: bool = False,
             allow_protocol_experiments: bool = False, engine: str = "fast",
             max_events: int | None = DEFAULT_MAX_EVENTS, progress=None, clock=None,
             race_check: bool | None = None, inspect=None, late_start=None) -> SimResult:
    """Simulate one GEMM launch. ``cfg`` defaults to the SM100 default (8192^3 BF16 on B200).

    ``clock``: the SM clock -- "max" (the arch's, default), "sustained" (a documented under-load
    clock), GHz (:func:`simulator.machine.clocks.with_clock`), or "predicted": the clock the arch's
    power model settles on for this kernel run back to back (two or three simulations;
    :func:`simulator.engine.power_clock.simulate_at_predicted_clock`), with the prediction in
    ``SimResult.clock_prediction``.

    ``allow_protocol_experiments`` (implied by non-default ``knobs``) relaxes the ``can_implement``
    rules that protect the protocol rather than the hardware (e.g. CUTLASS's ``Stages >= 2``), so
    that "what if" questions can be simulated; hardware limits (SMEM, TMEM, cluster size) still hold.

    ``max_events`` (None: unlimited) refuses a run whose :func:`estimate_events` exceeds it and stops
    one that processes more, with :class:`~simulator.errors.SimulationLimitError`. ``progress``, if
    given, is called now and then with the fraction of output tiles finished (0..1).
    ``engine``: "fast" (default) or "reference" (SimPy): same model code, identical results; the
    fast engine covers every model feature (knobs, traces, deadlocks, violations).

    ``arch``: an :class:`ArchSpec` or a name (``"b200"``, ``"h200"``, ...: :func:`get_arch`), as
    ``tune`` and ``run_sweep`` take it. ``trace_sms`` (with ``trace=True``): the SMs whose spans are
    recorded, a list of SM numbers of which at least one is in the run. ``count_events`` is kept for
    compatibility: every run counts its events (``SimResult.events``). Every argument of the wrong
    type or value is a :class:`~simulator.errors.ConfigError` naming it.
    ``race_check``: run the race detectors (:mod:`simulator.protocol.races`: stage ownership per
    buffer, bytes per phase, TMEM lifetime) and report what they find in ``SimResult.races``; they
    never change a simulated time. ``None`` (default): on exactly when ``knobs`` are not the seed's.
    ``inspect``, if given, is called with the built kernel model before it runs (``wsim check`` reads
    the counts its barriers are initialised with).
    ``late_start``: a :class:`~simulator.kernels.launch.LateStart` (SM100 only): the last SMs of the
    launch become free only after a delay, e.g. to compare CLC with static scheduling when they do.
    """
    cfg = cfg if cfg is not None else Sm100GemmConfig()
    _check_simulate_args(cfg, knobs, {"trace": trace, "count_events": count_events,
                                      "allow_protocol_experiments": allow_protocol_experiments}, progress)
    check_run_options(engine=engine, max_events=max_events)
    if engine is None:
        raise ConfigError(f"engine=None: unknown; valid: {', '.join(ENGINES)}")
    engine_note = ""
    if engine == "fast":      # which core ran: "compiled core", or why it is pure Python
        engine_note = _native.status() + ("" if _native.COMPILED else ": same results, slower")
    arch = as_arch(arch) if arch is not None else default_arch_for(cfg)
    if clock is not None:
        from simulator.machine.clocks import parse_clock, with_clock
        if parse_clock(clock) == "predicted":
            from simulator.engine.power_clock import simulate_at_predicted_clock
            pred = simulate_at_predicted_clock(
                cfg, arch, run=simulate, knobs=knobs, trace=trace, trace_sms=trace_sms, count_events=count_events,
                allow_protocol_experiments=allow_protocol_experiments, engine=engine, max_events=max_events,
                progress=progress, race_check=race_check, inspect=inspect, late_start=late_start)
            pred.result.clock_prediction = pred.summary()
            return pred.result
        arch = with_clock(arch, clock)
    if isinstance(cfg, Sm100GemmConfig) and arch.sm_version != 100:
        raise ConfigError(f"arch {arch.name} (sm_{arch.sm_version}): the SM100 kernel needs an SM100 arch (b200)")
    if isinstance(cfg, Sm90GemmConfig) and arch.sm_version != 90:
        raise ConfigError(f"arch {arch.name} (sm_{arch.sm_version}): the SM90 kernel needs an SM90 arch (h200)")
    late_start = check_late_start(late_start)
    if late_start is not None and not isinstance(cfg, Sm100GemmConfig):
        raise ConfigError("late_start: only the SM100 model takes late-starting SMs (the SM90 model launches "
                          "every cluster at cycle 0 and has no CLC scheduler to compare)")
    knobs = knobs or ProtocolKnobs()
    knobs.check()
    if race_check is None:
        race_check = not knobs.is_default
    cfg = cfg.resolved(arch)
    cfg.can_implement(arch, allow_protocol_experiments=allow_protocol_experiments or not knobs.is_default)
    knobs.check_applies(cfg)   # a knob aimed at a pipeline this run never uses is an error, not a no-op
    kernel_cls = _kernel_class(cfg)
    if trace_sms is not None:
        if not trace:
            raise ConfigError(f"trace_sms={trace_sms!r}: selects the SMs a trace records; pass trace=True too")
        trace_sms = check_trace_sms_list(trace_sms, cfg, arch)
    check_event_budget(cfg, max_events)

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
    races = RaceDetector() if race_check else None
    late_kw = {"late_start": late_start} if late_start is not None else {}
    kernel = kernel_cls(env, cfg, arch, mem, knobs=knobs, trace=tr, trace_sms=trace_sms, races=races, **late_kw)
    if knobs.acts_on_barriers:   # single-barrier counts, skipped / wrong-parity waits, expect-tx bytes
        knobs.apply_to(kernel.all_barriers())
    if inspect is not None:
        inspect(kernel)
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
    first_violation = None
    suspects: list[str] = []            # barrier kinds that saw arrivals in the wrong phase
    for bar in kernel.all_barriers():
        n = getattr(bar, "violation_count", 0)
        if n:
            vcount += n
            violations += [v.describe() for v in bar.violations]
            t_first = min((v.time for v in bar.violations), default=None)
            if t_first is not None and (first_violation is None or t_first < first_violation):
                first_violation = t_first
            if barrier_kind(bar.name) not in suspects:
                suspects.append(barrier_kind(bar.name))
    if races is not None:
        races.finish()
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
    meta = {}
    if late_start is not None:
        meta["late_start"] = {"sms": late_start.sms, "delay_ns": late_start.delay_ns,
                              "clusters": kernel.late_clusters, "sm_range": list(kernel.late_sms),
                              "launched": kernel.late_launched if cfg.tile_scheduler == "clc" else None}
        if tr is not None:
            tr.meta["late_start"] = meta["late_start"]
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
        first_violation_cycle=first_violation, race_check=races is not None,
        races=races.describe() if races is not None else [], race_count=races.count if races is not None else 0,
        race_kinds=dict(races.kinds) if races is not None else {},
        first_race_cycle=races.first_cycle if races is not None else None, meta=meta,
        l2_load_bytes=mem.load_bytes,
        decomposition=kernel.decomp.summary() if getattr(kernel, "decomp", None) is not None else "",
        workspace_write_bytes=mem.workspace_write_bytes, workspace_read_bytes=mem.workspace_read_bytes,
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
