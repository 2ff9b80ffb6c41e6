"""The mainloop on one SM with and without TMA traffic during its math, with both consumer warpgroups or
one issuing wgmma (:func:`.mainloop.operand_experiments`): what slows a K-block of N = 64 to 1.5x its math."""

from __future__ import annotations

from .mainloop import measure as _measure
from .mainloop import quantities


def measure(gpu, quick: bool = False) -> dict:
    return _measure(gpu, quick, plan="operand")


__all__ = ["measure", "quantities"]
