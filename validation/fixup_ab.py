"""The twin's stream-K fixup moving one word against 16 B per thread (``KernelConfig.fixup_vec`` 1 and 4), on
the problems where the twin trails cuBLAS: each config in both forms beside cuBLAS, alternating on the same
random-normal fp16 inputs, every output checked against a float32 reference first (the campaign's
``measure_shape``).

    python -m validation.fixup_ab --out OUT [--time-limit S] [--quick]   # on the GPU: OUT/fixup_ab.json
    python -m validation.fixup_ab --report RUN.json [--md OUT.md]  # anywhere: the table
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from hw_kernels import records as R
from hw_kernels.host import KernelConfig

#: Problem -> the stream-K scheduler configs to compare: the campaigns' best where the twin trails cuBLAS
#: (h200_streamk.md, h100_coop64.md development problems) and the wide tiles whose fixup dominated.
CASES = {
    (512, 512, 32768): ("128x64x64_c2x2_rm_sw1_e32_dh", "128x128x64_c1x1_rm_sw1_e32_ds8",
                        "128x256x64_c2x2_rn_sw1_e32_dh", "64x128x64_c2x1_rn_sw1_e32_ds4"),
    (256, 1024, 65536): ("128x64x64_c1x2_rn_sw1_e32_ds8", "128x256x64_c2x2_rn_sw1_e32_dsk",
                         "64x128x64_c2x1_rn_sw1_e32_ds4"),
    (12000, 800, 3000): ("128x256x64_c2x2_rn_sw1_e32_dsk",),
    (32, 8192, 8192): ("128x192x64_c1x2_rn_sw1_e32_ds2",),
}


#: ``--quick``: the two small-MN / long-K problems, the best narrow tile and the widest.
QUICK = {(512, 512, 32768): ("128x64x64_c2x2_rm_sw1_e32_dh", "128x256x64_c2x2_rn_sw1_e32_dh",
                             "64x128x64_c2x1_rn_sw1_e32_ds4"),
         (256, 1024, 65536): ("128x64x64_c1x2_rn_sw1_e32_ds8", "128x256x64_c2x2_rn_sw1_e32_dsk")}


def configs(names) -> list[KernelConfig]:
    out = []
    for name in names:
        cfg = replace(KernelConfig.from_name(name), instrument=R.LEVEL_SPAN)
        out += [cfg, replace(cfg, fixup_vec=4)]
    return out


def run(out: Path, time_limit: float, quick: bool = False) -> Path:
    from validation.campaign import Campaign, Gpu
    out.mkdir(parents=True, exist_ok=True)
    command = "python -m validation.fixup_ab " + " ".join(sys.argv[1:])
    camp = Campaign(Gpu(out, print), out, command, time.time() + time_limit, quick=False)
    path = out / "fixup_ab.json"
    for i, (shape, names) in enumerate((QUICK if quick else CASES).items()):
        if camp.left() < 30:
            camp.res["skipped"].append(f"{shape}: out of time")
            continue
        camp.res["rows"] += camp.measure_shape("fixup_ab", "fp16", shape, configs(names), budget_s=6.0,
                                               max_rounds=40, min_rounds=5, seed=300 + i)
        path.write_text(json.dumps(camp.res, separators=(",", ":"), default=str))  # a cut run keeps its shapes
    return path


def report(res: dict, written_by: str = "") -> str:
    env = res["env"]
    lines = [f"# The twin's fixup at 1 and 4 floats per thread per access, measured on the {env.get('device')}", "",
             *([f"Written by `{written_by}`.", ""] if written_by else []),
             f"GPU run: `{env.get('command')}`; {env.get('device')}, driver {env.get('driver')}, CuTe DSL "
             f"{env.get('nvidia_cutlass_dsl')}, {env.get('date_utc')}. Median CUDA-event time of queued launches, "
             "alternating with cuBLAS on the same inputs; every output checked against a float32 reference.", "",
             "| problem | config | cuBLAS us | fixup_vec 1 us | x cuBLAS | fixup_vec 4 us | x cuBLAS | 4 / 1 | "
             "clock GHz (1 / 4) | correct |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    by = {}
    for r in res["rows"]:
        if r.get("event_us"):
            by[(r["m"], r["n"], r["k"], r["config"])] = r
    for (m, n, k, name), r1 in sorted(by.items()):
        if name == "cublas" or "_fv4" in name:
            continue
        r4 = by.get((m, n, k, name.replace("_trace-span", "_fv4_trace-span")))
        cub = by.get((m, n, k, "cublas"))
        if r4 is None or cub is None:
            continue
        ok = all(x.get("check", {}).get("ok") for x in (r1, r4))
        lines.append(f"| {m}x{n}x{k} | {name.replace('_trace-span', '')} | {cub['event_us']:.1f} | "
                     f"{r1['event_us']:.1f} | {cub['event_us'] / r1['event_us']:.2f} | {r4['event_us']:.1f} | "
                     f"{cub['event_us'] / r4['event_us']:.2f} | {r4['event_us'] / r1['event_us']:.2f} | "
                     f"{r1.get('clock_ghz') or 0:.3f} / {r4.get('clock_ghz') or 0:.3f} | {'yes' if ok else 'NO'} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--quick", action="store_true", help="the QUICK cases only")
    ap.add_argument("--report", type=Path)
    ap.add_argument("--md", type=Path)
    a = ap.parse_args(argv)
    if a.report:
        text = report(json.loads(a.report.read_text()), "python -m validation.fixup_ab " + " ".join(
            sys.argv[1:] if argv is None else argv))
        if a.md:
            a.md.write_text(text)
        print(text, end="")
        return 0
    if not a.out:
        ap.error("give --out (GPU run) or --report")
    print(report(json.loads(run(a.out, a.time_limit, a.quick).read_text())), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
