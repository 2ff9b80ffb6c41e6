"""The SM90 model's memory system against the measured TMA streams (microbench ``tma_loaded``, v3j, and
``bstream_pitch``, v3d): each measured stream (CTAs x loads in flight x box, from HBM after a flush or
from a warm L2) replayed through :class:`simulator.machine.memory.MemorySystem` and the SM's TMA unit as
the SM90 kernel model issues loads, at the run's clock; cycles per box compared.

    python -m validation.tma_replay [--out DIR] [RESULT.json ...]   (default: every *_microbench_v3j/v3d.json)
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import sys
from pathlib import Path

from simulator.kernels.sm90_tma_ws import TMA_LOAD_FIXED, TMA_MISS_EXTRA
from simulator.machine.arch import ArchSpec
from simulator.machine.memory import MemorySystem, MemoryTiming
from validation.measurements import shown_path

RESULTS = Path(__file__).resolve().parent / "results"
#: (family, key) of the result rows replayed: every CTA its own stripe, ``stages`` loads in flight.
ROW_SETS = (("tma_loaded", "loaded"), ("bstream_pitch", "depth"), ("bstream_pitch", "bstream_pitch"))


def replay(arch: ArchSpec, ctas: int, depth: int, box_bytes: int, count: int, where: str) -> float:
    """Cycles per box of the median CTA when ``ctas`` CTAs each stream ``count`` boxes of ``box_bytes``
    (distinct lines) keeping ``depth`` loads in flight, from HBM (every box a miss) or from L2 (every box
    resident first): the memory system's channels and latencies and each SM's TMA unit (its rate, then
    its fixed latency), issued in time order as the SM90 model issues its mainloop loads."""
    mem = MemorySystem(MemoryTiming(hbm_bytes_per_cycle=arch.hbm_bytes_per_clk, l2_bytes_per_cycle=arch.l2_bytes_per_clk,
                                    hbm_latency=arch.hbm_latency_cycles.value, l2_latency=arch.l2_latency_cycles.value,
                                    tma_overhead=arch.tma_issue_overhead_cycles.value, l2_bytes=int(arch.l2_bytes.value)))
    mem.miss_extra = TMA_MISS_EXTRA.value
    key = mem.key_block(("stream",), ctas * count)
    if where == "l2":     # resident before the stream starts (a warm-up launch): no fill to wait for
        for i in range(ctas * count):
            mem.load(0.0, key + i, box_bytes)
        mem.hbm.next_free = mem.l2.next_free = 0.0
    mem.fill_wait = True
    rate, fixed = arch.tma_load_bytes_per_clk_per_sm.value, TMA_LOAD_FIXED.value
    tma_free = [0.0] * ctas
    issued = [0] * ctas
    last = [0.0] * ctas
    # (issue time, cta): a CTA issues its next box when one of its ``depth`` slots frees (its oldest lands).
    heap = [(0.0, c) for c in range(ctas) for _ in range(min(depth, count))]
    heapq.heapify(heap)
    while heap:
        t, c = heapq.heappop(heap)
        if issued[c] == count:
            continue
        land = mem.load(t, key + c * count + issued[c], box_bytes)
        tma_free[c] = max(tma_free[c], t) + box_bytes / rate
        land = max(land, tma_free[c] + fixed)
        issued[c] += 1
        last[c] = max(last[c], land)
        heapq.heappush(heap, (land, c))
    return statistics.median(last) / count


def rows_of(path: Path) -> tuple[dict, list[dict]]:
    doc = json.loads(path.read_text())
    res = doc.get("results", {})
    rows = [r for fam, key in ROW_SETS for r in res.get(fam, {}).get(key, [])]
    return doc, rows


def compare(path: Path) -> list[str]:
    doc, rows = rows_of(path)
    dev = doc.get("meta", {}).get("device", {}).get("name", "?")
    out = [f"## {shown_path(path)} ({dev})", "",
           "| source | box KiB | CTAs | loads in flight | MHz | measured cycles/box | model | model / measured | "
           "measured round trip ns | model |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    ratios: dict[tuple, list[float]] = {}
    for r in sorted(rows, key=lambda r: (r.get("where", "hbm"), r["box_rows"], r["ctas"], r["stages"])):
        where = r.get("where", "hbm")
        mhz = r.get("clock_mhz") or 1980.0
        arch = ArchSpec.h200().with_overrides({"clock_ghz": round(mhz / 1e3, 4)}, origin="the run's clock")
        box = r["box_rows"] * 128
        sim = replay(arch, r["ctas"], r["stages"], box, r["count"], where)
        meas = r["cycles_per_box"]
        ratios.setdefault((where, _bucket(r["ctas"]), r["stages"] > 2), []).append(sim / meas)
        out.append(f"| {where} | {box // 1024} | {r['ctas']} | {r['stages']} | {mhz:.0f} | {meas:.0f} | {sim:.0f} | "
                   f"{sim / meas:.2f} | {meas * r['stages'] / mhz * 1e3:.0f} | {sim * r['stages'] / mhz * 1e3:.0f} |")
    out += ["", "| source | CTAs | loads in flight | runs | median model / measured | min | max |",
            "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
    order = ("1", "2-16", "17-64", "65+")
    for (where, bucket, deep), v in sorted(ratios.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]), kv[0][2])):
        out.append(f"| {where} | {bucket} | {'3 or more' if deep else '1-2'} | {len(v)} | {statistics.median(v):.2f} | "
                   f"{min(v):.2f} | {max(v):.2f} |")
    return out + [""]


def _bucket(ctas: int) -> str:
    return "1" if ctas == 1 else "2-16" if ctas <= 16 else "17-64" if ctas <= 64 else "65+"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="*", help="microbenchmark result JSONs (default: every committed v3j and v3d)")
    ap.add_argument("--out", default=None, help="write tma_replay.md there")
    a = ap.parse_args(argv)
    paths = [Path(p) for p in a.results] or sorted(RESULTS.glob("*_microbench_v3[dj].json"))
    if not paths:
        print("tma_replay: no v3d/v3j result found", file=sys.stderr)
        return 2
    cmd = "python -m validation.tma_replay" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    lines = ["# The SM90 model's memory system against measured TMA streams", "",
             f"Written by `{cmd}`. Each measured stream replayed through the model's L2/HBM channels and each SM's TMA "
             "unit (ArchSpec.h200() at the run's clock: H100 runs differ in HBM), cycles per box of the median CTA. "
             "Round trip = cycles per box x loads in flight: the latency of one load under that load.", ""]
    for p in paths:
        lines += compare(p)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out, "tma_replay.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
