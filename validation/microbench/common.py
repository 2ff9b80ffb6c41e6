"""What the microbenchmark families share on the host: named quantities and small statistics."""

from __future__ import annotations

import statistics


def qv(value: float, unit: str, what: str) -> dict:
    """One named result: its value (rounded for the JSON), unit and how it was obtained."""
    return {"value": round(float(value), 3), "unit": unit, "what": what}


def med(xs) -> float:
    xs = [float(x) for x in xs]
    return statistics.median(xs) if xs else float("nan")


def linfit(xs, ys) -> tuple[float, float]:
    """Least-squares line ``y = a + b x``; returns (a, b)."""
    xs, ys = [float(x) for x in xs], [float(y) for y in ys]
    n = len(xs)
    if n < 2:
        raise ValueError(f"linfit needs at least 2 points, got {n}")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("linfit: all x equal")
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - b * mx, b
