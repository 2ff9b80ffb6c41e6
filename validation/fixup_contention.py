"""How fast the twin's fixup moves its partials against how many other SMs are loading their mainloop
operands at the same time, from the committed C_FIXUP traces (no GPU).

    python -m validation.fixup_contention [--out validation/results]

For each fixup record of a CTA's first consumer warpgroup (both warpgroups do theirs at once), the work
interval (its flag wait's end to its end) is set against every other SM's MainloopLoad tile spans:
``loaders`` is the number of other SMs loading, averaged over the interval (the sum of their overlap
fractions). The per-SM rate is :func:`validation.fixup_traces.measured_ops`'s: bytes over the work less the
model's fixed part. Records are grouped as ``quiet`` (fewer than :data:`QUIET` loaders) or ``busy`` (at
least :data:`BUSY`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from validation.fixup_traces import (
    OPS,
    RAW_DIR,
    RESULTS,
    fixed_cycles,
    load_raw,
    slice_bytes,
    sm_rate,
    work_intervals,
)

#: Raw dump folders read: the H200 traces and the H100 pair traces.
RAW_DIRS = (RAW_DIR, RESULTS / "fixup_traces_h100")
#: Fewer other SMs loading than this: a quiet record; at least BUSY: a busy one.
QUIET, BUSY = 8.0, 100.0


def record_rates(raw: Path) -> tuple[dict, list[tuple[str, float, float]]]:
    """A dump's metadata and, per first-warpgroup fixup record, (op, loaders, bytes/clk/SM)."""
    meta, tr, clk = load_raw(raw)
    c = tr.columns()
    kind, role, sm = np.asarray(c["kind"]), np.asarray(c["role"]), np.asarray(c["sm"])
    start, end = np.asarray(c["start_ns"], float), np.asarray(c["end_ns"], float)
    ld = np.nonzero((kind == "tile") & (role == "MainloopLoad"))[0]
    slice_b, fixed = slice_bytes(meta), fixed_cycles()
    out = []
    for op, recs in work_intervals(tr).items():
        for i, t0, t1 in recs:
            if role[i] != "Consumer0" or t1 <= t0:
                continue
            overlap = np.clip(np.minimum(end[ld], t1) - np.maximum(start[ld], t0), 0.0, None) / (t1 - t0)
            loaders = float(overlap[sm[ld] != sm[i]].sum())
            out.append((op, loaders, sm_rate(op, slice_b, (t1 - t0) * clk, fixed)))
    return meta, out


def summarise(raws: list[Path], records: list | None = None) -> list[dict]:
    """Per launch and op: records, median loaders, median rate of all, quiet and busy records (``records``:
    :func:`record_rates` of each raw, if already read)."""
    rows = []
    for meta, recs in records or [record_rates(raw) for raw in raws]:
        for op in OPS:
            sel = [(lo, r) for k, lo, r in recs if k == op]
            if not sel:
                continue
            lo = np.array([x[0] for x in sel])
            rate = np.array([x[1] for x in sel])

            def med(mask, rate=rate):
                return round(float(np.median(rate[mask])), 1) if mask.any() else None
            rows.append({"launch": f"{meta['config_name']} {'x'.join(str(meta['problem'][d]) for d in 'mnk')}",
                         "device": meta.get("device"), "op": op, "records": len(sel),
                         "loaders_median": round(float(np.median(lo)), 1), "rate_median": med(lo >= 0),
                         "quiet_records": int((lo < QUIET).sum()), "rate_quiet": med(lo < QUIET),
                         "busy_records": int((lo >= BUSY).sum()), "rate_busy": med(lo >= BUSY)})
    return rows


def curves(raws: list[Path], records: list | None = None) -> dict:
    """Per device and op, every record pooled: the quiet and the busy records' median loaders and median
    rate (the two points of the SM90 model's workspace rate curves), and how many records each has."""
    pooled: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for meta, recs in records or [record_rates(raw) for raw in raws]:
        dev = pooled.setdefault(meta.get("device"), {})
        for op, lo, r in recs:
            dev.setdefault(op, []).append((lo, r))
    out: dict = {}
    for dev, ops in pooled.items():
        for op, sel in ops.items():
            lo = np.array([x[0] for x in sel])
            rate = np.array([x[1] for x in sel])
            pts = {}
            for name, mask in (("quiet", lo < QUIET), ("busy", lo >= BUSY)):
                if mask.any():
                    pts[name] = {"records": int(mask.sum()), "loaders": round(float(np.median(lo[mask])), 1),
                                 "rate": round(float(np.median(rate[mask])), 1)}
            out.setdefault(dev, {})[op] = pts
    return out


def _curve_lines(cur: dict) -> list[str]:
    lines = ["", "## Pooled over every launch of a GPU (the SM90 model's workspace rate curves)", "",
             "| GPU | op | quiet: records, loaders, rate | busy: records, loaders, rate |", "| --- | --- | ---: | ---: |"]
    for dev in sorted(cur):
        for op in OPS:
            pts = cur[dev].get(op, {})
            cells = [f"{p['records']}, {p['loaders']:g}, {p['rate']:g}" if p else "-"
                     for p in (pts.get("quiet"), pts.get("busy"))]
            lines.append(f"| {dev} | {op} | {cells[0]} | {cells[1]} |")
    return lines


#: The isolated measurement of the same accesses (``python -m validation.microbench.run --suite v3i``), if run.
MICROBENCH_GLOB = "*_microbench_v3i.json"
#: Microbenchmark op -> trace op and how many slices one SM's op moves per warpgroup slice (a read-add-write
#: reads and writes: the trace's rate counts both).
_MB_OPS = {"store": ("fixup_store", 1), "load": ("fixup_load", 1), "rmw": ("fixup_reduce", 2), "red": ("fixup_red", 1)}


