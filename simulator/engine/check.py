"""``wsim check``: every mutation of the seed's protocol over a grid of configs, run and classified.

    report = run_check(quick_grid())                  # the CI grid: a few configs of both kernels
    report = run_check(full_grid(), workers=2)        # the catalogue's grid (minutes on 2 cores)
    outcome = check_change(cfg, arch, knobs)          # one config, one user's change

For each config (a :class:`Case`) the unmutated protocol runs first, with the race detectors on
(:mod:`simulator.protocol.races`); it must find nothing (no deadlock, no wrong-phase arrival, no
race, every tile computed once), or the config's baseline is reported as a finding. Then every
mutation of :func:`simulator.protocol.mutations.mutations_for` runs on it and is classified
(:class:`Outcome`):

* ``deadlock``: roles blocked with nothing left to wake them (the deadlock report: blocked roles,
  who owes what, the wait-for cycle, the cycle it happened at);
* ``race``: arrivals in the wrong phase (the violation counter), a stage overwritten while it is
  read, a read of data whose bytes have not all landed, TMEM used after it was freed;
* ``race+deadlock``: both (``cycle`` is the first finding);
* ``no effect``: the run is correct, and ``why`` says why (the factor is 1 here, the wait never
  blocked, the barrier is a performance throttle, ...; ``UNEXPLAINED`` if no rule applies);
* ``n/a``: the mutation cannot act on this config (the barrier or pipeline is not used), with why.

The grids run on a B200 / H200 with 16 SMs in one GPC (:func:`check_arch`), so that small problems
run several tiles per CTA and several rounds per stage. Results are deterministic: the same grid
gives the same outcomes, bit for bit.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from simulator.engine.run import SimResult, simulate
from simulator.errors import SimulationLimitError
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec, get_arch
from simulator.protocol.knobs import ProtocolKnobs, waits_in_use
from simulator.protocol.mutations import Mutation, mutations_for

CLASSES = ("race+deadlock", "deadlock", "race", "no effect", "n/a")
#: The check grids' GPU: the arch with this many SMs in one GPC (every cluster shape up to 4x4 fits).
CHECK_SMS = 16
#: A mutated run may take at most this many times the unmutated run's events (then it is stopped).
EVENT_FACTOR = 50

#: What a barrier does in the seed, where that explains a mutation without effect (static facts of
#: the seed; every other "no effect" must be explained by the run itself).
PURPOSE = {
    "epilogue_throttle": "a performance throttle (seed: 'Throttle the epilogue warps to improve prologue "
                         "performance'): it orders no data access",
    "clc_throttle": "a performance throttle (seed: 'Throttle CLC query to mitigate workload imbalance caused by "
                    "skews among persistent workers'): it orders no data access",
    "load_order": "a performance order (the mainloop's prologue loads before the C loads; both only read global "
                  "memory): it orders no SMEM or TMEM access",
    "tmem_alloc": "redundant here: the MMA warp arrives on the epilogue-throttle barrier after allocating TMEM, and "
                  "the epilogue waits on that barrier first",
    "math_order": "the order of the ping-pong warpgroups' mainloops and epilogues (the tensor core and the SMEM "
                  "store buffers they share)",
    "epilogue_named": "the sync of the tile's consumer threads before each subtile's TMA store",
    "fixup": "the stream-K / split-K fixup flag: a split's partials are added to the workspace and loaded back "
             "only after the earlier splits' partials are there",
}
#: Barriers that guard data the race detectors track (SMEM stages, TMEM accumulators and their lifetime).
DATA_GUARDS = ("mainloop", "accumulator", "clc", "epi_load", "tmem_dealloc", "epilogue_named", "math_order",
               "fixup")
#: Other ordering in the seed that can keep a producer behind its consumers when a wait is dropped.
ALSO_ORDERED_BY = {
    "clc.empty": "the CLC throttle lets the Sched warp query only once per tile MainloopLoad of CTA 0 starts",
    "epilogue_named": "the store thread's bulk wait and the warpgroups' equal epilogue times keep them in step",
    "math_order": "in this timing the two warpgroups' epilogues did not overlap",
}
#: The wait kinds of the run statistics for the knobs' wait names that differ.
_WAIT_KIND = {"epilogue_named": "epilogue.barrier"}


def check_arch(name: str) -> ArchSpec:
    """``name`` (b200 or h200) with :data:`CHECK_SMS` SMs in one GPC."""
    return get_arch(name).with_overrides({"sm_count": CHECK_SMS, "gpc_count": 1}, origin="wsim check grid")


@dataclass(frozen=True)
class Case:
    """One config of a check grid."""

    id: str
    config: Any
    arch_name: str      # "b200" or "h200" (with check_arch's SMs) or "as given"
    arch: ArchSpec | None = None

    def resolved_arch(self) -> ArchSpec:
        return self.arch if self.arch is not None else check_arch(self.arch_name)


def _sm100(cid: str, one_sm: bool, cluster: tuple[int, int], **kw) -> Case:
    # 1-SM 128x64 tiles: 48 tiles; 2-SM 256x64: 24 MMA tiles; both 3 waves of the 16 SMs, 5 K-blocks each.
    tile = dict(mma_tile_m=128, use_2sm=False) if one_sm else dict(mma_tile_m=256, use_2sm=True)
    base = dict(m=512, n=768, k=320, mma_tile_n=64, cluster_m=cluster[0], cluster_n=cluster[1],
                mainloop_stages=2, accumulator_stages=2, scheduler_stages=2, **tile)
    base.update(kw)
    return Case(cid, Sm100GemmConfig(**base), "b200")


def _sm90(cid: str, schedule: str, cluster: tuple[int, int], **kw) -> Case:
    base = dict(m=512, n=768, k=320, tile_m=128, tile_n=64, cluster_m=cluster[0], cluster_n=cluster[1],
                schedule=schedule, mainloop_stages=2)
    base.update(kw)
    return Case(cid, Sm90GemmConfig(**base), "h200")


#: The variants every main SM100 config is checked in (id suffix, fields).
_SM100_VARIANTS = (
    ("", {}), ("-c", {"read_c": True}), ("-c-ld1", {"read_c": True, "epilogue_load_stages": 1}),
    ("-ovl", {"overlapping_accum": True, "accumulator_stages": 1}), ("-static", {"tile_scheduler": "static"}),
    ("-ml1", {"mainloop_stages": 1, "k": 192}), ("-ml4", {"mainloop_stages": 4, "k": 576}),
    ("-acc1", {"accumulator_stages": 1}), ("-sch1", {"scheduler_stages": 1}),
    ("-ragged", {"m": 500, "n": 744, "k": 296}), ("-ragged-c-static", {"m": 500, "n": 744, "k": 296, "read_c": True,
                                                                      "tile_scheduler": "static"}),
)
#: SM90 runs from 2 mainloop stages: with one, the unmutated protocol deadlocks by construction (the
#: consumer releases a stage only after waiting on the next, K_PIPE_MMAS = 1: CUTLASS's
#: static_assert(Stages >= 2)); :data:`SM90_ONE_STAGE` is that case, reported beside the grid.
_SM90_VARIANTS = (
    ("", {}), ("-c", {"read_c": True}), ("-ml4", {"mainloop_stages": 4, "k": 576}), ("-ragged", {"m": 500, "n": 744, "k": 296}),
    ("-ragged-c", {"m": 500, "n": 744, "k": 296, "read_c": True}),
)


#: Stream-K / split-K cases (the fixup flag): 6 tiles of 40 K-blocks on the 16 SMs, so stream-K units
#: span tile boundaries and some tiles have three or more peers (middle splits add into the workspace).
_STREAM_K_SHAPE = {"m": 256, "n": 192, "k": 2560}
_SM100_STREAM_K = (
    ("sm100-1sm-1x1-streamk", True, (1, 1), {"decomposition": "stream_k"}),
    ("sm100-1sm-1x1-streamk-nondet", True, (1, 1), {"decomposition": "stream_k", "reduction": "nondeterministic"}),
    ("sm100-1sm-1x1-splitk-c", True, (1, 1), {"decomposition": "split_k", "splits": 3, "read_c": True}),
    ("sm100-2sm-2x1-streamk", False, (2, 1), {"decomposition": "stream_k", "m": 512}),
    ("sm100-1sm-2x2-heuristic-ragged", True, (2, 2), {"decomposition": "heuristic", "m": 250, "n": 120, "k": 2552}),
)
_SM90_STREAM_K = (
    ("sm90-coop-1x1-streamk", (1, 1), {"decomposition": "stream_k"}),
    ("sm90-coop-1x1-streamk-nondet", (1, 1), {"decomposition": "stream_k", "reduction": "nondeterministic"}),
    ("sm90-coop-2x1-splitk-c", (2, 1), {"decomposition": "split_k", "splits": 3, "read_c": True}),
    ("sm90-coop-1x2-heuristic-ragged", (1, 2), {"decomposition": "heuristic", "m": 250, "n": 120, "k": 2552}),
    ("sm90-coop64-1x2-splitk-ragged", (1, 2), {"tile_m": 64, "decomposition": "split_k", "splits": 3, "m": 100,
                                                "n": 120, "k": 2552}),
)


def stream_k_cases() -> list[Case]:
    """The grid's stream-K / split-K configs of both kernels (:data:`_SM100_STREAM_K`, :data:`_SM90_STREAM_K`)."""
    out = [_sm100(cid, one, cl, **(_STREAM_K_SHAPE | kw)) for cid, one, cl, kw in _SM100_STREAM_K]
    out += [_sm90(cid, "cooperative", cl, **(_STREAM_K_SHAPE | {"mainloop_stages": 4} | kw))
            for cid, cl, kw in _SM90_STREAM_K]
    return out


