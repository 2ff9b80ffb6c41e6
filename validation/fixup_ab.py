"""The twin's stream-K fixup moving one word against 16 B per thread (``KernelConfig.fixup_vec`` 1 and 4), on
the problems where the twin trails cuBLAS: each config in both forms beside cuBLAS, alternating on the same
random-normal fp16 inputs, every output checked against a float32 reference first (the campaign's
``measure_shape``).

    python -m validation.fixup_ab --out OUT [--time-limit S] [--quick]   # on the GPU: OUT/fixup_ab.json
    python -m validation.fixup_ab --report RUN.json [--md OUT.md]  # anywhere: the table
"""

from __future__ import annotations

import sys
from dataclasses import replace

from validation import config_ab

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


def variant(cfg):
    """The 16-byte fixup of ``cfg``."""
    return replace(cfg, fixup_vec=4)


def report(res: dict, written_by: str = "") -> str:
    lines = [*config_ab.header(res, "The twin's fixup at 1 and 4 floats per thread per access, measured on the", written_by),
             "| problem | config | cuBLAS us | fixup_vec 1 us | x cuBLAS | fixup_vec 4 us | x cuBLAS | 4 / 1 | "
             "clock GHz (1 / 4) | correct |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    by = {}
    for r in res["rows"]:
        if r.get("event_us"):
            by[(r["m"], r["n"], r["k"], r["config"])] = r
    for (m, n, k, name), r1 in sorted(by.items()):
        if name == "cublas" or "_fv4" in name:
            continue
        r4 = by.get((m, n, k, config_ab.variant_name(name, variant)))
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
    return config_ab.main(argv, __doc__, "fixup_ab", lambda a: QUICK if a.quick else CASES, variant, 300, report,
                          lambda ap: ap.add_argument("--quick", action="store_true", help="the QUICK cases only"))


if __name__ == "__main__":
    sys.exit(main())
