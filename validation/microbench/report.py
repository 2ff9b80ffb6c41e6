"""The Markdown summary of ``h200_microbench_v2.json`` (CPU-only).

    python -m validation.microbench.report validation/results/h200_microbench_v2.json > ....md
"""

from __future__ import annotations

import json
import statistics
import sys

from .mainloop import misaligned_pitch


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if abs(v) >= 1e9:
            return f"{v:.3g}"
        return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
    return str(v)


def _wgmma_pivot(q: dict) -> list[str]:
    cols = [("latency_cycles", "latency"), ("issue_interval_cycles", "issue interval"),
            ("flops_per_clk", "FLOP/clk"), ("two_wg_interval_cycles", "2 WG: SM clk/instr"),
            ("coop_kblock_cycles_1wg", "coop K-block, 1 WG"), ("coop_kblock_cycles_2wg", "coop K-block, 2 WG"),
            ("pingpong_kblock_cycles", "ping-pong K-block")]
    rows = []
    for kind in ("ss", "rs"):
        for dtype in ("f16", "bf16"):
            for n in (64, 128, 192, 256):
                key = f"wgmma.{kind}.{dtype}.n{n}"
                vals = [q.get(f"{key}.{c}", {}).get("value") for c, _ in cols]
                if any(v is not None for v in vals):
                    rows.append(f"| {kind.upper()} {dtype} m64n{n}k16 | " + " | ".join(_fmt(v) for v in vals) + " |")
    if not rows:
        return []
    return (["## wgmma (cycles; one CTA per SM on all SMs)", "",
             "| instruction | " + " | ".join(h for _, h in cols) + " |",
             "| --- |" + " ---: |" * len(cols)] + rows + [""])


def _l2_pivot(q: dict) -> list[str]:
    fps, sms = set(), set()
    for k in q:
        if k.startswith("l2_to_sm.") and k.endswith(".bytes_per_s"):
            _, f, s, _ = k.split(".")
            fps.add(int(f[1:-3]))
            sms.add(int(s[:-2]))
    if not fps:
        return []
    sms_l = sorted(sms)
    lines = ["## TMA stream from L2/HBM (TB/s; B/clk/SM in brackets)", "",
             "| footprint MiB | " + " | ".join(f"{s} SMs" for s in sms_l) + " |",
             "| ---: |" + " ---: |" * len(sms_l)]
    for f in sorted(fps):
        cells = []
        for s in sms_l:
            b = q.get(f"l2_to_sm.f{f}MiB.{s}sm.bytes_per_s", {}).get("value")
            p = q.get(f"l2_to_sm.f{f}MiB.{s}sm.bytes_per_clk_per_sm", {}).get("value")
            cells.append("-" if b is None else f"{b / 1e12:.2f} ({p:.0f})")
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    return lines + [""]


def _table(title: str, cols: str, align: str, rows: list, cells) -> list[str]:
    """A Markdown table under ``## title``: ``cols`` the column names joined by `` | ``, ``align`` one
    letter per column (``l`` or ``r``), ``cells(row)`` a row's cells; nothing when there are no rows."""
    if not rows:
        return []
    return ([f"## {title}", "", f"| {cols} |", "| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |"]
            + ["| " + " | ".join(str(c) for c in cells(r)) + " |" for r in rows] + [""])


def _replay_cells(r: dict) -> tuple:
    fill = "no (A 128 rows)" if r["a_full"] else ("yes" if r["m"] % 128 else "-")
    first = (r.get("tile_end_cycles_median") or [None])[0]
    pb = misaligned_pitch(r)
    problem = f"{r['m']}x{r['n']}x{r['k']}" + (f", rows {pb} B apart" if pb else "")
    return (problem, r["tile_n"], r["cluster"][1:], r["mode"], fill, r["grid"],
            f"{r['wall_ns'] / 1e3:.1f}", f"{r['kblock_cycles']:.0f}",
            f"{first / (r['k'] // 64) if first else float('nan'):.0f}", r["clock_mhz"])


