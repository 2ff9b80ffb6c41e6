"""The stream-K / split-K fixup of the SM90 twin, traced on the GPU, against the SM90 model's.

    python -m validation.fixup_traces [--raw validation/results/fixup_traces] [--out validation/results]
                                      [--name h200_fixup_traces]

Each raw dump (``raw_*.npz``, written on the GPU by ``python -m validation.collect --level 1 --trace
NAME@MxNxK ...``) holds one launch's C_FIXUP records: per split tile and consumer warpgroup, the
fixup's start, the end of its flag wait and its end. The work of one record (end minus wait end)
moved the warpgroup's partial accumulators (64 x tile_n float32): stored (first split), read and
written back (middle splits), or read (final split). Both warpgroups of a CTA do theirs at once,
so per SM a store or a load moves two slices and a reduce four. Per-SM rates: bytes over (work cycles minus
the fixed part the model adds: one named-barrier sync and one L2 round trip), per ``fixup_vec`` (one word or
16 B per thread per access), each launch's median; the SM90 model's rate curves pool the same records by how
many other SMs load at once (:mod:`validation.fixup_contention`). Each launch the model can run is also simulated at its in-kernel clock with the shipped model,
and the two are printed side by side; a launch traced with both fixups is paired, op by op.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from validation.measurements import shown_path

RESULTS = Path(__file__).resolve().parent / "results"
RAW_DIR = RESULTS / "fixup_traces"
OPS = ("fixup_store", "fixup_reduce", "fixup_load")
#: Slices of partials one op moves per SM: both warpgroups at once; a reduce reads and writes.
SLICES_PER_SM = {"fixup_store": 2, "fixup_reduce": 4, "fixup_load": 2}


def work_intervals(trace) -> dict[str, list[tuple[int, float, float]]]:
    """Per fixup op kind, each record's (index, work start ns, end ns): the work starts at the end of the flag
    wait inside the record (the wait of the same CTA, role and tile that lies within its span), else at its
    start."""
    c = trace.columns()
    kind = np.asarray(c["kind"])
    bar = np.asarray(c["barrier"])
    start, end = np.asarray(c["start_ns"], float), np.asarray(c["end_ns"], float)
    ident = list(zip(np.asarray(c["cta"]), np.asarray(c["role"]), np.asarray(c["tile_m"]),
                     np.asarray(c["tile_n"]), strict=True))
    waits: dict = {}
    for i in np.nonzero((kind == "wait") & (bar == "fixup"))[0]:
        waits.setdefault(ident[i], []).append((start[i], end[i]))
    out: dict[str, list[tuple[int, float, float]]] = {op: [] for op in OPS}
    for op in OPS:
        for i in np.nonzero(kind == op)[0]:
            inside = [e for s, e in waits.get(ident[i], ()) if s >= start[i] - 1e-6 and e <= end[i] + 1e-6]
            out[op].append((int(i), max([start[i], *inside]), float(end[i])))
    return out


def op_work_cycles(trace, clock_ghz: float) -> dict[str, list[float]]:
    """Per fixup op kind, the cycles of each record's work (:func:`work_intervals`)."""
    return {op: [(t1 - t0) * clock_ghz for _, t0, t1 in recs] for op, recs in work_intervals(trace).items()}


def slice_bytes(meta: dict) -> int:
    """The partial accumulators of one consumer warpgroup of a dump's config: 64 x tile_n float32."""
    return meta["config"]["tile_m"] // 2 * meta["config"]["tile_n"] * 4


def sm_rate(op: str, slice_b: int, work_cycles: float, fixed: float) -> float:
    """Bytes one SM moves in an ``op`` (both warpgroups) over its work cycles less the model's fixed part."""
    return SLICES_PER_SM[op] * slice_b / max(work_cycles - fixed, 1.0)


def fixed_cycles() -> float:
    """The fixed part the model adds to a fixup op's work: one named-barrier sync and one L2 round trip."""
    from simulator.kernels.fixup import FIXUP_NAMED_BARRIER
    from simulator.machine.arch import ArchSpec
    return FIXUP_NAMED_BARRIER.value + ArchSpec.h200().l2_latency_cycles.value


