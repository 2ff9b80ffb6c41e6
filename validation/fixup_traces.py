"""The stream-K / split-K fixup of the SM90 twin, traced on the H200, against the SM90 model's.

    python -m validation.fixup_traces [--raw validation/results/fixup_traces] [--out validation/results]

Each raw dump (``raw_*.npz``, written on the GPU by ``python -m validation.collect --level 1 --trace
NAME@MxNxK ...``) holds one launch's C_FIXUP records: per split tile and consumer warpgroup, the
fixup's start, the end of its flag wait and its end. The work of one record (end minus wait end)
moved the warpgroup's partial accumulators (64 x tile_n float32): stored (first split), read and
written back (middle splits), or read (final split). Both warpgroups of a CTA do theirs at once,
so per SM a store or a load moves two slices and a reduce four. The workspace rates of the twin's
plain, one-word-per-thread ld/st.global (:data:`simulator.kernels.sm90_tma_ws.SM90_WORKSPACE_STORE` and
``SM90_WORKSPACE_LOAD``) are derived from these records: per SM bytes over (work cycles minus the fixed part the model adds:
one named-barrier sync and one L2 round trip). Each launch is also simulated at its in-kernel clock
with the shipped model, and the two are printed side by side.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
RAW_DIR = RESULTS / "fixup_traces"
OPS = ("fixup_store", "fixup_reduce", "fixup_load")
#: Slices of partials one op moves per SM: both warpgroups at once; a reduce reads and writes.
SLICES_PER_SM = {"fixup_store": 2, "fixup_reduce": 4, "fixup_load": 2}


def op_work_cycles(trace, clock_ghz: float) -> dict[str, list[float]]:
    """Per fixup op kind, the cycles of each record's work: its span minus the flag wait inside it (the
    wait of the same CTA, role and tile that lies within the span)."""
    c = trace.columns()
    kind = np.asarray(c["kind"])
    bar = np.asarray(c["barrier"])
    start, end = np.asarray(c["start_ns"], float), np.asarray(c["end_ns"], float)
    ident = list(zip(np.asarray(c["cta"]), np.asarray(c["role"]), np.asarray(c["tile_m"]),
                     np.asarray(c["tile_n"]), strict=True))
    waits: dict = {}
    for i in np.nonzero((kind == "wait") & (bar == "fixup"))[0]:
        waits.setdefault(ident[i], []).append((start[i], end[i]))
    out: dict[str, list[float]] = {op: [] for op in OPS}
    for op in OPS:
        for i in np.nonzero(kind == op)[0]:
            inside = [e for s, e in waits.get(ident[i], ()) if s >= start[i] - 1e-6 and e <= end[i] + 1e-6]
            t0 = max([start[i], *inside])
            out[op].append((end[i] - t0) * clock_ghz)
    return out


def fixed_cycles() -> float:
    """The fixed part the model adds to a fixup op's work: one named-barrier sync and one L2 round trip."""
    from simulator.kernels.fixup import FIXUP_NAMED_BARRIER
    from simulator.machine.arch import ArchSpec
    return FIXUP_NAMED_BARRIER.value + ArchSpec.h200().l2_latency_cycles.value


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
    cfg = meta["config"]
    slice_bytes = cfg["tile_m"] // 2 * cfg["tile_n"] * 4            # 64 x tile_n float32 partials
    fixed = fixed_cycles()
    ops = {}
    for op, work in op_work_cycles(trace, clock_ghz).items():
        if work:
            med = statistics.median(work)
            nbytes = SLICES_PER_SM[op] * slice_bytes
            ops[op] = {"records": len(work), "measured_work_cycles_median": round(med, 1), "bytes_per_sm": nbytes,
                       "measured_bytes_per_clk_per_sm": nbytes / max(med - fixed, 1.0)}
    return ops