def _v3_tables(res: dict) -> list[str]:
    """The mainloop replays and the L2 sharing / zero-fill / B streams of the v3 suites, as tables."""
    def rows(fam: str, key: str) -> list:
        return res.get(fam, {}).get(key, [])
    runs = [r for f in ("mainloop", "mainloop_scaling", "mainloop_cluster", "mainloop_pace", "mainloop_hbm",
                        "mainloop_zero_fill", "mainloop_operand", "mainloop_pitch") for r in rows(f, "runs")]
    return (
        _table("Mainloop replays (the twin's cooperative mainloop, no epilogue; fp16, tile 128 x N x 64)",
               "problem | tile N | cluster | consumers | A zero fill | CTAs | span us | cycles per K-block | "
               "first tile, per K-block | MHz", "lrlllrrrrr", runs, _replay_cells)
        + _table("Zero fill with every SM on the same box (stagger 0) or its own (stagger 8), 132 SMs",
                 "tensor rows | box | rows in bounds | stagger | cycles per box | B/clk/SM landed", "rlrrrr",
                 rows("l2share_lockstep", "oob_lockstep"),
                 lambda r: (r["height"], r["what"], r["in_bounds_rows"], r["stagger"], f"{r['cycles_per_box']:.0f}",
                            f"{r['bytes_per_clk_per_sm']:.1f}"))
        + _table("TMA zero fill (L2-resident, each CTA its own K offset)",
                 "tensor rows | box | rows in bounds | CTAs | cycles per box | B/clk/SM landed", "rlrrrr",
                 rows("l2share", "oob"),
                 lambda r: (r["height"], f"{r['what']} ({r['box_rows']} rows)", r["in_bounds_rows"], r["ctas"],
                            f"{r['cycles_per_box']:.0f}", f"{r['bytes_per_clk_per_sm']:.1f}"))
        + _table("CTAs reading the same L2 lines (128 x 128 B boxes)",
                 "readers per box | timing | footprint MiB | SMs | TB/s | B/clk/SM", "rlrrrr", rows("l2share", "share"),
                 lambda r: (r["group"], r["what"], f"{r['footprint_mib']:.1f}", r["ctas"],
                            f"{r['bytes_per_s'] / 1e12:.2f}", f"{r['bytes_per_clk_per_sm']:.1f}"))
        + _table("B from HBM: each CTA its own K-major stripe (row pitch 8192 B)",
                 "stripe rows | loads in flight | SMs | TB/s | B/clk/SM", "rrrrr", rows("l2share", "bstream"),
                 lambda r: (r["box_rows"], r["stages"], r["ctas"], f"{r['bytes_per_s'] / 1e12:.2f}",
                            f"{r['bytes_per_clk_per_sm']:.1f}"))
        + _table("Zero fill against the SMs filling at once (every CTA on the same box, L2-resident)",
                 "tensor rows | rows in bounds | CTAs | cycles per box | B/clk/SM landed", "rrrrr",
                 rows("zero_fill_scaling", "zero_fill_scaling") + rows("zero_fill_fraction", "zero_fill_scaling"),
                 lambda r: (r["height"], r["in_bounds_rows"], r["ctas"], f"{r['cycles_per_box']:.0f}",
                            f"{r['bytes_per_clk_per_sm']:.1f}"))
        + _table("One CTA's TMA stream against the loads it keeps in flight (row pitch 16384 B)",
                 "source | box KiB | CTAs | loads in flight | B/clk/SM | cycles per box | MHz", "lrrrrrr",
                 rows("bstream_pitch", "depth"),
                 lambda r: (r["where"], r["box_rows"] * 128 // 1024, r["ctas"], r["stages"],
                            f"{r['bytes_per_clk_per_sm']:.1f}", f"{r['cycles_per_box']:.0f}", r["clock_mhz"]))
        + _table("B from HBM at the pitches and SM counts of small-M problems (each CTA its own stripe, whole K)",
                 "row pitch B | stripe rows | loads in flight | SMs | TB/s | B/clk/SM | MHz", "rrrrrrr",
                 rows("bstream_pitch", "bstream_pitch"),
                 lambda r: (r["pitch_bytes"], r["box_rows"], r["stages"], r["ctas"], f"{r['bytes_per_s'] / 1e12:.2f}",
                            f"{r['bytes_per_clk_per_sm']:.1f}", r["clock_mhz"]))
        + _table("A CTA's TMA stream against the SMs streaming at once and its loads in flight (row pitch 16384 B)",
                 "source | box KiB | CTAs | loads in flight | B/clk/SM | cycles per box | round trip ns | TB/s | MHz",
                 "lrrrrrrrr", rows("tma_loaded", "loaded"),
                 lambda r: (r["where"], r["box_rows"] * 128 // 1024, r["ctas"], r["stages"],
                            f"{r['bytes_per_clk_per_sm']:.1f}", f"{r['cycles_per_box']:.0f}",
                            f"{r['cycles_per_box'] * r['stages'] / r['clock_mhz'] * 1e3:.0f}" if r["clock_mhz"] else "",
                            f"{r['bytes_per_s'] / 1e12:.2f}", r["clock_mhz"]))
        + _table("Pairs of CTAs reading the same L2 lines, the second starting later (128 x 128 B boxes, warm L2)",
                 "CTAs | readers | second starts after (cycles) | TB/s | B/clk/SM | MHz", "rlrrrr",
                 rows("l2share_window", "window"),
                 lambda r: (r["ctas"], "pair" if r["group"] == 2 else "alone", r["offset_cycles"],
                            f"{r['bytes_per_s'] / 1e12:.2f}", f"{r['bytes_per_clk_per_sm']:.1f}", r["clock_mhz"]))
        + _table("The same pairs against the CTAs streaming at once; partners next to each other in blockIdx (near, "
                 "one GPC) or half the grid apart (far, two GPCs)",
                 "CTAs | readers | partners | second starts after (cycles) | TB/s | B/clk/SM | MHz", "rllrrrr",
                 rows("l2share_window_load", "window"),
                 lambda r: (r["ctas"], "pair" if r["group"] == 2 else "alone",
                            r.get("pairing", "near") if r["group"] == 2 else "-", r["offset_cycles"],
                            f"{r['bytes_per_s'] / 1e12:.2f}", f"{r['bytes_per_clk_per_sm']:.1f}", r["clock_mhz"]))
        + _table("Chosen SMs streaming their own L2 lines (16 KiB boxes, 6 in flight), the others idle",
                 "SMs streaming | how many | median B/clk/SM | min | max | sum B/clk | MHz", "lrrrrrr",
                 rows("l2share_groups", "runs"),
                 lambda r: (r["what"], len(r["sms"]), f"{statistics.median(r['bytes_per_clk']):.1f}",
                            f"{min(r['bytes_per_clk']):.1f}", f"{max(r['bytes_per_clk']):.1f}",
                            f"{sum(r['bytes_per_clk']):.0f}", r["clock_mhz"])))


