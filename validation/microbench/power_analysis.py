"""What the clock-control measurements (:mod:`.power`) mean: per-launch summaries, clock series from the
in-kernel traces, fall and recovery times, the named quantities and the Markdown report. CPU only."""

from __future__ import annotations

import statistics

from .common import qv

# The per-batch work of cuda/power.cu (one warpgroup; two compute warpgroups per CTA).
TC_FLOPS_PER_BATCH = 4 * 2 * 64 * 128 * 16
SMEM_BYTES_PER_BATCH = 128 * 16 * 16
FMA_PER_BATCH = 128 * 4 * 64
COMPUTE_WARPGROUPS = 2
#: The H200's dense 16-bit tensor rate per SM and cycle (datasheet; ArchSpec.h200 mma_flops_per_clk_per_sm).
TC_FLOPS_PER_CLK_PER_SM = 4096


def trace_rows(tr) -> list[tuple[int, int]]:
    """(clock64, %globaltimer) pairs of one traced block, up to the end marker (-1) or the first zero."""
    if hasattr(tr, "shape"):    # a numpy (capacity, 2) array: cut at the first non-positive clock
        import numpy as np
        bad = np.nonzero(tr[:, 0] <= 0)[0]
        tr = tr[: bad[0] if bad.size else len(tr)]
        return [(int(c), int(g)) for c, g in tr.tolist()]
    out = []
    for c, g in tr:
        if c <= 0:
            break
        out.append((int(c), int(g)))
    return out


def clock_series(rows: list[tuple[int, int]], edges_ms: list[float]) -> dict:
    """The in-kernel clock in bins of the trace's own time (ms from its first sample): for each bin
    [edges[i], edges[i+1]) the cycles over the ns between the first and last sample in it."""
    if len(rows) < 2:
        return {"t_ms": [], "mhz": []}
    g0 = rows[0][1]
    t_ms, mhz = [], []
    j = 0
    for lo, hi in zip(edges_ms, edges_ms[1:], strict=False):
        first = None
        last = None
        while j < len(rows) and (rows[j][1] - g0) / 1e6 < hi:
            if (rows[j][1] - g0) / 1e6 >= lo:
                if first is None:
                    first = rows[j]
                last = rows[j]
            j += 1
        if first is not None and last is not None and last[1] > first[1]:
            t_ms.append(round((first[1] + last[1]) / 2e6 - g0 / 1e6, 4))
            mhz.append(round((last[0] - first[0]) / (last[1] - first[1]) * 1e3, 1))
    return {"t_ms": t_ms, "mhz": mhz}


def default_edges(seconds: float) -> list[float]:
    """Bins: 0.1 ms for the first 20 ms, 2 ms to 200 ms, 20 ms after."""
    end = seconds * 1e3 + 1
    e = [x * 0.1 for x in range(0, 200)]
    e += [20 + 2 * x for x in range(0, 90)]
    x = 200.0
    while x <= end + 20:
        e.append(x)
        x += 20.0
    return [v for v in e if v <= end + 20]


def span_clock(rows, t_lo_ms: float, t_hi_ms: float) -> float | None:
    """Mean clock (MHz) between two trace times (ms from the first sample)."""
    if len(rows) < 2:
        return None
    g0 = rows[0][1]
    sel = [r for r in rows if t_lo_ms <= (r[1] - g0) / 1e6 <= t_hi_ms]
    if len(sel) < 2 or sel[-1][1] <= sel[0][1]:
        return None
    return round((sel[-1][0] - sel[0][0]) / (sel[-1][1] - sel[0][1]) * 1e3, 1)


