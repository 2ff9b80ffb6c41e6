"""Race detectors: who owns each buffer when, so that an access the protocol failed to order is named.

The barriers say when a stage is full or free; these detectors check the data itself. A kernel
model with a :class:`RaceDetector` (``simulate(race_check=True)``; off by default, and then the
models skip every call here) reports each access to a pipelined buffer:

* **stage ownership** (:class:`Buffer`): one buffer per (CTA, pipeline, stage), e.g. the SMEM of
  mainloop stage 2 of CTA 0. The producer *writes* round ``r`` of it (a TMA load: issued at
  ``t_issue``, every byte landed at ``t_done``; the MMA warp writing an accumulator stage), each
  consumer *reads* round ``r`` from ``t_start`` (its first instruction on the data) to ``t_end`` (its
  release). Two accesses race when nothing ordered them in the simulated run:

  - *overwrite*: a write of a later round was issued before a read of an earlier one ended (a
    stage overwritten by TMA while the MMA still reads it: a premature release, or a producer that
    did not wait; an accumulator reused before the epilogue read it);
  - *read before landed* (byte accounting per phase): a read of round ``r`` started before all the
    bytes (units) of round ``r`` had landed, or they never did (too few expect-tx bytes let the phase
    complete early; a consumer that did not wait);

* **TMEM lifetime** (:meth:`RaceDetector.tmem_use` / :meth:`tmem_free`): an accumulator access that
  ends after its CTA's MMA warp freed TMEM (the deallocation handshake dropped).

Rounds are the roles' own logical counters (``PipelineState.count // stages``), so they mean the
same under every mutation. Races are found when they happen in the simulated timing: an unordered
pair of accesses that this run happens to separate in time is not reported (see the catalogue's
"no effect" explanations). Pure Python; nothing here schedules an event or changes a result.
"""

from __future__ import annotations

from dataclasses import dataclass

#: How many races the detector keeps in full (the count goes on).
MAX_RECORDED_RACES = 16
#: Rounds a buffer keeps behind the newest one it saw (older accesses cannot conflict any more).
KEEP_ROUNDS = 3

OVERWRITE = "overwrite"
READ_BEFORE_LANDED = "read before landed"
USE_AFTER_FREE = "TMEM use after free"


@dataclass(frozen=True, slots=True)
class Race:
    kind: str           # OVERWRITE, READ_BEFORE_LANDED, USE_AFTER_FREE
    buffer: str         # e.g. "CTA0/mainloop[2]"
    cycle: float        # when the second of the two accesses happened
    detail: str

    def describe(self) -> str:
        return f"{self.buffer}: {self.kind} at cycle {self.cycle:.1f}: {self.detail}"


class Buffer:
    """One pipelined buffer: the writes and reads of its recent rounds.

    ``units_per_round``: what one round's writes add up to when complete (bytes of a stage, or 1
    for an accumulator written by one MMA warp)."""

    __slots__ = ("detector", "name", "units", "writes", "reads", "newest")

    def __init__(self, detector: RaceDetector, name: str, units_per_round: int):
        self.detector = detector
        self.name = name
        self.units = units_per_round
        self.writes: dict[int, list[tuple[float, float, int, str]]] = {}   # round -> (t_issue, t_done, units, who)
        self.reads: dict[int, list[tuple[float, float, str]]] = {}         # round -> (t_start, t_end, who)
        self.newest = -1

    def _forget_old(self, rnd: int) -> None:
        if rnd > self.newest:
            self.newest = rnd
            floor = rnd - KEEP_ROUNDS
            for d in (self.writes, self.reads):
                for r in [r for r in d if r < floor]:
                    del d[r]

    def write(self, rnd: int, t_issue: float, t_done: float, units: int, who: str) -> None:
        """The producer's write of round ``rnd``: issued at ``t_issue``, landed at ``t_done``."""
        det = self.detector
        for r, reads in self.reads.items():
            for t_start, t_end, reader in reads:
                if r < rnd and t_end > t_issue:
                    det.report(OVERWRITE, self.name, max(t_issue, t_start),
                               f"{who} wrote round {rnd} (issued at cycle {t_issue:.1f}) while {reader} "
                               f"still read round {r} (until cycle {t_end:.1f}): a premature release or a "
                               "producer that did not wait")
                elif r == rnd and t_done > t_start:
                    det.report(READ_BEFORE_LANDED, self.name, t_start,
                               f"{reader} read round {r} from cycle {t_start:.1f}, {units} unit(s) of it by "
                               f"{who} landed only at cycle {t_done:.1f}")
        self.writes.setdefault(rnd, []).append((t_issue, t_done, units, who))
        self._forget_old(rnd)

    def read(self, rnd: int, t_start: float, t_end: float, who: str) -> None:
        """A consumer's read of round ``rnd`` from ``t_start`` until its release at ``t_end``."""
        det = self.detector
        if rnd < self.newest - KEEP_ROUNDS:
            det.report(OVERWRITE, self.name, t_start,
                       f"{who} read round {rnd} at cycle {t_start:.1f}, after the producer had written "
                       f"round {self.newest}: the stage was overwritten before it was read")
        for r, writes in self.writes.items():
            for t_issue, t_done, units, writer in writes:
                if r > rnd and t_issue < t_end:
                    det.report(OVERWRITE, self.name, max(t_issue, t_start),
                               f"{writer} wrote round {r} (issued at cycle {t_issue:.1f}) while {who} still "
                               f"read round {rnd} (until cycle {t_end:.1f}): a premature release or a producer "
                               "that did not wait")
                elif r == rnd and t_done > t_start:
                    det.report(READ_BEFORE_LANDED, self.name, t_start,
                               f"{who} read round {rnd} from cycle {t_start:.1f}, {units} unit(s) of it by "
                               f"{writer} landed only at cycle {t_done:.1f}")
        self.reads.setdefault(rnd, []).append((t_start, t_end, who))
        self._forget_old(rnd)

    def finish(self) -> None:
        """End of the run: reads of rounds whose writes never added up to a whole round."""
        for r, reads in self.reads.items():
            landed = sum(w[2] for w in self.writes.get(r, ()))
            if landed >= self.units:
                continue
            for t_start, _t_end, who in reads:
                self.detector.report(READ_BEFORE_LANDED, self.name, t_start,
                                     f"{who} read round {r} from cycle {t_start:.1f}; only {landed} of "
                                     f"{self.units} unit(s) of that round were ever written")


