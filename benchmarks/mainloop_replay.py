"""The SM90 model's mainloop against the committed mainloop microbenchmarks, in the same run.

Each ``wgmma`` run of ``h200_microbench_v3`` (``mainloop``), ``v3b`` (``mainloop_scaling``,
``mainloop_cluster``) and ``v3c`` (``mainloop_pace``) times the twin's cooperative mainloop alone (a CUDA
C++ copy, no epilogue): 128 x N x 64 tiles, persistent over ``grid`` CTAs, A zero-filled past M, or 128
rows high (``a_full``). The model simulates the same GEMM (M = 128 for ``a_full``; ``grid`` SMs where the
run chose the grid) at the run's measured clock with its shipped constants. Compared: cycles per K-block
of the busiest CTA (its cycles from its start to its last K-block over its K-blocks), as the run reports
them. A run with more than :data:`MAX_TILES` tiles per CTA (one SM's pace) is replayed on one row of
:data:`MAX_TILES` tiles per CTA (M at most 128): the same pace, a shorter simulation. The model's
consumers also store each tile's output before the next (the replay stores none): about 2% of a 4096^3
tile's time at N = 64 and 5% at N = 256 in the model, on the model's side of the ratio.

    python benchmarks/mainloop_replay.py [--out validation/results]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from simulator.engine import simulate
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.machine.arch import ArchSpec

RESULTS = Path(__file__).resolve().parents[1] / "validation" / "results"
SOURCES = (("v3", "mainloop"), ("v3b", "mainloop_scaling"), ("v3b", "mainloop_cluster"), ("v3c", "mainloop_pace"))
MAX_TILES = 16
COMMAND = "python benchmarks/mainloop_replay.py"


def runs(min_grid: int = 1) -> list[dict]:
    """The committed ``wgmma`` runs on at least ``min_grid`` CTAs, each with its suite and family."""
    out = []
    for suite, fam in SOURCES:
        res = json.loads((RESULTS / f"h200_microbench_{suite}.json").read_text())["results"]
        out += [{**r, "suite": suite, "family": fam} for r in res.get(fam, {}).get("runs", [])
                if r["mode"] == "wgmma" and r["grid"] >= min_grid]
    return out


def config(r: dict) -> Sm90GemmConfig:
    """The GEMM a run's mainloop computes (one row of MAX_TILES tiles per CTA where it had more), as the
    SM90 model's config."""
    cm, cn = (int(x) for x in r["cluster"][1:].split("x"))       # "c<cluster_m>x<cluster_n>"
    m, n = (128 if r["a_full"] else r["m"]), r["n"]
    if r["max_tiles_per_cta"] > MAX_TILES:
        m, n = min(m, 128), MAX_TILES * r["grid"] * r["tile_n"]
    return Sm90GemmConfig(m=m, n=n, k=r["k"], tile_m=128, tile_n=r["tile_n"],
                          tile_k=64, cluster_m=cm, cluster_n=cn, schedule="cooperative", raster="n", swizzle=1,
                          mainloop_stages=r["stages"])


def replay(r: dict) -> float:
    """The model's cycles per K-block of its busiest CTA (to its last consumer K-block), for run ``r``."""
    over = {"clock_ghz": r["clock_mhz"] / 1e3}
    if r.get("grid_given"):
        over["sm_count"] = r["grid"]
    arch = ArchSpec.h200().with_overrides(over, origin=COMMAND)
    cfg = config(r)
    out = simulate(cfg, arch, trace=True)
    c = out.trace.columns()
    end: dict[int, float] = {}
    tiles: dict[int, int] = {}
    for sm, role, kind, e in zip(c["sm"], c["role"], c["kind"], c["end_cycle"], strict=True):
        if kind == "mma" and role.startswith("Consumer"):
            end[sm] = max(end.get(sm, 0.0), e)
        elif kind == "tile" and role == "Consumer0":
            tiles[sm] = tiles.get(sm, 0) + 1
    busiest = max(tiles.values())
    return max(end[sm] for sm, t in tiles.items() if t == busiest) / (busiest * (cfg.k // 64))


def rows(min_grid: int = 1) -> list[dict]:
    out = []
    for r in runs(min_grid):
        model = replay(r)
        a = "128 rows" if r["a_full"] else f"{r['m']} rows"
        out.append({"suite": r["suite"], "family": r["family"], "problem": f"{r['m']}x{r['n']}x{r['k']}",
                    "tile_n": r["tile_n"], "cluster": r["cluster"], "a": a, "zero_fill": not r["a_full"] and r["m"] < 128,
                    "grid": r["grid"], "tiles_per_cta": r["max_tiles_per_cta"], "stages": r["stages"],
                    "clock_mhz": r["clock_mhz"], "measured": r["kblock_cycles"], "model": model,
                    "ratio": model / r["kblock_cycles"]})
    return out


def markdown(rs: list[dict], command: str = COMMAND, model: str = "") -> str:
    lines = ["# The SM90 model's mainloop against the mainloop microbenchmarks", "",
             f"Written by `{command}`" + (f" (model hash {model})" if model else "") + ". "
             + __doc__.split("\n\n")[1].replace("\n", " "), "",
             "| run | problem | tile N | cluster | A | CTAs | tiles per CTA | stages | MHz | measured cycles/K-block | "
             "model | model / measured |",
             "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rs:
        lines.append(f"| {r['suite']} {r['family']} | {r['problem']} | {r['tile_n']} | {r['cluster']} | {r['a']} | "
                     f"{r['grid']} | {r['tiles_per_cta']} | {r['stages']} | {r['clock_mhz']:.0f} | {r['measured']:.1f} | "
                     f"{r['model']:.1f} | {r['ratio']:.3f} |")
    lines += ["", "| runs | count | median model / measured | min | max |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, sel in (("A zero-filled past M", [r for r in rs if r["zero_fill"]]),
                      ("A in bounds", [r for r in rs if not r["zero_fill"]]),
                      ("one SM", [r for r in rs if r["grid"] == 1]),
                      ("every SM (grid >= 112)", [r for r in rs if r["grid"] >= 112]), ("all", rs)):
        if sel:
            q = [r["ratio"] for r in sel]
            lines.append(f"| {name} | {len(q)} | {statistics.median(q):.3f} | {min(q):.3f} | {max(q):.3f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=COMMAND, description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="write h200_mainloop_replay.{md,json} here")
    ap.add_argument("--min-grid", type=int, default=1, help="leave out runs on fewer CTAs (default: none)")
    a = ap.parse_args(argv)
    rs = rows(a.min_grid)
    cmd = COMMAND + (f" --out {a.out}" if a.out else "") + (f" --min-grid {a.min_grid}" if a.min_grid != 1 else "")
    from validation.accuracy.cache import model_hash
    model = model_hash()
    text = markdown(rs, cmd, model)
    print(text, end="")
    if a.out:
        out = Path(a.out)
        (out / "h200_mainloop_replay.md").write_text(text)
        (out / "h200_mainloop_replay.json").write_text(json.dumps({"command": cmd, "model_hash": model, "rows": rs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
