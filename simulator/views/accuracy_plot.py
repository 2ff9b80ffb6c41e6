"""Predicted against measured (the ``wsim accuracy`` figures): a log-log scatter, one colour per
series, and the predicted/measured ratio per row class, each predictor beside the others.

Importing this module picks no matplotlib backend (a notebook shows the figures inline; the
``wsim accuracy`` command picks the headless one itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def accuracy_scatter(series: Sequence[tuple[str, Sequence[float], Sequence[float]]], path: str | Path | None = None,
                     *, title: str = "wsim: predicted vs measured kernel time", band: float = 0.1):
    """Scatter of (measured, predicted) per data set on log-log axes with the y = x line and a
    +-``band`` corridor. ``series``: (name, measured, predicted) triples (microseconds). Returns the
    matplotlib figure; saves it to ``path`` if given (and then closes it)."""
    fig, ax = plt.subplots(figsize=(6.4, 6.0))
    lo, hi = np.inf, 0.0
    for i, (name, meas, pred) in enumerate(series):
        m, p = np.asarray(meas, float), np.asarray(pred, float)
        ok = np.isfinite(m) & np.isfinite(p) & (m > 0) & (p > 0)
        if not ok.any():
            continue
        m, p = m[ok], p[ok]
        mape = 100 * float(np.mean(np.abs(p / m - 1)))
        ax.scatter(m, p, s=12, alpha=0.7, color=_COLOURS[i % len(_COLOURS)],
                   label=f"{name}: {len(m)} rows, MAPE {mape:.1f}%")
        lo, hi = min(lo, m.min(), p.min()), max(hi, m.max(), p.max())
    if hi > 0:
        x = np.array([lo / 1.5, hi * 1.5])
        ax.plot(x, x, color="black", lw=1)
        ax.fill_between(x, x * (1 - band), x * (1 + band), color="grey", alpha=0.15,
                        label=f"+-{band:.0%}")
        ax.set_xlim(*x)
        ax.set_ylim(*x)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured (us)")
    ax.set_ylabel("predicted (us)")
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def accuracy_ratio_by_class(ratios: Mapping[str, Sequence[float]], classes: Sequence[str], *,
                            title: str = "predicted / measured per row class", band: float = 0.1,
                            path: str | Path | None = None):
    """Predicted/measured of every row, grouped by its class: per class one column of points per
    predictor (jittered, same rows for all), its median as a bar, a line at 1 and a +-``band``
    corridor, log scale; each class's label says its rows and every predictor's MAPE. ``ratios``:
    predictor -> ratio per row; ``classes``: the class of each row. Returns the figure."""
    cls = np.asarray(classes)
    names = list(ratios)
    vals = {n: np.asarray(ratios[n], float) for n in names}
    for n, v in vals.items():
        if len(v) != len(cls):
            raise ValueError(f"accuracy_ratio_by_class: {n} has {len(v)} ratios for {len(cls)} classes")
    order = sorted(set(cls.tolist()))
    fig, ax = plt.subplots(figsize=(min(16.0, max(6.0, 0.8 * len(order) * max(1, len(names)))), 4.6),
                           layout="constrained")
    width = 0.8 / max(1, len(names))
    rng = np.random.default_rng(0)          # the jitter is only for the eye: fixed, so the figure is reproducible
    ticks = []
    for ci, c in enumerate(order):
        sel = cls == c
        mapes = []
        for pi, n in enumerate(names):
            v = vals[n][sel]
            x = ci - 0.4 + width * (pi + 0.5)
            ax.scatter(x + rng.uniform(-0.35, 0.35, len(v)) * width, v, s=6, alpha=0.45,
                       color=_COLOURS[pi % len(_COLOURS)], label=n if ci == 0 else None, linewidths=0)
            ax.hlines(np.median(v), x - 0.45 * width, x + 0.45 * width, color="black", lw=1.5)
            mapes.append(f"{100 * np.mean(np.abs(v - 1)):.0f}%")
        ticks.append(f"{c}\n{int(sel.sum())} rows\n" + " / ".join(mapes))
    ax.axhline(1.0, color="black", lw=1)
    ax.axhspan(1 - band, 1 + band, color="grey", alpha=0.15)
    ax.set_yscale("log")
    ax.set_xticks(range(len(order)), ticks, fontsize=7.5)
    ax.set_ylabel("predicted / measured")
    ax.set_title(f"{title} (MAPE: {' / '.join(names)}; bars: medians)", fontsize=10, loc="left")
    ax.legend(loc="upper right", fontsize=8, markerscale=2.5)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    if path is not None:
        fig.savefig(path, dpi=120, facecolor="white")
    return fig


__all__ = ["accuracy_ratio_by_class", "accuracy_scatter"]
