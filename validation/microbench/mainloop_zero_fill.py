"""The 32x8192x8192 mainloop on 8 ... 64 CTAs with and without A's zero fill
(:func:`.mainloop.zero_fill_experiments`): the zero fill's cost against the SMs filling at once."""

from __future__ import annotations

from .mainloop import measure as _measure
from .mainloop import quantities


def measure(gpu, quick: bool = False) -> dict:
    return _measure(gpu, quick, plan="zero_fill")


__all__ = ["measure", "quantities"]