def sm90_one_stage() -> Case:
    """SM90 with one mainloop stage: not in the grid (see :data:`_SM90_VARIANTS`); the catalogue shows
    what its unmutated run does."""
    return _sm90("sm90-coop-2x1-ml1", "cooperative", (2, 1), mainloop_stages=1, k=192)


def full_grid() -> list[Case]:
    """The catalogue's grid: SM100 1-SM and 2-SM, clusters 1x1 to 4x4, C read or not, overlapping
    accumulators, CLC and static scheduling, stage counts from 1, ragged shapes; SM90 cooperative
    and ping-pong, clusters 1x1 to 2x2, the same variants."""
    cases = []
    for one_sm, cl in ((True, (1, 1)), (True, (2, 2)), (False, (2, 1)), (False, (2, 2))):
        tag = f"sm100-{'1sm' if one_sm else '2sm'}-{cl[0]}x{cl[1]}"
        cases += [_sm100(tag + suffix, one_sm, cl, **kw) for suffix, kw in _SM100_VARIANTS]
    for one_sm, cl in ((True, (2, 1)), (True, (1, 2)), (True, (4, 1)), (True, (1, 4)), (True, (4, 2)),
                       (True, (2, 4)), (True, (4, 4)), (False, (4, 1)), (False, (2, 4)), (False, (4, 2)),
                       (False, (4, 4))):
        cases.append(_sm100(f"sm100-{'1sm' if one_sm else '2sm'}-{cl[0]}x{cl[1]}", one_sm, cl))
    for sched, cl in (("cooperative", (2, 1)), ("pingpong", (1, 1))):
        tag = f"sm90-{'coop' if sched == 'cooperative' else 'pp'}-{cl[0]}x{cl[1]}"
        cases += [_sm90(tag + suffix, sched, cl, **kw) for suffix, kw in _SM90_VARIANTS]
    for sched, cl in (("cooperative", (1, 1)), ("cooperative", (1, 2)), ("cooperative", (2, 2)),
                      ("pingpong", (2, 1)), ("pingpong", (1, 2)), ("pingpong", (2, 2))):
        cases.append(_sm90(f"sm90-{'coop' if sched == 'cooperative' else 'pp'}-{cl[0]}x{cl[1]}", sched, cl))
    return cases + _long_cases() + stream_k_cases()


