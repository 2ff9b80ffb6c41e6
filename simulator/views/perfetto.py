"""Export a :class:`~simulator.engine.trace.Trace` to Chrome trace-event JSON for ui.perfetto.dev.

Layout (the trace format is :mod:`simulator.engine.trace`):

* one **process** per SM, named ``"SM 12 (cluster 6, CTA 0)"`` and sorted by SM; device-wide
  counters (``sm == -1``, e.g. ``hbm_gbps``) live in a ``"Device"`` process sorted first;
* one **thread** per warp role for what the warp itself does: its ``wait`` spans (named
  ``"wait mainloop.full[1]"``), its ``prologue``, and every kind of work that nests with them
  (e.g. ``"Epilogue sub=2 [stage 0]"`` with a store-buffer wait inside it); threads sort Sched,
  MainloopLoad, MMA, EpilogueLoad, Epilogue (SM90: MainloopLoad, EpilogueLoad, Consumer0,
  Consumer1);
* below it, the role's work in flight that overlaps its waits (``"TMA load k=3 [stage 1]"``,
  ``"MMA k=3 [stage 1]"`` queued on the tensor core, TMA stores, CLC queries) on lanes such as
  ``"MainloopLoad · tma_load stage 1"``: Perfetto needs the slices of one thread to nest, and
  loads of different stages are in flight at the same time (layout:
  :func:`simulator.views.breakdown.role_tracks`, shared with the Gantt plot);
* a ``"<role> · tiles"`` thread with one slice per output tile, and instant events for
  accumulator hand-offs;
* **counter** tracks from :meth:`Trace.counters` (``mainloop.stages_full`` per SM, ``hbm_gbps``);
  a trace with no occupancy counter for the mainloop (or C-load) pipeline gets
  ``"mainloop.stages_held (derived)"``: stages held from TMA issue to MMA release, from the spans.

Times are microseconds (``ts``/``dur``, floats) from the start of the kernel. For a large run keep a
subset of SMs (``sms=``) or a time window (``t_window_ns=``); :func:`to_perfetto` refuses more
than ``max_events`` events rather than writing a file the UI cannot open.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simulator.engine.trace import Trace
from simulator.views.breakdown import (
    SelectionError,
    check_sms,
    check_window,
    occupancy_series,
    role_rank,
    role_tracks,
    selection_mask,
    sorted_roles,
)

DEVICE_PID = 1_000_000          # process holding device-wide counters (sm == -1)
DEFAULT_MAX_EVENTS = 2_000_000  # ~500 MB of JSON: beyond this ui.perfetto.dev struggles
#: Pipelines whose stage occupancy is derived from spans when the trace has no counter for them.
DERIVED_OCCUPANCY: tuple[str, ...] = ("mainloop", "epi_load")

_KIND_LABEL = {
    "tma_load": "TMA load", "mma": "MMA", "epi_load": "C load", "epilogue": "Epilogue",
    "tma_store": "TMA store", "clc_query": "CLC query", "prologue": "prologue",
    "tile": "tile", "acc_handoff": "acc handoff", "fixup_store": "fixup store", "fixup_reduce": "fixup reduce",
    "fixup_load": "fixup load",
}


def event_name(kind: str, k_block: int, stage: int, barrier: str, tile: tuple[int, int, int]) -> str:
    """The slice name, e.g. ``"TMA load k=3 [stage 1]"`` or ``"wait mainloop.full[1]"``."""
    if kind == "wait":
        b = barrier or "?"
        return f"wait {b}[{stage}]" if stage >= 0 else f"wait {b}"
    if kind == "tile":
        return f"tile ({tile[0]},{tile[1]},{tile[2]})"
    label = _KIND_LABEL.get(kind, kind)
    parts = [label]
    if k_block >= 0:
        parts.append(f"{'sub' if kind in ('epilogue', 'epi_load', 'tma_store') else 'k'}={k_block}")
    if stage >= 0:
        parts.append(f"[stage {stage}]")
    return " ".join(parts)


def _us(ns: float) -> float:
    return round(ns / 1e3, 6)


def to_perfetto(trace: Trace, *, sms: Sequence[int] | None = None,
                t_window_ns: tuple[float, float] | None = None, label: str | None = None,
                pid_offset: int = 0, include_counters: bool = True,
                max_events: int | None = DEFAULT_MAX_EVENTS) -> dict[str, Any]:
    """Chrome trace-event JSON (a dict with ``traceEvents``) for the selected SMs and window.

    ``label`` prefixes process names (``"simulated: SM 0 ..."``) and ``pid_offset`` shifts pids,
    so two traces can share one file (:func:`merge_perfetto`). Spans that cross the window edges
    are kept whole. Raises :class:`~simulator.views.breakdown.SelectionError` for unknown SMs, an empty
    window, or a selection over ``max_events``.
    """
    sms_list = check_sms(trace, sms)
    window = check_window(trace, t_window_ns) if t_window_ns is not None else None
    cols = trace.columns()
    mask = selection_mask(trace, sms_list, window)
    n_sel = int(mask.sum())
    if max_events is not None and n_sel > max_events:
        raise SelectionError(
            f"{n_sel} spans selected, more than max_events={max_events}; keep fewer SMs or a time window")
    idx = np.flatnonzero(mask)
    prefix = f"{label}: " if label else ""
    events: list[dict[str, Any]] = []
    meta = trace.meta

    # Process and thread metadata ------------------------------------------------------------
    sel_sm = cols["sm"][idx]
    sel_role = cols["role"][idx]
    for sm in sms_list:
        on = idx[sel_sm == sm]
        if len(on) == 0:
            continue
        cluster = int(cols["cluster"][on[0]])
        cta = int(cols["cta"][on[0]])
        events.append({"ph": "M", "name": "process_name", "pid": pid_offset + sm, "tid": 0,
                       "args": {"name": f"{prefix}SM {sm} (cluster {cluster}, CTA {cta})"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid_offset + sm, "tid": 0,
                       "args": {"sort_index": pid_offset + sm}})

    threads: dict[tuple[int, int], str] = {}
    role_pos = {r: i + 1 for i, r in enumerate(sorted_roles(sel_role.tolist()))}

    def _tid(role: str, sub: int) -> int:
        return role_pos[role] * 100 + sub

    def thread(sm: int, tid: int, name: str) -> None:
        if (sm, tid) not in threads:
            threads[(sm, tid)] = name

    # Spans: one track per (SM, role) for the warp, plus tile and in-flight lanes -------------
    start = cols["start_ns"]
    end = cols["end_ns"]
    groups: dict[tuple[int, str], list[int]] = {}
    for j, (s, r) in enumerate(zip(sel_sm.tolist(), sel_role.tolist(), strict=True)):
        groups.setdefault((s, r), []).append(j)
    for (sm, role) in sorted(groups, key=lambda x: (x[0], role_rank(x[1]))):
        rows = idx[np.asarray(groups[(sm, role)], dtype=np.int64)]
        track, names = role_tracks(start[rows], end[rows], cols["kind"][rows], cols["stage"][rows])
        # tid: role position * 100 + track (0 = the warp, then tiles, then lanes)
        tids = _tid(role, 0) + track
        for t, nm in enumerate(names):
            if (track == t).any() or t == 0:
                thread(sm, _tid(role, t), f"{role} · {nm}" if nm else role)
        fields = {c: cols[c][rows].tolist() for c in ("cta", "cluster", "tile_m", "tile_n", "tile_l",
                                                       "k_block", "stage", "barrier", "kind",
                                                       "start_cycle", "end_cycle", "start_ns", "end_ns")}
        for j, tid in enumerate(tids.tolist()):
            tile = (fields["tile_m"][j], fields["tile_n"][j], fields["tile_l"][j])
            k_block = fields["k_block"][j]
            stage = fields["stage"][j]
            barrier = fields["barrier"][j]
            kind = fields["kind"][j]
            s_ns, e_ns = fields["start_ns"][j], fields["end_ns"][j]
            args: dict[str, Any] = {"kind": kind, "cta": fields["cta"][j], "cluster": fields["cluster"][j]}
            if tile[0] >= 0:
                args["tile"] = list(tile)
            if k_block >= 0:
                args["k_block"] = k_block
            if stage >= 0:
                args["stage"] = stage
            if barrier:
                args["barrier"] = barrier
            c0, c1 = fields["start_cycle"][j], fields["end_cycle"][j]
            if not (math.isnan(c0) or math.isnan(c1)):
                args["start_cycle"] = c0
                args["cycles"] = c1 - c0
            args["dur_ns"] = e_ns - s_ns
            name = event_name(kind, k_block, stage, barrier, tile)
            ev: dict[str, Any] = {"name": name, "cat": kind, "pid": pid_offset + sm, "tid": int(tid),
                                  "ts": _us(s_ns), "args": args}
            if kind == "acc_handoff":
                ev["ph"] = "i"
                ev["s"] = "t"
            else:
                ev["ph"] = "X"
                ev["dur"] = max(_us(e_ns) - ev["ts"], 0.0)
            events.append(ev)

    for (sm, tid), name in sorted(threads.items()):
        events.append({"ph": "M", "name": "thread_name", "pid": pid_offset + sm, "tid": tid,
                       "args": {"name": name}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": pid_offset + sm, "tid": tid,
                       "args": {"sort_index": tid}})

    # Counters -------------------------------------------------------------------------------
    if include_counters:
        events.extend(_counter_events(trace, set(sms_list), window, pid_offset, prefix))

    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "source": str(meta.get("source", "")),
            "arch": str(meta.get("arch", "")),
            "label": label or "",
            "sms": ",".join(str(s) for s in sms_list),
            "window_ns": "" if window is None else f"{window[0]:g}:{window[1]:g}",
            "clock_ghz": str(meta.get("clock_ghz", "")),
            "generator": "wsim simulator.views.perfetto",
        },
    }


def _clip_series(t: np.ndarray, v: np.ndarray, window: tuple[float, float] | None) -> list[tuple[float, float]]:
    """Samples inside the window, plus the value in force at its start."""
    if window is None:
        return list(zip(t.tolist(), v.tolist(), strict=True))
    before = np.flatnonzero(t < window[0])
    keep = np.flatnonzero((t >= window[0]) & (t <= window[1]))
    pts = [(window[0], float(v[before[-1]]))] if len(before) else []
    return pts + [(float(t[i]), float(v[i])) for i in keep]


def _counter_events(trace: Trace, sms: set[int], window: tuple[float, float] | None, pid_offset: int,
                    prefix: str, derive: Sequence[str] = DERIVED_OCCUPANCY) -> list[dict[str, Any]]:
    ctr = trace.counters()
    out: list[dict[str, Any]] = []
    c_sm, c_name, c_ns, c_val = ctr["sm"], ctr["name"], ctr["ns"], ctr["value"]
    device_used = False
    names = np.unique(c_name).tolist() if len(c_name) else []
    for name in names:
        for sm in np.unique(c_sm[c_name == name]).tolist():
            if sm != -1 and sm not in sms:
                continue
            m = np.flatnonzero((c_name == name) & (c_sm == sm))
            m = m[np.argsort(c_ns[m], kind="stable")]
            pts = _clip_series(c_ns[m], c_val[m], window)
            pid = DEVICE_PID + pid_offset if sm == -1 else pid_offset + sm
            device_used |= sm == -1 and bool(pts)
            for ts, val in pts:
                out.append({"ph": "C", "name": name, "pid": pid, "tid": 0, "ts": _us(ts),
                            "args": {"value": val}})
    # Pipelines without occupancy counters (measured traces, or a model that records none): derive
    # "stages held" (producer issue -> consumer release) from the spans.
    have = {n.split(".")[0] for n in names if "stage" in n}
    for pipe in derive:
        if pipe in have:
            continue
        series, _ = occupancy_series(trace, pipe, sms=sorted(sms))
        for sm, (t, v) in series.items():
            for ts, val in _clip_series(t, v, window):
                out.append({"ph": "C", "name": f"{pipe}.stages_held (derived)", "pid": pid_offset + sm,
                            "tid": 0, "ts": _us(ts), "args": {"value": val}})
    if device_used:
        out.append({"ph": "M", "name": "process_name", "pid": DEVICE_PID + pid_offset, "tid": 0,
                    "args": {"name": f"{prefix}Device"}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": DEVICE_PID + pid_offset, "tid": 0,
                    "args": {"sort_index": -1 + pid_offset}})
    return out


def merge_perfetto(*traces: tuple[Trace, str], **selection: Any) -> dict[str, Any]:
    """One file holding several traces (e.g. simulated and measured), each under its own label."""
    events: list[dict[str, Any]] = []
    for i, (tr, label) in enumerate(traces):
        d = to_perfetto(tr, label=label, pid_offset=i * 10_000, **selection)
        events.extend(d["traceEvents"])
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"labels": ",".join(lbl for _, lbl in traces), "generator": "wsim simulator.views.perfetto"}}


def write_perfetto(trace: Trace, path: str | Path, **selection: Any) -> Path:
    """Write :func:`to_perfetto` JSON to ``path`` (gzip-compressed when it ends in ``.gz``)."""
    path = Path(path)
    obj = to_perfetto(trace, **selection)
    return write_json(obj, path)


def write_json(obj: dict[str, Any], path: Path) -> Path:
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# -- schema check ---------------------------------------------------------------------------
_PHASES = {"X", "M", "C", "i", "I", "B", "E"}
_META_NAMES = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


def validate_chrome_trace(obj: Any) -> list[str]:
    """Problems with a Chrome trace-event object (empty list when it is valid).

    Checks the parts of the format that ui.perfetto.dev relies on: a ``traceEvents`` list of
    objects; every event has a known ``ph``, integer ``pid``/``tid`` and a string ``name``; ``X``
    events have finite ``ts`` and ``dur >= 0``; ``C`` events have numeric ``args`` values; ``M``
    events are one of the naming/sorting records with the right ``args``; complete events on one
    thread nest (no partial overlap); and every pid/tid that carries events is named.
    """
    errs: list[str] = []
    if not isinstance(obj, dict):
        return [f"top level is {type(obj).__name__}, expected an object"]
    evs = obj.get("traceEvents")
    if not isinstance(evs, list):
        return ["missing 'traceEvents' list"]

    def num(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

    named_proc: set[int] = set()
    named_thread: set[tuple[int, int]] = set()
    used_thread: set[tuple[int, int]] = set()
    used_proc: set[int] = set()
    per_thread: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    for i, ev in enumerate(evs):
        if len(errs) > 50:
            errs.append("... (more errors)")
            break
        if not isinstance(ev, dict):
            errs.append(f"event {i}: not an object")
            continue
        ph = ev.get("ph")
        if ph not in _PHASES:
            errs.append(f"event {i}: unknown ph {ph!r}")
            continue
        if not isinstance(ev.get("name"), str):
            errs.append(f"event {i}: name missing or not a string")
        pid, tid = ev.get("pid"), ev.get("tid")
        if not isinstance(pid, int) or isinstance(pid, bool) or not isinstance(tid, int) or isinstance(tid, bool):
            errs.append(f"event {i}: pid/tid must be integers, got {pid!r}/{tid!r}")
            continue
        args = ev.get("args", {})
        if not isinstance(args, dict):
            errs.append(f"event {i}: args must be an object")
            continue
        if ph == "M":
            name = ev.get("name")
            if name not in _META_NAMES:
                errs.append(f"event {i}: unknown metadata {name!r}")
            elif name.endswith("_name"):
                if not isinstance(args.get("name"), str) or not args.get("name"):
                    errs.append(f"event {i}: {name} needs args.name")
                elif name == "process_name":
                    named_proc.add(pid)
                else:
                    named_thread.add((pid, tid))
            elif not isinstance(args.get("sort_index"), int):
                errs.append(f"event {i}: {name} needs an integer args.sort_index")
            continue
        if not num(ev.get("ts")):
            errs.append(f"event {i} ({ev.get('name')}): ts must be a finite number")
            continue
        used_proc.add(pid)
        if ph == "C":
            if not args or not all(num(v) for v in args.values()):
                errs.append(f"event {i} ({ev.get('name')}): counter args must be numbers")
            continue
        used_thread.add((pid, tid))
        if ph == "X":
            dur = ev.get("dur")
            if not num(dur) or dur < 0:
                errs.append(f"event {i} ({ev.get('name')}): X event needs dur >= 0, got {dur!r}")
                continue
            per_thread.setdefault((pid, tid), []).append((float(ev["ts"]), float(ev["ts"]) + float(dur), i))
        if ph in ("i", "I") and ev.get("s", "t") not in ("g", "p", "t"):
            errs.append(f"event {i}: instant scope must be g, p or t")
    for key, spans in per_thread.items():
        spans.sort(key=lambda x: (x[0], -x[1]))
        stack: list[tuple[float, float, int]] = []
        for s, e, i in spans:
            while stack and stack[-1][1] <= s + 1e-6:
                stack.pop()
            if stack and e > stack[-1][1] + 1e-6:
                errs.append(f"event {i}: overlaps event {stack[-1][2]} on pid {key[0]} tid {key[1]} "
                            "without nesting")
                break
            stack.append((s, e, i))
    for pid in sorted(used_proc - named_proc):
        errs.append(f"pid {pid} has events but no process_name")
    for pid, tid in sorted(used_thread - named_thread):
        errs.append(f"pid {pid} tid {tid} has events but no thread_name")
    return errs