def phases(trace) -> dict[str, float]:
    """A launch's phases from its first record (us): the mainloop loads' ends (each load-warp tile record's
    last K-block issued; median and last) and the last consumer tile's end (the span); the tail is the span
    after the median load end: the fixup, the epilogue and the wait for the slowest units."""
    c = trace.columns()
    role, kind = np.asarray(c["role"]), np.asarray(c["kind"])
    start, end = np.asarray(c["start_ns"], float), np.asarray(c["end_ns"], float)
    t0 = start.min()
    loads = end[(role == "MainloopLoad") & (kind == "tile")] - t0
    tiles = end[np.char.startswith(role.astype(str), "Consumer") & (kind == "tile")] - t0
    if not len(loads) or not len(tiles):
        return {}
    med, last, span = float(np.median(loads)) / 1e3, float(loads.max()) / 1e3, float(tiles.max()) / 1e3
    return {"loads_end_median_us": round(med, 2), "loads_end_last_us": round(last, 2), "span_us": round(span, 2),
            "tail_us": round(span - med, 2)}


def handoffs(trace, clock_ghz: float) -> list[float]:
    """The turnstile's flag handoffs, in cycles: per split tile and consumer warpgroup, the fixup records in the
    order their flag waits ended; where one record's wait started before the previous record ended and ended
    after it (the split was waiting on that peer), the time from the previous record's end (its flag ``red``
    issued) to this wait's end (the flag seen, the group synced)."""
    c = trace.columns()
    role, start = np.asarray(c["role"]), np.asarray(c["start_ns"], float)
    tile = list(zip(np.asarray(c["tile_m"]), np.asarray(c["tile_n"]), role, strict=True))
    recs: dict = {}
    for lst in work_intervals(trace).values():
        for i, w_end, end in lst:
            recs.setdefault(tile[i], []).append((start[i], w_end, end))
    out = []
    for lst in recs.values():
        lst.sort(key=lambda r: r[1])
        out += [(b[1] - a[2]) * clock_ghz for a, b in zip(lst, lst[1:], strict=False) if b[0] < a[2] < b[1]]
    return out


def load_raw(raw: Path) -> tuple[dict, object, float]:
    """A raw dump's metadata, its trace in the shared format, and its median in-kernel clock (GHz)."""
    from validation.hw_trace import to_trace
    z = np.load(raw)
    meta = json.loads(str(z["meta"]))
    tr = to_trace(z["buf"], meta)
    return meta, tr, float(tr.meta["effective_clock"]["median_ghz"])


def measured_ops(meta: dict, trace, clock_ghz: float) -> dict[str, dict]:
    """Per op kind in a measured trace: its records, the median work cycles, the bytes one SM moves and
    the per-SM rate (bytes over the median work less :func:`fixed_cycles`)."""
    slice_b = slice_bytes(meta)
    fixed = fixed_cycles()
    ops = {}
    for op, work in op_work_cycles(trace, clock_ghz).items():
        if work:
            med = statistics.median(work)
            ops[op] = {"records": len(work), "measured_work_cycles_median": round(med, 1),
                       "bytes_per_sm": SLICES_PER_SM[op] * slice_b,
                       "measured_bytes_per_clk_per_sm": sm_rate(op, slice_b, med, fixed)}
    return ops


def compare(raw: Path) -> dict:
    """One raw dump: its config, clock, kernel time, and per op the measured and simulated work."""
    from simulator.engine.run import simulate
    from simulator.errors import ConfigError
    from simulator.machine.arch import ArchSpec
    from validation.compare import sim_config_from_measured

    meta, tr, clk = load_raw(raw)
    ops = measured_ops(meta, tr, clk)
    try:
        cfg = sim_config_from_measured(meta)
    except ConfigError as e:       # a twin option the model does not have: measured only
        res, refused = None, str(e)
    else:
        arch = ArchSpec.h200().with_overrides({"clock_ghz": round(clk, 4)}, origin="the traced launch's in-kernel clock")
        res, refused = simulate(cfg, arch, trace=True), None
    sim = op_work_cycles(res.trace, clk) if res else {}
    phase = {"measured": phases(tr), "simulated": phases(res.trace) if res else {}}
    for side, t in (("measured", tr), ("simulated", res.trace if res else None)):
        h = handoffs(t, clk) if t is not None else []
        if h and phase[side]:
            phase[side].update(handoffs=len(h), handoff_cycles_median=round(float(np.median(h)), 1))
    for op, o in ops.items():
        o["simulated_work_cycles_median"] = round(statistics.median(sim[op]), 1) if sim.get(op) else None
    return {"raw": raw.name, "config": meta["config_name"], "problem": "x".join(str(meta["problem"][d]) for d in "mnk"),
            "device": meta.get("device"), "driver": meta.get("driver"), "dsl_version": meta.get("dsl_version"),
            "date": meta.get("env_date_utc"), "gpu_command": meta.get("env_command"),
            "fixup_vec": int(meta["config"].get("fixup_vec", 1)), "clock_ghz": round(clk, 4), "kernel_us_measured": round(meta["kernel_ms_events"] * 1e3, 2),
            "kernel_us_simulated": round(res.cycles / clk / 1e3, 2) if res else None, "model_refuses": refused,
            "fixed_cycles": fixed_cycles(), "ops": ops, "phases": phase}


