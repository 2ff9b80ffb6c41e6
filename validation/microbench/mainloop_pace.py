"""The mainloop replay's pace per tile N on one SM and on 132 SMs in every cluster shape
(:func:`.mainloop.pace_experiments`): what bounds a K-block, the SM or the L2, for each tile."""

from __future__ import annotations

from .mainloop import measure as _measure
from .mainloop import quantities


def measure(gpu, quick: bool = False) -> dict:
    return _measure(gpu, quick, plan="pace")


__all__ = ["measure", "quantities"]
