"""Run every microbenchmark family on the GPU and write one JSON (+ a Markdown table).

    python -m validation.microbench.run --out OUT [--quick] [--budget-s 330] [--families wgmma,tma]
    python -m validation.microbench.run --suite v3 --out OUT       # issue 17's mechanisms
    python -m validation.microbench.run --dry-run      # CPU: build every kernel, print the plan

Each family runs in a child process with its own time limit (a fault or a hang loses that family
only); whatever finished within ``--budget-s`` is written. Output: ``OUT/<gpu>_microbench_<suite>.json``
(metadata, per-family results, and ``quantities``: every named result with value, unit and method)
and ``OUT/<gpu>_microbench_<suite>.md`` (``<gpu>``: h200, h100, ... from the device's name).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

#: Family -> seconds it may take in a full run, per suite (v2: the SM90 model's constants; v3: the
#: mechanisms of issue 17; v3b: its second run, the cluster replays with the twin's remote arrive; v3c:
#: the mainloop's pace per tile N, one SM against 132 in every cluster shape; v3d: small-M problems whose
#: B streams from HBM on part of the chip, and B streams at their row pitches and SM counts; v3e: zero fill
#: against the SMs filling at once; v3f: the mainloop with and without TMA traffic during its math; v3g: zero fill at other
#: zero fractions and wholly past the tensor; v3h: the mainloop at a misaligned row pitch in every cluster shape;
#: v3i: the stream-K fixup's workspace accesses against other SMs' TMA loads; v3j: the TMA stream's rate against
#: the SMs streaming at once and the loads each keeps in flight, from HBM and L2; v3k: how close in time two reads
#: of the same lines must be to be served as one; v3l: that window against the SMs streaming at once, partners on
#: one GPC or two; v3m: which SMs share a limit on the L2 -> SM path, chosen SMs streaming with and without their
#: neighbours; v3n: streams from HBM whose boxes g SMs each read once, the few-tile long-K mainloop).
#: Order: cheapest first.
SUITES = {"v2": {"clock": 20, "cluster": 40, "sync": 60, "wgmma": 90, "epilogue": 90, "tma": 120},
          "v3": {"clock": 20, "l2share": 50, "mainloop": 60, "mainloop_cluster": 50},
          "v3b": {"clock": 20, "l2share_lockstep": 30, "mainloop_scaling": 60, "mainloop_cluster": 50},
          "v3c": {"clock": 20, "mainloop_pace": 120},
          "v3d": {"clock": 20, "mainloop_hbm": 60, "bstream_pitch": 60},
          "v3e": {"clock": 20, "zero_fill_scaling": 40, "mainloop_zero_fill": 40},
          "v3f": {"clock": 20, "mainloop_operand": 60},
          "v3g": {"clock": 20, "zero_fill_fraction": 60},
          "v3h": {"clock": 20, "mainloop_pitch": 60},
          "v3i": {"clock": 20, "fixup_l2": 90},
          "v3j": {"clock": 20, "tma_loaded": 120},
          "v3k": {"clock": 20, "l2share_window": 90},
          "v3l": {"clock": 20, "l2share_window_load": 120},
          "v3m": {"clock": 20, "l2share_groups": 60},
          "v3n": {"clock": 20, "l2share_hbm": 60}}
FAMILIES = {f: s for suite in SUITES.values() for f, s in suite.items()}


def _nvidia_smi() -> dict:
    q = "name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu"
    try:
        p = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=20)
        vals = [v.strip() for v in p.stdout.strip().splitlines()[0].split(",")]
        return dict(zip(q.split(","), vals, strict=False))
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        return {"error": f"{type(e).__name__}: {e}"[:200]}


def _versions() -> dict:
    v = {"python": platform.python_version()}
    for mod in ("cuda.bindings", "numpy", "cutlass"):
        try:
            m = importlib.import_module(mod)
            v[mod] = getattr(m, "__version__", "?")
        except Exception as e:  # noqa: BLE001
            v[mod] = f"not importable ({type(e).__name__})"
    try:
        from .build import nvcc
        exe = nvcc()
        if exe:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
            v["nvcc"] = out.strip().splitlines()[-1]
    except Exception as e:  # noqa: BLE001
        v["nvcc"] = f"? ({type(e).__name__})"
    return v


def run_family(name: str, part: Path, quick: bool) -> int:
    """Child process: one family on the GPU -> ``part`` (JSON)."""
    from .driver import Gpu
    gpu = Gpu()
    mod = importlib.import_module(f"validation.microbench.{name}")
    t0 = time.time()
    res = mod.measure(gpu, quick=quick)
    res["seconds"] = round(time.time() - t0, 1)
    res["device"] = {"name": gpu.name, "sm_count": gpu.sm_count, "l2_bytes": gpu.l2_bytes,
                     "smem_optin": gpu.smem_optin, "smem_per_sm": gpu.smem_per_sm,
                     "cuda_driver_version": gpu.driver_version}
    part.write_text(json.dumps(res, default=_jsonable))
    return 0


def _jsonable(x):
    try:
        import numpy as np
        if isinstance(x, np.generic):
            return x.item()
        if isinstance(x, np.ndarray):
            return x.tolist()
    except ImportError:
        pass
    raise TypeError(f"not JSON-serialisable: {type(x).__name__}")


def effective_clock(results: dict) -> dict:
    """Median of every ``clock_mhz`` a family recorded (per launch), and the clock family's own figure."""
    seen: list[float] = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "clock_mhz" and isinstance(v, (int, float)):
                    seen.append(float(v))
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(results)
    seen.sort()
    return {"median_mhz_over_launches": seen[len(seen) // 2] if seen else None,
            "min_mhz": seen[0] if seen else None, "max_mhz": seen[-1] if seen else None, "launches": len(seen)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".", help="directory for <gpu>_microbench_<suite>.json/.md")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    ap.add_argument("--budget-s", type=float, default=420.0, help="hard limit for the whole run")
    ap.add_argument("--suite", default="v2", choices=sorted(SUITES), help="which families (default v2)")
    ap.add_argument("--families", default=None, help="comma-separated subset of the suite's families")
    ap.add_argument("--dry-run", action="store_true", help="build every kernel and print the plan (no GPU)")
    ap.add_argument("--family", help=argparse.SUPPRESS)
    ap.add_argument("--part", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.family:
        return run_family(a.family, Path(a.part), a.quick)
    suite = SUITES[a.suite]
    fams = [f for f in (a.families or ",".join(suite)).split(",") if f]
    bad = [f for f in fams if f not in suite]
    if bad:
        print(f"--families: {bad} not in suite {a.suite}; valid: {', '.join(suite)}", file=sys.stderr)
        return 2
    from .build import build_all
    t_start = time.time()
    problems = build_all()
    print(f"[run] built {len(problems)} kernel modules in {time.time() - t_start:.1f} s", flush=True)
    if a.dry_run:
        for f in fams:
            mod = importlib.import_module(f"validation.microbench.{f}")
            print(f"[run] {f}: {mod.__doc__.strip().splitlines()[0]} (limit {FAMILIES[f]} s)")
        return 0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "suite": a.suite,
            "command": "python -m validation.microbench.run --out OUT" + (f" --suite {a.suite}" if a.suite != "v2" else "")
            + (" --quick" if a.quick else ""),
            "nvidia_smi_before": _nvidia_smi(), "versions": _versions(), "host": platform.node()}
    results: dict = {}
    status: dict = {}
    for f in fams:
        left = a.budget_s - (time.time() - t_start) - 10
        if left < 5:
            status[f] = "skipped: out of time"
            continue
        limit = min(left, FAMILIES[f] * (0.5 if a.quick else 1.0) + 15)
        part = out / f"part_{f}.json"
        cmd = [sys.executable, "-m", "validation.microbench.run", "--family", f, "--part", str(part)]
        if a.quick:
            cmd.append("--quick")
        t0 = time.time()
        try:
            p = subprocess.run(cmd, timeout=limit, env=dict(os.environ, PYTHONUNBUFFERED="1"))
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        status[f] = {"rc": rc, "seconds": round(time.time() - t0, 1), "limit_s": round(limit, 1)}
        if part.exists():
            results[f] = json.loads(part.read_text())
            part.unlink()
        print(f"[run] {f}: {status[f]}", flush=True)
    meta["nvidia_smi_after"] = _nvidia_smi()
    meta["family_status"] = status
    dev = next((r.pop("device") for r in results.values() if "device" in r), {})
    for r in results.values():
        r.pop("device", None)
    meta["device"] = dev
    meta["effective_sm_clock"] = effective_clock(results)
    quantities = {}
    for f, r in results.items():
        for k, v in r.pop("quantities", {}).items():
            quantities[k] = {**v, "family": f}
    doc = {"meta": meta, "quantities": quantities, "results": results}
    from .report import gpu_short_name, markdown
    out_name = f"{gpu_short_name(dev.get('name')).lower()}_microbench_{a.suite}"     # h200_microbench_v2, ...
    (out / f"{out_name}.json").write_text(json.dumps(doc, indent=1, default=_jsonable))
    (out / f"{out_name}.md").write_text(markdown(doc))
    print(f"[run] wrote {out / out_name}.json with {len(quantities)} quantities in {time.time() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
