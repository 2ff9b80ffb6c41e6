"""The mainloop replays of 1x2 and 2x1 clusters (multicast A or B): :mod:`.mainloop`'s experiments run in
their own family, so that a fault there loses none of the 1x1 ones."""

from __future__ import annotations

from .mainloop import measure as _measure
from .mainloop import quantities


def measure(gpu, quick: bool = False) -> dict:
    return _measure(gpu, quick, plan="clustered")


__all__ = ["measure", "quantities"]
