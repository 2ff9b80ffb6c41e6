"""Protocol knobs: "what if" switches on the barrier protocol, for deadlock and race experiments.

The defaults reproduce the seed exactly. Each knob changes one fact of the protocol, so that a
user can ask what the kernel would do with, e.g., a CLC consumer arrival count that forgot the
cluster factor. Knobs are validated against the pipelines and barriers the kernel model has;
an unknown name is an error that lists the valid ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulator.errors import ConfigError

#: Pipelines whose arrival counts, start phases and releases can be changed.
PIPELINES = ("mainloop", "accumulator", "clc", "clc_throttle", "epi_load")
BARRIER_SIDES = ("full", "empty")
#: The keys of a TOML [knobs] table.
KNOB_KEYS = ("arrival_counts", "producer_start_phase", "skip_release", "clc_throttle")
#: PTX ISA, mbarrier: the expected arrival count is a 20-bit field (1 .. 2^20 - 1).
MBARRIER_MAX_COUNT = (1 << 20) - 1


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


@dataclass(frozen=True)
class ProtocolKnobs:
    """``arrival_counts``: ``{"clc.empty": 224}`` replaces the count a barrier is initialised with.
    ``producer_start_phase``: ``{"mainloop": 0}`` starts that producer in phase 0 instead of 1.
    ``skip_release``: pipelines whose consumers never release a stage.
    ``clc_throttle``: CTA 0's MainloopLoad grants the Sched warp one CLC query per tile through the
    clc_throttle pipeline (the seed: on); off, neither role takes part and Sched queries as soon as
    a clc stage is free.
    """

    arrival_counts: tuple[tuple[str, int], ...] = ()
    producer_start_phase: tuple[tuple[str, int], ...] = ()
    skip_release: tuple[str, ...] = ()
    clc_throttle: bool = True

    @classmethod
    def make(cls, *, arrival_counts: Mapping[str, int] | None = None,
             producer_start_phase: Mapping[str, int] | None = None,
             skip_release: tuple[str, ...] | list[str] = (), clc_throttle: bool = True) -> ProtocolKnobs:
        """Knobs from plain values, with strict types (a count is an int, not 2.5 or "224"; the
        throttle switch is a bool, not "no"); :meth:`check` validates names and values."""
        for name, m in (("arrival_counts", arrival_counts), ("producer_start_phase", producer_start_phase)):
            if m is not None and not isinstance(m, Mapping):
                raise ConfigError(f"{name}={m!r}: expected a table of <name> = <integer>, got {type(m).__name__}")
        if isinstance(skip_release, str) or not isinstance(skip_release, (list, tuple)):
            raise ConfigError(f"skip_release={skip_release!r}: expected a list of pipeline names, e.g. "
                              f"[\"mainloop\"], got {type(skip_release).__name__}")
        for pipe in skip_release:
            if not isinstance(pipe, str):
                raise ConfigError(f"skip_release entry {pipe!r}: expected a pipeline name (a string)")
        for key in (*(arrival_counts or {}), *(producer_start_phase or {})):
            if not isinstance(key, str):
                raise ConfigError(f"protocol knob key {key!r}: expected a string such as 'clc.empty'")
        k = cls(tuple(sorted((arrival_counts or {}).items())),
                tuple(sorted((producer_start_phase or {}).items())),
                tuple(sorted(skip_release)), clc_throttle)
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
                            clc_throttle=mapping.get("clc_throttle", True))
        except ConfigError as e:
            raise ConfigError(f"{origin}: {e}") from None

    def check(self, pipelines: tuple[str, ...] = PIPELINES) -> None:
        for key, count in self.arrival_counts:
            pipe, _, side = key.partition(".")
            if pipe not in pipelines or side not in BARRIER_SIDES:
                raise ConfigError(
                    f"arrival count override {key!r}: not a barrier of this kernel; use "
                    f"<pipeline>.<full|empty> with pipeline in {', '.join(pipelines)}")
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ConfigError(f"arrival count override {key}={count!r}: an mbarrier count must be an integer >= 1")
            if count > MBARRIER_MAX_COUNT:
                raise ConfigError(f"arrival count override {key}={count}: an mbarrier's expected arrival count is "
                                  f"at most 2^20 - 1 = {MBARRIER_MAX_COUNT} (PTX ISA, mbarrier)")
        for pipe, phase in self.producer_start_phase:
            if pipe not in pipelines:
                raise ConfigError(f"producer start phase for {pipe!r}: unknown pipeline; valid: {', '.join(pipelines)}")
            if isinstance(phase, bool) or phase not in (0, 1):
                raise ConfigError(f"producer start phase {pipe}={phase!r}: a phase bit is the integer 0 or 1")
        for pipe in self.skip_release:
            if pipe not in pipelines:
                raise ConfigError(f"skip_release {pipe!r}: unknown pipeline; valid: {', '.join(pipelines)}")
        if not isinstance(self.clc_throttle, bool):
            raise ConfigError(f"clc_throttle={self.clc_throttle!r}: expected true or false, got "
                              f"{type(self.clc_throttle).__name__}")

    def check_applies(self, cfg: Any) -> None:
        """Every knob acts on a pipeline the run of ``cfg`` uses (see :func:`pipelines_in_use`): a knob
        on a pipeline the kernel never waits on would change nothing, so it is an error saying why."""
        used, why = pipelines_in_use(cfg)
        if not self.clc_throttle:
            if "clc_throttle" not in used:
                raise ConfigError(f"--no-clc-throttle (clc_throttle = false): cannot apply to this run: "
                                  f"{why['clc_throttle']}")
            used = tuple(p for p in used if p != "clc_throttle")
            why = {**why, "clc_throttle": "--no-clc-throttle (clc_throttle = false) takes the throttle out: "
                                          "neither MainloopLoad nor Sched uses its pipeline"}
        named = [(f"arrival count override {k}={v}", k.partition(".")[0]) for k, v in self.arrival_counts]
        named += [(f"producer start phase {p}={v}", p) for p, v in self.producer_start_phase]
        named += [(f"skip_release {p}", p) for p in self.skip_release]
        for what, pipe in named:
            if pipe not in used:
                raise ConfigError(f"{what}: cannot apply to this run: {why[pipe]}")

    def count(self, pipeline: str, side: str, default: int) -> int:
        return dict(self.arrival_counts).get(f"{pipeline}.{side}", default)

    def start_phase(self, pipeline: str) -> int:
        return dict(self.producer_start_phase).get(pipeline, 1)

    def releases(self, pipeline: str) -> bool:
        return pipeline not in self.skip_release

    @property
    def is_default(self) -> bool:
        return not (self.arrival_counts or self.producer_start_phase or self.skip_release) and self.clc_throttle

    def describe(self) -> list[str]:
        out = [f"{k} arrival count = {v}" for k, v in self.arrival_counts]
        out += [f"{p} producer starts in phase {v}" for p, v in self.producer_start_phase]
        out += [f"{p} consumers never release" for p in self.skip_release]
        if not self.clc_throttle:
            out.append("CLC throttle off")
        return out
