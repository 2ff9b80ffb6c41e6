"""The pace of the twin's M <= 128 data-parallel GEMMs on the H200, measured against the model's.

    python -m validation.small_m_rates [--out validation/results/small_m_rates.md]

For every development row `wsim accuracy` scored (the committed accuracy JSONs of the H200
development campaigns; the held-out campaign is never read) that is data-parallel, 128-row tiles
and one tile row (M <= 128): each CTA streams its own B stripe from HBM and a 128-row A box (the rows
past M zero-filled). Per (problem, tile N, cluster): the CTAs, the cycles one K-block takes (kernel
time less the launch term, at the row's in-kernel clock, over the K-blocks of the busiest CTA), the
bytes landing per SM and cycle, the HBM rate of B, and the same pace in the model's simulation of
the row. Issue 17's small-M class, as numbers to find a mechanism in, not a fit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
#: Development campaigns only (never ``heldout/``).
SOURCES = ("accuracy.json", "streamk/accuracy.json", "streamk_nd/accuracy.json", "small_m/accuracy.json",
           "ragged_n/accuracy.json")
SMS = 132
TILE_K = 64


def _parse(label: str) -> tuple[int, int, str] | None:
    """(tile M, tile N, cluster) of a config label ``128x64x64_c1x2_rm_...`` (ping-pong: ``_pp_``)."""
    parts = label.split("_")
    tm, tn, _ = (int(x) for x in parts[0].split("x"))
    cl = next((p for p in parts[1:] if p.startswith("c") and "x" in p), None)
    return (tm, tn, cl[1:]) if cl else None


def rows(results: Path = RESULTS) -> list[dict]:
    """The data-parallel one-tile-row rows of 128-row tiles, one per (dataset, row), deduplicated by key."""
    seen, out = set(), []
    for src in SOURCES:
        path = results / src
        if not path.exists():
            continue
        for name, ds in json.loads(path.read_text())["datasets"].items():
            if not name.startswith("h200"):
                continue
            for r in ds["rows"]:
                if not r.get("scored") or r["key"] in seen:
                    continue
                if r["classes"].get("decomposition", "data-parallel") != "data-parallel":
                    continue
                dtype, shape = r["shape"].split()
                m, n, k = (int(x) for x in shape.split("x"))
                cfg = _parse(r["label"].split()[2])
                if m > 128 or cfg is None or cfg[0] != 128:
                    continue
                seen.add(r["key"])
                out.append(dict(r, m=m, n=n, k=k, dtype=dtype, tile_n=cfg[1], cluster=cfg[2], source=src))
    return out


def pace(r: dict) -> dict:
    """Cycles per K-block, bytes landed per SM and cycle, B's HBM rate: measured and simulated."""
    tiles = -(-r["n"] // r["tile_n"])
    ctas = min(tiles, SMS)
    kblocks = -(-tiles // ctas) * -(-r["k"] // TILE_K)
    launch_us = r["constants"]["launch_overhead_ns"] / 1e3
    ghz = r["constants"]["clock_ghz"]
    landed = (128 + r["tile_n"]) * TILE_K * 2            # A box (zero fill included) + B box, per K-block
    out = {"ctas": ctas}
    for who, us in (("meas", r["measured_us"]), ("sim", r["wsim_us"])):
        cyc = (us - launch_us) * 1e3 * ghz / kblocks
        out[f"{who}_kblock_cycles"] = cyc
        out[f"{who}_landed_b_per_clk"] = landed / cyc
        out[f"{who}_b_tb_s"] = r["n"] * r["k"] * 2 / ((us - launch_us) * 1e-6) / 1e12
    return out


def markdown(rs: list[dict]) -> str:
    rs = [dict(r, **pace(r)) for r in rs]
    groups = defaultdict(list)
    for r in rs:
        groups[(r["m"], r["n"], r["k"], r["tile_n"], r["cluster"])].append(r)
    med = statistics.median
    lines = ["# The pace of M <= 128 data-parallel GEMMs on the H200: measured against the model", "",
             "Written by `python -m validation.small_m_rates`, from the development rows of "
             + ", ".join(f"validation/results/{s}" for s in SOURCES)
             + " (the held-out campaign is not read). Data-parallel, 128-row tiles, one tile row: every CTA "
             "streams its own B stripe from HBM and a 128-row A box. Medians over the rows of a group (rasters, "
             "schedules, dtypes); cycles at each row's in-kernel clock, the launch term taken off.", "",
             "| problem | tile N | cluster | CTAs | rows | K-block cycles meas / sim | landed B/clk/SM meas / sim "
             "| B from HBM TB/s meas / sim | model error |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for key in sorted(groups):
        g = groups[key]
        m, n, k, tn, cl = key
        err = med(x["wsim_us"] / x["measured_us"] - 1 for x in g)
        lines.append(
            f"| {m}x{n}x{k} | {tn} | {cl} | {g[0]['ctas']} | {len(g)} | "
            f"{med(x['meas_kblock_cycles'] for x in g):.0f} / {med(x['sim_kblock_cycles'] for x in g):.0f} | "
            f"{med(x['meas_landed_b_per_clk'] for x in g):.1f} / {med(x['sim_landed_b_per_clk'] for x in g):.1f} | "
            f"{med(x['meas_b_tb_s'] for x in g):.2f} / {med(x['sim_b_tb_s'] for x in g):.2f} | {100 * err:+.1f}% |")
    one = [r for r in rs if r["cluster"] == "1x1"]
    lines += ["", "Clusters 1x1, by tile N (median over problems and rows):", "",
              "| tile N | rows | K-block cycles meas | sim | model error (median) |", "| ---: | ---: | ---: | ---: | ---: |"]
    for tn in sorted({r["tile_n"] for r in one}):
        g = [r for r in one if r["tile_n"] == tn]
        lines.append(f"| {tn} | {len(g)} | {med(x['meas_kblock_cycles'] for x in g):.0f} | "
                     f"{med(x['sim_kblock_cycles'] for x in g):.0f} | "
                     f"{100 * med(x['wsim_us'] / x['measured_us'] - 1 for x in g):+.1f}% |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.small_m_rates", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=RESULTS / "small_m_rates.md", help="markdown file to write")
    a = ap.parse_args(argv)
    rs = rows()
    if not rs:
        print(f"small_m_rates: no development rows found under {RESULTS}", file=sys.stderr)
        return 1
    a.out.write_text(markdown(rs))
    print(f"small_m_rates: {len(rs)} rows -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
