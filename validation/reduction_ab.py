"""The twin's separate reduction (``KernelConfig.reduction = "separate"``: every non-final split stores its
partials in a slot of its own, the final split sums them in K order) against the reduction each config
ran with in the campaigns (CUTLASS's turnstile or its atomic adds), on the problems where the twin trails
cuBLAS: both forms beside cuBLAS, alternating on the same random-normal fp16 inputs, every output checked
against a float32 reference first (the campaign's ``measure_shape``). Ragged problems check correctness.

    python -m validation.reduction_ab --out OUT [--time-limit S] [--set clusters]   # GPU: OUT/reduction_ab.json
    python -m validation.reduction_ab --report RUN.json [--md OUT.md]  # anywhere: the table
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

#: Problem -> configs (the fastest split configs of the committed campaigns where the twin trails cuBLAS,
#: h200_picks.md / h200_streamk_nd.md / h200_coop64.md; and ragged problems, for correctness).
CASES = {
    (512, 512, 32768): ("128x128x64_c2x2_rn_sw1_e32_dh_nd", "128x64x64_c2x2_rm_sw1_e32_dh",
                        "128x128x64_c1x1_rm_sw1_e32_ds8", "64x128x64_c2x1_rm_sw1_e32_ds4"),
    (256, 1024, 65536): ("128x128x64_c2x2_rn_sw1_e32_dsk_nd", "128x256x64_c2x2_rm_sw1_e32_dh_nd",
                         "64x128x64_c2x1_rn_sw1_e32_ds4"),
    (32, 8192, 8192): ("64x128x64_c1x1_rm_sw1_e32_ds2",),
    (1536, 1536, 12288): ("128x256x64_c2x1_rm_sw1_e32_dsk_nd",),
    (5000, 5000, 5000): ("128x256x64_c2x2_rn_sw1_e32_dsk",),
    (1000, 1032, 520): ("128x64x64_c2x1_rn_sw1_e32_ds3",),
    (12000, 800, 3000): ("128x160x64_c2x1_rn_sw1_e32_dsk",),
}


#: ``--set clusters``: split-K on 2x2 and 2x1 clusters (multicast halves the mainloop's L2 -> SM bytes, which
#: bound 128 CTAs at 1x1), where the separate reduction leaves the turnstile's tail out; chosen after the
#: CASES run (h100_reduction_ab.md).
CLUSTERS = {
    (512, 512, 32768): ("128x128x64_c2x2_rn_sw1_e32_ds8", "128x128x64_c2x2_rn_sw1_e32_ds4",
                        "128x64x64_c2x2_rm_sw1_e32_ds8", "128x128x64_c2x1_rn_sw1_e32_ds8_nd"),
    (256, 1024, 65536): ("128x128x64_c2x2_rn_sw1_e32_ds8", "128x64x64_c2x2_rn_sw1_e32_ds8",
                         "128x128x64_c2x1_rn_sw1_e32_ds4"),
}
SETS = {"campaign-best": CASES, "clusters": CLUSTERS}


def configs(names) -> list[KernelConfig]:
    out = []
    for name in names:
        cfg = KernelConfig.from_name(name)
        if cfg is None:
            raise ValueError(f"config {name!r}: not a twin config name")
        cfg = replace(cfg, instrument=R.LEVEL_SPAN)
        out += [cfg, replace(cfg, reduction="separate")]
    return out


def run(out: Path, time_limit: float, case_set: str = "campaign-best") -> Path:
    from validation.campaign import Campaign, Gpu
    out.mkdir(parents=True, exist_ok=True)
    command = "python -m validation.reduction_ab " + " ".join(sys.argv[1:])
    camp = Campaign(Gpu(out, print), out, command, time.time() + time_limit, quick=False)
    path = out / "reduction_ab.json"
    for i, (shape, names) in enumerate(SETS[case_set].items()):
        if camp.left() < 30:
            camp.res["skipped"].append(f"{shape}: out of time")
            continue
        camp.res["rows"] += camp.measure_shape("reduction_ab", "fp16", shape, configs(names), budget_s=6.0,
                                               max_rounds=40, min_rounds=5, seed=400 + i)
        path.write_text(json.dumps(camp.res, separators=(",", ":"), default=str))  # a cut run keeps its shapes
    return path


def _separate_name(name: str) -> str:
    """The instrumented name of ``name``'s config with the separate reduction."""
    base = KernelConfig.from_name(name.replace("_trace-span", ""))
    return replace(base, reduction="separate", instrument=R.LEVEL_SPAN).name()


def report(res: dict, written_by: str = "") -> str:
    env = res["env"]
    lines = [f"# The twin's separate reduction against the campaigns' reductions, on the {env.get('device')}", "",
             *([f"Written by `{written_by}`.", ""] if written_by else []),
             f"GPU run: `{env.get('command')}`; {env.get('device')}, driver {env.get('driver')}, CuTe DSL "
             f"{env.get('nvidia_cutlass_dsl')}, {env.get('date_utc')}. Median CUDA-event time of queued launches, "
             "alternating with cuBLAS on the same inputs; every output checked against a float32 reference.", "",
             "| problem | config (its campaign reduction) | cuBLAS us | us | x cuBLAS | separate us | x cuBLAS | "
             "separate / campaign | clock GHz (campaign / separate) | correct |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    by = {(r["m"], r["n"], r["k"], r["config"]): r for r in res["rows"] if r.get("config")}
    for (m, n, k, name), r1 in sorted(by.items()):
        if name == "cublas" or "_sr" in name:
            continue
        rs = by.get((m, n, k, _separate_name(name)))
        cub = by.get((m, n, k, "cublas"))
        if rs is None or cub is None:
            continue
        ok = all(x.get("check", {}).get("ok") for x in (r1, rs))
        t1, ts, tc = r1.get("event_us"), rs.get("event_us"), cub.get("event_us")
        if not (t1 and ts and tc):
            lines.append(f"| {m}x{n}x{k} | {name.replace('_trace-span', '')} | - | - | - | - | - | - | - | "
                         f"{'yes' if ok else 'NO'} ({r1.get('error') or rs.get('error') or 'not timed'}) |")
            continue
        lines.append(f"| {m}x{n}x{k} | {name.replace('_trace-span', '')} | {tc:.1f} | {t1:.1f} | {tc / t1:.2f} | "
                     f"{ts:.1f} | {tc / ts:.2f} | {ts / t1:.2f} | {r1.get('clock_ghz') or 0:.3f} / "
                     f"{rs.get('clock_ghz') or 0:.3f} | {'yes' if ok else 'NO'} |")
    if res.get("errors"):
        lines += ["", f"Errors: {res['errors']}"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--set", default="campaign-best", choices=sorted(SETS), help="which problems and configs")
    ap.add_argument("--report", type=Path)
    ap.add_argument("--md", type=Path)
    a = ap.parse_args(argv)
    if a.report:
        text = report(json.loads(a.report.read_text()), "python -m validation.reduction_ab " + " ".join(
            sys.argv[1:] if argv is None else argv))
        if a.md:
            a.md.write_text(text)
        print(text, end="")
        return 0
    if not a.out:
        ap.error("give --out (GPU run) or --report")
    print(report(json.loads(run(a.out, a.time_limit, a.set).read_text())), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
