"""The SM90 model's memory system against the L2 microbenchmarks it should reproduce, in the same run.

Two of the H200's measured TMA streams are replayed on ``MemorySystem`` (the shipped L2 / HBM model and
its constants) with the SM90 model's TMA unit in front (``tma_load_bytes_per_clk_per_sm``, then
``tma_load_fixed_cycles``), at each run's measured clock, and printed as model / measured:

* ``l2share`` (validation/results/h200_microbench_v3.json): g CTAs per 128 x 64 box, 6 loads in flight,
  in lockstep or spread 8 boxes apart, L2-resident; the bandwidth of all 132 SMs.
* the mainloop replays' ``tma`` mode (v3, v3b, v3c): a 4096^3 GEMM's loads alone (each stage released as it
  lands), tiles 128 x N x 64, raster along N, persistent over 132 CTAs or 66 clusters of 2 (1x2: A
  multicast, 2x1: B multicast); cycles per K-block of the busiest CTA.
* every TMA stream of ``bstream_pitch`` (v3d) and ``tma_loaded`` (v3j) in any committed result: n CTAs, each
  its own stripe, ``stages`` loads in flight, from HBM after a flush or from a warm L2; cycles per box of the
  median CTA, and the round trip of one load (cycles per box x loads in flight) against the SMs streaming.
  ArchSpec.h200() for every run: an H100's HBM is slower than the model's.
* the merge window (v3k / v3l, H100): pairs of CTAs reading the same boxes, the second starting later, on one
  GPC or on two, at 132 / 66 / 32 / 16 CTAs.

Beside the shipped model, the same streams behind the candidate GPC side of ``benchmarks/gpc_links.py`` (not in
the model): each CTA on the GPC ``launch_gpcs`` gives it, its loads crossing the GPC's link, and (``+ merge``)
a load of a slice its GPC asked for within ``gpc_merge_window_cycles`` served with that request.

    python benchmarks/l2_replay.py [--out validation/results]      (--out: also l2_replay.md there)
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
from validation.microbench.tma_loaded import L2_BOXES

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:           # run as a script: benchmarks/ is not a package
    sys.path.insert(0, str(ROOT))
from benchmarks.gpc_links import gpc_paths  # noqa: E402

#: The memory sides a replay can run on: the shipped model (L2 and HBM), and the candidate GPC side with and
#: without merging.
SIDES = ("model", "links", "merge")

RESULTS = ROOT / "validation" / "results"
BOX = 128 * 64 * 2          # one 128-row x 128-byte box (fp16, K-block 64)
SHARE_STAGES = 6            # validation.microbench.l2share.STAGES
SHARE_COUNT = 256           # boxes per CTA (the full run)
CLUSTERS = {"c1x1": (1, 1), "c1x2": (1, 2), "c2x1": (2, 1)}


def _memory(ghz: float) -> tuple[MemorySystem, float, float]:
    """The H200's memory system at ``ghz`` as the SM90 model sets it up, with its TMA unit's rate and
    fixed latency (B/clk, cycles)."""
    a = ArchSpec.h200().with_overrides({"clock_ghz": ghz}, origin="benchmarks/l2_replay.py")
    mem = MemorySystem(MemoryTiming(a.hbm_bytes_per_clk, a.l2_bytes_per_clk, a.hbm_latency_cycles.value,
                                    a.l2_latency_cycles.value, a.tma_issue_overhead_cycles.value,
                                    int(a.l2_bytes.value)))
    mem.fill_wait, mem.miss_extra = True, TMA_MISS_EXTRA.value
    return mem, a.tma_load_bytes_per_clk_per_sm.value, TMA_LOAD_FIXED.value


def _gpu_name(doc: dict) -> str:
    return doc.get("meta", {}).get("device", {}).get("name", "?").replace("NVIDIA ", "")


def _paths(side: str, mem: MemorySystem, ctas: int, ghz: float, cluster_size: int = 1):
    if side not in SIDES:
        raise ValueError(f"replay side {side!r}: must be one of {SIDES}")
    return None if side == "model" else gpc_paths(mem, ctas, ghz, cluster_size, merge=side == "merge")


def _stream(mem, rate, fixed, ctas: int, stages: int, next_load, last: list | None = None,
            paths: list | None = None, delay: list | None = None) -> float:
    """Every CTA keeps ``stages`` loads in flight, issuing its next as its oldest lands; ``next_load(c)``
    gives CTA c's next stage as a list of (L2 key, bytes read, bytes its TMA unit lands: read bytes x
    multicast destinations), or None when it is done; ``paths``: each CTA's ``GpcPath`` (None: the L2
    alone); ``delay``: the cycle each CTA starts (default 0). Returns the cycle the last load lands
    (``last``, if given, gets each CTA's)."""
    tma_free = [0.0] * ctas
    ev: list = []

    def issue(c: int, now: float) -> None:
        loads = next_load(c)
        if loads is None:
            return
        land = now
        for key, nbytes, landed in loads:
            if paths is None:
                got = mem.load(now, key, nbytes)
            else:
                got = paths[c].load(mem, now, key, nbytes)
            land = max(land, got)
            tma_free[c] = max(tma_free[c], now) + landed / rate
        heapq.heappush(ev, (max(land, tma_free[c] + fixed), c))

    for c in range(ctas):
        for _ in range(stages):
            issue(c, delay[c] if delay else 0.0)
    end = 0.0
    while ev:
        end, c = heapq.heappop(ev)
        if last is not None:
            last[c] = end
        issue(c, end)
    return end


def l2share(group: int, stagger: int, ghz: float, sms: int = 132, side: str = "model") -> float:
    """Bytes/s of the shared-lines stream: ``sms // group`` stripes of ``8 * group`` boxes, CTA b at box
    ``(b * stagger + j) mod nbx`` of stripe ``b // group``; L2 warm (the microbenchmark's untimed launch)."""
    mem, rate, fixed = _memory(ghz)
    nbx, ctas = 8 * group, (sms // group) * group
    for s in range(sms // group):
        for x in range(nbx):
            mem.load(0.0, (s, x), BOX)
    start = 0.0         # the warm-up's reservations are over when the timed launch starts
    mem.l2.next_free = mem.hbm.next_free = start
    pos = [(b * stagger) % nbx for b in range(ctas)]
    left = [SHARE_COUNT] * ctas

    def next_load(c):
        if not left[c]:
            return None
        left[c] -= 1
        key = (c // group, pos[c])
        pos[c] = (pos[c] + 1) % nbx
        return [(key, BOX, BOX)]

    paths = _paths(side, mem, ctas, ghz)
    cycles = _stream(mem, rate, fixed, ctas, SHARE_STAGES, next_load, paths=paths) - start
    return ctas * SHARE_COUNT * BOX / (cycles / (ghz * 1e9))


def mainloop_loads(m: int, n: int, k: int, tile_n: int, cluster: str, stages: int, ghz: float,
                   sms: int = 132, side: str = "model") -> float:
    """Cycles per K-block of the busiest CTA of the mainloop replay's ``tma`` mode (loads only)."""
    mem, rate, fixed = _memory(ghz)
    cm, cn = CLUSTERS[cluster]
    mt, nt, kt = -(-m // 128), -(-n // tile_n), k // 64
    ctn, ctm = -(-nt // cn), -(-mt // cm)
    size = cm * cn
    grid = min(sms // size, ctn * ctm)
    a_slice, b_slice = 128 * 64 * 2 // cn, tile_n * 64 * 2 // cm
    tiles = [list(range(c, ctn * ctm, grid)) for c in range(grid)]
    pos = [[0, 0] for _ in range(grid)]

    def next_load(c):
        ti, kb = pos[c]
        if ti >= len(tiles[c]):
            return None
        t = tiles[c][ti]
        pos[c] = [ti + 1, 0] if kb + 1 == kt else [ti, kb + 1]
        tn, tm = t % ctn, t // ctn
        out = []
        for r in range(size):                     # every CTA of the cluster issues its slices
            x, y = r % cm, r // cm
            out += [(("A", tm * cm + x, y, kb), a_slice, a_slice * cn), (("B", tn * cn + y, x, kb), b_slice, b_slice * cm)]
        return out

    # One cluster is one stream here: its CTAs issue together and land together (the stage is full when
    # every multicast slice has landed); the TMA rate is each CTA's, so a cluster's unit is scaled by size.
    paths = _paths(side, mem, grid * size, ghz, size)
    paths = paths[::size] if paths else None
    end = _stream(mem, rate * size, fixed, grid, stages, next_load, paths=paths)
    return end / (max(len(x) for x in tiles) * kt)


def share_rows() -> list[dict]:
    q = json.loads((RESULTS / "h200_microbench_v3.json").read_text())
    out = []
    for r in q["results"]["l2share"]["share"]:
        if r["what"] not in ("lockstep", "spread"):
            continue
        args = (r["group"], r["stagger"], r["clock_mhz"] / 1e3)
        out.append({"what": f"l2share g={r['group']} {r['what']}", "measured": r["bytes_per_s"] / 1e12,
                    **{sd: l2share(*args, side=sd) / 1e12 for sd in SIDES}, "unit": "TB/s"})
    return out


def mainloop_rows() -> list[dict]:
    runs = []
    for name, fam in (("v3", "mainloop"), ("v3b", "mainloop_cluster"), ("v3c", "mainloop_pace")):
        res = json.loads((RESULTS / f"h200_microbench_{name}.json").read_text())["results"]
        runs += [r for r in res.get(fam, {}).get("runs", []) if r["mode"] == "tma" and r["m"] == r["n"] == 4096
                 and r["grid"] > 1]
    out = []
    for r in runs:
        args = (r["m"], r["n"], r["k"], r["tile_n"], r["cluster"], r["stages"], r["clock_mhz"] / 1e3)
        out.append({"what": f"4096^3 loads, N={r['tile_n']} {r['cluster'][1:]}", "measured": r["kblock_cycles"],
                    **{sd: mainloop_loads(*args, side=sd) for sd in SIDES},
                    "unit": "cycles/K-block"})
    return out


def depth_stream(ctas: int, stages: int, box: int, count: int, where: str, ghz: float,
                 distinct: int | None = None, side: str = "model") -> float:
    """Cycles per box of the median CTA: ``ctas`` CTAs each stream ``count`` boxes of ``box`` bytes of their
    own stripe, cycling over its first ``distinct`` boxes (default: all distinct), ``stages`` in flight, from
    HBM (every box a miss) or from L2 (every box resident first, as after the microbenchmark's warm-up launch);
    ``side``: one of :data:`SIDES`."""
    mem, rate, fixed = _memory(ghz)
    distinct = distinct or count
    if where == "l2":   # the lines resident (a warm-up launch), the channels idle when the timed one starts
        mem.fill_wait = False
        for c in range(ctas):
            for i in range(distinct):
                mem.load(0.0, (c, i), box)
        mem.fill_wait = True
        mem.l2.next_free = mem.hbm.next_free = 0.0
    issued, last = [0] * ctas, [0.0] * ctas

    def next_load(c):
        if issued[c] == count:
            return None
        issued[c] += 1
        return [((c, (issued[c] - 1) % distinct), box, box)]

    _stream(mem, rate, fixed, ctas, stages, next_load, last, _paths(side, mem, ctas, ghz))
    return statistics.median(last) / count


#: (family, key) of the per-CTA-stripe streams replayed by :func:`stream_rows`.
STREAM_SETS = (("tma_loaded", "loaded"), ("bstream_pitch", "depth"), ("bstream_pitch", "bstream_pitch"))


def stream_rows(paths=None) -> list[dict]:
    """Every v3d / v3j stream (default: every committed ``*_microbench_v3d.json`` / ``v3j.json``)."""
    out = []
    for path in paths or sorted(RESULTS.glob("*_microbench_v3[dj].json")):
        doc = json.loads(Path(path).read_text())
        gpu = _gpu_name(doc)
        res = doc.get("results", {})
        for family, r in ((f, r) for f, key in STREAM_SETS for r in res.get(f, {}).get(key, [])):
            where, mhz = r.get("where", "hbm"), r.get("clock_mhz") or 1980.0
            # tma_loaded's L2 streams re-read L2_BOXES boxes per CTA (its rows name ``nbx`` since)
            nbx = r.get("nbx") or (L2_BOXES if family == "tma_loaded" and where == "l2" else r["count"])
            args = (r["ctas"], r["stages"], r["box_rows"] * 128, r["count"], where, mhz / 1e3, nbx)
            out.append({"gpu": gpu, "where": where, "box_kib": r["box_rows"] * 128 // 1024, "ctas": r["ctas"],
                        "stages": r["stages"], "mhz": mhz, "measured": r["cycles_per_box"],
                        "model": depth_stream(*args), "links": depth_stream(*args, side="links")})
    return out


def _bucket(ctas: int) -> str:
    return "1" if ctas == 1 else "2-16" if ctas <= 16 else "17-64" if ctas <= 64 else "65+"


def stream_tables(rows: list[dict]) -> list[str]:
    out = ["| GPU | source | box KiB | CTAs | loads in flight | MHz | measured cycles/box | model | model / measured | "
           "with GPC links | measured round trip ns | model |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    groups: dict[tuple, list[tuple[float, float]]] = {}
    order = ("1", "2-16", "17-64", "65+")
    for r in sorted(rows, key=lambda r: (r["gpu"], r["where"], r["box_kib"], r["ctas"], r["stages"])):
        rt = 1e3 * r["stages"] / r["mhz"]
        out.append(f"| {r['gpu']} | {r['where']} | {r['box_kib']} | {r['ctas']} | {r['stages']} | {r['mhz']:.0f} | "
                   f"{r['measured']:.0f} | {r['model']:.0f} | {r['model'] / r['measured']:.2f} | "
                   f"{r['links'] / r['measured']:.2f} | {r['measured'] * rt:.0f} | {r['model'] * rt:.0f} |")
        groups.setdefault((r["gpu"], r["where"], order.index(_bucket(r["ctas"])), r["stages"] > 2), []).append(
            (r["model"] / r["measured"], r["links"] / r["measured"]))
    out += ["", "| GPU | source | CTAs | loads in flight | runs | median model / measured | min | max | "
            "median with GPC links |", "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for (gpu, where, b, deep), v in sorted(groups.items()):
        w = [x for x, _ in v]
        out.append(f"| {gpu} | {where} | {order[b]} | {'3 or more' if deep else '1-2'} | {len(v)} | "
                   f"{statistics.median(w):.2f} | {min(w):.2f} | {max(w):.2f} | "
                   f"{statistics.median(x for _, x in v):.2f} |")
    return out


def window_stream(ctas: int, pairing: str, offset: float, ghz: float, group: int = 2, count: int = 256,
                  nbx: int = 16, stages: int = 6, side: str = "model") -> float:
    """Bytes/s of l2share_window's stream: ``ctas // group`` stripes of ``nbx`` boxes, L2-resident; the
    partners of a stripe are CTAs b, b + 1 (``near``) or b, b + ctas / 2 (``far``), the second starting
    ``offset`` cycles late; rate = the bytes of all CTAs over the median CTA's streaming time (as measured)."""
    mem, rate, fixed = _memory(ghz)
    stripes = ctas // group
    for st in range(stripes):
        for x in range(nbx):
            mem.load(0.0, (st, x), BOX)
    mem.l2.next_free = mem.hbm.next_free = 0.0
    stripe = [b // group if pairing == "near" else b % stripes for b in range(ctas)]
    delay = [offset * (b % group if pairing == "near" else b // stripes) for b in range(ctas)]
    issued, last = [0] * ctas, [0.0] * ctas

    def next_load(c):
        if issued[c] == count:
            return None
        issued[c] += 1
        return [((stripe[c], (issued[c] - 1) % nbx), BOX, BOX)]

    _stream(mem, rate, fixed, ctas, stages, next_load, last, _paths(side, mem, ctas, ghz), delay)
    span = statistics.median(t - d for t, d in zip(last, delay, strict=True))
    return ctas * count * BOX / (span / (ghz * 1e9))


def window_rows(paths=None) -> list[dict]:
    """Every l2share_window(_load) row of the committed v3k / v3l results."""
    out = []
    for path in paths or sorted(RESULTS.glob("*_microbench_v3[kl]*.json")):
        doc = json.loads(Path(path).read_text())
        res = doc.get("results", {})
        for r in (r for f in ("l2share_window", "l2share_window_load") for r in res.get(f, {}).get("window", [])):
            pairing = r.get("pairing", "near") if r["group"] == 2 else "alone"
            args = (r["ctas"], r.get("pairing", "near"), r["offset_cycles"], r["clock_mhz"] / 1e3, r["group"],
                    r["count"])
            out.append({"gpu": _gpu_name(doc), "run": Path(path).stem.split("_", 2)[-1], "ctas": r["ctas"],
                        "pairing": pairing, "offset": r["offset_cycles"], "measured": r["bytes_per_s"] / 1e12,
                        **{sd: window_stream(*args, side=sd) / 1e12 for sd in SIDES}})
    return out


def window_table(rows: list[dict]) -> list[str]:
    out = ["| GPU | run | CTAs | partners | second starts after (cycles) | measured TB/s | model | model / measured | "
           "GPC links / measured | links + merge / measured |",
           "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        out.append(f"| {r['gpu']} | {r['run']} | {r['ctas']} | {r['pairing']} | {r['offset']} | {r['measured']:.2f} | "
                   f"{r['model']:.2f} | {r['model'] / r['measured']:.2f} | {r['links'] / r['measured']:.2f} | "
                   f"{r['merge'] / r['measured']:.2f} |")
    return out


def shared_cap_rows(paths=None) -> list[str]:
    """From each v3j L2 run with 8-32 CTAs and 4+ loads in flight: the CTAs that streamed below 3/4 of one CTA's
    rate alone, their SMs and their summed rate, beside those at full rate (each CTA's SM and cycles are in
    the run's ``smids`` / ``cta_cycles``): whether a limit is shared by a group of SMs rather than per SM."""
    out = ["| GPU | box KiB | CTAs | loads in flight | one CTA alone B/clk | slowed CTAs | their SMs | their sum B/clk | "
           "CTAs at >= 3/4 of alone |", "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"]
    for path in paths or sorted(RESULTS.glob("*_microbench_v3j*.json")):
        doc = json.loads(Path(path).read_text())
        gpu = _gpu_name(doc)
        runs = [r for r in doc.get("results", {}).get("tma_loaded", {}).get("loaded", []) if r["where"] == "l2"]
        for r in runs:
            if not (8 <= r["ctas"] <= 32 and r["stages"] >= 4 and r.get("cta_cycles")):
                continue
            alone = next((x["bytes_per_clk_per_sm"] for x in runs if x["ctas"] == 1 and x["box_rows"] == r["box_rows"]
                          and x["stages"] == r["stages"]), None)
            if not alone:
                continue
            rate = [r["count"] * r["box_rows"] * 128 / c for c in r["cta_cycles"]]
            slow = [(sm, v) for sm, v in zip(r["smids"], rate, strict=True) if v < 0.75 * alone]
            out.append(f"| {gpu} ({Path(path).stem.split('_')[-1]}) | {r['box_rows'] * 128 // 1024} | {r['ctas']} | "
                       f"{r['stages']} | {alone:.0f} | {len(slow)} | {' '.join(str(sm) for sm, _ in sorted(slow))} | "
                       f"{sum(v for _, v in slow):.0f} | {len(rate) - len(slow)} |")
    return out


def gpc_share_rows(paths=None) -> list[str]:
    """From every 132-CTA L2 stream with each CTA's SM and cycles (v3j, v3k, v3l), per run: the summed rate of
    each GPC's CTAs and the SMs landing over 1.2x the median CTA's rate: how a GPC's link is shared out."""
    from benchmarks.gpc_links import gpc_of_sm
    gpc_of = gpc_of_sm()
    sizes = [sum(1 for g in gpc_of.values() if g == k) for k in range(max(gpc_of.values()) + 1)]
    out = ["| GPU (run) | family | box KiB | loads in flight | median CTA B/clk | sum per GPC B/clk (SMs: "
           + " ".join(map(str, sizes)) + ") | CTAs over 1.2x the median (their B/clk) | their SMs |",
           "| --- | --- | ---: | ---: | ---: | --- | ---: | --- |"]
    fams = (("tma_loaded", "loaded"), ("l2share_window", "window"), ("l2share_window_load", "window"))
    for path in paths or sorted(RESULTS.glob("*_microbench_v3[jkl]*.json")):
        doc = json.loads(Path(path).read_text())
        res = doc.get("results", {})
        for fam, key in fams:
            for r in res.get(fam, {}).get(key, []):
                if r["ctas"] != 132 or r.get("group", 1) != 1 or r.get("where", "l2") != "l2" or not r.get("smids"):
                    continue
                rate = [r["count"] * r.get("box_rows", 128) * 128 / c for c in r["cta_cycles"]]
                med = statistics.median(rate)
                sums = [0.0] * len(sizes)
                for sm, v in zip(r["smids"], rate, strict=True):
                    sums[gpc_of[sm]] += v
                fast = sorted((sm, v) for sm, v in zip(r["smids"], rate, strict=True) if v > 1.2 * med)
                fr = f"{len(fast)} ({statistics.median(v for _, v in fast):.0f})" if fast else "0"
                out.append(f"| {_gpu_name(doc)} ({Path(path).stem.split('_', 2)[-1]}) | {fam} | "
                           f"{r.get('box_rows', 128) * 128 // 1024} | {r['stages']} | {med:.0f} | "
                           f"{' '.join(f'{x:.0f}' for x in sums)} | {fr} | {' '.join(str(sm) for sm, _ in fast)} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="also write l2_replay.md into this folder")
    a = ap.parse_args(argv)
    cmd = "python benchmarks/l2_replay.py" + (f" --out {a.out}" if a.out else "")
    lines = ["# The SM90 model's memory system against the TMA microbenchmarks", "",
             f"Written by `{cmd}` (benchmarks/l2_replay.py says what each replay is). Model / measured of the unit "
             "shown: for a rate (TB/s) above 1 is too fast, for cycles below 1 is.", "",
             "| replay | unit | measured | model | model / measured | GPC links / measured | links + merge / measured |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in share_rows() + mainloop_rows():
        lines.append(f"| {r['what']} | {r['unit']} | {r['measured']:.2f} | {r['model']:.2f} | "
                     f"{r['model'] / r['measured']:.2f} | {r['links'] / r['measured']:.2f} | {r['merge'] / r['measured']:.2f} |")
    lines += ["", "Streams of v3d / v3j (each CTA its own stripe; round trip = cycles per box x loads in flight):", ""]
    lines += stream_tables(stream_rows())
    lines += ["", "The merge window (v3k / v3l: pairs reading the same boxes, the second starting later; near: one "
              "GPC, far: two; rate = all CTAs' bytes over the median CTA's time):", ""]
    lines += window_table(window_rows())
    lines += ["", "CTAs slowed together (v3j, L2-resident, each CTA its own lines): a limit shared by a group of SMs "
              "shows as a set of slowed SMs whose summed rate stays the same as the set grows.", ""]
    lines += shared_cap_rows()
    lines += ["", "How a GPC's link is shared out (132 CTAs, each its own lines, L2-resident): each GPC's CTAs together, "
              "and the CTAs landing over 1.2x the median CTA's rate.", ""]
    lines += gpc_share_rows()
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out, "l2_replay.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