def _long_cases() -> list[Case]:
    """One cluster on a GPU of its own size, 1024 tiles: a count that is off by one drifts a little
    every round, and only a long run shows where it ends (e.g. a deadlock after 129 CLC phases)."""
    long = dict(k=128, n=8192, m=1024)

    def gpu(name: str, sms: int) -> ArchSpec:
        return get_arch(name).with_overrides({"sm_count": sms, "gpc_count": 1}, origin="wsim check grid")

    return [Case("sm100-1sm-1x1-long", _sm100("", True, (1, 1), scheduler_stages=1, **long).config, "b200",
                 gpu("b200", 1)),
            Case("sm100-2sm-2x1-long", _sm100("", False, (2, 1), **long).config, "b200", gpu("b200", 2)),
            Case("sm90-coop-1x1-long", _sm90("", "cooperative", (1, 1), **long).config, "h200", gpu("h200", 1))]


def quick_grid() -> list[Case]:
    """The CI grid: a slice of :func:`full_grid` that touches every barrier of both kernels."""
    want = ("sm100-2sm-2x1", "sm100-1sm-1x1-ragged-c-static", "sm100-1sm-2x2-ovl", "sm100-2sm-2x2-c-ld1",
            "sm100-1sm-1x1-long", "sm90-coop-2x1-c", "sm90-pp-1x1-c", "sm100-1sm-1x1-streamk",
            "sm90-coop-1x1-streamk")
    by_id = {c.id: c for c in full_grid()}
    return [by_id[w] for w in want]