def microbench_lines(paths: list[Path] | None = None) -> list[str]:
    """Each microbenchmark run's rates (8 SMs fixing up, 64 x 128 floats per warpgroup, L2-resident loads on
    n other SMs) in the traces' terms -- the SM's bytes over the round to its fence less the model's fixed
    part -- beside its rate to the last access issued and the SM90 model's curve at n SMs loading."""
    paths = sorted(RESULTS.glob(MICROBENCH_GLOB)) if paths is None else paths
    if not paths:
        return []
    from simulator.kernels.sm90_tma_ws import SM90_WORKSPACE_RATES as R
    curves = {"fixup_store": R.store, "fixup_load": R.load, "fixup_reduce": R.reduce, "fixup_red": R.red}
    fixed = fixed_cycles()
    lines = ["", "## The same accesses isolated (microbenchmark)", "",
             "8 SMs run the fixup's accesses (2 warpgroups, one word per thread) while n other SMs stream TMA "
             "loads from L2; rate = the SM's bytes (a read-add-write's read and written) over the round to its "
             f"fence less the model's fixed part ({fixed:.0f} cycles), as the traces' rates are; issued = the "
             "same bytes over the round to its last access issued (stores posted); model = the SM90 curve (H200) "
             "at n SMs loading.", "",
             "| GPU | op | SMs loading | loads paced | rate B/clk/SM | issued | model |",
             "| --- | --- | ---: | --- | ---: | ---: | ---: |"]
    runs = []
    for path in paths:
        doc = json.loads(path.read_text())
        dev = doc["meta"]["device"].get("name")
        runs.append(f"`{doc['meta']['command']}` on the {dev}, {doc['meta']['date_utc']} ({path.name}).")
        for r in doc["results"]["fixup_l2"]["rows"]:
            if (r["n_ws"], r["nacc"], r["footprint"]) != (8, 64, "l2"):
                continue
            op, moves = _MB_OPS[r["op"]]
            nbytes = moves * r["slice_bytes_per_sm"]
            model = f"{curves[op].at(r['n_load']):.1f}" if op else "-"
            paced = f"every {r['pace']} clk" if r["pace"] else "no"
            lines.append(f"| {dev} | {r['op']} | {r['n_load']} | {paced} | "
                         f"{nbytes / max(r['cycles_fenced_median'] - fixed, 1.0):.1f} | "
                         f"{nbytes / r['cycles_issued_median']:.1f} | {model} |")
    return lines[:4] + [" ".join(runs)] + lines[4:]


def markdown(rows: list[dict], command: str, cur: dict | None = None) -> str:
    lines = ["# The twin's fixup rate against concurrent mainloop loads (from the committed traces)", "",
             f"Written by `{command}` from the raw dumps in "
             + ", ".join(f"`{d.relative_to(RESULTS.parent.parent)}`" for d in RAW_DIRS)
             + f". Per fixup record of a CTA's first consumer warpgroup: loaders = other SMs in a MainloopLoad tile "
             f"span during its work (averaged over it); rate = bytes per SM over the work less the model's fixed "
             f"part, B/clk/SM; quiet: loaders < {QUIET:g}, busy: loaders >= {BUSY:g}.", "",
             "| launch | GPU | op | records | loaders (median) | rate | quiet: records, rate | busy: records, rate |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        q = f"{r['quiet_records']}, {r['rate_quiet']}" if r["quiet_records"] else "0, -"
        b = f"{r['busy_records']}, {r['rate_busy']}" if r["busy_records"] else "0, -"
        lines.append(f"| {r['launch']} | {r['device']} | {r['op']} | {r['records']} | {r['loaders_median']} | "
                     f"{r['rate_median']} | {q} | {b} |")
    for op in OPS:
        for dev in sorted({r["device"] for r in rows}):
            quiet = [r["rate_quiet"] for r in rows if r["op"] == op and r["device"] == dev and r["rate_quiet"]]
            busy = [r["rate_busy"] for r in rows if r["op"] == op and r["device"] == dev and r["rate_busy"]]
            if quiet or busy:
                lines.append("")
                lines.append(f"{op} on the {dev}: quiet launches {_span(quiet)} B/clk/SM, busy launches "
                             f"{_span(busy)} (launch medians).")
    if cur:
        lines += _curve_lines(cur)
    lines += microbench_lines()
    return "\n".join(lines) + "\n"


def _span(vals: list[float]) -> str:
    return "-" if not vals else (f"{min(vals):g}" if len(vals) == 1 else f"{min(vals):g}-{max(vals):g}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.fixup_contention", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="write fixup_contention.{md,json} here")
    a = ap.parse_args(argv)
    raws = sorted(p for d in RAW_DIRS for p in d.glob("raw_*.npz"))
    if not raws:
        print("python -m validation.fixup_contention: no raw_*.npz in " + ", ".join(map(str, RAW_DIRS)), file=sys.stderr)
        return 2
    records = [record_rates(raw) for raw in raws]
    rows = summarise(raws, records)
    cur = curves(raws, records)
    command = "python -m validation.fixup_contention" + (f" --out {a.out}" if a.out else "")
    text = markdown(rows, command, cur)
    print(text, end="")
    if a.out:
        out = Path(a.out)
        (out / "fixup_contention.md").write_text(text)
        (out / "fixup_contention.json").write_text(json.dumps({"command": command, "quiet": QUIET, "busy": BUSY,
                                                               "rows": rows, "curves": cur}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
