"""Pictures of a schedule: Gantt timelines, stage occupancy, stall breakdowns, comparisons.

Every function takes a :class:`~simulator.engine.trace.Trace` (simulated or measured: same format),
returns the matplotlib ``Figure`` and saves it when given ``path`` (``.png``, ``.svg``, ``.pdf``).
Importing this module does not pick a matplotlib backend: a notebook shows the figures inline,
and the command line (``wsim plot``) chooses the headless Agg backend itself.

Colours are one per span kind (:data:`KIND_COLORS`) in every plot. A wait takes the colour of the
pipeline it waits on, lightened, and a hatch that says which side is waiting: ``////`` on a
``full`` barrier (a consumer waiting for data), ``\\\\`` on an ``empty`` barrier (a producer
waiting for a free stage), dots for other barriers. Wide enough waits carry the barrier's name.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from simulator.engine.trace import Trace
from simulator.views.breakdown import (
    MARKER_KINDS,
    Breakdown,
    SelectionError,
    check_sms,
    check_window,
    occupancy_series,
    role_breakdown,
    role_tracks,
    selection_mask,
    sorted_roles,
    trace_extent,
    trace_sms,
)

# -- style ----------------------------------------------------------------------------------
KIND_COLORS: dict[str, str] = {
    "tma_load": "#4C78A8",     # blue
    "mma": "#54A24B",          # green
    "epi_load": "#72B7B2",     # teal
    "epilogue": "#F58518",     # orange
    "tma_store": "#B279A2",    # purple
    "clc_query": "#D4A017",    # gold
    "prologue": "#9D9D9D",     # grey
    "tile": "#DADADA",
    "acc_handoff": "#333333",
    "fixup_store": "#E45756",  # red: stream-K / split-K partials to the workspace
    "fixup_reduce": "#FF9DA6",  # pink: partials added into the workspace
    "fixup_load": "#9D755D",   # brown: the final split loads and adds the partials
}
KIND_LABELS: dict[str, str] = {
    "tma_load": "TMA load (in flight)", "mma": "MMA K-block", "epi_load": "C load (in flight)",
    "epilogue": "epilogue subtile", "tma_store": "TMA store (in flight)", "clc_query": "CLC query",
    "prologue": "prologue", "tile": "tile", "acc_handoff": "accumulator hand-off",
    "fixup_store": "fixup: partial stored", "fixup_reduce": "fixup: partial added",
    "fixup_load": "fixup: partials loaded",
}
#: Colour of each pipeline / named barrier (waits use it lightened). A pipeline that one kind of span
#: fills takes that kind's colour: a wait on ``mainloop.full`` is light blue like the TMA loads it
#: waits for.
PIPELINE_COLORS: dict[str, str] = {
    "mainloop": KIND_COLORS["tma_load"], "accumulator": KIND_COLORS["mma"], "acc": KIND_COLORS["mma"],
    "clc": KIND_COLORS["clc_query"], "clc_fetch": KIND_COLORS["clc_query"], "sched": KIND_COLORS["clc_query"],
    "clc_throttle": "#9C755F",
    "epi_load": KIND_COLORS["epi_load"], "epilogue_load": KIND_COLORS["epi_load"],
    "epi_store": KIND_COLORS["tma_store"], "epilogue_store": KIND_COLORS["tma_store"],
    "store": KIND_COLORS["tma_store"],
    "tmem_alloc": "#E45756", "tmem_dealloc": "#E45756", "tmem": "#E45756",
    "load_order": "#7F7F7F", "epilogue_throttle": "#7F7F7F",
    "fixup": KIND_COLORS["fixup_store"],
}
#: The kind that colours a role's busy time in the stall breakdown.
ROLE_KIND: dict[str, str] = {
    "Sched": "clc_query", "MainloopLoad": "tma_load", "MMA": "mma", "EpilogueLoad": "epi_load",
    "Epilogue": "epilogue", "Consumer0": "mma", "Consumer1": "mma",
}
_OTHER_WAIT = ["#8C6D5A", "#7F7F7F", "#A0522D", "#6B8E23", "#5F7F9F", "#BC80BD"]
IDLE_COLOR = "#F2F2F2"
FONT = 8.5


def _mix(color: str, white: float) -> tuple[float, float, float]:
    r, g, b = to_rgb(color)
    return (r + (1 - r) * white, g + (1 - g) * white, b + (1 - b) * white)


def barrier_style(barrier: str) -> dict[str, Any]:
    """Face colour, hatch and hatch colour of waits on ``barrier`` (stable across plots)."""
    pipe, _, side = barrier.partition(".")
    base = PIPELINE_COLORS.get(pipe.lower()) or _OTHER_WAIT[zlib.crc32(pipe.encode()) % len(_OTHER_WAIT)]
    hatch = {"full": "////", "empty": "\\\\\\\\"}.get(side.lower(), "....")
    return {"facecolor": _mix(base, 0.62), "hatch": hatch, "edgecolor": _mix(base, 0.15)}


_HAS_HATCHCOLOR = tuple(int(x) for x in matplotlib.__version__.split(".")[:2]) >= (3, 10)


def hatch_kwargs(style: dict[str, Any], edge: float = 0.0) -> dict[str, Any]:
    """Patch keyword arguments for a hatched wait style; ``edge`` > 0 outlines each bar in white
    (matplotlib >= 3.10 colours hatches separately; older versions hatch in the edge colour)."""
    if _HAS_HATCHCOLOR:
        return {"facecolor": style["facecolor"], "hatch": style["hatch"], "hatchcolor": style["edgecolor"],
                "edgecolor": "white" if edge > 0 else style["facecolor"], "linewidth": edge}
    return {"facecolor": style["facecolor"], "hatch": style["hatch"], "edgecolor": style["edgecolor"],
            "linewidth": 0.0}


def kind_color(kind: str) -> str:
    return KIND_COLORS.get(kind, "#777777")


# -- defaults -------------------------------------------------------------------------------
def tile_period_ns(trace: Trace) -> float:
    """Typical time one SM spends on one output tile (median MMA / consumer tile span)."""
    cols = trace.columns()
    if len(trace) == 0:
        return 0.0
    for roles in (("MMA",), ("Consumer0", "Consumer1"), None):
        m = cols["kind"] == "tile"
        if roles is not None:
            m &= np.isin(cols["role"], roles)
        if m.any():
            return float(np.median(cols["end_ns"][m] - cols["start_ns"][m]))
    t0, t1 = trace_extent(trace)
    return (t1 - t0) / 10.0


def default_windows(trace: Trace, tiles: float = 4.0) -> dict[str, tuple[float, float]]:
    """Windows worth looking at: ``start``, ``steady`` (the middle) and ``tail``, ~4 tiles each.

    A run shorter than about 12 tile periods is shown whole: ``{"whole run": (start, end)}``.
    """
    t0, t1 = trace_extent(trace)
    if t1 <= t0:
        raise SelectionError("the trace is empty: no spans to show")
    p = tile_period_ns(trace)
    dur = t1 - t0
    if p <= 0 or dur < 12 * p:
        return {"whole run": (t0, t1)}
    w = tiles * p
    mid = (t0 + t1) / 2
    return {"start": (t0, t0 + w), "steady": (mid - w / 2, mid + w / 2), "tail": (t1 - w, t1)}


def default_sms(trace: Trace, n: int = 3) -> list[int]:
    """A few SMs: the first, its cluster peer, and the SM that finishes last (the tail)."""
    cols = trace.columns()
    have = trace_sms(trace)
    if not have:
        raise SelectionError("the trace is empty: no SMs to show")
    first = have[0]
    out = [first]
    on_first = cols["sm"] == first
    if on_first.any():
        cl = cols["cluster"][on_first][0]
        peers = sorted(set(cols["sm"][(cols["cluster"] == cl) & (cols["sm"] != first)].tolist()))
        if peers and cl >= 0:
            out.append(int(peers[0]))
    ends = {}
    for sm, e in zip(cols["sm"].tolist(), cols["end_ns"].tolist(), strict=True):
        if e > ends.get(sm, -np.inf):
            ends[sm] = e
    last = max(ends, key=lambda s: (ends[s], -s))
    if last not in out:
        out.append(int(last))
    for s in have:
        if len(out) >= n:
            break
        if s not in out:
            out.append(s)
    return sorted(out[:n])


def _root(ax: Axes) -> Figure:
    """The top-level figure of an axes (also when it sits in a subfigure)."""
    try:
        return ax.get_figure(root=True)
    except TypeError:  # matplotlib < 3.10
        f = ax.figure
        while not isinstance(f, Figure):
            f = f.figure
        return f


def _save(fig: Figure, path: str | Path | None, dpi: int = 130) -> None:
    if path is None:
        return
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise SelectionError(f"output {str(path)!r}: plots are saved as .png, .svg or .pdf")
    fig.savefig(path, dpi=dpi, bbox_inches="tight", facecolor="white")


def _fmt_window(w: tuple[float, float]) -> str:
    return f"{w[0] / 1e3:,.2f}–{w[1] / 1e3:,.2f} µs"


def _sm_list_text(sms: Sequence[int]) -> str:
    if len(sms) <= 6:
        return "SM " + ", ".join(str(s) for s in sms)
    return f"{len(sms)} SMs ({sms[0]}..{sms[-1]})"


def describe(trace: Trace) -> str:
    """One line naming the run from its metadata."""
    m = trace.meta
    parts = [str(m.get("source", "")), str(m.get("arch", ""))]
    cfg = m.get("config")
    if isinstance(cfg, dict) and {"m", "n", "k"} <= set(cfg):
        parts.append(f"{cfg['m']}x{cfg['n']}x{cfg['k']}")
    t0, t1 = trace_extent(trace)
    parts.append(f"{len(trace_sms(trace))} SMs")
    parts.append(f"{(t1 - t0) / 1e3:,.2f} µs")
    return " · ".join(p for p in parts if p)


# -- timeline -------------------------------------------------------------------------------
@dataclass
class _Row:
    sm: int
    role: str
    y: float          # top of the row
    tracks: list[tuple[str, float, float]]   # (name, y top, height) per track index
    idx: np.ndarray    # trace rows
    track: np.ndarray  # track index per row in idx


_WARP_H, _TILE_H, _LANE_H, _LANE_MAX, _ROW_GAP, _SM_GAP = 1.0, 0.3, 0.2, 1.2, 0.35, 0.75


def _layout(trace: Trace, sms: list[int], window: tuple[float, float],
            roles: Sequence[str] | None) -> tuple[list[_Row], float]:
    cols = trace.columns()
    mask = selection_mask(trace, sms, window)
    if roles is not None:
        mask &= np.isin(cols["role"], list(roles))
    idx_all = np.flatnonzero(mask)
    rows: list[_Row] = []
    y = 0.0
    for si, sm in enumerate(sms):
        on = idx_all[cols["sm"][idx_all] == sm]
        if si > 0:
            y += _SM_GAP - _ROW_GAP
        for role in sorted_roles(cols["role"][on].tolist()):
            idx = on[cols["role"][on] == role]
            track, names = role_tracks(cols["start_ns"][idx], cols["end_ns"][idx], cols["kind"][idx],
                                       cols["stage"][idx])
            lane_ids = [i for i, n in enumerate(names) if i > 0 and not n.startswith("tiles")]
            tile_ids = [i for i, n in enumerate(names) if n.startswith("tiles")]
            lane_h = min(_LANE_H, _LANE_MAX / max(len(lane_ids), 1))
            tracks: list[tuple[str, float, float]] = [("", 0.0, 0.0)] * len(names)
            yy = y
            for i in tile_ids:
                h = _TILE_H / len(tile_ids)
                tracks[i] = (names[i], yy, h)
                yy += h
            if tile_ids:
                yy += 0.04
            for i in lane_ids:
                tracks[i] = (names[i], yy, lane_h)
                yy += lane_h
            if lane_ids:
                yy += 0.04
            tracks[0] = ("", yy, _WARP_H)
            yy += _WARP_H
            rows.append(_Row(sm=sm, role=role, y=y, tracks=tracks, idx=idx, track=track))
            y = yy + _ROW_GAP
    return rows, max(y - _ROW_GAP, 0.0)


def _merge_bars(s: np.ndarray, e: np.ndarray, gap: float) -> list[tuple[float, float]]:
    """(x, width) bars in µs for intervals [s, e) ns, merging those less than ``gap`` ns apart."""
    o = np.argsort(s, kind="stable")
    s, e = s[o], e[o]
    keep = e > s
    s, e = s[keep], e[keep]
    if len(s) == 0:
        return []
    run_end = np.maximum.accumulate(e)
    new = np.concatenate(([True], s[1:] > run_end[:-1] + gap))
    starts = s[new]
    idx = np.flatnonzero(new)
    ends = np.maximum.reduceat(e, idx)
    return list(zip((starts / 1e3).tolist(), ((ends - starts) / 1e3).tolist(), strict=True))


def _short_label(kind: str, k_block: int, barrier: str, tile: tuple[int, int, int]) -> str:
    if kind == "wait":
        return barrier
    if kind == "tile":
        return f"tile ({tile[0]},{tile[1]})"
    if kind in ("mma", "tma_load"):
        return f"k{k_block}" if k_block >= 0 else ""
    if kind in ("epilogue", "epi_load", "tma_store"):
        return f"s{k_block}" if k_block >= 0 else ""
    if kind == "clc_query":
        return "CLC"
    if kind == "prologue":
        return "prologue"
    if kind.startswith("fixup_"):
        return f"fix k{k_block}" if k_block >= 0 else "fixup"
    return ""


def plot_timeline(trace: Trace, *, sms: Sequence[int] | None = None,
                  window_ns: tuple[float, float] | None = None, roles: Sequence[str] | None = None,
                  ax: Axes | None = None, path: str | Path | None = None, title: str | None = None,
                  legend: bool = True, max_labels: int = 400, width_in: float = 12.0,
                  layout_window_ns: tuple[float, float] | None = None) -> Figure:
    """Gantt chart: one row per (SM, warp role) over a time window.

    Each row shows the warp itself (waits hatched in the waited-on pipeline's colour and labelled by
    barrier, MMA K-blocks, epilogue subtiles), above it thin lanes for work in flight (TMA loads per
    stage, TMA stores) and a strip with the output tiles. Defaults: :func:`default_sms` and the
    first of :func:`default_windows`. ``layout_window_ns`` (default: the window) is the span range
    that decides rows and lanes; panels given the same one line up (see :func:`plot_overview`).
    """
    sms_list = default_sms(trace) if sms is None else check_sms(trace, sms)
    if window_ns is None:
        window = next(iter(default_windows(trace).values()))
    else:
        window = check_window(trace, window_ns)
    rows, height = _layout(trace, sms_list, layout_window_ns or window, roles)
    if not rows:
        raise SelectionError(f"no spans on {_sm_list_text(sms_list)} in {_fmt_window(window)}")
    if ax is None:
        fig = plt.figure(figsize=(width_in, 1.3 + 0.34 * height), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = _root(ax)
    cols = trace.columns()
    w0, w1 = window
    # Display width of the axes in pixels, to decide which bars have room for a label.
    ax_w_px = max(ax.get_window_extent().width * 0.92, 50.0)
    px_per_ns = ax_w_px / (w1 - w0)
    char_px = 0.62 * (FONT - 1.5) * fig.dpi / 72.0
    n_labels = 0
    kinds_seen: list[str] = []
    barriers_seen: list[str] = []
    yticks, ylabels, yl_styles = [], [], []

    for row in rows:
        in_win = (cols["end_ns"][row.idx] >= w0) & (cols["start_ns"][row.idx] <= w1)
        idx = row.idx[in_win]
        row_track = row.track[in_win]
        s = np.clip(cols["start_ns"][idx], w0, w1)
        e = np.clip(cols["end_ns"][idx], w0, w1)
        kind = cols["kind"][idx]
        for t, (tname, ty, th) in enumerate(row.tracks):
            on_t = row_track == t
            if not on_t.any() and t != 0:
                continue
            is_tiles = tname.startswith("tiles")
            is_lane = t > 0 and not is_tiles
            for k in sorted(set(kind[on_t].tolist()), key=lambda x: (x == "wait", x)):
                km = on_t & (kind == k)
                if k == "acc_handoff":
                    xs = s[km]
                    ax.plot(xs / 1e3, np.full(len(xs), ty + 0.08), linestyle="none", marker="v",
                            markersize=4.5, color=KIND_COLORS["acc_handoff"], zorder=5, clip_on=True)
                    if k not in kinds_seen:
                        kinds_seen.append(k)
                    continue
                if k == "wait":
                    bars = cols["barrier"][idx][km]
                    for b in sorted(set(bars.tolist())):
                        bm = np.flatnonzero(km)[bars == b]
                        st = barrier_style(b or "?")
                        # Waits closer than a pixel merge into one bar (hatching thousands of slivers
                        # is slow and reads the same).
                        xr = _merge_bars(s[bm], e[bm], gap=1.0 / px_per_ns)
                        # Outline each wait in white when all are wide enough to keep their colour.
                        edge = 0.5 if xr and min(w for _, w in xr) * 1e3 * px_per_ns >= 4 else 0.0
                        kw = hatch_kwargs(st, edge)
                        kw["facecolors"] = kw.pop("facecolor")
                        ax.broken_barh(xr, (ty + 0.1 * th, 0.8 * th), zorder=2, **kw)
                        for x0, wd in xr:
                            if n_labels >= max_labels:
                                break
                            if wd * 1e3 * px_per_ns >= len(b) * char_px + 6:
                                ax.text(x0 + wd / 2, ty + th / 2, b, ha="center", va="center", fontsize=FONT - 1.5,
                                        color="#404040", zorder=6, clip_on=True,
                                        bbox=dict(boxstyle="round,pad=0.12", fc=(1, 1, 1, 0.75), ec="none"))
                                n_labels += 1
                        if b not in barriers_seen:
                            barriers_seen.append(b)
                    continue
                col = "#E6E6E6" if is_tiles else kind_color(k)
                kidx = np.flatnonzero(km)
                xr = [(a / 1e3, (c - a) / 1e3) for a, c in zip(s[kidx], e[kidx], strict=True) if c > a]
                if is_tiles:
                    # Alternate shades so neighbouring tiles read as separate.
                    order = kidx[np.argsort(s[kidx], kind="stable")]
                    order = order[e[order] > s[order]]
                    for parity, shade in ((0, "#E3E3E3"), (1, "#C9C9C9")):
                        o = order[parity::2]
                        sel = list(zip((s[o] / 1e3).tolist(), ((e[o] - s[o]) / 1e3).tolist(), strict=True))
                        if sel:
                            ax.broken_barh(sel, (ty, th), facecolors=shade, linewidth=0, zorder=2)
                else:
                    pad = 0.04 * th if is_lane else 0.06 * th
                    # White outlines separate neighbouring K-blocks / subtiles once they are wide
                    # enough; on slivers they would wash the colour out.
                    wide = bool(xr) and min(w for _, w in xr) * 1e3 * px_per_ns >= 3
                    ax.broken_barh(xr, (ty + pad, th - 2 * pad), facecolors=col,
                                   edgecolor="white" if wide else col,
                                   linewidth=(0.3 if is_lane else 0.5) if wide else 0.0, zorder=1.5)
                    if k not in kinds_seen:
                        kinds_seen.append(k)
            # Labels on bars wide enough to hold them (never on thin in-flight lanes, nor where a
            # wait nested in the bar covers the label).
            if is_lane or n_labels >= max_labels:
                continue
            wm = on_t & (kind == "wait")
            w_s, w_e = np.sort(s[wm]), np.sort(e[wm])
            for j in np.flatnonzero(on_t):
                if n_labels >= max_labels:
                    break
                r = idx[j]
                k = str(kind[j])
                if k in ("acc_handoff", "wait"):   # waits are labelled where they are drawn
                    continue
                tile = (int(cols["tile_m"][r]), int(cols["tile_n"][r]), int(cols["tile_l"][r]))
                text = _short_label(k, int(cols["k_block"][r]), str(cols["barrier"][r]), tile)
                wpx = (e[j] - s[j]) * px_per_ns
                if not text or wpx < len(text) * char_px + 6:
                    continue
                mid = (s[j] + e[j]) / 2
                if k != "tile" and len(w_s) and np.searchsorted(w_s, mid, "right") > np.searchsorted(w_e, mid, "left"):
                    continue   # the centre lies inside a wait (waits on one warp never overlap)
                fs = FONT - 2.5 if is_tiles else FONT - 1.5
                color = "#404040" if is_tiles else "white"
                ax.text((s[j] + e[j]) / 2e3, ty + th / 2, text, ha="center", va="center", fontsize=fs,
                        color=color, zorder=6, clip_on=True)
                n_labels += 1
        # Y labels: the warp row, and a quieter one for the in-flight lanes.
        name, wy, wh = row.tracks[0]
        yticks.append(wy + wh / 2)
        ylabels.append(f"SM {row.sm} · {row.role}")
        yl_styles.append("main")
        lanes = [(n, y_, h_) for i, (n, y_, h_) in enumerate(row.tracks) if i > 0 and not n.startswith("tiles")
                 and (row.track == i).any()]
        if lanes:
            y_top = min(y_ for _, y_, _ in lanes)
            y_bot = max(y_ + h_ for _, y_, h_ in lanes)
            kinds_in = sorted({n.split(" ")[0] for n, _, _ in lanes}, key=lambda k: k)
            yticks.append((y_top + y_bot) / 2)
            ylabels.append("in flight: " + ", ".join(KIND_LABELS.get(k, k).split(" (")[0] for k in kinds_in)
                           + f" ×{len(lanes)}")
            yl_styles.append("lane")

    # Separators between SMs.
    for prev, cur in zip(rows, rows[1:], strict=False):
        if cur.sm != prev.sm:
            ax.axhline(cur.y - (_SM_GAP / 2), color="#888888", linewidth=0.8, zorder=1)
    ax.set_ylim(height + 0.2, -0.2)
    ax.set_xlim(w0 / 1e3, w1 / 1e3)
    ax.set_yticks(yticks)
    ax.set_yticklabels(ylabels)
    for tick, st in zip(ax.yaxis.get_major_ticks(), yl_styles, strict=False):
        lbl = tick.label1
        if st == "lane":
            lbl.set_fontsize(FONT - 2)
            lbl.set_color("#777777")
            lbl.set_fontstyle("italic")
        else:
            lbl.set_fontsize(FONT)
    ax.tick_params(axis="y", length=0)
    ax.tick_params(axis="x", labelsize=FONT)
    ax.set_xlabel("time (µs)", fontsize=FONT)
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.6, zorder=0)
    ax.set_axisbelow(True)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_title(title if title is not None else
                 f"Warp roles · {_sm_list_text(sms_list)} · window {_fmt_window(window)}",
                 fontsize=FONT + 1.5, loc="left")
    handles = legend_handles(kinds_seen, barriers_seen)
    ax._wsim_legend = handles  # noqa: SLF001  (reused by overview / compare figures)
    if legend and handles:
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.5 / max(height, 4) - 0.06),
                  ncol=min(len(handles), 5), fontsize=FONT - 0.5, frameon=False, handlelength=2.2,
                  handleheight=1.1)
    _save(fig, path)
    return fig


def legend_handles(kinds: Sequence[str], barriers: Sequence[str]) -> list[Patch]:
    """Legend patches: activity kinds in :data:`KIND_COLORS` order, then waits by barrier."""
    out: list[Any] = []
    for k in KIND_COLORS:
        if k in kinds and k not in MARKER_KINDS:
            out.append(Patch(facecolor=KIND_COLORS[k], edgecolor="none", label=KIND_LABELS.get(k, k)))
    if "acc_handoff" in kinds:
        out.append(matplotlib.lines.Line2D([], [], linestyle="none", marker="v", markersize=5,
                                           color=KIND_COLORS["acc_handoff"], label="accumulator hand-off"))
    for b in sorted(barriers, key=_barrier_rank):
        st = barrier_style(b or "?")
        out.append(Patch(label=f"wait {b}", **hatch_kwargs(st)))
    return out


def _barrier_rank(b: str) -> tuple[int, str]:
    pipe = b.partition(".")[0].lower()
    order = ["mainloop", "accumulator", "acc", "epi_load", "epilogue_load", "epi_store", "epilogue_store",
             "clc", "clc_fetch", "clc_throttle"]
    return (order.index(pipe) if pipe in order else len(order), b)


# -- stage occupancy ------------------------------------------------------------------------
def _stage_capacity(trace: Trace, pipeline: str) -> int | None:
    cfg = trace.meta.get("config")
    if not isinstance(cfg, dict):
        return None
    aliases = {"mainloop": ("mainloop_stages", "stages", "stage_count", "num_stages"),
               "accumulator": ("acc_stages", "accumulator_stages", "acc_stage_count"),
               "clc": ("scheduler_stages", "sched_stages", "clc_stages"),
               "epi_load": ("epi_load_stages", "epilogue_load_stages"),
               "epi_store": ("epi_store_stages", "epilogue_store_stages")}
    for key in aliases.get(pipeline, ()) + (f"{pipeline}_stages",):
        v = cfg.get(key)
        if isinstance(v, (int, float)) and v > 0:
            return int(v)
    return None


def _bin_step(t: np.ndarray, v: np.ndarray, w0: float, w1: float, nbins: int) -> tuple[np.ndarray, np.ndarray]:
    """Time-weighted mean of a step series per bin (for series too dense to draw as steps)."""
    edges = np.linspace(w0, w1, nbins + 1)
    # integral of the step function at arbitrary x
    tt = np.concatenate(([min(w0, t[0])], t))
    vv = np.concatenate(([0.0], v))
    area = np.concatenate(([0.0], np.cumsum(vv[:-1] * np.diff(tt))))

    def integral(x: np.ndarray) -> np.ndarray:
        i = np.searchsorted(tt, x, side="right") - 1
        i = np.clip(i, 0, len(tt) - 1)
        return area[i] + vv[i] * (x - tt[i])

    acc = integral(edges)
    return edges, np.diff(acc) / np.diff(edges)


def _draw_series(ax: Axes, t: np.ndarray, v: np.ndarray, window: tuple[float, float], color: str,
                 label: str | None, fill: bool = True) -> bool:
    """Step series clipped to the window; returns True when it was binned.

    A series with more changes than about one per 4 pixels cannot be read as steps; it is drawn as
    its time-weighted mean over bins ~8 pixels wide instead (the title then says "mean per bin").
    """
    w0, w1 = window
    if len(t) == 0:
        return False
    before = np.flatnonzero(t < w0)
    keep = (t >= w0) & (t <= w1)
    tt = np.concatenate(([w0], t[keep], [w1]))
    v0 = v[before[-1]] if len(before) else 0.0
    vv = np.concatenate(([v0], v[keep]))
    vv = np.concatenate((vv, [vv[-1]]))
    width_px = max(ax.get_window_extent().width, 100.0)
    binned = keep.sum() > width_px / 4
    if binned:
        edges, mean = _bin_step(t, v, w0, w1, max(int(width_px / 8), 20))
        ax.stairs(mean, edges / 1e3, color=color, linewidth=1.1, label=label, fill=False, baseline=None)
        if fill:
            ax.stairs(mean, edges / 1e3, color=_mix(color, 0.6), fill=True, alpha=0.6)
        return True
    ax.step(tt / 1e3, vv, where="post", color=color, linewidth=1.0, label=label)
    if fill:
        ax.fill_between(tt / 1e3, vv, step="post", color=_mix(color, 0.6), alpha=0.6, linewidth=0)
    return False


def plot_stage_occupancy(trace: Trace, pipeline: str = "mainloop", *, sms: Sequence[int] | None = None,
                         window_ns: tuple[float, float] | None = None, ax: Axes | None = None,
                         path: str | Path | None = None, title: str | None = None) -> Figure:
    """How many of a pipeline's stages are full over time, one panel per SM (or all on ``ax``).

    Uses the trace's ``<pipeline>.stages_full`` counters; a trace without them (a measured one)
    gets "stages held" derived from its spans, and the title says so.
    """
    sms_list = default_sms(trace) if sms is None else check_sms(trace, sms)
    window = check_window(trace, window_ns)
    series, source = occupancy_series(trace, pipeline, sms=sms_list)
    if not series:
        raise SelectionError(f"pipeline {pipeline!r}: the trace has no '{pipeline}.stages_full' counter "
                             "and no spans to derive it from")
    cap = _stage_capacity(trace, pipeline)
    color = PIPELINE_COLORS.get(pipeline, "#4C78A8")
    shown = [s for s in sms_list if s in series]
    if ax is None:
        fig, axes_arr = plt.subplots(len(shown), 1, figsize=(12, 0.9 + 1.0 * len(shown)), sharex=True,
                                     sharey=True, squeeze=False, layout="constrained")
        axes = list(axes_arr[:, 0])
    else:
        fig, axes = _root(ax), [ax] * len(shown)
    vmax = max(float(series[s][1].max()) for s in shown)
    top = max(vmax, cap or 0) + 0.6
    binned = False
    palette = ["#4C78A8", "#F58518", "#54A24B", "#B279A2", "#72B7B2", "#E45756"]
    for i, (a, sm) in enumerate(zip(axes, shown, strict=True)):
        t, v = series[sm]
        single = ax is None
        c = color if single else palette[i % len(palette)]
        binned |= _draw_series(a, t, v, window, c, label=f"SM {sm}", fill=single)
        if single:
            a.set_ylabel(f"SM {sm}", fontsize=FONT, rotation=0, ha="right", va="center")
    for a in dict.fromkeys(axes):
        if cap:
            a.axhline(cap, color="#555555", linestyle="--", linewidth=0.8)
        a.set_ylim(0, top)
        a.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True, nbins=4))
        a.set_xlim(window[0] / 1e3, window[1] / 1e3)
        a.tick_params(labelsize=FONT)
        a.grid(axis="both", color="#E5E5E5", linewidth=0.6)
        a.set_axisbelow(True)
        for side in ("top", "right"):
            a.spines[side].set_visible(False)
    axes[-1].set_xlabel("time (µs)", fontsize=FONT)
    if ax is not None and len(shown) > 1:
        ax.legend(fontsize=FONT - 1, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.set_ylabel("stages full", fontsize=FONT)
    src = "counter " + source if source != "derived from spans" else "issue to release, derived from spans"
    cap_text = f" of {cap} (dashed)" if cap else ""
    text = title if title is not None else (f"{pipeline} stages full{cap_text} · {_sm_list_text(shown)} ({src}"
                                            f"{', mean per bin' if binned else ''}) · {_fmt_window(window)}")
    (ax if ax is not None else axes[0]).set_title(text, fontsize=FONT + 1.5, loc="left")
    _save(fig, path)
    return fig


def plot_counter(trace: Trace, name: str = "hbm_gbps", *, sm: int = -1,
                 window_ns: tuple[float, float] | None = None, ax: Axes | None = None,
                 path: str | Path | None = None, ylabel: str | None = None) -> Figure:
    """One counter over time (default: device-wide HBM bandwidth in use, GB/s)."""
    ctr = trace.counters()
    m = (ctr["name"] == name) & (ctr["sm"] == sm) if len(ctr["name"]) else np.zeros(0, dtype=bool)
    if not m.any():
        raise SelectionError(f"counter {name!r} on sm {sm} is not in the trace")
    window = check_window(trace, window_ns)
    o = np.argsort(ctr["ns"][m], kind="stable")
    t, v = ctr["ns"][m][o], ctr["value"][m][o]
    if ax is None:
        fig = plt.figure(figsize=(12, 2.4), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = _root(ax)
    binned = _draw_series(ax, t, v, window, "#4C78A8", label=name)
    label = ylabel or {"hbm_gbps": "HBM GB/s"}.get(name, name)
    ax.set_ylabel(label, fontsize=FONT)
    ax.set_xlabel("time (µs)", fontsize=FONT)
    ax.set_xlim(window[0] / 1e3, window[1] / 1e3)
    ax.set_ylim(bottom=0)
    ax.tick_params(labelsize=FONT)
    ax.grid(color="#E5E5E5", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    where = "device" if sm == -1 else f"SM {sm}"
    ax.set_title(f"{label} ({where}{', mean per bin' if binned else ''}) · {_fmt_window(window)}",
                 fontsize=FONT + 1.5, loc="left")
    _save(fig, path)
    return fig


# -- stall breakdown ------------------------------------------------------------------------
def plot_stall_breakdown(trace: Trace | Breakdown, *, sms: Sequence[int] | None = None,
                         window_ns: tuple[float, float] | None = None, per_sm: bool = False,
                         ax: Axes | None = None, path: str | Path | None = None,
                         title: str | None = None, legend: bool = True) -> Figure:
    """Stacked horizontal bars per role: busy, each barrier wait, idle, as percent of the window.

    Under each bar a thin bar gives the share of the window with the role's work in flight (the
    union of its activity spans): the MMA warp may wait on ``mainloop.full`` while the tensor core
    still runs the K-blocks it issued.

    Default: every SM in the trace, the whole run (see :func:`simulator.views.breakdown.role_breakdown`
    for the definitions).
    """
    bd = trace if isinstance(trace, Breakdown) else role_breakdown(trace, sms=sms, window_ns=window_ns,
                                                                  per_sm=per_sm)
    if not bd.rows:
        raise SelectionError("no roles in the selection")
    barriers = sorted(bd.barriers(), key=_barrier_rank)
    n = len(bd.rows)
    if ax is None:
        fig = plt.figure(figsize=(12, 1.4 + 0.42 * n), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = _root(ax)
    labels = []
    px_per_pct = max(ax.get_window_extent().width, 200.0) / 100.0
    char_px = 0.6 * (FONT - 1) * fig.dpi / 72.0
    for i, r in enumerate(bd.rows):
        name = r.role if r.sm is None else f"SM {r.sm} · {r.role}"
        if r.sm is None and r.n_sms != len(bd.sms):
            name += f" ({r.n_sms} SM{'s' if r.n_sms != 1 else ''})"
        labels.append(name)
        x = 0.0
        segs: list[tuple[str, float, dict[str, Any]]] = [
            ("busy", 100 * r.fraction("busy"),
             {"facecolor": KIND_COLORS.get(ROLE_KIND.get(r.role, ""), "#777777"), "edgecolor": "white"})]
        segs += [(b, 100 * r.fraction(b), barrier_style(b or "?")) for b in barriers]
        segs.append(("idle", 100 * r.fraction("idle"), {"facecolor": IDLE_COLOR, "edgecolor": "#BBBBBB"}))
        for name, w, st in segs:
            if w <= 0:
                continue
            kw = hatch_kwargs(st, 0.5) if "hatch" in st else {**st, "linewidth": 0.5}
            ax.barh(i - 0.1, w, left=x, height=0.55, zorder=2, **kw)
            if w >= 4.5:
                long = f"{name} {w:.0f}%" if name != "idle" else f"idle {w:.0f}%"
                txt = long if w * px_per_pct > len(long) * char_px + 10 else f"{w:.0f}%"
                ax.text(x + w / 2, i - 0.1, txt, ha="center", va="center", fontsize=FONT - 1,
                        color="white" if name == "busy" else "#333333", zorder=4,
                        bbox=None if name == "busy" else dict(boxstyle="round,pad=0.15", fc=(1, 1, 1, 0.8),
                                                              ec="none"))
            x += w
        # Thin bar below: share of the window with the role's work in flight (TMA loads, MMAs on
        # the tensor core, stores), which can overlap the warp's own waits.
        work = 100 * r.work_ns / r.window_ns if r.window_ns > 0 else 0.0
        rc = KIND_COLORS.get(ROLE_KIND.get(r.role, ""), "#777777")
        ax.barh(i + 0.27, 100, height=0.1, color="#EEEEEE", linewidth=0, zorder=1)
        ax.barh(i + 0.27, work, height=0.1, color=rc, linewidth=0, zorder=2)
        ax.text(min(work, 100) + 0.4 if work < 78 else work - 0.4, i + 0.27, f"work in flight {work:.0f}%",
                ha="left" if work < 78 else "right", va="center", fontsize=FONT - 2, color="#555555", zorder=4,
                bbox=dict(boxstyle="round,pad=0.1", fc=(1, 1, 1, 0.85), ec="none"))
    ax.set_yticks([i - 0.1 for i in range(n)])
    ax.set_yticklabels(labels, fontsize=FONT)
    ax.set_ylim(n - 0.5, -0.55)
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of the window (%)", fontsize=FONT)
    ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(decimals=0))
    ax.tick_params(labelsize=FONT)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#E5E5E5", linewidth=0.6, zorder=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    nsm = len(bd.sms)
    ax.set_title(title if title is not None else
                 f"Where each role's time goes · {_sm_list_text(bd.sms) if nsm <= 6 else f'{nsm} SMs summed'}"
                 f" · window {_fmt_window(bd.window)}", fontsize=FONT + 1.5, loc="left")
    handles: list[Any] = [Patch(facecolor="#777777", label="busy (colour of the role's work)")]
    for b in barriers:
        st = barrier_style(b or "?")
        handles.append(Patch(label=f"wait {b}", **hatch_kwargs(st)))
    handles.append(Patch(facecolor=IDLE_COLOR, edgecolor="#BBBBBB", label="idle (before first / after last span)"))
    handles.append(Patch(facecolor="#999999", label="thin bar: work in flight (loads, MMAs, stores)"))
    ax._wsim_legend = handles  # noqa: SLF001
    if legend:
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.6 / max(n, 2) - 0.12),
                  ncol=min(len(handles), 4), fontsize=FONT - 0.5, frameon=False, handleheight=1.1)
    _save(fig, path)
    return fig


# -- comparison -----------------------------------------------------------------------------
def plot_compare(trace_a: Trace, trace_b: Trace, labels: tuple[str, str] = ("simulated", "measured"), *,
                 sms: Sequence[int] | None = None, window_ns: tuple[float, float] | None = None,
                 roles: Sequence[str] | None = None, path: str | Path | None = None) -> Figure:
    """Two timelines stacked on one time axis (two configs, or a simulated and a measured run).

    Defaults: the first SM the two traces share, and the start of the longer run (the whole of it
    when short).
    """
    traces = (trace_a, trace_b)
    if sms is None:
        common = sorted(set(trace_sms(trace_a)) & set(trace_sms(trace_b)))
        if not common:
            raise SelectionError("the two traces share no SM to compare")
        sms_list = common[:1]
    else:
        for tr, lbl in zip(traces, labels, strict=True):
            try:
                check_sms(tr, sms)
            except SelectionError as e:
                raise SelectionError(f"{lbl}: {e}") from None
        sms_list = list(dict.fromkeys(int(s) for s in sms))
    ext = [trace_extent(t) for t in traces]
    if window_ns is None:
        longer = max(traces, key=lambda t: trace_extent(t)[1])
        w = next(iter(default_windows(longer).values()))
        window = (min(e[0] for e in ext), w[1])
    else:
        w0, w1 = float(window_ns[0]), float(window_ns[1])
        if not w1 > w0:
            raise SelectionError(f"window {w0:g}:{w1:g} ns is empty (end must be after start)")
        window = (w0, w1)
    layouts = []
    for tr in traces:
        rows, h = _layout(tr, sms_list, window, roles)
        layouts.append(max(h, 1.0))
    fig = plt.figure(figsize=(12, 2.2 + 0.34 * sum(layouts)), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": layouts})
    handles: dict[str, Any] = {}
    for a, tr, lbl in zip(axes, traces, labels, strict=True):
        t0, t1 = trace_extent(tr)
        if window[0] >= t1:
            a.text(0.5, 0.5, f"{lbl}: no spans in this window (run ends at {t1 / 1e3:.2f} µs)",
                   transform=a.transAxes, ha="center", va="center", fontsize=FONT)
            a.set_yticks([])
            continue
        plot_timeline(tr, sms=sms_list, window_ns=(window[0], min(window[1], max(t1, window[0] + 1e-3))),
                      roles=roles, ax=a, legend=False,
                      title=f"{lbl} · {describe(tr)}")
        a.set_xlim(window[0] / 1e3, window[1] / 1e3)
        for hd in getattr(a, "_wsim_legend", []):
            handles.setdefault(hd.get_label(), hd)
    axes[0].set_xlabel("")
    fig.suptitle(f"{labels[0]} vs {labels[1]} · {_sm_list_text(sms_list)} · window {_fmt_window(window)}",
                 fontsize=FONT + 2.5, x=0.01, ha="left")
    if handles:
        fig.legend(handles=list(handles.values()), loc="outside lower center", ncol=min(len(handles), 5),
                   fontsize=FONT - 0.5, frameon=False, handleheight=1.1)
    _save(fig, path)
    return fig


# -- every SM's tiles -------------------------------------------------------------------------
#: Roles whose ``tile`` spans mark each SM's tiles, in order of preference: one on every SM of a run.
TILE_ROLES = ("Epilogue", "Consumer0", "MainloopLoad")


def _tile_role(trace: Trace) -> str:
    cols = trace.columns()
    tiles = cols["kind"] == "tile"
    for role in TILE_ROLES:
        if (tiles & (cols["role"] == role)).any():
            return role
    raise SelectionError(f"the trace has no tile spans of {', '.join(TILE_ROLES)}: nothing to show per SM")


def plot_sm_tiles(traces: Trace | Sequence[Trace], labels: Sequence[str] | None = None, *,
                  role: str | None = None, path: str | Path | None = None) -> Figure:
    """Every SM's output tiles over the whole run, one panel per trace on one time axis.

    One row per SM; a bar per tile of ``role`` (default: the first of :data:`TILE_ROLES` with
    tile spans, e.g. the epilogue warps on SM100), alternately dark and light so that neighbours
    stay apart; a dashed line where the run ends. SMs of a simulated run with late-starting SMs
    (``simulate(late_start=...)``) are shaded grey until they became free. This answers how the
    tiles were spread over the SMs and what the tail looks like (for the warps inside a tile, see
    :func:`plot_timeline`).
    """
    traces = [traces] if isinstance(traces, Trace) else list(traces)
    labels = list(labels) if labels is not None else [describe(t) for t in traces]
    if len(labels) != len(traces):
        raise SelectionError(f"{len(labels)} label(s) for {len(traces)} trace(s)")
    fig = plt.figure(figsize=(12, 0.6 + 2.9 * len(traces)), layout="constrained")
    axes = fig.subplots(len(traces), 1, sharex=True, squeeze=False)[:, 0]
    colour = KIND_COLORS["epilogue"]
    for ax, tr, lbl in zip(axes, traces, labels, strict=True):
        r = role or _tile_role(tr)
        cols = tr.columns()
        sel = (cols["kind"] == "tile") & (cols["role"] == r)
        if not sel.any():
            raise SelectionError(f"{lbl}: no tile spans of role {r!r}")
        sm, s, e = cols["sm"][sel], cols["start_ns"][sel] / 1e3, cols["end_ns"][sel] / 1e3
        order = np.lexsort((s, sm))
        sm, s, e = sm[order], s[order], e[order]
        nth = np.arange(len(sm)) - np.searchsorted(sm, sm)     # the tile's index on its SM
        shade = np.where(nth % 2 == 0, 0.0, 0.45)
        for lum in (0.0, 0.45):
            m = shade == lum
            ax.barh(sm[m], e[m] - s[m], left=s[m], height=0.85, color=_mix(colour, lum), linewidth=0)
        late = tr.meta.get("late_start")
        note = ""
        if late:
            ax.barh(np.arange(*late["sm_range"]), late["delay_ns"] / 1e3, left=0.0, height=0.85,
                    color=IDLE_COLOR, hatch="xx", edgecolor="#BBBBBB", linewidth=0)
            note = f" · hatched: SMs busy elsewhere until {late['delay_ns'] / 1e3:.1f} µs"
        end = float(cols["end_ns"].max()) / 1e3
        ax.axvline(end, color="black", ls="--", lw=1)
        ax.text(end, 1.0, f" run ends {end:.1f} µs", transform=ax.get_xaxis_transform(), va="bottom",
                fontsize=FONT)
        per_sm = np.bincount(sm)
        lo, hi = per_sm[per_sm > 0].min(), per_sm.max()
        ax.set_title(f"{lbl} · {len(sm)} tiles of {r}, {lo if lo == hi else f'{lo}-{hi}'} per SM{note}",
                     fontsize=FONT + 1.5, loc="left")
        ax.set_ylabel("SM", fontsize=FONT)
        ax.invert_yaxis()
        ax.tick_params(labelsize=FONT)
    axes[-1].set_xlabel("time (µs)", fontsize=FONT)
    _save(fig, path)
    return fig


# -- overview -------------------------------------------------------------------------------
def plot_overview(trace: Trace, path: str | Path | None = None, *, sms: Sequence[int] | None = None) -> Figure:
    """One figure with the defaults a user wants first.

    Top: timelines of a few SMs (:func:`default_sms`) at the start, in the steady state and at the
    tail (:func:`default_windows`). Middle: mainloop and accumulator stage occupancy and HBM
    bandwidth over the whole run. Bottom: the stall breakdown of every role over all SMs.
    """
    sms_list = default_sms(trace) if sms is None else check_sms(trace, sms)
    windows = default_windows(trace)
    _, h = _layout(trace, sms_list, (min(w[0] for w in windows.values()), max(w[1] for w in windows.values())),
                   None)
    ctr = trace.counters()
    names = set(ctr["name"].tolist()) if len(ctr["name"]) else set()
    mid_panels = [p for p in ("mainloop", "accumulator") if occupancy_series(trace, p, sms=sms_list)[0]]
    has_hbm = "hbm_gbps" in names
    n_mid = len(mid_panels) + int(has_hbm)
    n_roles = len(set(trace.columns()["role"].tolist()))
    heights = [max(h, 3.0) * 0.34, 2.0 if n_mid else 0.01, 0.6 + 0.42 * n_roles]
    fig = plt.figure(figsize=(19, 2.6 + sum(heights)), layout="constrained")
    sub = fig.subfigures(3, 1, height_ratios=heights)
    top = sub[0].subplots(1, len(windows), sharey=True, squeeze=False)[0]
    handles: dict[str, Any] = {}
    span = (min(w[0] for w in windows.values()), max(w[1] for w in windows.values()))
    for a, (wname, w) in zip(top, windows.items(), strict=True):
        plot_timeline(trace, sms=sms_list, window_ns=w, ax=a, legend=False, layout_window_ns=span,
                      title=f"{wname} · {_fmt_window(w)}")
        for hd in getattr(a, "_wsim_legend", []):
            handles.setdefault(hd.get_label(), hd)
    for a in top[1:]:
        a.tick_params(axis="y", labelleft=False)
    sub[0].legend(handles=list(handles.values()), loc="outside lower center", ncol=min(len(handles), 7),
                  fontsize=FONT - 0.5, frameon=False, handleheight=1.1)
    if n_mid:
        mids = sub[1].subplots(1, n_mid, squeeze=False)[0]
        for a, p in zip(mids, mid_panels, strict=False):
            plot_stage_occupancy(trace, p, sms=sms_list, ax=a)
        if has_hbm:
            plot_counter(trace, "hbm_gbps", ax=mids[-1])
            mids[-1].set_title("HBM bandwidth in use (device)", fontsize=FONT + 1.5, loc="left")
    plot_stall_breakdown(trace, ax=sub[2].subplots(), legend=False)
    sb = sub[2].axes[0]
    sub[2].legend(handles=sb._wsim_legend, loc="outside lower center", ncol=6, fontsize=FONT - 0.5,  # noqa: SLF001
                  frameon=False, handleheight=1.1)
    fig.suptitle(f"wsim · {describe(trace)}", fontsize=FONT + 4, x=0.005, ha="left")
    _save(fig, path, dpi=110)
    return fig