GRIDS: dict[str, Callable[[], list[Case]]] = {"quick": quick_grid, "full": full_grid}


# ------------------------------------------------------------------------------------ outcomes
@dataclass
class Outcome:
    """What one mutation did on one config."""

    mutation: str
    config: str
    cls: str                          # one of CLASSES
    cycle: float | None = None        # simulated cycle of the first finding (race or deadlock)
    value: str = ""                   # what the mutation set here
    detail: str = ""                  # what was found
    why: str = ""                     # for no effect / n/a
    race_kinds: dict = field(default_factory=dict)    # "wrong-phase arrival", "overwrite", ... -> count
    blocked: list[str] = field(default_factory=list)  # "Role on barrier" of a deadlock
    wait_for: list[str] = field(default_factory=list)  # the deadlock's wait-for cycle
    deadlock_cycle: float | None = None
    cycles: float | None = None       # the mutated run's makespan (until the deadlock)
    not_run: bool = False             # n/a, or the mutated value is the seed's here: nothing to simulate

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class CaseResult:
    case: Case
    baseline: Outcome                 # the unmutated protocol: cls "no effect" when it finds nothing
    outcomes: list[Outcome]
    baseline_cycles: float = 0.0
    baseline_events: int = 0


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 1)


def _findings(res: SimResult) -> tuple[dict, list[str], float | None]:
    """Race kinds found, descriptions (the earlier kind of finding first), and the first finding's cycle
    (races and wrong-phase arrivals)."""
    kinds = dict(res.race_kinds)
    if res.violation_count:
        kinds["wrong-phase arrival"] = res.violation_count
    groups = [(t, texts) for t, texts in ((res.first_violation_cycle, res.violations[:2]),
                                          (res.first_race_cycle, res.races[:2])) if t is not None]
    groups.sort(key=lambda g: g[0])
    texts = [x for _, g in groups for x in g]
    return dict(sorted(kinds.items())), texts, (groups[0][0] if groups else None)