def launch_result(load, summ, traces: list) -> dict:
    """One launch: per-block clock and busy fraction (medians), the rates achieved, and the traces."""
    blocks = []
    for row in summ:
        c0, c1, g0, g1, sm, busy, done, mem = (int(v) for v in row[:8])
        if g1 <= g0 or c1 <= c0:
            continue
        blocks.append({"cycles": c1 - c0, "ns": g1 - g0, "sm": sm, "busy": busy, "done": done, "mem": mem,
                       "g0": g0, "g1": g1})
    out: dict = {"load": load, "blocks": len(blocks), "sms": len({b["sm"] for b in blocks})}
    if not blocks:
        out["error"] = "no block wrote its summary"
        return out
    out["clock_mhz"] = round(statistics.median(b["cycles"] / b["ns"] * 1e3 for b in blocks), 1)
    out["g_start_ns"] = min(b["g0"] for b in blocks)
    out["g_end_ns"] = max(b["g1"] for b in blocks)
    wall_ns = out["g_end_ns"] - out["g_start_ns"]
    out["wall_ms"] = round(wall_ns / 1e6, 3)
    cyc = statistics.median(b["cycles"] for b in blocks)
    done = sum(b["done"] for b in blocks) * COMPUTE_WARPGROUPS
    busy = statistics.median(b["busy"] / b["cycles"] for b in blocks)
    out["compute_busy_fraction"] = round(busy, 4)
    n = len(blocks)
    if load.compute == "tc":
        flops = done * TC_FLOPS_PER_BATCH
        out["tflops"] = round(flops / wall_ns / 1e3, 1)
        out["tc_busy_fraction"] = round(flops / n / cyc / TC_FLOPS_PER_CLK_PER_SM, 4)
        out["smem_bytes_per_clk_per_sm"] = round(done * 4 * (64 + 128) * 32 / n / cyc, 2)   # A + B per k16
    elif load.compute == "smem":
        out["smem_bytes_per_clk_per_sm"] = round(done * SMEM_BYTES_PER_BATCH / n / cyc, 2)
    elif load.compute == "fma":
        out["fma_per_clk_per_sm"] = round(done * FMA_PER_BATCH / n / cyc, 2)
    if load.mem != "none":
        mem = sum(b["mem"] for b in blocks)
        out["mem_gb_per_s"] = round(mem / wall_ns, 1)
        out["mem_bytes_per_clk_per_sm"] = round(mem / n / cyc, 2)
    if traces and traces[0]:
        rows = traces[0]
        dur = (rows[-1][1] - rows[0][1]) / 1e6
        out["trace_samples"] = len(rows)
        out["clock_series"] = clock_series(rows, default_edges(load.seconds))
        out["clock_mhz_first_ms"] = span_clock(rows, 0.0, 1.0)
        out["clock_mhz_first_0p2ms"] = span_clock(rows, 0.0, 0.2)
        settled = [span_clock(t, dur / 2, dur) for t in traces if len(t) > 1]
        settled = [x for x in settled if x]
        out["clock_mhz_settled"] = round(statistics.median(settled), 1) if settled else None
    return out


def brief(res: dict) -> dict:
    """A launch of a sequence, without its series."""
    return {k: v for k, v in res.items() if k not in ("clock_series",)}


def nvml_series(rows, t0: float, t1: float, t_ref: float) -> dict:
    from validation.nvml_sampler import in_window, to_columns
    return to_columns(in_window(rows, t0, t1), t_ref)


