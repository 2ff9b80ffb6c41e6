"""The twin's separate reduction (``KernelConfig.reduction = "separate"``: every non-final split stores its
partials in a slot of its own, the final split sums them in K order) against the reduction each config
ran with in the campaigns (CUTLASS's turnstile or its atomic adds), on the problems where the twin trails
cuBLAS: both forms beside cuBLAS, alternating on the same random-normal fp16 inputs, every output checked
against a float32 reference first (the campaign's ``measure_shape``). Ragged problems check correctness.

    python -m validation.reduction_ab --out OUT [--time-limit S] [--set clusters]   # GPU: OUT/reduction_ab.json
    python -m validation.reduction_ab --report RUN.json [--md OUT.md]  # anywhere: the table
"""

from __future__ import annotations

import sys
from dataclasses import replace

from validation import config_ab

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
#: ``--set splits16``: 16 splits of the 128x256 tile on 2x1 clusters (8 output tiles fill 128 SMs; the wide tile
#: and the multicast move fewer L2 -> SM bytes a flop than 128x128 on 2x2) and of 128x128 on 2x2, beside each
#: problem's campaign best; chosen with the model (``--space hw`` offers at most 8 splits).
SPLITS16 = {
    (512, 512, 32768): ("128x128x64_c2x2_rn_sw1_e32_dh_nd", "128x256x64_c2x1_rn_sw1_e32_ds16_nd",
                        "128x256x64_c2x1_rn_sw1_e32_ds16", "128x128x64_c2x2_rn_sw1_e32_ds16_nd"),
    (256, 1024, 65536): ("128x128x64_c2x2_rn_sw1_e32_dsk_nd", "128x256x64_c2x1_rn_sw1_e32_ds16_nd",
                         "128x256x64_c2x1_rn_sw1_e32_ds16", "128x128x64_c2x2_rn_sw1_e32_ds16_nd"),
}
SETS = {"campaign-best": CASES, "clusters": CLUSTERS, "splits16": SPLITS16}


def variant(cfg):
    """``cfg`` with the separate reduction."""
    return replace(cfg, reduction="separate")


def report(res: dict, written_by: str = "") -> str:
    lines = [*config_ab.header(res, "The twin's separate reduction against the campaigns' reductions, on the", written_by),
             "| problem | config (its campaign reduction) | cuBLAS us | us | x cuBLAS | separate us | x cuBLAS | "
             "separate / campaign | clock GHz (campaign / separate) | correct |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    by = {(r["m"], r["n"], r["k"], r["config"]): r for r in res["rows"] if r.get("config")}
    for (m, n, k, name), r1 in sorted(by.items()):
        if name == "cublas" or "_sr" in name:
            continue
        rs = by.get((m, n, k, config_ab.variant_name(name, variant)))
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
    return config_ab.main(argv, __doc__, "reduction_ab", lambda a: SETS[a.set], variant, 400, report,
                          lambda ap: ap.add_argument("--set", default="campaign-best", choices=sorted(SETS),
                                                     help="which problems and configs"))


if __name__ == "__main__":
    sys.exit(main())
