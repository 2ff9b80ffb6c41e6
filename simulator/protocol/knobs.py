"""Protocol knobs: "what if" switches on the barrier protocol, for deadlock and race experiments.

The defaults reproduce the seed exactly. Each knob changes one fact of the protocol, so that a
user can ask what the kernel would do with, e.g., a CLC consumer arrival count that forgot the
cluster factor. Knobs are validated against the pipelines and barriers the kernel model has;
an unknown name is an error that lists the valid ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from simulator.errors import ConfigError

#: Pipelines whose arrival counts, start phases and releases can be changed.
PIPELINES = ("mainloop", "accumulator", "clc", "clc_throttle", "epi_load")
BARRIER_SIDES = ("full", "empty")


@dataclass(frozen=True)
class ProtocolKnobs:
    """``arrival_counts``: ``{"clc.empty": 224}`` replaces the count a barrier is initialised with.
    ``producer_start_phase``: ``{"mainloop": 0}`` starts that producer in phase 0 instead of 1.
    ``skip_release``: pipelines whose consumers never release a stage.
    ``clc_throttle``: the Sched warp waits for the CLC throttle before each query (the seed: on).
    """

    arrival_counts: tuple[tuple[str, int], ...] = ()
    producer_start_phase: tuple[tuple[str, int], ...] = ()
    skip_release: tuple[str, ...] = ()
    clc_throttle: bool = True

    @classmethod
    def make(cls, *, arrival_counts: Mapping[str, int] | None = None,
             producer_start_phase: Mapping[str, int] | None = None,
             skip_release: tuple[str, ...] | list[str] = (), clc_throttle: bool = True) -> ProtocolKnobs:
        k = cls(tuple(sorted((arrival_counts or {}).items())),
                tuple(sorted((producer_start_phase or {}).items())),
                tuple(sorted(skip_release)), bool(clc_throttle))
        k.check()
        return k

    def check(self, pipelines: tuple[str, ...] = PIPELINES) -> None:
        for key, count in self.arrival_counts:
            pipe, _, side = key.partition(".")
            if pipe not in pipelines or side not in BARRIER_SIDES:
                raise ConfigError(
                    f"arrival count override {key!r}: not a barrier of this kernel; use "
                    f"<pipeline>.<full|empty> with pipeline in {', '.join(pipelines)}")
            if not isinstance(count, int) or count < 1:
                raise ConfigError(f"arrival count override {key}={count!r}: an mbarrier count must be an integer >= 1")
        for pipe, phase in self.producer_start_phase:
            if pipe not in pipelines:
                raise ConfigError(f"producer start phase for {pipe!r}: unknown pipeline; valid: {', '.join(pipelines)}")
            if phase not in (0, 1):
                raise ConfigError(f"producer start phase {pipe}={phase!r}: a phase bit is 0 or 1")
        for pipe in self.skip_release:
            if pipe not in pipelines:
                raise ConfigError(f"skip_release {pipe!r}: unknown pipeline; valid: {', '.join(pipelines)}")

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
