"""Where the load generator's memory bytes come from: Nsight Compute's DRAM and L2 counters for its L2 and
HBM loads (issue 16; h200_power.json's 'hbm' loads on 132 SMs counted 12 TB/s, more than HBM gives).

    python -m validation.microbench.power_dram --out OUT     # on the GPU machine (ncu, clocks left alone)
    python -m validation.microbench.power_dram --dry-run     # CPU: the loads and the ncu command

Each load of :data:`LOADS` runs once for 20 ms under ``ncu --clock-control none`` (only the
``power_*`` kernels are profiled); per launch: DRAM bytes read and written, L2 bytes and sector hit
rate, the kernel's own count of bulk-loaded bytes and its duration. OUT gets ``h200_power_dram.json``
and ``.md``; the raw ncu CSV is kept in the JSON.

What it showed (2026-12-01): in 20-ms launches every 'hbm' byte is a DRAM byte (4.74 TB/s on 132 SMs,
4.58 on 66, 3.39 on 33, 2.41 paced at half duty) and every 'l2' byte an L2 hit. The 1.6-s runs of
h200_power.json counted up to 12.1 TB/s for the same loads: over a long run the SMs drift into
convoys that read the same 16 KiB chunks (each SM's addresses repeat, shifted by 8 chunks, after a
pass over the 4 GiB buffer), so those bytes are partly L2 hits (an explanation that fits the counts,
not a measurement). Only the paced load (half duty, 2.41 TB/s both times) is a clean DRAM point.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

from .power import Load

OUT_NAME = "h200_power_dram"
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "lts__t_sector_hit_rate.pct",
           "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second")
LOADS = [Load("none", mem="hbm", sms=132, seconds=0.02), Load("none", mem="hbm", sms=66, seconds=0.02),
         Load("none", mem="hbm", sms=33, seconds=0.02), Load("none", mem="hbm", mem_duty=0.5, seconds=0.02),
         Load("none", mem="l2", sms=132, seconds=0.02), Load("tc", mem="hbm", seconds=0.02),
         Load("tc", 0.5, mem="hbm", seconds=0.02), Load("tc", mem="l2", seconds=0.02)]


def launch_all(part: Path) -> int:
    """Child (under ncu): every load once, in order; writes the kernel's own counts."""
    from .power import Runner
    r = Runner(None)
    out = []
    for ld in LOADS:
        res, _, _ = r.run(ld)
        out.append({"load": ld.label, "mem_bytes": res.get("mem_gb_per_s", 0) * res.get("wall_ms", 0) * 1e6,
                    "mem_gb_per_s": res.get("mem_gb_per_s"), "wall_ms": res.get("wall_ms"),
                    "clock_mhz": res.get("clock_mhz")})
        part.write_text(json.dumps(out))
    return 0


def parse_ncu_csv(text: str) -> list[dict]:
    """Rows of ``ncu --csv --page raw`` (a header, a units row, one row per profiled kernel)."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    head = rows[0]
    out = []
    for r in rows[1:]:
        if len(r) != len(head) or r[head.index("Kernel Name")] in ("", "Kernel Name") or not r[0].isdigit():
            continue
        d = {}
        for h, v in zip(head, r, strict=True):
            if h in METRICS:
                try:
                    d[h] = float(v.replace(",", ""))
                except ValueError:
                    d[h] = None
            elif h == "Kernel Name":
                d["kernel"] = v
        out.append(d)
    return out


def combine(kernel_rows: list[dict], ncu_rows: list[dict]) -> list[dict]:
    """One row per load: the kernel's bytes beside ncu's DRAM bytes (fraction from DRAM)."""
    out = []
    for k, n in zip(kernel_rows, ncu_rows, strict=False):
        dram = n.get("dram__bytes_read.sum")
        frac = dram / k["mem_bytes"] if dram is not None and k.get("mem_bytes") else None
        out.append({**k, **{m: n.get(m) for m in METRICS}, "ncu_kernel": n.get("kernel"),
                    "dram_read_fraction": None if frac is None else round(frac, 4)})
    return out


def markdown(doc: dict) -> str:
    m = doc["meta"]
    lines = ["# Load generator bytes: kernel count vs Nsight Compute (issue 16)", "",
             f"`{m['command']}`, {m['date_utc']}; {m.get('device')}; ncu `{m.get('ncu_version')}`. Written by the command.", "",
             "| load | kernel GB/s | kernel bytes | DRAM read bytes | DRAM / kernel bytes | L2 bytes | L2 hit % |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in doc["rows"]:
        lines.append(f"| {r['load']} | {r.get('mem_gb_per_s')} | {r.get('mem_bytes', 0):.3g} | "
                     f"{r.get('dram__bytes_read.sum') or 0:.3g} | {r.get('dram_read_fraction')} | "
                     f"{r.get('lts__t_bytes.sum') or 0:.3g} | {r.get('lts__t_sector_hit_rate.pct')} |")
    return "\n".join(lines + [""])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return launch_all(Path(a.child))
    out = Path(a.out)
    part = out / "part_dram.json"
    ncu = ["ncu", "--clock-control", "none", "--csv", "--page", "raw", "--metrics", ",".join(METRICS),
           "--kernel-name", "regex:^power_", "--target-processes", "all"]
    child = [sys.executable, "-m", "validation.microbench.power_dram", "--child", str(part)]
    for ld in LOADS:
        from .power import kernel_ints
        kernel_ints(ld)
    if a.dry_run:
        print(" ".join(ncu + child))
        print(f"{len(LOADS)} loads: " + ", ".join(ld.label for ld in LOADS))
        return 0
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    p = subprocess.run(ncu + child, capture_output=True, text=True, timeout=240)
    try:
        ver = subprocess.run(["ncu", "--version"], capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[-1]
    except Exception as e:  # noqa: BLE001
        ver = f"? ({type(e).__name__})"
    kernel_rows = json.loads(part.read_text()) if part.exists() else []
    ncu_rows = parse_ncu_csv(p.stdout)
    from .run import _nvidia_smi
    smi = _nvidia_smi()
    doc = {"meta": {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "command": "python -m validation.microbench.power_dram --out OUT", "ncu_version": ver,
                    "device": f"{smi.get('name')}, driver {smi.get('driver_version')}", "nvidia_smi": smi,
                    "host": platform.node(), "rc": p.returncode, "seconds": round(time.time() - t0, 1),
                    "ncu_stderr_tail": p.stderr[-3000:]},
           "rows": combine(kernel_rows, ncu_rows), "ncu_csv": p.stdout[-200000:]}
    (out / f"{OUT_NAME}.json").write_text(json.dumps(doc, indent=1))
    (out / f"{OUT_NAME}.md").write_text(markdown(doc))
    print(markdown(doc))
    print(f"[power_dram] rc {p.returncode}; {len(ncu_rows)} ncu rows, {len(kernel_rows)} kernel rows")
    return 0 if ncu_rows else 1


if __name__ == "__main__":
    raise SystemExit(main())
