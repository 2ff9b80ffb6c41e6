"""The L2 merge window against the load: ``l2share_window``'s pairs at 132, 66, 32 and 16 CTAs, the partners
next to each other in blockIdx (one GPC) or half the grid apart (two GPCs), at finer offsets (v3l). v3k found
the window wide with every SM streaming and narrow with 16."""

from __future__ import annotations

from .l2share_window import measure_load, quantities

__all__ = ["measure", "quantities"]


def measure(gpu, quick: bool = False) -> dict:
    return measure_load(gpu, quick)