def derived_rates(rows: list[dict], fixup_vec: int = 1) -> dict[str, float]:
    """Per-SM store and load rates of the launches whose fixup moves ``fixup_vec`` floats per access: the
    median over them of their first splits' stores and final splits' loads (each launch's L2 as loaded as
    its problem makes it)."""
    rows = [r for r in rows if r["fixup_vec"] == fixup_vec and r["ops"]]
    out = {}
    for name, op in (("store_bytes_per_clk_per_sm", "fixup_store"), ("load_bytes_per_clk_per_sm", "fixup_load")):
        vals = [r["ops"][op]["measured_bytes_per_clk_per_sm"] for r in rows if op in r["ops"]]
        out[name] = round(float(np.median(vals)), 1) if vals else float("nan")
    out["launches"] = [f"{r['config']} {r['problem']}" for r in rows]
    out["devices"] = sorted({r["device"] for r in rows})
    return out


def markdown(rows: list[dict], rates: dict[int, dict], command: str, raw_dir: str) -> str:
    gpu = sorted({(r["gpu_command"], r["device"], r["driver"], r["dsl_version"], r["date"]) for r in rows},
                 key=lambda g: g[4] or "")
    lines = ["# The SM90 twin's stream-K / split-K fixup, traced", "",
             f"Written by `{command}` from the raw dumps in `{raw_dir}`. GPU runs: "
             + "; ".join(f"`{c}` ({d}, driver {drv}, CuTe DSL {v}, {t})" for c, d, drv, v, t in gpu)
             + ". Work = a C_FIXUP record's end minus its flag wait's end, in SM cycles at the launch's in-kernel "
             "clock; simulated = the shipped SM90 model at that clock (on the H200's constants, whatever GPU ran "
             "the launch).", ""]
    for vec, r in sorted(rates.items()):
        lines.append(f"Per-SM rates, fixup_vec={vec} ({4 * vec} B per thread per access; median over "
                     f"the {len(r['launches'])} launches with splits, on {', '.join(r['devices'])}): stores "
                     f"**{r['store_bytes_per_clk_per_sm']} B/clk/SM**, loads **{r['load_bytes_per_clk_per_sm']} "
                     "B/clk/SM** (the model's rates fall with the SMs loading at once: `python -m "
                     "validation.fixup_contention`).")
    lines += ["", "| launch | GPU | clock GHz | kernel us meas / sim | op | records | work cycles meas | sim | B/SM | "
              "meas B/clk/SM |", "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        for op, o in r["ops"].items():
            sim_us = "-" if r["kernel_us_simulated"] is None else f"{r['kernel_us_simulated']:.1f}"
            lines.append(f"| {r['config']} {r['problem']} | {r['device']} | {r['clock_ghz']:.3f} | "
                         f"{r['kernel_us_measured']:.1f} / {sim_us} | {op} | {o['records']} | "
                         f"{o['measured_work_cycles_median']:.0f} | {_or_dash(o['simulated_work_cycles_median'])} | "
                         f"{o['bytes_per_sm']} | {o['measured_bytes_per_clk_per_sm']:.1f} |")
    refused = sorted({r["model_refuses"] for r in rows if r["model_refuses"]})
    if refused:
        lines += ["", "Not simulated (sim `-`): the SM90 model refuses them: " + "; ".join(refused) + "."]
    return "\n".join(lines + phase_table(rows) + vec_pairs(rows)) + "\n"


def phase_table(rows: list[dict]) -> list[str]:
    """Per launch the measured and simulated phases (:func:`phases`): where the model's time goes wrong."""
    out = ["", "Phases of each launch, from its first record (us, measured / simulated at the same clock; loads end = "
           "a load warp's last K-block of a tile issued; tail = span after the median loads end: fixup, epilogue, "
           "slowest units; handoff = a waiting split's wait end after its peer's flag add, cycles, median, and how many):",
           "", "| launch | GPU | loads end, median | loads end, last | span | tail | sim / meas: loads (median) | tail | "
           "handoff cycles |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        m, s = r["phases"]["measured"], r["phases"]["simulated"]
        if not m:
            continue
        keys = ("loads_end_median_us", "loads_end_last_us", "span_us", "tail_us")
        cells = [f"{m[k]:.1f} / {s[k]:.1f}" if s else f"{m[k]:.1f} / -" for k in keys]
        ratios = [f"{s[k] / m[k]:.2f}" if s and m[k] > 0 else "-" for k in (keys[0], keys[3])]
        hand = "-" if "handoffs" not in m else f"{m['handoff_cycles_median']:.0f} ({m['handoffs']})" + (
            f" / {s['handoff_cycles_median']:.0f} ({s['handoffs']})" if "handoffs" in s else " / -")
        out.append(f"| {r['config']} {r['problem']} | {r['device']} | " + " | ".join(cells + ratios + [hand]) + " |")
    return out


def vec_pairs(rows: list[dict]) -> list[str]:
    """Launches traced with both fixups (same config but ``_fv4``, same problem and device): per op, the
    16-byte fixup's median work cycles over the one-word fixup's."""
    one = {(r["config"], r["problem"], r["device"]): r for r in rows if r["fixup_vec"] == 1}
    out = []
    for r4 in rows:
        r1 = one.get((r4["config"].replace("_fv4", ""), r4["problem"], r4["device"])) if r4["fixup_vec"] == 4 else None
        if r1 is None:
            continue
        if not out:
            out = ["", "The same launch with both fixups (fixup_vec 4 over 1; below 1: the 16-byte fixup is faster):", "",
                   "| launch | GPU | kernel us 1 / 4 | op | work cycles 1 / 4 | 4 / 1 |", "| --- | --- | ---: | --- | ---: | ---: |"]
        for op, o4 in r4["ops"].items():
            o1 = r1["ops"].get(op)
            if o1:
                w1, w4 = o1["measured_work_cycles_median"], o4["measured_work_cycles_median"]
                out.append(f"| {r1['config']} {r1['problem']} | {r1['device']} | {r1['kernel_us_measured']:.1f} / "
                           f"{r4['kernel_us_measured']:.1f} | {op} | {w1:.0f} / {w4:.0f} | {w4 / w1:.2f} |")
    return out


def _or_dash(v) -> str:
    return "-" if v is None else str(v)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.fixup_traces", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raw", default=str(RAW_DIR), help="folder of raw_*.npz dumps (default: %(default)s)")
    ap.add_argument("--out", default=None, help="write NAME.{md,json} here")
    ap.add_argument("--name", default="h200_fixup_traces", help="the written files' name (default: %(default)s)")
    a = ap.parse_args(argv)
    raws = sorted(Path(a.raw).glob("raw_*.npz"))
    if not raws:
        print(f"python -m validation.fixup_traces: no raw_*.npz in {a.raw}", file=sys.stderr)
        return 2
    rows = [compare(p) for p in raws]
    rates = {vec: derived_rates(rows, vec) for vec in sorted({r["fixup_vec"] for r in rows})}
    command = "python -m validation.fixup_traces" + "".join(
        f" {flag} {v}" for flag, v, default in (("--raw", a.raw, str(RAW_DIR)), ("--out", a.out, None),
                                                  ("--name", a.name, "h200_fixup_traces")) if v != default)
    text = markdown(rows, rates, command, shown_path(a.raw))
    print(text)
    if a.out:
        out = Path(a.out)
        (out / f"{a.name}.md").write_text(text)
        (out / f"{a.name}.json").write_text(json.dumps(
            {"command": command, **rates.get(1, {}), "by_fixup_vec": {str(v): r for v, r in rates.items()},
             "launches": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