def _tiles_wrong(res: SimResult) -> str:
    once, twice = res.tile_check()
    missing = res.tiles_expected - once - twice
    if not twice and not missing:
        return ""
    return f"work: {twice} tile(s) computed more than once, {missing} never computed"


def _lead(blocked: list, target: str):
    """The blocked role to show first: one on the mutated barrier (or pipeline), preferring a barrier whose
    bytes do not add up; else the one blocked first (the likeliest root of the deadlock)."""
    def key(b):
        return (b.since_cycle, b.who)
    exact = [b for b in blocked if b.pipeline == target]
    same = exact or [b for b in blocked if target and b.pipeline.split(".")[0] == target.split(".")[0]]
    odd = [b for b in same if b.missing_tx_bytes or b.excess_tx_bytes]
    pool = odd or same or blocked
    return min(pool, key=key) if pool else None


def classify(res: SimResult, target: str = "") -> Outcome:
    """The class of one run (mutation and config names are filled in by the caller); ``target``: the
    mutated barrier or pipeline, to name the blocked role on it first."""
    kinds, texts, first = _findings(res)
    tiles = "" if res.deadlock is not None else _tiles_wrong(res)
    if tiles:
        kinds["wrong tiles"] = 1
        texts.append(tiles)
    race = bool(kinds)
    d = res.deadlock
    out = Outcome("", "", "no effect", cycles=_round(res.cycles), race_kinds=kinds)
    if d is not None:
        out.cls = "race+deadlock" if race else "deadlock"
        by: dict[str, int] = {}
        for b in d.blocked:
            key = f"{b.role} on {b.pipeline}"
            by[key] = by.get(key, 0) + 1
        out.blocked = [f"{k} ({n} CTA{'s' if n > 1 else ''})" for k, n in sorted(by.items())]
        out.wait_for = list(d.cycle)
        out.deadlock_cycle = _round(d.time_cycle)
        first_blocked = _lead(d.blocked, target)
        lead = (f"e.g. {first_blocked.describe()}" if first_blocked else
                "roles not waiting on a barrier: " + ", ".join(d.unexplained[:2]))
        out.detail = f"deadlock at cycle {d.time_cycle:.0f}: {lead}" + (
            f"; wait-for cycle {' -> '.join(d.cycle + d.cycle[:1])}" if d.cycle else "") + (
            f"; {d.exited_owers[0]}" if d.exited_owers else "")
        out.cycle = _round(first if race and first is not None and first <= d.time_cycle else d.time_cycle)
        if race:
            out.detail = "; ".join(texts[:2]) + "; then " + out.detail
    elif race:
        out.cls = "race"
        out.cycle = _round(first)
        out.detail = "; ".join(texts[:3])
    return out


def _purpose_key(target: str) -> str:
    key = target.split(".")[0]
    return "epilogue_throttle" if key.startswith("epilogue_throttle") else key


def explain(m: Mutation, base: SimResult, res: SimResult) -> str:
    """Why a mutation that ran changed nothing the detectors see (``UNEXPLAINED`` if no rule applies)."""
    t = f"kernel time {base.cycles:.0f} -> {res.cycles:.0f} cycles"
    if m.target == "fixup" and not base.workspace_write_bytes:
        return (f"no tile is split in this run ({base.decomposition or 'data-parallel'}): the fixup flag is never "
                f"used ({t})")
    if m.family in ("count", "factor"):
        wait = "epilogue_throttle" if m.target.startswith("epilogue_throttle") else m.target
        _, no_waiter = waits_in_use(res.config)
        if wait in no_waiter:
            return f"no role waits on {m.target} in this config ({no_waiter[wait]}): its count orders nothing ({t})"
    key = _purpose_key(m.target)
    purpose = PURPOSE.get(key)
    guards = key in DATA_GUARDS
    latent = (" A latent hazard: nothing orders these accesses any more, a different timing can race"
              if guards else "")
    if m.family in ("wait", "parity"):
        kind = _WAIT_KIND.get(m.target, m.target)
        blocked = sum(c for (_, k), c in base.wait_cycles.items() if k == kind)
        if m.family == "wait" and blocked == 0:
            return (f"every wait on {m.target} was already satisfied when it was reached in the unmutated run (it "
                    f"never blocked), so the roles run as before ({t})" + (f"; the barrier is {purpose}" if purpose
                                                                           else "") + (f".{latent}" if latent else ""))
    if guards:
        buf = {"epilogue_named": "epilogue store", "math_order": "epilogue store", "tmem_dealloc": "TMEM",
               "fixup": "stream-K workspace"}.get(key, key)
        also = ALSO_ORDERED_BY.get(m.target) or ALSO_ORDERED_BY.get(key)
        return (f"the race detectors saw every round of the {buf} buffers read after it landed and before it "
                f"was overwritten ({t})" + (f": {also}" if also else "") + f".{latent}")
    if purpose:
        return f"the barrier is {purpose} ({t})"
    return f"UNEXPLAINED: no rule explains why this changes nothing the detectors see ({t})"


