"""The mainloop replay of the small-M problems whose B streams from HBM on part of the chip
(:func:`.mainloop.hbm_experiments`): whether their K-block pace is the loads' or the math's."""

from __future__ import annotations

from .mainloop import measure as _measure
from .mainloop import quantities


def measure(gpu, quick: bool = False) -> dict:
    return _measure(gpu, quick, plan="hbm")


__all__ = ["measure", "quantities"]
