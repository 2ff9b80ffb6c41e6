"""Piecewise-linear curves through measured points, for the model constants that vary with a count."""

from __future__ import annotations

from collections.abc import Sequence


def interp(points: Sequence[tuple[float, float]], x: float) -> float:
    """``points`` (sorted by x) at ``x``: linear between neighbours, flat past the ends."""
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if x <= x1:
            return y0 + (x - x0) / (x1 - x0) * (y1 - y0)
    return points[-1][1]


__all__ = ["interp"]
