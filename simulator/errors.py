"""The errors the simulator raises for bad input: the lowest layer, imported by every other one."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration CUTLASS (or the hardware) would reject, or an input that breaks a rule:
    the message names the field, the value and the rule, like CUTLASS's can_implement traces."""


class SimulationLimitError(RuntimeError):
    """A run that would exceed (or did exceed) its event budget (``max_events``): stopped with a
    message that says how big the run is and how to allow it, instead of running for hours."""


def events_exceeded(limit: int, cycle: float) -> SimulationLimitError:
    """The error an event loop raises when a run has processed more than ``limit`` events (the same
    message from every engine's loop)."""
    return SimulationLimitError(
        f"max_events={limit}: the run processed more events than allowed and was stopped "
        f"at cycle {cycle:,.0f} (raise --max-events, or simulate a smaller problem)")
