"""The twin GEMM's own power and clock (issue 16): the constants the power model takes from the wgmma
load generator (validation/microbench/power.py), checked on the GEMM itself.

    python -m validation.microbench.gemm_power --out OUT        # on the GPU machine (CuTe DSL installed)
    python -m validation.microbench.gemm_power --compare FILE   # CPU: the power model at the same clocks

Each case (a problem and a campaign config) runs on random-normal inputs (the campaign's) and on zeros:
``settled``, back to back for :data:`SETTLED_S` (NVML power and SM clock over the second half, the
in-kernel clock of the last launch); ``rounds``, :data:`ROUNDS` short rounds like the campaign's
(:data:`ROUND_IDLE_S` of host idle, a 3 ms sleep kernel, then ~:data:`ROUND_MS` of launches; the last
launch's in-kernel clock). ``--compare`` simulates each case at its measured clocks and prints the
model's power there beside NVML's, and the clock the model's fast limit gives a short round.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from .power_analysis import power_of

OUT_NAME = "h200_gemm_power"
#: (dtype, m, n, k, config, split): problems and configs of the committed campaign, kernels of >= 25 us
#: (the host's launch path, ~10 us a call, keeps the GPU fed). The held-out cases are for the final
#: check of a power model chosen without them: ``--compare`` leaves them out unless asked.
CASES = (("fp16", 2048, 2048, 2048, "128x128x64_c2x1_rm_sw1_e32_trace-span", "dev"),
         ("fp16", 2048, 2048, 2048, "128x64x64_c1x1_rm_sw1_e32_trace-span", "dev"),
         ("fp16", 2048, 2048, 2048, "128x256x64_c2x1_rm_sw4_e32_trace-span", "dev"),
         ("fp16", 4096, 4096, 4096, "128x256x64_c2x1_rm_sw4_e32_trace-span", "dev"),
         ("fp16", 4096, 4096, 4096, "128x64x64_pp_c1x1_rm_sw1_e32_trace-span", "dev"),
         ("fp16", 8192, 8192, 512, "128x256x64_c2x1_rm_sw4_e32_trace-span", "dev"),
         ("fp16", 8192, 8192, 8192, "128x256x64_c2x1_rm_sw4_e32_trace-span", "dev"),
         ("fp16", 16384, 16384, 1024, "128x256x64_c2x1_rm_sw4_e32_trace-span", "dev"),
         ("fp16", 1024, 16384, 8192, "128x128x64_c1x2_rn_sw4_e32_trace-span", "dev"),
         ("fp16", 8192, 8192, 8192, "128x64x64_c2x2_rm_sw1_e32_trace-span", "dev"),
         ("fp16", 4096, 4096, 4096, "128x192x64_c2x1_rm_sw4_e32_trace-span", "dev"),
         ("bf16", 4096, 4096, 4096, "128x256x64_c2x1_rm_sw4_e32_trace-span", "dev"),
         ("fp16", 6144, 12288, 3000, "128x256x64_c2x1_rm_sw4_e32_trace-span", "dev"),
         ("fp16", 8192, 8192, 8192, "128x128x64_pp_c2x1_rm_sw4_e32_trace-span", "held_out"),
         ("fp16", 2048, 2048, 16384, "128x128x64_c2x2_rn_sw1_e32_trace-span", "held_out"),
         ("fp16", 5000, 3000, 4104, "128x192x64_c1x1_rn_sw4_e32_trace-span", "held_out"),
         ("fp16", 3000, 5000, 1000, "128x64x64_pp_c1x2_rm_sw4_e32_trace-span", "held_out"),
         ("bf16", 8192, 8192, 512, "128x128x64_c1x1_rn_sw1_e32_trace-span", "held_out"))
#: One problem (4096^3 fp16), the campaign's tile shapes and clusters: the per-config part of the power,
#: with the problem held fixed (every fourth case held out).
_TILES = ("128x64x64_c1x1_rm_sw1", "128x64x64_c2x2_rm_sw1", "128x64x64_pp_c2x1_rm_sw4", "128x128x64_c1x1_rm_sw4",
          "128x128x64_c2x2_rn_sw4", "128x128x64_pp_c1x1_rm_sw1", "128x128x64_pp_c1x2_rm_sw4", "128x192x64_c1x1_rm_sw1",
          "128x192x64_c2x1_rn_sw1", "128x256x64_c1x1_rm_sw4", "128x256x64_c2x2_rm_sw4", "128x256x64_c1x2_rn_sw1")
TILE_CASES = tuple(("fp16", 4096, 4096, 4096, f"{t}_e32_trace-span", "held_out" if i % 4 == 3 else "dev")
                   for i, t in enumerate(_TILES))
#: Case sets by name, and the results file each writes.
CASE_SETS = {"mixed": CASES, "tiles": TILE_CASES}
OUT_NAMES = {"mixed": OUT_NAME, "tiles": "h200_gemm_power_tiles"}
SETTLED_S = 1.2
ROUNDS = 8
ROUND_IDLE_S = 0.02
ROUND_MS = 1.5
INPUTS = ("randn", "zeros")


# ============================================================================== GPU side
def _inputs(m, n, k, dtype, kind):
    import torch
    if kind == "randn":
        from validation.collect import _inputs as randn
        return randn(m, n, k, dtype, seed=1)
    td = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    return torch.zeros(m, k, device="cuda", dtype=td), torch.zeros(n, k, device="cuda", dtype=td)


def _clock(runner) -> dict:
    from validation.timing import span_and_clock
    m, n, k = runner.problem
    return span_and_clock(runner.trace_buffer(0), runner.cap, runner.grid_ctas(m, n, k))


def _settled(runner, sampler) -> dict:
    import torch
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    launches = 0
    while time.perf_counter() - t0 < SETTLED_S:
        for _ in range(32):
            runner.launch()
        launches += 32
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    nv = sampler.window(t0 + 0.5 * (t1 - t0), t1)
    return {"launches": launches, "seconds": round(t1 - t0, 3), "us_per_launch": round((t1 - t0) * 1e6 / launches, 2),
            "nvml": nv, "last_launch": _clock(runner)}


def _rounds(runner, us_per_launch: float) -> dict:
    import torch

    from validation.timing import sleep_cycles
    n = max(1, round(ROUND_MS * 1e3 / max(us_per_launch, 1.0)))
    clocks = []
    for _ in range(ROUNDS):
        torch.cuda.synchronize()
        time.sleep(ROUND_IDLE_S)
        torch.cuda._sleep(sleep_cycles(3.0))
        for _ in range(n):
            runner.launch()
        torch.cuda.synchronize()
        clocks.append(_clock(runner)["clock_ghz"])
    ok = [c for c in clocks if c]
    return {"launches_per_round": n, "clock_ghz": clocks, "median_clock_ghz": statistics.median(ok) if ok else None}


def twin_config(name: str):
    """The campaign's twin config of that name (with its instrumentation level)."""
    from validation.measurements import twin_config as named
    cfg = named(name)
    if cfg is None:
        raise ValueError(f"config {name!r}: not a campaign config name")
    return cfg