_TITLES = {"v2": "the SM90 model's timing constants", "v3": "the mechanisms of issue 17 (small M, shared lines, "
           "zero fill, multicast)", "v3b": "issue 17, second run (clusters with the twin's remote arrive, "
           "scaling over SMs, zero fill in lockstep)", "v3c": "issue 17, third run (the mainloop's pace per tile N on "
           "one SM and on 132 SMs in every cluster shape)", "v3d": "issue 17, fourth run (small-M problems whose B "
           "streams from HBM on part of the chip)", "v3e": "issue 17, fifth run (zero fill against the SMs "
           "filling at once)", "v3f": "issue 17, sixth run (the mainloop with and without TMA traffic during its math, "
           "two warpgroups or one)", "v3g": "issue 17, seventh run (zero fill against the SMs filling at once, at other "
           "zero fractions and wholly past the tensor)", "v3h": "issue 17, eighth run (the mainloop at an aligned and a "
           "misaligned row pitch in every cluster shape)", "v3i": "the stream-K fixup's workspace accesses against other SMs' TMA "
           "loads", "v3j": "the TMA stream's loaded latency: SMs streaming at once against loads in flight, HBM and L2",
           "v3k": "how close in time two reads of the same L2 lines must be to be served as one",
           "v3l": "the L2 merge window against the SMs streaming at once, partners on one GPC or two",
           "v3m": "which SMs share a limit on the L2 -> SM path"}


def gpu_short_name(name: str | None) -> str:
    """``NVIDIA H100 80GB HBM3`` -> ``H100``: the chip's name in titles and result file names (``GPU``
    when there is none)."""
    for tok in (name or "").split():
        if len(tok) >= 4 and tok[0].isalpha() and tok[1:4].isdigit():
            return tok
    return "GPU"


def markdown(doc: dict) -> str:
    m, q = doc["meta"], doc["quantities"]
    dev = m.get("device", {})
    smi = m.get("nvidia_smi_before", {})
    clk = m.get("effective_sm_clock", {})
    suite = m.get("suite", "v2")
    out = [f"# {gpu_short_name(dev.get('name'))} microbenchmarks ({suite}): {_TITLES.get(suite, suite)}", "",
           f"Command: `{m.get('command')}`, {m.get('date_utc')}. Device: {dev.get('name')} ({dev.get('sm_count')} SMs, "
           f"L2 {dev.get('l2_bytes')} B), driver {smi.get('driver_version')}, CUDA driver API {dev.get('cuda_driver_version')}, "
           f"{m.get('versions', {}).get('nvcc')}, cuda-bindings {m.get('versions', {}).get('cuda.bindings')}, "
           f"DSL (nvidia-cutlass-dsl) {m.get('versions', {}).get('cutlass')}.",
           f"Effective SM clock (clock64 / %globaltimer, median over {clk.get('launches')} launches): "
           f"{clk.get('median_mhz_over_launches')} MHz (range {clk.get('min_mhz')}-{clk.get('max_mhz')}).",
           "Kernels: `validation/microbench/cuda/` (CUDA C++ with inline PTX, nvcc for sm_90a); every value is "
           "also in the JSON's `quantities` under the name in the first column.", ""]
    out += _wgmma_pivot(q)
    out += _l2_pivot(q)
    out += _v3_tables(doc.get("results", {}))
    out += ["## All quantities", "", "| name | value | unit | how |", "| --- | ---: | --- | --- |"]
    for k in sorted(q):
        if k.startswith(("wgmma.", "l2_to_sm.")):
            continue
        v = q[k]
        out.append(f"| `{k}` | {_fmt(v['value'])} | {v['unit']} | {v['what']} |")
    st = m.get("family_status", {})
    out += ["", "Families: " + ", ".join(f"{k} {v}" for k, v in st.items()), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m validation.microbench.report RESULT.json", file=sys.stderr)
        return 2
    with open(argv[0]) as fh:
        print(markdown(json.load(fh)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
