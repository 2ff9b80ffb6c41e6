"""Protocol knobs: "what if" switches on the barrier protocol, for deadlock and race experiments.

The defaults reproduce the seed exactly. Each knob changes one fact of the protocol, so that a
user can ask what the kernel would do with, e.g., a CLC consumer arrival count that forgot the
cluster factor. Knobs are validated against the pipelines and barriers the kernel model has;
an unknown name is an error that lists the valid ones, and a knob on something a run never uses
is an error that says why (:meth:`ProtocolKnobs.check_applies`).

Pipeline counts, producer start phases, skipped releases and the CLC throttle act inside the
kernel models; the barrier-level knobs (single-barrier counts, skipped waits, waits on the wrong
parity, expect-tx bytes) are set on the built barriers by :meth:`ProtocolKnobs.apply_to`, which
reaches both kernels alike. ``wsim check`` enumerates all of them (:mod:`simulator.engine.check`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from simulator.errors import ConfigError
from simulator.protocol.deadlock import barrier_kind
from simulator.protocol.mbarrier import WAIT_SKIPPED, WAIT_WRONG_PARITY

#: Pipelines whose arrival counts, start phases and releases can be changed.
PIPELINES = ("mainloop", "accumulator", "clc", "clc_throttle", "epi_load")
BARRIER_SIDES = ("full", "empty")
#: Barriers with one count (no full/empty pair), as knobs name them (SM100: epilogue throttle of CTA 0
#: and of the other CTAs, TMEM allocation and deallocation, load order; SM90: load order, the
#: epilogue's named barrier, the ping-pong math-order barrier).
SINGLE_BARRIERS = ("epilogue_throttle.cta0", "epilogue_throttle.peer", "tmem_alloc", "tmem_dealloc", "load_order",
                   "epilogue_named", "math_order")
#: Named barriers (``bar.sync``): PTX counts their threads in whole warps.
NAMED_BARRIERS = ("tmem_alloc", "epilogue_named")
#: What a waiting role waits on, for ``skip_wait``/``wrong_parity``: ``<pipeline>.<full|empty>`` or one of these
#: (``fixup``: the stream-K / split-K fixup flag, a global-memory flag, not an mbarrier).
SINGLE_WAITS = ("epilogue_throttle", "tmem_alloc", "tmem_dealloc", "load_order", "epilogue_named", "math_order",
                "fixup")
#: What ``skip_release`` names besides the pipelines: the fixup flag's arrive (a non-final split never arrives).
FIXUP = "fixup"
#: Waits with no phase parity (named barriers, the fixup flag): ``wrong_parity`` does not apply.
NO_PARITY_WAITS = NAMED_BARRIERS + (FIXUP,)
#: Pipelines whose producer posts expect-tx bytes on the full barrier.
TX_PIPELINES = ("mainloop", "clc", "epi_load")
#: The keys of a TOML [knobs] table.
KNOB_KEYS = ("arrival_counts", "producer_start_phase", "skip_release", "clc_throttle", "skip_wait", "wrong_parity",
             "expect_tx", "fixup_delta")
#: PTX ISA, mbarrier: the expected arrival count is a 20-bit field (1 .. 2^20 - 1), and so is an
#: expect-tx transaction count (0 .. 2^20 - 1).
MBARRIER_MAX_COUNT = (1 << 20) - 1
#: PTX ISA, bar.sync/bar.arrive: "the number of threads must be a multiple of warp size".
WARP_SIZE = 32
#: The barrier kinds of the models' barrier names (``deadlock.barrier_kind``) that knobs name otherwise.
_KIND_TO_KNOB = {"epilogue.barrier": "epilogue_named"}


def pipelines_in_use(cfg: Any) -> tuple[tuple[str, ...], dict[str, str]]:
    """The pipelines a run of ``cfg`` (a kernel config) waits on, and why each other one is not used.

    SM100: mainloop and accumulator always; clc and clc_throttle with the CLC scheduler; epi_load
    when C is read. SM90: mainloop, and epi_load when C is read (accumulators live in registers,
    tiles come from the static scheduler).
    """
    sm90 = getattr(cfg, "arch_name", "sm100") == "sm90"
    clc = not sm90 and getattr(cfg, "tile_scheduler", "clc") == "clc"
    why: dict[str, str] = {}
    if sm90:
        why["accumulator"] = "the SM90 kernel keeps accumulators in registers (no accumulator pipeline)"
        why["clc"] = why["clc_throttle"] = "the SM90 kernel uses the static persistent scheduler (no CLC)"
    elif not clc:
        why["clc"] = why["clc_throttle"] = (f"tile_scheduler={cfg.tile_scheduler!r} makes no CLC queries "
                                            "(only the 'clc' scheduler uses the clc and clc_throttle pipelines)")
    if not getattr(cfg, "read_c", False):
        why["epi_load"] = "read_c=False: no C is loaded, the epilogue-load pipeline is never used"
    return tuple(p for p in PIPELINES if p not in why), why


def barriers_in_use(cfg: Any) -> tuple[tuple[str, ...], dict[str, str]]:
    """The single-count barriers (:data:`SINGLE_BARRIERS`) a run of ``cfg`` initialises and arrives on,
    and why each other one is not there."""
    sm90 = getattr(cfg, "arch_name", "sm100") == "sm90"
    why: dict[str, str] = {}
    if sm90:
        for b in ("epilogue_throttle.cta0", "epilogue_throttle.peer", "tmem_alloc", "tmem_dealloc"):
            why[b] = "the SM90 kernel has no TMEM and no epilogue-throttle barrier"
        if cfg.schedule != "pingpong":
            why["math_order"] = f"schedule={cfg.schedule!r}: only the ping-pong kernel orders its math warpgroups"
    else:
        for b in ("epilogue_named", "math_order"):
            why[b] = "a barrier of the SM90 kernel (the SM100 epilogue syncs on no named barrier per subtile here)"
        if cfg.cluster_m * cfg.cluster_n == 1:
            why["epilogue_throttle.peer"] = "cluster 1x1: there is no CTA other than CTA 0"
        if not (cfg.use_2sm or cfg.overlapping_accum):
            why["tmem_dealloc"] = ("1-SM without overlapping accumulators: the seed never initialises the TMEM "
                                   "deallocation barrier (no MMA peer CTA)")
        if not cfg.read_c:
            why["load_order"] = "read_c=False: the mainloop's load-order barrier is used only before C loads"
    return tuple(b for b in SINGLE_BARRIERS if b not in why), why


def waits_in_use(cfg: Any) -> tuple[tuple[str, ...], dict[str, str]]:
    """Every barrier a role of ``cfg``'s run waits on (``<pipeline>.<side>`` or :data:`SINGLE_WAITS`), and
    why each other one has no waiter."""
    used, why_p = pipelines_in_use(cfg)
    sm90 = getattr(cfg, "arch_name", "sm100") == "sm90"
    pipes = PIPELINES if not sm90 else ("mainloop", "epi_load")
    why: dict[str, str] = {}
    for p in pipes:
        for side in BARRIER_SIDES:
            if p not in used:
                why[f"{p}.{side}"] = why_p[p]
    _, why_b = barriers_in_use(cfg)
    for b in SINGLE_WAITS:
        if b == "epilogue_throttle":
            if sm90:
                why[b] = why_b["epilogue_throttle.cta0"]
        elif b in why_b:
            why[b] = why_b[b]
    if sm90 and not cfg.read_c:
        why["load_order"] = "read_c=False: only the epilogue-load warp waits on the load-order barrier"
    fixup_why = fixup_unused(cfg)
    if fixup_why:
        why[FIXUP] = fixup_why
    names = [f"{p}.{s}" for p in pipes for s in BARRIER_SIDES] + list(SINGLE_WAITS)
    return tuple(n for n in names if n not in why), why


def fixup_unused(cfg: Any) -> str:
    """Why a run of ``cfg`` has no fixup flag ("" if its decomposition may split tiles)."""
    dec = getattr(cfg, "decomposition", "data_parallel")
    if dec == "data_parallel":
        return ("decomposition='data_parallel': the kernel's own tile scheduler, every tile computed whole by one "
                "unit (no stream-K / split-K fixup)")
    return ""


def _check_wait_name(what: str, name: str, mbarrier_only: bool) -> None:
    pipe, _, side = name.partition(".")
    ok = (pipe in PIPELINES and side in BARRIER_SIDES) or name in SINGLE_WAITS
    if not ok:
        raise ConfigError(f"{what} {name!r}: not a barrier a role waits on; use <pipeline>.<full|empty> with "
                          f"pipeline in {', '.join(PIPELINES)}, or one of {', '.join(SINGLE_WAITS)}")
    if mbarrier_only and name in NO_PARITY_WAITS:
        kind = "the fixup flag (a counter in global memory)" if name == FIXUP else "a named barrier (bar.sync)"
        raise ConfigError(f"{what} {name!r}: {kind} has no phase parity to wait on")


@dataclass(frozen=True)
class ProtocolKnobs:
    """``arrival_counts``: ``{"clc.empty": 224}`` replaces the count a barrier is initialised with
    (``<pipeline>.<full|empty>`` or a :data:`SINGLE_BARRIERS` name).
    ``producer_start_phase``: ``{"mainloop": 0}`` starts that producer in phase 0 instead of 1.
    ``skip_release``: pipelines whose consumers never release a stage.
    ``clc_throttle``: CTA 0's MainloopLoad grants the Sched warp one CLC query per tile through the
    clc_throttle pipeline (the seed: on); off, neither role takes part and Sched queries as soon as
    a clc stage is free.
    ``skip_wait``: barriers no role waits on (every wait passes at once).
    ``wrong_parity``: mbarriers every role waits on with the other phase parity.
    ``expect_tx``: ``{"mainloop": 32768}``: the bytes each expect-tx on that pipeline's full barrier posts.
    ``fixup_delta``: every arrival on a stream-K / split-K fixup flag adds its K tiles plus this (the seed: 0);
    ``skip_release=["fixup"]``: non-final splits never arrive; ``skip_wait=["fixup"]``: no peer waits.
    """

    arrival_counts: tuple[tuple[str, int], ...] = ()
    producer_start_phase: tuple[tuple[str, int], ...] = ()
    skip_release: tuple[str, ...] = ()
    clc_throttle: bool = True
    skip_wait: tuple[str, ...] = ()
    wrong_parity: tuple[str, ...] = ()
    expect_tx: tuple[tuple[str, int], ...] = ()
    fixup_delta: int = 0

    def __post_init__(self) -> None:
        """The constructor also takes the plain forms of the docstring (``{"clc.empty": 224}``, a list
        of pipelines) and keeps them as sorted tuples; any other shape is a ConfigError."""
        for name in ("arrival_counts", "producer_start_phase"):
            v = getattr(self, name)
            pairs = list(v.items()) if isinstance(v, Mapping) else v
            if not isinstance(pairs, (list, tuple)) or not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
                raise ConfigError(f"{name}={v!r}: expected a mapping of <name> = <integer>, e.g. "
                                  f"{{'clc.empty': 224}}, got {type(v).__name__}")
            for key, _ in pairs:
                if not isinstance(key, str):
                    raise ConfigError(f"protocol knob key {key!r}: expected a string such as 'clc.empty'")
            object.__setattr__(self, name, tuple(sorted(pairs)))
        skip = self.skip_release
        if isinstance(skip, str) or not isinstance(skip, (list, tuple)):
            raise ConfigError(f"skip_release={skip!r}: expected a list of pipeline names, e.g. "
                              f"[\"mainloop\"], got {type(skip).__name__}")
        object.__setattr__(self, "skip_release", tuple(skip))

    @classmethod
    def make(cls, *, arrival_counts: Mapping[str, int] | None = None,
             producer_start_phase: Mapping[str, int] | None = None,
             skip_release: tuple[str, ...] | list[str] = (), clc_throttle: bool = True,
             skip_wait: tuple[str, ...] | list[str] = (), wrong_parity: tuple[str, ...] | list[str] = (),
             expect_tx: Mapping[str, int] | None = None, fixup_delta: int = 0) -> ProtocolKnobs:
        """Knobs from plain values, with strict types (a count is an int, not 2.5 or "224"; the
        throttle switch is a bool, not "no"); :meth:`check` validates names and values."""
        tables = (("arrival_counts", arrival_counts), ("producer_start_phase", producer_start_phase),
                  ("expect_tx", expect_tx))
        for name, m in tables:
            if m is not None and not isinstance(m, Mapping):
                raise ConfigError(f"{name}={m!r}: expected a table of <name> = <integer>, got {type(m).__name__}")
        for name, lst in (("skip_release", skip_release), ("skip_wait", skip_wait), ("wrong_parity", wrong_parity)):
            if isinstance(lst, str) or not isinstance(lst, (list, tuple)):
                example = '["mainloop"]' if name == "skip_release" else '["mainloop.empty"]'
                raise ConfigError(f"{name}={lst!r}: expected a list of names, e.g. {example}, "
                                  f"got {type(lst).__name__}")
            for entry in lst:
                if not isinstance(entry, str):
                    raise ConfigError(f"{name} entry {entry!r}: expected a name (a string)")
        for _, m in tables:
            for key in m or {}:
                if not isinstance(key, str):
                    raise ConfigError(f"protocol knob key {key!r}: expected a string such as 'clc.empty'")
        k = cls(tuple(sorted((arrival_counts or {}).items())),
                tuple(sorted((producer_start_phase or {}).items())),
                tuple(sorted(skip_release)), clc_throttle, tuple(sorted(skip_wait)), tuple(sorted(wrong_parity)),
                tuple(sorted((expect_tx or {}).items())), fixup_delta)
        k.check()
        return k

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any], origin: str = "[knobs]") -> ProtocolKnobs:
        """Knobs from a TOML ``[knobs]`` table (or any mapping); an unknown key is an error."""
        if not isinstance(mapping, Mapping):
            raise ConfigError(f"{origin}: expected a table of knobs ({', '.join(KNOB_KEYS)}), "
                              f"got {type(mapping).__name__} {mapping!r}")
        unknown = [k for k in mapping if k not in KNOB_KEYS]
        if unknown:
            raise ConfigError(f"{origin}: unknown knob {unknown[0]!r}; valid: {', '.join(KNOB_KEYS)}")
        try:
            return cls.make(arrival_counts=mapping.get("arrival_counts"),
                            producer_start_phase=mapping.get("producer_start_phase"),
                            skip_release=mapping.get("skip_release", ()),
                            clc_throttle=mapping.get("clc_throttle", True),
                            skip_wait=mapping.get("skip_wait", ()), wrong_parity=mapping.get("wrong_parity", ()),
                            expect_tx=mapping.get("expect_tx"), fixup_delta=mapping.get("fixup_delta", 0))
        except ConfigError as e:
            raise ConfigError(f"{origin}: {e}") from None

    def check(self, pipelines: tuple[str, ...] = PIPELINES) -> None:
        for key, count in self.arrival_counts:
            pipe, _, side = key.partition(".")
            if not ((pipe in pipelines and side in BARRIER_SIDES) or key in SINGLE_BARRIERS):
                raise ConfigError(
                    f"arrival count override {key!r}: not a barrier of this kernel; use "
                    f"<pipeline>.<full|empty> with pipeline in {', '.join(pipelines)}, or one of "
                    f"{', '.join(SINGLE_BARRIERS)}")
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ConfigError(f"arrival count override {key}={count!r}: an mbarrier count must be an integer >= 1")
            if count > MBARRIER_MAX_COUNT:
                raise ConfigError(f"arrival count override {key}={count}: an mbarrier's expected arrival count is "
                                  f"at most 2^20 - 1 = {MBARRIER_MAX_COUNT} (PTX ISA, mbarrier)")
            if key in NAMED_BARRIERS and count % WARP_SIZE:
                raise ConfigError(f"arrival count override {key}={count}: a named barrier counts whole warps, a "
                                  f"multiple of {WARP_SIZE} threads (PTX ISA, bar.sync)")
        for pipe, phase in self.producer_start_phase:
            if pipe not in pipelines:
                raise ConfigError(f"producer start phase for {pipe!r}: unknown pipeline; valid: {', '.join(pipelines)}")
            if isinstance(phase, bool) or phase not in (0, 1):
                raise ConfigError(f"producer start phase {pipe}={phase!r}: a phase bit is the integer 0 or 1")
        for pipe in self.skip_release:
            if pipe not in pipelines and pipe != FIXUP:
                raise ConfigError(f"skip_release {pipe!r}: unknown pipeline; valid: {', '.join(pipelines)}, "
                                  f"or {FIXUP} (the fixup flag's arrive)")
        if not isinstance(self.fixup_delta, int) or isinstance(self.fixup_delta, bool):
            raise ConfigError(f"fixup_delta={self.fixup_delta!r}: expected an integer (what each fixup arrival adds "
                              "beyond its K tiles)")
        if not isinstance(self.clc_throttle, bool):
            raise ConfigError(f"clc_throttle={self.clc_throttle!r}: expected true or false, got "
                              f"{type(self.clc_throttle).__name__}")
        for name in self.skip_wait:
            _check_wait_name("skip_wait", name, mbarrier_only=False)
        for name in self.wrong_parity:
            _check_wait_name("wrong_parity", name, mbarrier_only=True)
        both = set(self.skip_wait) & set(self.wrong_parity)
        if both:
            raise ConfigError(f"{sorted(both)[0]}: in both skip_wait and wrong_parity; a wait is skipped or "
                              "waits on the wrong parity, not both")
        for pipe, nbytes in self.expect_tx:
            if pipe not in TX_PIPELINES:
                raise ConfigError(f"expect_tx {pipe!r}: not a pipeline whose producer posts expect-tx bytes; "
                                  f"valid: {', '.join(TX_PIPELINES)}")
            if not isinstance(nbytes, int) or isinstance(nbytes, bool) or not 0 <= nbytes <= MBARRIER_MAX_COUNT:
                raise ConfigError(f"expect_tx {pipe}={nbytes!r}: a transaction count is an integer in "
                                  f"0 .. 2^20 - 1 = {MBARRIER_MAX_COUNT} bytes (PTX ISA, mbarrier.expect_tx)")

    def check_applies(self, cfg: Any) -> None:
        """Every knob acts on a pipeline or barrier the run of ``cfg`` uses (see :func:`pipelines_in_use`,
        :func:`barriers_in_use`, :func:`waits_in_use`): a knob on something the kernel never uses would
        change nothing, so it is an error saying why."""
        used, why = pipelines_in_use(cfg)
        if not self.clc_throttle:
            if "clc_throttle" not in used:
                raise ConfigError(f"--no-clc-throttle (clc_throttle = false): cannot apply to this run: "
                                  f"{why['clc_throttle']}")
            used = tuple(p for p in used if p != "clc_throttle")
            why = {**why, "clc_throttle": "--no-clc-throttle (clc_throttle = false) takes the throttle out: "
                                          "neither MainloopLoad nor Sched uses its pipeline"}
        bars, why_b = barriers_in_use(cfg)
        waits, why_w = waits_in_use(cfg)
        fixup_why = fixup_unused(cfg)
        if fixup_why and (FIXUP in self.skip_release or self.fixup_delta):
            what = "skip_release fixup" if FIXUP in self.skip_release else f"fixup_delta={self.fixup_delta}"
            raise ConfigError(f"{what}: cannot apply to this run: {fixup_why}")
        named = [(f"producer start phase {p}={v}", p) for p, v in self.producer_start_phase]
        named += [(f"skip_release {p}", p) for p in self.skip_release if p != FIXUP]
        named += [(f"expect_tx {p}={v}", p) for p, v in self.expect_tx]
        for k, v in self.arrival_counts:
            if k in SINGLE_BARRIERS:
                if k not in bars:
                    raise ConfigError(f"arrival count override {k}={v}: cannot apply to this run: {why_b[k]}")
            else:
                named.append((f"arrival count override {k}={v}", k.partition(".")[0]))
        for what, pipe in named:
            if pipe not in used:
                raise ConfigError(f"{what}: cannot apply to this run: {why[pipe]}")
        for what, names in (("skip_wait", self.skip_wait), ("wrong_parity", self.wrong_parity)):
            for n in names:
                if n not in waits:
                    raise ConfigError(f"{what} {n}: cannot apply to this run: {why_w[n]}")

    def count(self, pipeline: str, side: str, default: int) -> int:
        return dict(self.arrival_counts).get(f"{pipeline}.{side}", default)

    def start_phase(self, pipeline: str) -> int:
        return dict(self.producer_start_phase).get(pipeline, 1)

    def releases(self, pipeline: str) -> bool:
        return pipeline not in self.skip_release

    @property
    def acts_on_barriers(self) -> bool:
        """Whether :meth:`apply_to` has anything to set."""
        return bool(self.skip_wait or self.wrong_parity or self.expect_tx
                    or any(k in SINGLE_BARRIERS for k, _ in self.arrival_counts))

    def apply_to(self, barriers: Iterable) -> None:
        """Set the barrier-level knobs on a built kernel's barriers (before its run starts): the counts
        of single-count barriers, skipped waits, waits on the wrong parity, expect-tx bytes."""
        counts = {k: v for k, v in self.arrival_counts if k in SINGLE_BARRIERS}
        skip, flip, tx = set(self.skip_wait), set(self.wrong_parity), dict(self.expect_tx)
        for bar in barriers:
            kind = barrier_kind(bar.name)
            kind = _KIND_TO_KNOB.get(kind, kind)
            count_key = kind
            if kind == "epilogue_throttle":
                count_key = "epilogue_throttle.cta0" if bar.name.startswith("CTA0/") else "epilogue_throttle.peer"
            if count_key in counts:
                bar.expected = counts[count_key]
                if hasattr(bar, "_pending"):
                    bar._pending = counts[count_key]
                else:
                    bar.pending = counts[count_key]
            if kind in skip:
                bar.wait_mutation = WAIT_SKIPPED
            elif kind in flip:
                bar.wait_mutation = WAIT_WRONG_PARITY
            pipe, _, side = kind.partition(".")
            if side == "full" and pipe in tx:
                bar.tx_override = tx[pipe]

    @property
    def is_default(self) -> bool:
        return not (self.arrival_counts or self.producer_start_phase or self.skip_release or self.skip_wait
                    or self.wrong_parity or self.expect_tx or self.fixup_delta) and self.clc_throttle

    def describe(self) -> list[str]:
        out = [f"{k} arrival count = {v}" for k, v in self.arrival_counts]
        out += [f"{p} producer starts in phase {v}" for p, v in self.producer_start_phase]
        out += [f"{p} consumers never release" for p in self.skip_release]
        if not self.clc_throttle:
            out.append("CLC throttle off")
        out += [f"waits on {w} skipped" for w in self.skip_wait]
        out += [f"waits on {w} on the wrong parity" for w in self.wrong_parity]
        out += [f"{p} expect-tx posts {v} B" for p, v in self.expect_tx]
        if self.fixup_delta:
            out.append(f"each fixup arrival adds its K tiles {self.fixup_delta:+d}")
        return out