def run_gpu(out: Path, log=print, case_set: str = "mixed") -> dict:
    import torch

    from hw_kernels.host import Runner, compile_sm90
    from validation.nvml_sampler import NvmlSampler
    res: dict = {"cases": [], "settled_s": SETTLED_S, "rounds": ROUNDS, "round_idle_s": ROUND_IDLE_S,
                 "round_ms": ROUND_MS}
    with NvmlSampler(period_s=0.005) as s:
        for dtype, m, n, k, name, split in CASE_SETS[case_set]:
            cfg = twin_config(name)
            t0 = time.time()
            compiled = compile_sm90(cfg.compile_key(), dtype)
            case = {"dtype": dtype, "m": m, "n": n, "k": k, "config": name, "split": split,
                    "compile_s": round(time.time() - t0, 1)}
            for kind in INPUTS:
                a, b = _inputs(m, n, k, dtype, kind)
                c = torch.empty(m, n, device="cuda", dtype=a.dtype)
                r = Runner(compiled, config=cfg).prepare(a, b, c, slots=1)
                r.launch()
                settled = _settled(r, s)
                case[kind] = {"settled": settled, "rounds": _rounds(r, settled["us_per_launch"])}
                log(f"[gemm_power] {m}x{n}x{k} {name} {kind}: settled {settled['nvml'].get('power_w_median')} W, "
                    f"NVML {settled['nvml'].get('sm_mhz_median')} MHz, in-kernel "
                    f"{settled['last_launch'].get('clock_ghz')}; rounds {case[kind]['rounds']['median_clock_ghz']}")
                del a, b, c, r
                torch.cuda.empty_cache()
            res["cases"].append(case)
            (out / f"{OUT_NAMES[case_set]}.json").write_text(json.dumps(res, indent=1))
    return res


# ============================================================================== CPU side
def sim_config(case: dict):
    """The simulator's config of a case (the campaign's mapping of a twin config)."""
    from validation.compare import sim_config_from_measured
    fields = twin_config(case["config"]).asdict()
    fields.pop("instrument_roles", None)
    return sim_config_from_measured({"config": fields, "dtype": case["dtype"],
                                     "problem": {"m": case["m"], "n": case["n"], "k": case["k"], "l": 1}})


