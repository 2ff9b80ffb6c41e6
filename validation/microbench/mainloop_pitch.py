"""The mainloop at an aligned and a misaligned row pitch in every cluster shape
(:func:`.mainloop.pitch_experiments`): what a multicast slice's straddling rows cost the SMs it lands on."""

from __future__ import annotations

from .mainloop import measure as _measure
from .mainloop import quantities


def measure(gpu, quick: bool = False) -> dict:
    return _measure(gpu, quick, plan="pitch")


__all__ = ["measure", "quantities"]