def compare(raw: Path) -> dict:
    """One raw dump: its config, clock, kernel time, and per op the measured and simulated work."""
    from simulator.engine.run import simulate
    from simulator.machine.arch import ArchSpec
    from validation.compare import sim_config_from_measured

    meta, tr, clk = load_raw(raw)
    cfg = sim_config_from_measured(meta)
    arch = ArchSpec.h200().with_overrides({"clock_ghz": round(clk, 4)}, origin="the traced launch's in-kernel clock")
    res = simulate(cfg, arch, trace=True)
    ops = measured_ops(meta, tr, clk)
    sim = op_work_cycles(res.trace, clk)
    for op, o in ops.items():
        o["simulated_work_cycles_median"] = round(statistics.median(sim[op]), 1) if sim[op] else None
    return {"raw": raw.name, "config": meta["config_name"], "problem": "x".join(str(meta["problem"][d]) for d in "mnk"),
            "device": meta.get("device"), "driver": meta.get("driver"), "dsl_version": meta.get("dsl_version"),
            "date": meta.get("env_date_utc"), "gpu_command": meta.get("env_command"),
            "clock_ghz": round(clk, 4), "kernel_us_measured": round(meta["kernel_ms_events"] * 1e3, 2),
            "kernel_us_simulated": round(res.cycles / clk / 1e3, 2), "fixed_cycles": fixed_cycles(), "ops": ops}


def derived_rates(rows: list[dict]) -> dict[str, float]:
    """Per-SM store and load rates: the median over the traced launches of their first splits' stores
    and final splits' loads (each launch's L2 as loaded as its problem makes it)."""
    out = {}
    for name, op in (("store_bytes_per_clk_per_sm", "fixup_store"), ("load_bytes_per_clk_per_sm", "fixup_load")):
        vals = [r["ops"][op]["measured_bytes_per_clk_per_sm"] for r in rows if op in r["ops"]]
        out[name] = round(float(np.median(vals)), 1) if vals else float("nan")
    out["launches"] = [f"{r['config']} {r['problem']}" for r in rows if r["ops"]]
    return out


def markdown(rows: list[dict], rates: dict, command: str) -> str:
    lines = ["# The SM90 twin's stream-K / split-K fixup, traced on the H200", "",
             f"Written by `{command}` from the raw dumps in `validation/results/fixup_traces/` (GPU command: "
             f"`{rows[0]['gpu_command']}`, {rows[0]['device']}, driver {rows[0]['driver']}, CuTe DSL "
             f"{rows[0]['dsl_version']}, {rows[0]['date']}). Work = a C_FIXUP record's end minus its flag wait's "
             "end, in SM cycles at the launch's in-kernel clock; simulated = the shipped SM90 model at that clock.",
             "", f"Derived per-SM rates (median over the {len(rates['launches'])} launches with splits): stores **{rates['store_bytes_per_clk_per_sm']} B/clk/SM**, loads "
             f"**{rates['load_bytes_per_clk_per_sm']} B/clk/SM**.", "",
             "| launch | clock GHz | kernel us meas / sim | op | records | work cycles meas | sim | B/SM | meas B/clk/SM |",
             "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        for op, o in r["ops"].items():
            lines.append(f"| {r['config']} {r['problem']} | {r['clock_ghz']:.3f} | {r['kernel_us_measured']:.1f} / "
                         f"{r['kernel_us_simulated']:.1f} | {op} | {o['records']} | {o['measured_work_cycles_median']:.0f} | "
                         f"{o['simulated_work_cycles_median']} | {o['bytes_per_sm']} | {o['measured_bytes_per_clk_per_sm']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.fixup_traces", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raw", default=str(RAW_DIR), help="folder of raw_*.npz dumps (default: %(default)s)")
    ap.add_argument("--out", default=None, help="write h200_fixup_traces.{md,json} here")
    a = ap.parse_args(argv)
    raws = sorted(Path(a.raw).glob("raw_*.npz"))
    if not raws:
        print(f"python -m validation.fixup_traces: no raw_*.npz in {a.raw}", file=sys.stderr)
        return 2
    rows = [compare(p) for p in raws]
    rates = derived_rates(rows)
    command = "python -m validation.fixup_traces" + (f" --out {a.out}" if a.out else "")
    text = markdown(rows, rates, command)
    print(text)
    if a.out:
        out = Path(a.out)
        (out / "h200_fixup_traces.md").write_text(text)
        (out / "h200_fixup_traces.json").write_text(json.dumps(
            {"command": command, **rates, "launches": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
