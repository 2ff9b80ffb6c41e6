"""Where each warp role spends its time: busy, waiting on each barrier, idle.

Definitions (the same for simulated and measured traces, see ``docs/plots.md``):

* A role's **active interval** on one SM runs from the start of its first span to the end of its
  last span (any kind), clipped to the window.
* **wait** time on a barrier is the sum of that role's ``wait`` spans naming that barrier. A warp
  blocks on one barrier at a time, so a role's waits never overlap; where a measured trace has
  them overlap by clock noise, the overlap is given to the earlier wait (``overlap_ns`` says how
  much was trimmed) so that waits never count twice.
* **busy** = active - all waits: the role is running or has work in flight.
* **idle** = window - active: before the role's first span or after its last (not launched yet,
  finished, or no CTA resident on that SM).

``busy + sum(waits) + idle == window`` for every (SM, role).

This module also holds the helpers that the Perfetto export and the plots share: the stable role
order, selection of SMs and time windows, and packing of asynchronous spans into lanes that do not
overlap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from simulator.engine.trace import KINDS, Trace

#: Display order of warp roles (SM100 roles, then SM90 consumers). Unknown roles sort after these.
ROLE_ORDER: tuple[str, ...] = ("Sched", "MainloopLoad", "MMA", "EpilogueLoad", "Epilogue",
                               "Consumer0", "Consumer1")

#: Kinds that are bookkeeping rather than work: they count toward a role's active interval but are
#: not drawn as activity bars of their own.
MARKER_KINDS: tuple[str, ...] = ("tile", "acc_handoff")


def role_rank(role: str) -> tuple[int, str]:
    """Sort key giving :data:`ROLE_ORDER`, unknown roles last in name order."""
    try:
        return (ROLE_ORDER.index(role), role)
    except ValueError:
        return (len(ROLE_ORDER), role)


def sorted_roles(roles: Iterable[str]) -> list[str]:
    return sorted(set(roles), key=role_rank)


class SelectionError(ValueError):
    """A selection (SMs, window) that does not match the trace; the message names the value."""


# -- selection ------------------------------------------------------------------------------
def trace_sms(trace: Trace) -> list[int]:
    cols = trace.columns()
    return sorted(int(s) for s in np.unique(cols["sm"])) if len(trace) else []


def trace_extent(trace: Trace) -> tuple[float, float]:
    """(first start, last end) in ns; (0, 0) for an empty trace."""
    cols = trace.columns()
    if len(trace) == 0:
        return (0.0, 0.0)
    return (float(cols["start_ns"].min()), float(cols["end_ns"].max()))


def check_sms(trace: Trace, sms: Sequence[int] | None) -> list[int]:
    """The SMs to show: all when ``sms`` is None; raise :class:`SelectionError` for unknown ones."""
    have = trace_sms(trace)
    if sms is None:
        return have
    have_set = set(have)
    bad = [s for s in sms if s not in have_set]
    if bad:
        rng = f"{have[0]}..{have[-1]}" if have else "none"
        raise SelectionError(f"SM {bad[0]} is not in the trace (it has {len(have)} SMs: {rng})")
    out: list[int] = []
    for s in sms:
        if s not in out:
            out.append(int(s))
    return out


def check_window(trace: Trace, window_ns: tuple[float, float] | None) -> tuple[float, float]:
    """The window to show: the whole trace when None; raise for an empty or inverted window."""
    t0, t1 = trace_extent(trace)
    if window_ns is None:
        return (t0, t1)
    w0, w1 = (float(window_ns[0]), float(window_ns[1]))
    if not w1 > w0:
        raise SelectionError(f"window {w0:g}:{w1:g} ns is empty (end must be after start)")
    if w1 <= t0 or w0 >= t1:
        raise SelectionError(f"window {w0:g}:{w1:g} ns holds no spans (the trace runs {t0:g}..{t1:g} ns)")
    return (w0, w1)


def selection_mask(trace: Trace, sms: Sequence[int] | None = None,
                   window_ns: tuple[float, float] | None = None) -> np.ndarray:
    """Rows on the given SMs that intersect the window (instants at its edges count)."""
    cols = trace.columns()
    mask = np.ones(len(trace), dtype=bool)
    if sms is not None:
        mask &= np.isin(cols["sm"], np.asarray(list(sms), dtype=np.int64))
    if window_ns is not None:
        w0, w1 = window_ns
        mask &= (cols["end_ns"] >= w0) & (cols["start_ns"] <= w1)
    return mask


# -- lanes ----------------------------------------------------------------------------------
def assign_lanes(starts: np.ndarray, ends: np.ndarray, stages: np.ndarray | None = None) -> np.ndarray:
    """Lane index per span so that spans in one lane never overlap (touching is fine).

    Asynchronous work (TMA loads in flight, MMAs queued on the tensor core, TMA stores) overlaps
    on one role. When every stage's spans are disjoint the stage is the lane (a kernel engineer
    reads "stage 2" directly); otherwise spans are packed greedily, earliest start first.
    """
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if stages is not None and (stages >= 0).all():
        ok = True
        for s in np.unique(stages):
            idx = np.flatnonzero(stages == s)
            o = idx[np.argsort(starts[idx], kind="stable")]
            if (starts[o][1:] < ends[o][:-1]).any():
                ok = False
                break
        if ok:
            # Compact stage numbers to 0..n-1 lanes while keeping their order.
            _, lanes = np.unique(stages, return_inverse=True)
            return lanes.astype(np.int64)
    order = np.argsort(starts, kind="stable")
    lanes = np.empty(n, dtype=np.int64)
    lane_end: list[float] = []
    for i in order:
        s = starts[i]
        for j, e in enumerate(lane_end):
            if e <= s:
                lanes[i] = j
                lane_end[j] = ends[i]
                break
        else:
            lanes[i] = len(lane_end)
            lane_end.append(ends[i])
    return lanes


def overlapping_pairs(starts: np.ndarray, ends: np.ndarray, tol: float = 1e-6) -> int:
    """How many spans start before an earlier-starting span has ended (0 means disjoint)."""
    if len(starts) < 2:
        return 0
    o = np.argsort(starts, kind="stable")
    run_end = np.maximum.accumulate(ends[o])
    return int((starts[o][1:] < run_end[:-1] - tol).sum())


def nests(starts: np.ndarray, ends: np.ndarray, tol: float = 1e-6) -> bool:
    """True when no two spans partially overlap: each pair is disjoint or one contains the other
    (what Perfetto needs of the slices on one thread)."""
    if overlapping_pairs(starts, ends, tol) == 0:
        return True
    o = np.lexsort((-ends, starts))
    stack: list[float] = []
    for s, e in zip(starts[o].tolist(), ends[o].tolist(), strict=True):
        while stack and stack[-1] <= s + tol:
            stack.pop()
        if stack and e > stack[-1] + tol:
            return False
        stack.append(e)
    return True


# -- breakdown ------------------------------------------------------------------------------
@dataclass
class RoleBreakdown:
    """Time of one role (on one SM, or summed over ``n_sms`` SMs), in ns."""

    role: str
    sm: int | None          # None: summed over the SMs that ran this role
    n_sms: int
    window_ns: float        # window length x n_sms: the total the other fields add up to
    active_ns: float
    busy_ns: float
    idle_ns: float
    waits: dict[str, float] = field(default_factory=dict)   # barrier -> ns, largest first
    work_ns: float = 0.0    # union of the role's activity spans (work in flight), for reference
    overlap_ns: float = 0.0  # wait time trimmed because two waits overlapped (0 for a sound trace)

    @property
    def wait_ns(self) -> float:
        return float(sum(self.waits.values()))

    def fraction(self, part: str) -> float:
        """``busy``, ``idle``, ``wait`` or a barrier name, as a fraction of the window."""
        if self.window_ns <= 0:
            return 0.0
        v = {"busy": self.busy_ns, "idle": self.idle_ns, "wait": self.wait_ns}.get(part)
        if v is None:
            v = self.waits.get(part, 0.0)
        return v / self.window_ns


@dataclass
class Breakdown:
    rows: list[RoleBreakdown]
    window: tuple[float, float]
    sms: list[int]

    def barriers(self) -> list[str]:
        """Barrier names, most waited-on first (over all rows)."""
        tot: dict[str, float] = {}
        for r in self.rows:
            for b, v in r.waits.items():
                tot[b] = tot.get(b, 0.0) + v
        return sorted(tot, key=lambda b: (-tot[b], b))

    def row(self, role: str, sm: int | None = None) -> RoleBreakdown:
        for r in self.rows:
            if r.role == role and r.sm == sm:
                return r
        raise KeyError(f"no breakdown row for role {role!r} sm {sm}")

    def to_text(self) -> str:
        """A fixed-width table (percent of window) for the CLI; ``in-flight%`` is the share of the
        window with the role's work in flight (which can overlap its waits)."""
        bars = self.barriers()
        head = ["role", "SMs", "busy%"] + [f"{b}%" for b in bars] + ["idle%", "in-flight%"]
        lines = []
        for r in self.rows:
            name = r.role if r.sm is None else f"SM {r.sm} {r.role}"
            vals = [name, str(r.n_sms), f"{100 * r.fraction('busy'):.1f}"]
            vals += [f"{100 * r.fraction(b):.1f}" for b in bars]
            vals.append(f"{100 * r.fraction('idle'):.1f}")
            vals.append(f"{100 * r.work_ns / r.window_ns if r.window_ns else 0.0:.1f}")
            lines.append(vals)
        widths = [max(len(h), *(len(v[i]) for v in lines)) if lines else len(h) for i, h in enumerate(head)]

        def fmt(vals: list[str]) -> str:
            return "  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                             for i, (v, w) in enumerate(zip(vals, widths, strict=True)))

        w0, w1 = self.window
        out = [f"window {w0 / 1e3:.3f}..{w1 / 1e3:.3f} us on {len(self.sms)} SMs", fmt(head)]
        out += [fmt(v) for v in lines]
        return "\n".join(out)


