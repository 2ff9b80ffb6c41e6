"""The SM clock: ``max`` (the spec clock), ``sustained`` (a documented clock under load), GHz, or
``predicted`` (the clock the GPU's power controller settles on for the kernel: a simulation, see
:mod:`simulator.engine.power_clock`).

The model counts cycles; the clock only turns them into nanoseconds, and GPUs lower it under load
(an H200 GEMM runs at 1.25-1.35 GHz in-kernel against 1.98 GHz max). So every time the model
prints says which clock it used, and :func:`with_clock` picks one:

* ``"max"`` -- the arch's ``clock_ghz`` constant as its factory sets it (the spec / boost clock);
* ``"sustained"`` -- the under-load clock in :data:`SUSTAINED_CLOCKS`, with its source;
* a number -- that clock in GHz (e.g. the effective clock measured in the run being compared);
* ``"predicted"`` -- solved from the simulated activity by the arch's power model
  (``simulate(..., clock="predicted")``); the default of ``wsim`` for the archs in
  :data:`PREDICTED_BY_DEFAULT`.

Only ``clock_ghz`` changes; bandwidths given in bytes per second (HBM, L2) stay what they are, so at
a lower SM clock they are worth more bytes per cycle.
"""

from __future__ import annotations

from simulator.errors import ConfigError
from simulator.machine.arch import ArchSpec
from simulator.machine.constants import Constant

#: Under-load SM clocks, per arch name. Each is a documented clock, not a fit.
SUSTAINED_CLOCKS: dict[str, Constant] = {
    "H200": Constant(
        "clock_ghz", 1.30, "GHz",
        "sustained: the in-kernel clock of our H200 GEMMs at 8192^3; clock64 over %globaltimer, medians "
        "1.281-1.322 GHz fp16/bf16 (validation/results/hw_vs_cublas.json, 2026-11-29)", "measured-here"),
    "B200": Constant(
        "clock_ghz", 1.30, "GHz",
        "sustained: the clock gemm-model's B200 runs were locked at, not a measured under-load clock; "
        "hbarclay/gemm-model README: nvidia-smi -lgc 1300,1300 (the only B200 GEMM data we score "
        "against); no published B200 in-kernel clock under load was found", "datasheet"),
}

CLOCK_CHOICES = ("max", "sustained", "predicted")
#: Archs whose power model was checked against measured clocks: ``wsim`` predicts their clock unless
#: one is given (``--clock``, or ``clock_ghz`` set as an arch constant).
PREDICTED_BY_DEFAULT = ("H200",)


def parse_clock(text: str | float | None) -> str | float | None:
    """``--clock`` text -> "max", "sustained", a float in GHz, or None (not given)."""
    if text is None:
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        val = float(text)
    else:
        s = str(text).strip().lower()
        if s in CLOCK_CHOICES:
            return s
        if s.endswith("ghz"):
            s = s[:-3].strip()
        elif s.endswith("mhz"):
            try:
                return parse_clock(float(s[:-3]) / 1000.0)
            except ValueError:
                raise ConfigError(f"clock={text!r}: expected a number of GHz, 'max', 'sustained' or 'predicted'") from None
        try:
            val = float(s)
        except ValueError:
            raise ConfigError(f"clock={text!r}: expected a number of GHz, 'max', 'sustained' or 'predicted'") from None
    if not (val == val) or val <= 0 or val > 10:
        raise ConfigError(f"clock={text!r}: a clock must be a number of GHz in (0, 10]")
    return val


def with_clock(arch: ArchSpec, clock: str | float | None) -> ArchSpec:
    """``arch`` with its SM clock set to ``clock`` ("max", "sustained", GHz, or None: unchanged)."""
    clock = parse_clock(clock)
    if clock is None or clock == "max":
        return arch
    if clock == "predicted":
        raise ConfigError("clock='predicted': the clock is solved with a simulation of the kernel; pass it to "
                          "simulate(..., clock='predicted') (or wsim --clock predicted), not to with_clock")
    if clock == "sustained":
        c = SUSTAINED_CLOCKS.get(arch.name)
        if c is None:
            raise ConfigError(f"clock='sustained': no documented under-load clock for arch {arch.name}; "
                              "give the clock in GHz")
        return arch.with_overrides({"clock_ghz": c.value}, origin=c.source)
    return arch.with_overrides({"clock_ghz": float(clock)}, origin=f"--clock {clock:g} GHz")


def default_clock(arch: ArchSpec) -> str:
    """The clock ``wsim`` runs ``arch`` at when none is given: "predicted" for the archs in
    :data:`PREDICTED_BY_DEFAULT` (unless ``clock_ghz`` was set as a constant), else "max"."""
    if arch.name in PREDICTED_BY_DEFAULT and arch.clock_ghz.kind != "override":
        return "predicted"
    return "max"


def clock_label(arch: ArchSpec) -> str:
    """How the arch's clock was chosen, in a few words, for printing beside a time (the full source
    is in the constants table)."""
    c = arch.clock_ghz
    if c.kind != "override":
        return f"{c.value:g} GHz (max: {c.source.split(' (')[0]})"
    return f"{c.value:g} GHz ({c.source.split(' (was ')[0].split('; ')[0]})"


__all__ = ["SUSTAINED_CLOCKS", "CLOCK_CHOICES", "PREDICTED_BY_DEFAULT", "parse_clock", "with_clock", "default_clock",
           "clock_label"]