def _run(cfg, arch: ArchSpec, knobs: ProtocolKnobs | None, max_events: int | None) -> SimResult:
    return simulate(cfg, arch, knobs=knobs, race_check=True, allow_protocol_experiments=True,
                    max_events=max_events)


def run_mutation(m: Mutation, cfg, arch: ArchSpec, base: SimResult, case_id: str = "") -> Outcome:
    """One mutation on one (resolved) config whose unmutated run is ``base``."""
    if m.knobs is None:
        return Outcome(m.id, case_id, m.skip_class, value=m.value, why=m.skip_why, not_run=True)
    try:
        res = _run(cfg, arch, m.knobs, EVENT_FACTOR * max(1, base.events) + 100_000)
    except SimulationLimitError as e:
        return Outcome(m.id, case_id, "deadlock", value=m.value,
                       detail=f"runaway: the run did not finish within its event budget ({e})")
    out = classify(res, m.target)
    out.mutation, out.config, out.value = m.id, case_id, m.value
    if out.cls == "no effect":
        out.why = explain(m, base, res)
    return out


def run_case(case: Case, only: Callable[[Mutation], bool] | None = None) -> CaseResult:
    """The unmutated run and every mutation (those ``only`` keeps) of one config of the grid."""
    arch = case.resolved_arch()
    cfg = case.config.resolved(arch)
    base = _run(cfg, arch, None, None)
    b = classify(base)
    b.mutation, b.config = "(none: the seed's protocol)", case.id
    if b.cls == "no effect":
        b.why = "the unmutated protocol: nothing found"
    cache: dict[ProtocolKnobs, Outcome] = {}
    outcomes = []
    for m in mutations_for(cfg):
        if only is not None and not only(m):
            continue
        if m.knobs is not None and m.knobs in cache:
            o = replace(cache[m.knobs], mutation=m.id, value=m.value)
        else:
            o = run_mutation(m, cfg, arch, base, case.id)
            if m.knobs is not None:
                cache[m.knobs] = o
        outcomes.append(o)
    return CaseResult(case, b, outcomes, base.cycles, base.events)


@dataclass
class CheckReport:
    cases: list[CaseResult]

    @property
    def outcomes(self) -> list[Outcome]:
        return [o for c in self.cases for o in c.outcomes]

    @property
    def baseline_findings(self) -> list[Outcome]:
        """Findings on the unmutated protocol (false positives, or bugs of the seed): should be none."""
        return [c.baseline for c in self.cases if c.baseline.cls != "no effect"]

    def counts(self, kernel: str | None = None) -> dict[str, int]:
        out = dict.fromkeys(CLASSES, 0)
        for c in self.cases:
            if kernel is None or c.case.id.startswith(kernel):
                for o in c.outcomes:
                    out[o.cls] += 1
        return out

    def unexplained(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.cls == "no effect" and o.why.startswith("UNEXPLAINED")]