def _group_index(sm: np.ndarray, role: np.ndarray) -> tuple[list[tuple[int, str]], np.ndarray]:
    """Groups (sm, role) in display order and the group index of every row (vectorized)."""
    if len(sm) == 0:
        return [], np.zeros(0, dtype=np.int64)
    roles = sorted_roles(np.unique(role).tolist())
    rcode = np.searchsorted(np.asarray(sorted(roles)), role)
    rank = np.asarray([roles.index(r) for r in sorted(roles)], dtype=np.int64)[rcode]
    key = sm.astype(np.int64) * (len(roles) + 1) + rank
    uniq, idx = np.unique(key, return_inverse=True)
    keys = [(int(k // (len(roles) + 1)), roles[int(k % (len(roles) + 1))]) for k in uniq.tolist()]
    return keys, idx.astype(np.int64)


def _union_length(gidx: np.ndarray, s: np.ndarray, e: np.ndarray, n_groups: int,
                  offset: float) -> tuple[np.ndarray, np.ndarray]:
    """Per group: length of the union of intervals, and the overlap that was removed.

    Intervals are shifted by ``group * offset`` so one running maximum serves every group.
    """
    length = np.zeros(n_groups)
    overlap = np.zeros(n_groups)
    if len(s) == 0:
        return length, overlap
    so = s + gidx * offset
    eo = e + gidx * offset
    o = np.lexsort((so, gidx))
    so, eo, g = so[o], eo[o], gidx[o]
    prev_end = np.concatenate(([-np.inf], np.maximum.accumulate(eo)[:-1]))
    eff_start = np.maximum(so, prev_end)
    contrib = np.clip(eo - eff_start, 0.0, None)
    np.add.at(length, g, contrib)
    np.add.at(overlap, g, (eo - so) - contrib)
    return length, overlap


def role_breakdown(trace: Trace, *, sms: Sequence[int] | None = None,
                   window_ns: tuple[float, float] | None = None, per_sm: bool = False) -> Breakdown:
    """Busy / wait-per-barrier / idle time per role (summed over SMs unless ``per_sm``)."""
    sms_list = check_sms(trace, sms)
    w0, w1 = check_window(trace, window_ns)
    cols = trace.columns()
    mask = selection_mask(trace, sms_list, (w0, w1))
    sm = cols["sm"][mask]
    role = cols["role"][mask]
    kind = cols["kind"][mask]
    barrier = cols["barrier"][mask]
    s = np.clip(cols["start_ns"][mask], w0, w1)
    e = np.clip(cols["end_ns"][mask], w0, w1)
    keys, gidx = _group_index(sm, role)
    n = len(keys)
    first = np.full(n, np.inf)
    last = np.full(n, -np.inf)
    np.minimum.at(first, gidx, s)
    np.maximum.at(last, gidx, e)
    active = np.clip(last - first, 0.0, None)
    offset = (w1 - w0) * 2.0 + 1.0

    is_wait = kind == "wait"
    wait_total, overlap = _union_length(gidx[is_wait], s[is_wait], e[is_wait], n, offset)
    # Per-barrier waits: each wait's non-overlapping contribution goes to its own barrier.
    per_bar: list[dict[str, float]] = [{} for _ in range(n)]
    if is_wait.any():
        wg, ws, we, wb = gidx[is_wait], s[is_wait], e[is_wait], barrier[is_wait]
        so = ws + wg * offset
        eo = we + wg * offset
        o = np.lexsort((so, wg))
        prev_end = np.concatenate(([-np.inf], np.maximum.accumulate(eo[o])[:-1]))
        contrib = np.clip(eo[o] - np.maximum(so[o], prev_end), 0.0, None)
        for g, b, c in zip(wg[o].tolist(), wb[o].tolist(), contrib.tolist(), strict=True):
            d = per_bar[g]
            d[b or "?"] = d.get(b or "?", 0.0) + c
    is_work = ~is_wait & ~np.isin(kind, MARKER_KINDS)
    work, _ = _union_length(gidx[is_work], s[is_work], e[is_work], n, offset)

    win = w1 - w0
    per_rows: list[RoleBreakdown] = []
    for i, (g_sm, g_role) in enumerate(keys):
        waits = dict(sorted(per_bar[i].items(), key=lambda kv: (-kv[1], kv[0])))
        per_rows.append(RoleBreakdown(
            role=g_role, sm=g_sm, n_sms=1, window_ns=win, active_ns=float(active[i]),
            busy_ns=float(max(active[i] - wait_total[i], 0.0)), idle_ns=float(win - active[i]),
            waits=waits, work_ns=float(work[i]), overlap_ns=float(overlap[i])))
    if per_sm:
        return Breakdown(rows=per_rows, window=(w0, w1), sms=sms_list)

    summed: dict[str, RoleBreakdown] = {}
    for r in per_rows:
        t = summed.get(r.role)
        if t is None:
            summed[r.role] = RoleBreakdown(role=r.role, sm=None, n_sms=1, window_ns=r.window_ns,
                                           active_ns=r.active_ns, busy_ns=r.busy_ns, idle_ns=r.idle_ns,
                                           waits=dict(r.waits), work_ns=r.work_ns, overlap_ns=r.overlap_ns)
            continue
        t.n_sms += 1
        t.window_ns += r.window_ns
        t.active_ns += r.active_ns
        t.busy_ns += r.busy_ns
        t.idle_ns += r.idle_ns
        t.work_ns += r.work_ns
        t.overlap_ns += r.overlap_ns
        for b, v in r.waits.items():
            t.waits[b] = t.waits.get(b, 0.0) + v
    rows = [summed[k] for k in sorted_roles(summed)]
    for r in rows:
        r.waits = dict(sorted(r.waits.items(), key=lambda kv: (-kv[1], kv[0])))
    return Breakdown(rows=rows, window=(w0, w1), sms=sms_list)


# -- stage occupancy ------------------------------------------------------------------------
#: Which span kinds fill (producer) and drain (consumer) a pipeline's stages, for traces that carry
#: no occupancy counters (measured traces): a stage is held from the producer's issue to the end of
#: the consumer span with the same (SM, tile, k_block).
_PIPELINE_SPANS: dict[str, tuple[str, str]] = {
    "mainloop": ("tma_load", "mma"),
    "epi_load": ("epi_load", "epilogue"),
}


def occupancy_series(trace: Trace, pipeline: str = "mainloop", *, sms: Sequence[int] | None = None
                     ) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], str]:
    """Per SM, (times_ns, stages) step series for one pipeline's occupancy, and where it came from.

    Uses the trace's ``<pipeline>.stages_full`` counters when present (``source`` = the counter
    name), else derives "stages held" from spans for pipelines in ``_PIPELINE_SPANS``
    (``source`` = ``"derived from spans"``). Returns ``({}, "")`` when neither is possible.
    """
    sms_list = check_sms(trace, sms)
    ctr = trace.counters()
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if len(ctr["name"]):
        names = [n for n in np.unique(ctr["name"]).tolist()
                 if n.split(".")[0] == pipeline and "stage" in n]
        if names:
            name = f"{pipeline}.stages_full" if f"{pipeline}.stages_full" in names else names[0]
            sel = ctr["name"] == name
            for sm in sms_list:
                m = sel & (ctr["sm"] == sm)
                if m.any():
                    t = ctr["ns"][m]
                    o = np.argsort(t, kind="stable")
                    out[sm] = (t[o], ctr["value"][m][o])
            return out, name
    spans = _PIPELINE_SPANS.get(pipeline)
    if spans is None:
        return {}, ""
    prod_kind, cons_kind = spans
    cols = trace.columns()
    # A stage is released by the consumer of the same K-block of the same tile in the same cluster
    # (in 2-SM mode the leader CTA's MMA releases the peer's stages too).
    c = cols["kind"] == cons_kind
    release: dict[tuple, float] = {}
    ckeys = zip(cols["cluster"][c].tolist(), cols["tile_m"][c].tolist(), cols["tile_n"][c].tolist(),
                cols["tile_l"][c].tolist(), cols["k_block"][c].tolist(), cols["end_ns"][c].tolist(), strict=True)
    for cl, tm, tn, tl, kb, end in ckeys:
        k = (cl, tm, tn, tl, kb)
        if end > release.get(k, -np.inf):
            release[k] = end
    prod = np.flatnonzero(cols["kind"] == prod_kind)
    prod = prod[np.isin(cols["sm"][prod], np.asarray(sms_list, dtype=np.int64))]
    by_sm: dict[int, list[int]] = {}
    for i, s_ in zip(prod.tolist(), cols["sm"][prod].tolist(), strict=True):
        by_sm.setdefault(s_, []).append(i)
    for sm in sms_list:
        if sm not in by_sm:
            continue
        p = np.asarray(by_sm[sm], dtype=np.int64)
        events: list[tuple[float, int]] = []
        pkeys = zip(cols["cluster"][p].tolist(), cols["tile_m"][p].tolist(), cols["tile_n"][p].tolist(),
                    cols["tile_l"][p].tolist(), cols["k_block"][p].tolist(), cols["start_ns"][p].tolist(),
                    strict=True)
        for cl, tm, tn, tl, kb, start in pkeys:
            events.append((start, +1))
            r = release.get((cl, tm, tn, tl, kb))
            if r is not None:
                events.append((max(r, start), -1))
        events.sort(key=lambda ev: (ev[0], ev[1]))
        t = np.asarray([ev[0] for ev in events])
        v = np.cumsum([ev[1] for ev in events]).astype(np.float64)
        out[sm] = (t, v)
    return out, "derived from spans"


# -- track layout (shared by the Perfetto export and the Gantt plot) ------------------------
#: Kinds that are the warp's own state and always sit on its main track.
WARP_KINDS: tuple[str, ...] = ("wait", "prologue")


def role_tracks(starts: np.ndarray, ends: np.ndarray, kinds: np.ndarray, stages: np.ndarray
                ) -> tuple[np.ndarray, list[str]]:
    """Split one (SM, role)'s spans into tracks whose spans never partially overlap.

    Track 0 is the warp itself: its waits and prologue, plus every activity kind that fits between
    them without partial overlap (MMA K-blocks on the MMA warp, epilogue subtiles on the Epilogue
    warps; a wait inside a subtile nests in it) and the instant markers. Work that is in flight while the warp moves on (TMA loads, TMA stores)
    goes to lanes: one per stage when that keeps them apart, else packed greedily. Tiles get their
    own track. Returns (track index per span, track names; "" for the warp track).
    """
    n = len(starts)
    track = np.zeros(n, dtype=np.int64)
    names = [""]
    main = np.isin(kinds, WARP_KINDS)
    if overlapping_pairs(starts[main], ends[main]):
        # Overlapping waits (clock noise in a measured trace): keep the waits, lane the prologue.
        main = kinds == "wait"
    order = [k for k in KINDS if k not in (*WARP_KINDS, *MARKER_KINDS)]
    order += sorted(set(kinds.tolist()) - set(KINDS))
    lane_kinds: list[str] = []
    for k in order:
        km = kinds == k
        if not km.any():
            continue
        cand = main | km
        if nests(starts[cand], ends[cand]):
            main = cand
        else:
            lane_kinds.append(k)
    tm = kinds == "tile"
    if tm.any():
        lanes = assign_lanes(starts[tm], ends[tm])
        base = len(names)
        names += ["tiles"] + [f"tiles {i}" for i in range(1, int(lanes.max()) + 1)]
        track[tm] = base + lanes
    for k in lane_kinds:
        km = kinds == k
        s, e, st = starts[km], ends[km], stages[km]
        base = len(names)
        if overlapping_pairs(s, e) == 0:
            names.append(k)
            track[km] = base
            continue
        lanes = assign_lanes(s, e, st)
        n_l = int(lanes.max()) + 1
        by_stage = bool((st >= 0).all()) and len(np.unique(st)) == n_l and all(
            len(np.unique(st[lanes == i])) == 1 for i in range(n_l))
        if by_stage:
            names += [f"{k} stage {int(st[lanes == i][0])}" for i in range(n_l)]
        else:
            names += [f"{k} {i}" for i in range(n_l)]
        track[km] = base + lanes
    # Prologue that did not fit on the warp track (overlapping waits) gets a lane of its own.
    left = ~main & ~tm & ~np.isin(kinds, lane_kinds) & ~np.isin(kinds, MARKER_KINDS)
    if left.any():
        lanes = assign_lanes(starts[left], ends[left])
        base = len(names)
        names += [f"prologue {i}" for i in range(int(lanes.max()) + 1)]
        track[left] = base + lanes
    return track, names