def compare(res: dict, held_out: bool = False) -> list[dict]:
    """Per case and input: the model's power at the measured settled clock beside NVML's, and the clocks
    the model gives the settled run (power limit) and a short round (fast limit), each simulated. The
    held-out cases only with ``held_out``."""
    from simulator.engine.power_clock import activity_of
    from simulator.engine.run import simulate
    from simulator.machine.arch import ArchSpec
    from simulator.machine.power import Activity, h200_power
    model = h200_power()
    out = []
    for case in res["cases"]:
        if case.get("split", "dev") != "dev" and not held_out:
            continue
        cfg = sim_config(case)
        for kind in INPUTS:
            d = case.get(kind)
            f = (d or {}).get("settled", {}).get("last_launch", {}).get("clock_ghz")
            if not f:
                continue
            sim = simulate(cfg, ArchSpec.h200().with_overrides({"clock_ghz": round(f, 4)}, origin="measured"))
            act = activity_of(sim)

            def at(g, act=act, f0=sim.arch.clock_ghz.value):   # the same cycles at any clock
                return Activity(act.sms, act.tc_busy, act.l2_bytes_per_s * g / f0, act.dram_bytes_per_s * g / f0)
            nv = d["settled"]["nvml"]
            p_meas = power_of(nv)
            p_model = model.power_w(f, act)
            base = model.base_w.value
            out.append({"case": f"{case['dtype']} {case['m']}x{case['n']}x{case['k']} {case['config'].split('_trace-')[0]}",
                        "split": case.get("split", "dev"),
                        "inputs": kind, "settled_clock_ghz": f, "nvml_sm_mhz": nv.get("sm_mhz_median"),
                        "nvml_power_w": p_meas, "model_power_w": p_model, "model_breakdown": model.breakdown(f, act),
                        "dynamic_ratio": (p_meas - base) / (p_model - base) if p_meas and p_model > base else None,
                        "model_settled_clock_ghz": model.steady_clock(at)[0],
                        "round_clock_ghz": d["rounds"]["median_clock_ghz"],
                        "model_round_clock_ghz": model.transient_clock(at)})
    return out


def effective_clock(res: dict) -> dict:
    """The in-kernel SM clocks this file measured (each settled run's last launch and every round's):
    median, range and count, in GHz."""
    clocks = [c for case in res["cases"] for kind in INPUTS if case.get(kind)
              for c in [case[kind]["settled"]["last_launch"].get("clock_ghz"), *case[kind]["rounds"]["clock_ghz"]]
              if c]
    if not clocks:
        return {"launches": 0}
    return {"median_ghz": round(statistics.median(clocks), 4), "min_ghz": round(min(clocks), 4),
            "max_ghz": round(max(clocks), 4), "launches": len(clocks)}