def matmul_summary(m: int, n: int, k: int, ms: list[float]) -> dict:
    """TFLOP/s of the whole run and of its second half (median chunk)."""
    if not ms:
        return {"tflops_median": None, "tflops_settled": None}
    half = ms[len(ms) // 2:]
    f = 2.0 * m * n * k
    return {"tflops_median": round(f / statistics.median(ms) / 1e9, 1),
            "tflops_settled": round(f / statistics.median(half) / 1e9, 1),
            "tflops_first_chunk": round(f / ms[0] / 1e9, 1)}


def fall_times(series: dict, fractions=(0.5, 0.9)) -> dict:
    """From a step's clock series: the clock at the start (first 0.3 ms), settled (second half), and
    the time (ms) at which the clock has covered each fraction of the fall for good."""
    t, c = series.get("t_ms", []), series.get("mhz", [])
    if len(c) < 10:
        return {}
    start = statistics.median([x for tt, x in zip(t, c, strict=True) if tt < 0.3] or c[:3])
    end_t = t[-1]
    settled = statistics.median([x for tt, x in zip(t, c, strict=True) if tt >= end_t / 2])
    out = {"start_mhz": round(start, 1), "settled_mhz": round(settled, 1)}
    drop = start - settled
    for fr in fractions:
        level = start - fr * drop
        # the last time the clock was above the level, within the first half (the fall)
        above = [tt for tt, x in zip(t, c, strict=True) if tt < end_t / 2 and (x > level if drop > 0 else x < level)]
        out[f"t{int(fr * 100)}_ms"] = round(above[-1], 3) if above else 0.0
    return out


# ============================================================================ quantities and report
def _settle_items(doc):
    for name, e in (doc.get("results", {}).get("kernels", {}).get("experiments", {})).items():
        if name.startswith(("settle.", "step.", "thermal.")) and "error" not in e and "clock_mhz" in e:
            yield name, e


def power_of(nv: dict) -> float | None:
    """The power reading of a window: the instant field's median, else the energy counter's mean, else
    nvmlDeviceGetPowerUsage's median."""
    if not nv:
        return None
    for key in ("power_instant_w_median", "energy_power_w", "power_w_median"):
        if nv.get(key) is not None:
            return nv[key]
    return None


def effective_clock(doc: dict) -> dict:
    from .run import effective_clock as walk
    return walk(doc.get("results", {}))


def quantities(doc: dict) -> dict:
    """Every named result: value, unit, how it was obtained."""
    q: dict = {}
    k = doc.get("results", {}).get("kernels", {})
    st = k.get("static", {})
    for key, name in (("enforced_power_limit_mw", "power.enforced_limit_w"),
                      ("power_management_default_limit_mw", "power.default_limit_w")):
        if isinstance(st.get(key), (int, float)):
            q[name] = qv(st[key] / 1000.0, "W", f"NVML {key.replace('_mw', '')}")
    if isinstance(st.get("max_sm_clock_mhz"), (int, float)):
        q["clock.nvml_max_sm_mhz"] = qv(st["max_sm_clock_mhz"], "MHz", "nvmlDeviceGetMaxClockInfo(SM)")
    ex = k.get("experiments", {})
    idle = ex.get("idle", {}).get("nvml")
    if idle:
        if power_of(idle) is not None:
            q["idle.power_w"] = qv(power_of(idle), "W", "no kernel running, NVML median")
        if idle.get("sm_mhz_median") is not None:
            q["idle.nvml_sm_mhz"] = qv(idle["sm_mhz_median"], "MHz", "no kernel running, NVML median")
    for name, e in _settle_items(doc):
        nv = e.get("nvml_settled") or {}
        what = f"{name}: second half of the run"
        p = power_of(nv)
        if p is not None:
            q[f"{name}.power_w"] = qv(p, "W", f"{what}, NVML power")
        if nv.get("sm_mhz_median") is not None:
            q[f"{name}.nvml_sm_mhz"] = qv(nv["sm_mhz_median"], "MHz", f"{what}, NVML SM clock")
        clk = e.get("clock_mhz_settled") or e.get("clock_mhz")
        q[f"{name}.clock_mhz"] = qv(clk, "MHz", f"{what}, clock64 / %globaltimer in the kernel")
        for key, unit in (("tc_busy_fraction", "fraction"), ("smem_bytes_per_clk_per_sm", "B/clk/SM"),
                          ("mem_gb_per_s", "GB/s"), ("fma_per_clk_per_sm", "FMA/clk/SM"), ("tflops", "TFLOP/s")):
            if e.get(key) is not None:
                q[f"{name}.{key}"] = qv(e[key], unit, f"{name}: whole run, counted in the kernel")
        if nv.get("temp_c_median") is not None:
            q[f"{name}.temp_c"] = qv(nv["temp_c_median"], "C", f"{what}, NVML GPU temperature")
        if "sw_power_cap" in (nv.get("reasons") or {}):
            q[f"{name}.sw_power_cap_fraction"] = qv(nv["reasons"]["sw_power_cap"], "fraction",
                                                    f"{what}: NVML samples with the SW power cap reason")
    step = ex.get("step.tc", {})
    ft = fall_times(step.get("clock_series", {}))
    for key, v in ft.items():
        unit = "MHz" if key.endswith("mhz") else "ms"
        q[f"step.tc.fall.{key}"] = qv(v, unit, "tc at full duty on 132 SMs after idle: in-kernel clock series")
    for name, e in ex.items():
        if name.startswith("recovery.") and "probe" in e and e["probe"].get("clock_mhz_first_ms"):
            q[f"{name}.probe_first_ms_mhz"] = qv(e["probe"]["clock_mhz_first_ms"], "MHz",
                                                 f"{name}: light tc probe after the heavy kernel, first ms")
            if e["heavy"].get("clock_mhz_settled"):
                q[f"{name}.heavy_settled_mhz"] = qv(e["heavy"]["clock_mhz_settled"], "MHz",
                                                    f"{name}: the heavy kernel, second half")
    for name, e in ex.items():
        if name.startswith("neighbours.") and e.get("repeats"):
            for pos, lab in ((1, "second"), (-1, "last")):
                vals = [r["launches"][pos].get("clock_mhz") for r in e["repeats"] if len(r["launches"]) > 1]
                vals = [v for v in vals if v]
                if vals:
                    q[f"{name}.{lab}_launch_mhz"] = qv(statistics.median(vals), "MHz",
                                                       f"{name}: in-kernel clock of the {lab} launch, median of repeats")
            if "round" in name:
                for lab, duty in (("heavy", 1.0), ("light", 0.2)):
                    vals = [ln.get("clock_mhz") for r in e["repeats"] for ln in r["launches"][1:]
                            if ln.get("load") is not None and _load_duty(ln["load"]) == duty and ln.get("clock_mhz")]
                    if vals:
                        q[f"{name}.{lab}_mhz"] = qv(statistics.median(vals), "MHz",
                                                    f"{name}: median in-kernel clock of its {lab} launches")
    for name, e in ex.items():
        if name.startswith("bursts.") and e.get("repeats"):
            q.update(_burst_quantities(name, e["repeats"]))
    for r in doc.get("results", {}).get("matmul", {}).get("runs", []):
        key = f"matmul.{r['m']}x{r['n']}x{r['k']}.{r['inputs']}"
        if key + ".tflops" in q:
            key += ".again"
        nv = r.get("nvml_settled") or {}
        q[key + ".tflops"] = qv(r.get("tflops_settled"), "TFLOP/s", "torch.matmul fp16, second half, CUDA events")
        if nv.get("sm_mhz_median") is not None:
            q[key + ".nvml_sm_mhz"] = qv(nv["sm_mhz_median"], "MHz", "torch.matmul fp16, second half, NVML")
        if power_of(nv) is not None:
            q[key + ".power_w"] = qv(power_of(nv), "W", "torch.matmul fp16, second half, NVML")
    return q


def _burst_quantities(name: str, repeats: list[dict]) -> dict:
    """A burst experiment's medians over its repeats: the load's launches (odd positions after the idle
    kernel) and the light ones between them (even positions)."""
    q = {}
    for lab, pos in (("load", 1), ("light", 0)):
        launches = [ln for r in repeats for i, ln in enumerate(r["launches"][1:]) if i % 2 == 1 - pos]
        for key, unit in (("clock_mhz", "MHz"), ("tc_busy_fraction", "fraction"), ("mem_gb_per_s", "GB/s")):
            vals = [ln[key] for ln in launches if ln.get(key) is not None]
            if vals and (lab == "load" or key == "clock_mhz"):
                q[f"{name}.{lab}_{key}"] = qv(statistics.median(vals), unit,
                                              f"{name}: median over the {lab} launches of its short rounds")
    nv = [r["nvml"].get("sm_mhz_median") for r in repeats if r.get("nvml", {}).get("sm_mhz_median") is not None]
    if nv:
        q[f"{name}.nvml_sm_mhz"] = qv(statistics.median(nv), "MHz", f"{name}: NVML SM clock over its rounds, median")
    return q


def _load_duty(load) -> float:
    return load["duty"] if isinstance(load, dict) else load.duty


def _f(v, nd=1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def markdown(doc: dict) -> str:
    m = doc.get("meta", {})
    smi = m.get("nvidia_smi_before", {})
    q = doc.get("quantities", {})
    eff = m.get("effective_sm_clock", {})
    lines = ["# H200 clock control (issue 16)", "",
             f"`{m.get('command')}`, {m.get('date_utc')}; {smi.get('name')}, driver {smi.get('driver_version')}; "
             f"versions {m.get('versions')}; effective SM clock (median over launches, in-kernel): "
             f"{eff.get('median_mhz_over_launches')} MHz (range {eff.get('min_mhz')}-{eff.get('max_mhz')}, "
             f"{eff.get('launches')} launches). Written by the command; every number below is in {m.get('out_name', 'h200_power')}.json.", ""]
    st = doc.get("results", {}).get("kernels", {}).get("static", {})
    if st:
        lines += ["## Limits (NVML, read only)", "", "| query | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in st.items()] + [""]
    ex = doc.get("results", {}).get("kernels", {}).get("experiments", {})
    rows = []
    for name, e in _settle_items(doc):
        nv = e.get("nvml_settled") or {}
        act = "; ".join(f"{k} {e[k]}" for k in ("tc_busy_fraction", "smem_bytes_per_clk_per_sm", "fma_per_clk_per_sm",
                                                   "mem_gb_per_s") if e.get(k) is not None)
        rows.append(f"| {name} | {e.get('sms')} | {_f(e.get('compute_busy_fraction'), 3)} | {act} | {_f(power_of(nv))} | "
                    f"{_f(nv.get('sm_mhz_median'), 0)} | {_f(e.get('clock_mhz_settled') or e.get('clock_mhz'), 0)} | "
                    f"{_f(nv.get('temp_c_median'), 0)} | {', '.join(f'{k} {v}' for k, v in (nv.get('reasons') or {}).items())} |")
    if rows:
        lines += ["## Settled points (second half of each run)", "",
                  "| run | SMs | busy | activity | power W | NVML MHz | in-kernel MHz | temp C | clock-event reasons (fraction of samples) |",
                  "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |"] + rows + [""]
    fall = {k: v["value"] for k, v in q.items() if k.startswith("step.tc.fall.")}
    if fall:
        lines += ["## Step: tc at full duty on 132 SMs after idle", "",
                  ", ".join(f"{k.split('.')[-1]} {v}" for k, v in fall.items()), ""]
    rec = [(k, v["value"]) for k, v in q.items() if k.startswith("recovery.")]
    if rec:
        lines += ["## Recovery: light probe after a heavy kernel", "", "| quantity | MHz |", "| --- | ---: |"]
        lines += [f"| {k} | {v} |" for k, v in rec] + [""]
    nb = [(k, v["value"]) for k, v in q.items() if k.startswith("neighbours.")]
    if nb:
        lines += ["## Neighbours", "", "| quantity | MHz |", "| --- | ---: |"] + [f"| {k} | {v} |" for k, v in nb] + [""]
    bursts = sorted({k.rsplit(".", 1)[0] for k in q if k.startswith("bursts.")})
    if bursts:
        lines += ["## Short rounds: one load alternating with tc@0.2 (the fast limiter)", "",
                  "| load | tensor busy | memory GB/s | in-kernel MHz | light launches MHz | NVML MHz |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for b in bursts:
            def g(key, nd=0, b=b):
                v = q.get(f"{b}.{key}")
                return _f(v["value"], nd) if v else "-"
            lines.append(f"| {b.split('.', 1)[1]} | {g('load_tc_busy_fraction', 3)} | {g('load_mem_gb_per_s')} | "
                         f"{g('load_clock_mhz')} | {g('light_clock_mhz')} | {g('nvml_sm_mhz')} |")
        lines.append("")
    mm = doc.get("results", {}).get("matmul", {}).get("runs", [])
    if mm:
        lines += ["## torch.matmul fp16: input data", "",
                  "| problem | inputs | TFLOP/s (2nd half) | first chunk | NVML MHz | power W |", "| --- | --- | ---: | ---: | ---: | ---: |"]
        for r in mm:
            nv = r.get("nvml_settled") or {}
            lines.append(f"| {r['m']}x{r['n']}x{r['k']} | {r['inputs']} | {_f(r.get('tflops_settled'))} | "
                         f"{_f(r.get('tflops_first_chunk'))} | {_f(nv.get('sm_mhz_median'), 0)} | {_f(power_of(nv))} |")
        lines.append("")
    skipped = doc.get("results", {}).get("kernels", {}).get("skipped", []) + \
        doc.get("results", {}).get("matmul", {}).get("skipped", [])
    errs = [f"{n}: {e['error']}" for n, e in ex.items() if "error" in e]
    if skipped or errs:
        lines += ["## Not measured", ""] + [f"- {x}" for x in skipped + errs] + [""]
    lines += [f"Sections: {m.get('section_status')}", ""]
    return "\n".join(lines)
