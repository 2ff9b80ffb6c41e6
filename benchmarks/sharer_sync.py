"""How close in time CTAs on one GPC load the same operand slice: the twin's K-block traces against the model.

A merge of loads within a GPC (``benchmarks/gpc_links.py``, measured by v3k / v3l) can only pay where CTAs that
load the same A (same tile row) or B (same tile column) slice at the same K-block sit on one GPC and issue
within ``gpc_merge_window_cycles`` of each other. For every committed K-block trace of the twin this counts
those pairs and their issue gaps, measured (each SM's ``clock64`` placed on one axis by its role's
``%globaltimer`` at start, which ticks in 32 ns steps) and in the shipped model (simulated at the trace's clock,
CTAs on the GPCs ``launch_gpcs`` gives a launch with a cluster shape, as the twin is launched). Pairs more than
8000 cycles apart (another wave of tiles) are left out. In a 2x1 cluster the B sharers include the cluster's
own two CTAs, which receive one multicast load together.

    python benchmarks/sharer_sync.py [--out validation/results]     (--out: also sharer_sync.md there)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:           # run as a script: benchmarks/ is not a package
    sys.path.insert(0, str(ROOT))
from benchmarks.gpc_links import GPC_MERGE_WINDOW, gpc_of_sm, launch_gpcs  # noqa: E402
from hw_kernels import records as R  # noqa: E402
from validation import hw_trace as H  # noqa: E402

RESULTS = ROOT / "validation" / "results"
#: K-block traces of the twin (a raw record buffer each): the committed H200 ones and the H100 sharer set.
TRACES = ("raw_*trace-kblock*.npz", "sharer_traces_h100/raw_*.npz", "sharer_traces_h200/raw_*.npz")
SAME_WAVE_CYCLES = 8000
GAPS = (25, 100, GPC_MERGE_WINDOW.value, 500)


def gaps(loads: dict) -> np.ndarray:
    """Issue gaps of every pair on one GPC within a wave; ``loads``: slice -> [(cycle, gpc, first tile?), ...]."""
    out = []
    for lst in loads.values():
        for i, (t, g, _) in enumerate(lst):
            out += [abs(t - u) for u, h, _ in lst[i + 1:] if h == g]
    v = np.asarray(out, dtype=float)
    return v[v < SAME_WAVE_CYCLES]


def spread(loads: dict) -> dict[int, float]:
    """K-block -> the median over slices of the standard deviation of the issue times of the CTAs that load the
    slice as part of their first tile (all GPCs; slices with at least 4 such CTAs): how the CTAs that start
    together drift apart."""
    by_kb: dict[int, list[float]] = {}
    for (_, kb), lst in loads.items():
        t = np.array([u for u, _, first in lst if first])
        if len(t) >= 4:
            by_kb.setdefault(kb, []).append(float(np.std(t)))
    return {kb: float(np.median(v)) for kb, v in sorted(by_kb.items())}


def _add(loads: dict, tm: int, tn: int, kb: int, entry: tuple) -> None:
    """File one load under its A slice (tile row, K-block) and its B slice (tile column, K-block)."""
    loads["A"].setdefault((tm, kb), []).append(entry)
    loads["B"].setdefault((tn, kb), []).append(entry)


def measured_loads(buf, meta: dict) -> dict[str, dict]:
    """Operand ("A", "B") -> slice -> [(issue cycle, GPC, in the CTA's first tile?), ...] of a raw trace."""
    gpc_of = gpc_of_sm()
    sl = H.decode(buf, meta["capacity"], meta["ctas"])
    t0 = min(s.gt0 for s in sl.values())
    loads: dict = {"A": {}, "B": {}}
    for (_, role), s in sl.items():
        if role != "MainloopLoad":
            continue
        recs = s.data[(s.data[:, 0] & 0xFF) == R.P_KBLOCK]
        first = int(recs[0, 1]) if len(recs) else None
        for r in recs:
            kb, tm, tn = int((r[0] >> 16) & 0xFFFF), int(r[1] & 0xFFFF), int(r[1] >> 16)
            t = (s.gt0 - t0) * s.ghz + int(s.cycles(r[4]))
            _add(loads, tm, tn, kb, (t, gpc_of[s.smid], int(r[1]) == first))
    return loads


def model_loads(path: Path) -> dict[str, dict]:
    """As :func:`measured_loads`, for the shipped model simulating the trace's launch at its clock."""
    from simulator.engine import simulate
    from simulator.kernels.scheduler import sm90_cluster_capacity
    from simulator.machine.arch import ArchSpec
    from validation.compare import load_measured, measured_clock, sim_config_from_measured
    meta = load_measured(Path(path)).meta
    cfg = sim_config_from_measured(meta)
    arch = ArchSpec.h200().with_overrides({"clock_ghz": measured_clock(meta)}, origin="the trace's in-kernel clock")
    res = simulate(cfg, arch, trace=True)
    size = cfg.cluster_m * cfg.cluster_n
    resident = sm90_cluster_capacity(size, arch)
    gpc = launch_gpcs(size, resident, arch)
    loads: dict = {"A": {}, "B": {}}
    first: dict = {}
    for s in res.trace.spans():
        if s.role == "MainloopLoad" and s.kind == "tma_load":
            tile = (s.tile_m, s.tile_n)
            is_first = first.setdefault((s.cluster, s.cta), tile) == tile
            _add(loads, s.tile_m, s.tile_n, s.k_block, (s.start_cycle, gpc[s.cluster % resident], is_first))
    return loads


def _cells(v: np.ndarray) -> str:
    if not v.size:
        return "0 | - | " + " | ".join("-" for _ in GAPS)
    return f"{v.size} | {np.median(v):.0f} | " + " | ".join(f"{np.mean(v <= g):.2f}" for g in GAPS)


#: K-blocks at which :func:`spread` is tabled (those past a problem's K are left blank).
SPREAD_KBLOCKS = (0, 4, 8, 16, 32, 64, 128)


def _spread_cells(sp: dict[int, float]) -> str:
    return " | ".join(f"{sp[kb]:.0f}" if kb in sp else "" for kb in SPREAD_KBLOCKS)


def rows(paths=None) -> tuple[list[str], list[str]]:
    """(gap rows, spread rows) of every trace, measured and modelled, for A and B."""
    out, drift = [], []
    for path in paths or sorted(p for pat in TRACES for p in RESULTS.glob(pat)):
        buf, meta = H.load_raw(path)
        name = meta.get("config_name", Path(path).stem)
        p = meta["problem"]
        model_ops, meas_ops = model_loads(path), measured_loads(buf, meta)
        for operand in ("A", "B"):
            model, meas = model_ops[operand], meas_ops[operand]
            head = f"| {name} | {p['m']}x{p['n']}x{p['k']} | {meta.get('device', '?').replace('NVIDIA ', '')} | {operand} |"
            out.append(f"{head} measured | {_cells(gaps(meas))} |")
            out.append(f"{head} model | {_cells(gaps(model))} |")
            drift.append(f"{head} measured | {_spread_cells(spread(meas))} |")
            drift.append(f"{head} model | {_spread_cells(spread(model))} |")
    return out, drift


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="also write sharer_sync.md into this folder")
    a = ap.parse_args(argv)
    cmd = "python benchmarks/sharer_sync.py" + (f" --out {a.out}" if a.out else "")
    w = ", ".join(f"<= {g:g}" for g in GAPS)
    lines = ["# CTAs on one GPC loading the same slice: how far apart, on the GPU and in the model", "",
             f"Written by `{cmd}` (its docstring says how). Per trace and operand: pairs of CTAs on one GPC that "
             f"load the same slice at the same K-block within {SAME_WAVE_CYCLES} cycles, their median issue gap "
             f"(cycles) and the fraction of pairs within {w} cycles (the merge window is "
             f"{GPC_MERGE_WINDOW.value:g}).", "",
             "| config | problem | GPU | operand | source | pairs | median gap | " + " | ".join(f"<= {g:g}" for g in GAPS)
             + " |", "| --- | --- | --- | --- | --- | ---: | ---: | " + " | ".join("---:" for _ in GAPS) + " |"]
    gap_rows, drift_rows = rows()
    lines += gap_rows
    lines += ["", "How CTAs that start together drift apart: per K-block, the median over slices of the standard deviation "
              "(cycles) of the issue times of the CTAs loading the slice in their first tile (every GPC; slices with "
              "at least 4 such CTAs).", "",
              "| config | problem | GPU | operand | source | " + " | ".join(f"K-block {kb}" for kb in SPREAD_KBLOCKS)
              + " |", "| --- | --- | --- | --- | --- | " + " | ".join("---:" for _ in SPREAD_KBLOCKS) + " |"]
    lines += drift_rows
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out, "sharer_sync.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