def markdown(res: dict, cmp: list[dict] | None) -> str:
    m = res.get("meta", {})
    eff = effective_clock(res)
    L = ["# The twin GEMM's own power and clock (issue 16)", "",
         f"`{m.get('command')}`, {m.get('date_utc')}; {m.get('device')}, driver {m.get('driver')}, CuTe DSL "
         f"{m.get('dsl')}; settled: {res['settled_s']:g} s back to back (NVML over the second half, in-kernel clock "
         f"of the last launch); rounds: {res['rounds']} x ({res['round_idle_s'] * 1e3:g} ms host idle, 3 ms sleep, "
         f"~{res['round_ms']:g} ms of launches; the last launch's clock). Effective SM clock (in-kernel, over the "
         f"{eff['launches']} launches read): median {eff.get('median_ghz')} GHz, {eff.get('min_ghz')}-{eff.get('max_ghz')}. "
         "Written by the command.", "",
         "| case | split | inputs | settled: power W | NVML MHz | in-kernel GHz | us/launch | rounds: in-kernel GHz |",
         "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for c in res["cases"]:
        for kind in INPUTS:
            d = c.get(kind)
            if not d:
                continue
            s, nv = d["settled"], d["settled"]["nvml"]
            L.append(f"| {c['dtype']} {c['m']}x{c['n']}x{c['k']} {c['config'].split('_trace-')[0]} | {c.get('split', 'dev')} | {kind} | "
                     f"{_f(power_of(nv), 0)} | {_f(nv.get('sm_mhz_median'), 0)} | "
                     f"{_f(s['last_launch'].get('clock_ghz'), 3)} | {s['us_per_launch']:.1f} | "
                     f"{_f(d['rounds']['median_clock_ghz'], 3)} |")
    if cmp:
        L += ["", f"The shipped power model at the same clocks ({cmp[0].get('command', '')}): its power at the measured settled "
              "clock (each case simulated there) beside NVML's; dynamic ratio = (NVML - base) / (model - base); the "
              "clock it predicts for the settled run (power limit) and for a short round (fast limit):", "",
              "| case | split | inputs | NVML W | model W | dynamic ratio | settled GHz: measured / model | round GHz: measured / model |",
              "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in cmp:
            L.append(f"| {r['case']} | {r['split']} | {r['inputs']} | {_f(r['nvml_power_w'], 0)} | {r['model_power_w']:.0f} | "
                     f"{_f(r['dynamic_ratio'], 2)} | {r['settled_clock_ghz']:.3f} / {r['model_settled_clock_ghz']:.3f} | "
                     f"{_f(r['round_clock_ghz'], 3)} / {r['model_round_clock_ghz']:.3f} |")
        L += ["", "Clock error of the model (model / measured - 1), by split and inputs:", "",
              "| split | inputs | cases | settled: median abs | max abs | mean | round: median abs | max abs | mean | dynamic ratio |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for s in clock_errors(cmp):
            L.append(f"| {s['split']} | {s['inputs']} | {s['cases']} | " + " | ".join(
                f"{s[k]:.2%}" for k in ("settled_median", "settled_max", "settled_mean", "round_median",
                                        "round_max", "round_mean")) + f" | {s['dynamic_ratio']} |")
    return "\n".join(L + [""])


def clock_errors(cmp: list[dict]) -> list[dict]:
    """Per (split, inputs) of ``compare``'s rows: the settled and round clock errors (median and max of
    their absolute values, mean signed) and the range of the dynamic ratio."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in cmp:
        groups.setdefault((r["split"], r["inputs"]), []).append(r)
    out = []
    for (split, inputs), rows in sorted(groups.items()):
        st = [r["model_settled_clock_ghz"] / r["settled_clock_ghz"] - 1 for r in rows]
        rd = [r["model_round_clock_ghz"] / r["round_clock_ghz"] - 1 for r in rows if r["round_clock_ghz"]]
        dr = [r["dynamic_ratio"] for r in rows if r["dynamic_ratio"] is not None]
        row = {"split": split, "inputs": inputs, "cases": len(rows),
               "dynamic_ratio": f"{min(dr):.2f}-{max(dr):.2f}" if dr else "-"}
        for name, e in (("settled", st), ("round", rd)):
            a = [abs(x) for x in e] or [float("nan")]
            row.update({f"{name}_median": statistics.median(a), f"{name}_max": max(a),
                        f"{name}_mean": statistics.fmean(e) if e else float("nan")})
        out.append(row)
    return out


def _f(v, nd=1) -> str:
    return "-" if v is None else f"{v:.{nd}f}"


def _meta(cmd: str) -> dict:
    from importlib.metadata import version

    import torch
    meta = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": cmd,
            "device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    try:
        meta["dsl"] = version("nvidia-cutlass-dsl")
    except Exception:  # noqa: BLE001 - unpacked without metadata
        meta["dsl"] = "?"
    try:
        import pynvml
        pynvml.nvmlInit()
        meta["driver"] = pynvml.nvmlSystemGetDriverVersion()
    except Exception as e:  # noqa: BLE001
        meta["driver"] = f"? ({type(e).__name__})"
    return meta


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--out", help="GPU: run every case and write h200_gemm_power.json/.md here")
    g.add_argument("--compare", metavar="FILE", help="CPU: a results file of --out; adds the model's columns to it")
    ap.add_argument("--held-out", action="store_true", help="with --compare: the held-out cases too (the final check)")
    ap.add_argument("--set", default="mixed", choices=sorted(CASE_SETS),
                    help="with --out: mixed (problems and configs; h200_gemm_power.json) or tiles (4096^3, the "
                         "campaign's tiles and clusters; h200_gemm_power_tiles.json)")
    a = ap.parse_args(argv)
    if a.compare:
        path = Path(a.compare)
        try:
            res = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            print(f"--compare {a.compare}: {e}", file=sys.stderr)
            return 2
        cmd = f"python -m validation.microbench.gemm_power --compare {a.compare}" + (" --held-out" if a.held_out else "")
        cmp = compare(res, a.held_out)
        if cmp:
            cmp[0]["command"] = cmd
        res["model"] = cmp
        res["effective_sm_clock"] = effective_clock(res)
        path.write_text(json.dumps(res, indent=1))
        md = markdown(res, cmp)
        path.with_suffix(".md").write_text(md)
        print(md)
        return 0
    from validation.timing import require_cuda_gpu
    require_cuda_gpu("validation.microbench.gemm_power")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cmd = "python -m validation.microbench.gemm_power --out OUT" + ("" if a.set == "mixed" else f" --set {a.set}")
    res = run_gpu(out, log=lambda s: print(s, flush=True), case_set=a.set)
    res["meta"] = {**_meta(cmd), "effective_sm_clock": effective_clock(res)}
    name = OUT_NAMES[a.set]
    (out / f"{name}.json").write_text(json.dumps(res, indent=1))
    (out / f"{name}.md").write_text(markdown(res, None))
    print(markdown(res, None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
