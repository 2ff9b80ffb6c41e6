"""Running a kernel model: ``simulate`` (the event loop and its result) and the trace it records."""

from simulator.engine.run import SimResult, simulate

__all__ = ["SimResult", "simulate"]