def run_check(cases: Sequence[Case], *, workers: int = 1, only: Callable[[Mutation], bool] | None = None,
              progress: Callable[[CaseResult, int, int], None] | None = None) -> CheckReport:
    """Every case of a grid (in order), on ``workers`` processes; ``progress(result, done, total)``."""
    results: list[CaseResult | None] = [None] * len(cases)
    if workers <= 1 or len(cases) <= 1:
        for i, c in enumerate(cases):
            results[i] = run_case(c, only)
            if progress:
                progress(results[i], i + 1, len(cases))
    else:
        import multiprocessing as mp
        with mp.get_context("fork" if sys.platform.startswith("linux") else "spawn").Pool(workers) as pool:
            for done, (i, r) in enumerate(pool.imap_unordered(_indexed, [(i, c, only) for i, c in
                                                                         enumerate(cases)]), 1):
                results[i] = r
                if progress:
                    progress(r, done, len(cases))
    return CheckReport([r for r in results if r is not None])


def _indexed(args):
    i, case, only = args
    return i, run_case(case, only)


def model_counts(case: Case) -> dict[str, int]:
    """The arrival counts the model's barriers are initialised with in ``case`` (the first cluster; knob
    names: ``mainloop.full``, ..., ``epilogue_throttle.cta0``/``.peer``, ``epilogue_named``). Every stage
    of a barrier has the same count, or this raises."""
    from simulator.protocol.deadlock import barrier_kind
    seen: dict[str, int] = {}

    def read(kernel) -> None:
        for cta in kernel.clusters[0].ctas:
            for bar in cta.barriers():
                kind = barrier_kind(bar.name)
                if kind == "epilogue_throttle":
                    kind += ".cta0" if cta.rank == 0 else ".peer"
                kind = {"epilogue.barrier": "epilogue_named"}.get(kind, kind)
                if seen.setdefault(kind, bar.expected) != bar.expected:
                    raise ValueError(f"{bar.name}: count {bar.expected}, another stage or CTA has {seen[kind]}")
        raise _Inspected

    arch = case.resolved_arch()
    try:
        simulate(case.config.resolved(arch), arch, race_check=False, allow_protocol_experiments=True,
                 inspect=read)
    except _Inspected:
        pass
    return seen


class _Inspected(Exception):
    """Stops a run once its barriers were read (nothing needs to be simulated)."""


def check_change(cfg, arch: ArchSpec, knobs: ProtocolKnobs, name: str = "your change") -> tuple[Outcome, Outcome]:
    """A user's own change on one config: (the unmutated run's outcome, the change's outcome)."""
    cfg = cfg.resolved(arch)
    base = _run(cfg, arch, None, None)
    b = classify(base)
    b.mutation, b.config = "(none: the seed's protocol)", "your config"
    family, target = _family_of(knobs)
    m = Mutation(name, family, target, knobs, "; ".join(knobs.describe()))
    return b, run_mutation(m, cfg, arch, base, "your config")


def _family_of(k: ProtocolKnobs) -> tuple[str, str]:
    """The mutation family and target of a user's knobs (one change), for :func:`explain`."""
    one = [("wait", k.skip_wait), ("parity", k.wrong_parity), ("expect_tx", [p for p, _ in k.expect_tx]),
           ("release", k.skip_release), ("start_phase", [p for p, _ in k.producer_start_phase]),
           ("count", [b for b, _ in k.arrival_counts] + (["fixup"] if k.fixup_delta else []))]
    given = [(f, names) for f, names in one if names]
    if not k.clc_throttle:
        given.append(("throttle", ["clc_throttle"]))
    if len(given) == 1 and len(given[0][1]) == 1:
        return given[0][0], given[0][1][0]
    return "user", ", ".join(k.describe())


__all__ = ["CLASSES", "Case", "CaseResult", "CheckReport", "Outcome", "GRIDS", "check_arch", "check_change",
           "classify", "explain", "full_grid", "quick_grid", "run_case", "run_check", "run_mutation"]
