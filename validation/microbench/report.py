"""The Markdown summary of ``h200_microbench_v2.json`` (CPU-only).

    python -m validation.microbench.report validation/results/h200_microbench_v2.json > ....md
"""

from __future__ import annotations

import json
import sys


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


def markdown(doc: dict) -> str:
    m, q = doc["meta"], doc["quantities"]
    dev = m.get("device", {})
    smi = m.get("nvidia_smi_before", {})
    clk = m.get("effective_sm_clock", {})
    out = ["# H200 microbenchmarks (v2): the SM90 model's timing constants", "",
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
    out += ["## All quantities", "", "| name | value | unit | how |", "| --- | ---: | --- | --- |"]
    for k in sorted(q):
        if k.startswith("wgmma.") or k.startswith("l2_to_sm."):
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
