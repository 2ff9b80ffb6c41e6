"""Result rows of a sweep or a tune (:class:`~simulator.engine.sweep.Row`) as a table and as a chart.

    rows = simulator.run_sweep(configs, "b200")
    print(rows_table(rows, by_time=True))
    plot_ranking(rows, top=20)            # predicted time per config, coloured by the bottleneck word
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from simulator.engine.bottleneck import WORDS
from simulator.engine.sweep import Row
from simulator.engine.tune import describe_config

#: One colour per bottleneck word (the same in every chart).
BOTTLENECK_COLORS = dict(zip(WORDS, ("#9D9D9D", "#54A24B", "#4C78A8", "#72B7B2", "#B279A2", "#F58518", "#D4A017"),
                             strict=True))


def _ranked(rows: Sequence[Row], by_time: bool) -> list[Row]:
    if not by_time:
        return list(rows)
    ok = sorted((r for r in rows if r.ok), key=lambda r: (r.time_us, r.index))
    return ok + [r for r in rows if not r.ok]


def rows_table(rows: Sequence[Row], *, by_time: bool = False, top: int | None = None) -> str:
    """One line per row: index, time, TFLOP/s, bottleneck word and the config (or the row's error);
    in input order, or by predicted time (errors last); ``top`` keeps the first rows."""
    lines = [f"{'#':>4} {'time us':>10} {'TFLOP/s':>8}  {'bottleneck':<17}  config / error"]
    for r in _ranked(rows, by_time)[:top]:
        if r.ok:
            lines.append(f"{r.index:>4} {r.time_us:>10.2f} {r.tflops:>8.1f}  {r.bottleneck:<17}  "
                         f"{describe_config(r.config)}")
        else:
            lines.append(f"{r.index:>4} {'-':>10} {'-':>8}  {'error':<17}  {r.error}")
    return "\n".join(lines)


def plot_ranking(rows: Sequence[Row], *, top: int | None = 25, title: str | None = None,
                 path: str | Path | None = None) -> Figure:
    """Horizontal bars of predicted time, fastest on top, one per simulated row (the ``top`` fastest),
    coloured by its bottleneck word and labelled with its config; rows without a time are counted in
    the title. Returns the figure (saved to ``path`` if given)."""
    ok = _ranked([r for r in rows if r.ok], True)[:top]
    if not ok:
        raise ValueError(f"plot_ranking: none of the {len(rows)} row(s) has a predicted time")
    fig = plt.figure(figsize=(10, 1.4 + 0.24 * len(ok)), layout="constrained")
    ax = fig.add_subplot()
    y = range(len(ok))
    ax.barh(list(y), [r.time_us for r in ok], color=[BOTTLENECK_COLORS.get(r.bottleneck, "#777777") for r in ok],
            height=0.75)
    ax.set_yticks(list(y), [describe_config(r.config) for r in ok], fontsize=7.5, family="monospace")
    ax.invert_yaxis()
    best = ok[0].time_us
    for i, r in enumerate(ok):
        ax.text(r.time_us, i, f" {r.time_us:.1f} us (+{100 * (r.time_us / best - 1):.1f}%)", va="center",
                fontsize=7.5)
    ax.set_xlim(0, max(r.time_us for r in ok) * 1.22)
    ax.set_xlabel("predicted time (us)")
    words = list(dict.fromkeys(r.bottleneck for r in ok))
    fig.legend(handles=[Patch(color=BOTTLENECK_COLORS.get(w, "#777777"), label=w) for w in words],
               title="bottleneck", loc="outside lower center", ncol=len(words), fontsize=8, title_fontsize=8,
               frameon=False)
    failed = len(rows) - sum(r.ok for r in rows)
    head = title or f"{len(ok)} fastest of {sum(r.ok for r in rows)} simulated config(s)"
    ax.set_title(head + (f" ({failed} without a time: errors or pruned)" if failed else ""), fontsize=10, loc="left")
    if path is not None:
        fig.savefig(path, dpi=120, bbox_inches="tight", facecolor="white")
    return fig


__all__ = ["BOTTLENECK_COLORS", "plot_ranking", "rows_table"]
