"""Predicted against measured, log axes, one colour per data set (the ``wsim accuracy`` figure)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def accuracy_scatter(series: Sequence[tuple[str, Sequence[float], Sequence[float]]], path: str | Path | None = None,
                     *, title: str = "wsim: predicted vs measured kernel time", band: float = 0.1):
    """Scatter of (measured, predicted) per data set on log-log axes with the y = x line and a
    +-``band`` corridor. ``series``: (name, measured, predicted) triples (microseconds). Returns the
    matplotlib figure; saves it to ``path`` if given."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

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


__all__ = ["accuracy_scatter"]
