"""The 128 x 64 mainloop replay on 1 ... 132 SMs (:func:`.mainloop.scaling_experiments`): whether the pace
of a K-block is the SM's or the chip's, and (the per-tile clocks) how fast the last, partial wave runs."""

from __future__ import annotations

from .mainloop import measure as _measure
from .mainloop import quantities


def measure(gpu, quick: bool = False) -> dict:
    return _measure(gpu, quick, plan="scaling")


__all__ = ["measure", "quantities"]