class RaceDetector:
    """Every buffer of one run, the TMEM lifetime of each CTA, and the races found."""

    def __init__(self) -> None:
        self.buffers: dict[tuple, Buffer] = {}
        self.races: list[Race] = []
        self.count = 0
        self.first_cycle: float | None = None
        self.kinds: dict[str, int] = {}
        self._tmem_last_use: dict[str, tuple[float, str]] = {}
        self._tmem_freed: dict[str, tuple[float, str]] = {}

    def buffer(self, key: tuple, name: str, units_per_round: int) -> Buffer:
        """The buffer ``key`` (created on first use): e.g. ``(cta_id, "mainloop", stage)``."""
        b = self.buffers.get(key)
        if b is None:
            b = self.buffers[key] = Buffer(self, name, units_per_round)
        return b

    def report(self, kind: str, buffer: str, cycle: float, detail: str) -> None:
        self.count += 1
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if self.first_cycle is None or cycle < self.first_cycle:
            self.first_cycle = cycle
        if len(self.races) < MAX_RECORDED_RACES:
            self.races.append(Race(kind, buffer, cycle, detail))

    # -- TMEM lifetime ----------------------------------------------------------------------
    def tmem_use(self, cta: str, t_start: float, t_end: float, who: str) -> None:
        """An access to ``cta``'s TMEM (an MMA writing an accumulator, the epilogue reading one)."""
        freed = self._tmem_freed.get(cta)
        if freed is not None and t_end > freed[0]:
            self.report(USE_AFTER_FREE, f"{cta}/tmem", max(t_start, freed[0]),
                        f"{who} used TMEM until cycle {t_end:.1f}, {freed[1]} freed it at cycle {freed[0]:.1f}")
        last = self._tmem_last_use.get(cta)
        if last is None or t_end > last[0]:
            self._tmem_last_use[cta] = (t_end, who)

    def tmem_free(self, cta: str, t: float, who: str) -> None:
        """``cta``'s MMA warp frees its TMEM allocation at cycle ``t``."""
        last = self._tmem_last_use.get(cta)
        if last is not None and last[0] > t:
            self.report(USE_AFTER_FREE, f"{cta}/tmem", t,
                        f"{who} freed TMEM at cycle {t:.1f}, {last[1]} used it until cycle {last[0]:.1f}")
        self._tmem_freed[cta] = (t, who)

    def finish(self) -> None:
        for b in self.buffers.values():
            b.finish()

    def describe(self) -> list[str]:
        return [r.describe() for r in sorted(self.races, key=lambda r: (r.cycle, r.buffer))]


__all__ = ["Race", "Buffer", "RaceDetector", "OVERWRITE", "READ_BEFORE_LANDED", "USE_AFTER_FREE",
           "MAX_RECORDED_RACES"]
