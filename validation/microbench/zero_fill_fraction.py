"""Zero fill against the SMs filling at once for other zero fractions (:mod:`.zero_fill_scaling`'s v3g
cases): 64 and 32 of 128 rows zero-filled, and boxes wholly past the tensor, on 1 ... 132 SMs."""

from __future__ import annotations

from .zero_fill_scaling import FRACTION_CASES, quantities
from .zero_fill_scaling import measure as _measure


def measure(gpu, quick: bool = False) -> dict:
    return _measure(gpu, quick, cases=FRACTION_CASES)


__all__ = ["measure", "quantities"]
