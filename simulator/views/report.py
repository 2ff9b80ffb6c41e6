"""Human-readable summary of a :class:`~simulator.engine.SimResult`."""

from __future__ import annotations

from simulator.kernels.scheduler import raster_for
from simulator.machine.clocks import clock_label
from simulator.machine.constants import KIND_LABELS


def _gb(n: float) -> str:
    return f"{n / 1e9:.3f} GB"


def describe_config(cfg) -> list[str]:
    lines = [f"problem    M={cfg.m} N={cfg.n} K={cfg.k} L={cfg.l}   {cfg.dtype_ab} x {cfg.dtype_ab} -> "
             f"{cfg.dtype_acc} accumulate -> {cfg.dtype_d}" + (f" (+ C {cfg.dtype_c})" if cfg.read_c else "")]
    if hasattr(cfg, "accumulator_stages"):
        mode = "2-SM" if cfg.use_2sm else "1-SM"
        lines.append(f"MMA        {cfg.mma_tile_m}x{cfg.mma_tile_n}x{cfg.tile_k} ({mode}, CTA tile "
                     f"{cfg.cta_tile_m}x{cfg.cta_tile_n}), cluster {cfg.cluster_m}x{cfg.cluster_n}")
        lines.append(f"stages     mainloop {cfg.mainloop_stages}, accumulator {cfg.accumulator_stages}"
                     f"{' (overlapping)' if cfg.overlapping_accum else ''}, scheduler {cfg.scheduler_stages}, "
                     f"epilogue store {cfg.epilogue_store_stages}"
                     + (f" / load {cfg.epilogue_load_stages}" if cfg.read_c else ""))
    else:
        lines.append(f"tile       {cfg.tile_m}x{cfg.tile_n}x{cfg.tile_k}, {cfg.schedule}, cluster "
                     f"{cfg.cluster_m}x{cfg.cluster_n}")
        lines.append(f"stages     mainloop {cfg.mainloop_stages}, epilogue store {cfg.epilogue_store_stages}"
                     + (f" / load {cfg.epilogue_load_stages}" if cfg.read_c else ""))
    em, en = cfg.epi_tile
    lines.append(f"epilogue   {em}x{en} subtiles, {cfg.epi_subtiles} per tile")
    lines.append(f"scheduler  {cfg.tile_scheduler}, raster {raster_for(cfg)} (asked: {cfg.raster}), "
                 f"swizzle {cfg.swizzle}; {cfg.num_output_tiles} output tiles, {cfg.k_tiles} K-blocks each")
    if getattr(cfg, "decomposition", "data_parallel") != "data_parallel":
        lines.append(f"stream-K   decomposition {cfg.decomposition}, splits {cfg.splits}, reduction {cfg.reduction}"
                     + (f", scheduler SMs {cfg.scheduler_sm_count}" if cfg.scheduler_sm_count is not None else ""))
    return lines


def _other_clock(arch) -> str:
    """The other documented clock choice, so that a reader sees both."""
    from simulator.machine.clocks import SUSTAINED_CLOCKS
    sus = SUSTAINED_CLOCKS.get(arch.name)
    if sus is None or abs(sus.value - arch.clock_ghz.value) < 1e-9:
        return ""
    return f"; --clock sustained: {sus.value:g} GHz (scales the time by {arch.clock_ghz.value / sus.value:.2f})"


def late_start_text(late: dict) -> str:
    """``SimResult.meta["late_start"]`` in words (``simulate(late_start=...)``)."""
    a, b = late["sm_range"]
    text = (f"the last {late['sms']} SM(s) free {late['delay_ns'] / 1e3:.2f} us after launch (late_start): "
            f"{late['clusters']} cluster(s) on SMs {a}-{b - 1} start then")
    if late.get("launched") is not None:
        text += f"; CLC launched {late['launched']} of those clusters, with the grid's next clusters"
    return text


def format_result(res) -> str:
    cfg, arch = res.config, res.arch
    kernel = "SM100 TMA warp-specialized GEMM (seed)" if arch.sm_version == 100 else \
        f"SM90 TMA warp-specialized {getattr(cfg, 'schedule', '')} GEMM"
    out = [f"wsim: {kernel} on {arch.name}, simulated", ""]
    out += describe_config(cfg)
    if res.knobs and not res.knobs.is_default:
        out.append("knobs      " + "; ".join(res.knobs.describe()))
    late = res.meta.get("late_start")
    if late:
        out.append(f"late SMs   {late_start_text(late)}")
    out.append("")
    if res.deadlock is not None:
        out.append(res.deadlock.summary())
        out.append("")
    if res.violation_count:
        out.append(f"PROTOCOL VIOLATIONS: {res.violation_count} arrival(s) landed in the wrong barrier phase, e.g.")
        out += [f"  {v}" for v in res.violations[:4]]
        out.append("")
    if res.race_count:
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(res.race_kinds.items()))
        out.append(f"RACES: {res.race_count} unordered access(es) to pipelined buffers ({kinds}), e.g.")
        out += [f"  {r}" for r in res.races[:4]]
        out.append("")
    clk = arch.clock_ghz.value
    once, twice = res.tile_check()
    if res.deadlock is not None:
        out.append("(the kernel never finishes: the numbers below cover it up to the deadlock, not a prediction)")
    label = "predicted time" if res.deadlock is None else "until deadlock"
    out.append(f"{label:<19}{res.time_ns / 1e3:10.2f} us   ({res.cycles:,.0f} cycles at {clk:.3f} GHz"
               f" + {res.launch_overhead_ns / 1e3:.1f} us launch overhead)")
    out.append(f"clock              {clock_label(arch)}" + _other_clock(arch))
    if res.clock_prediction:
        p = res.clock_prediction
        terms = ", ".join(f"{k} {v:.0f}" for k, v in p["breakdown"].items())
        out.append(f"power              {p['power_w']:.0f} W ({terms}); the clock is held by the {p['limited_by']} "
                   f"(the {p['model']} power model, clocks simulated: "
                   f"{', '.join(f'{c:.3f}' for c in p['clocks_simulated'])} GHz; constants below)")
    if res.deadlock is None:
        out.append(f"throughput         {res.tflops:10.1f} TFLOP/s = {100 * res.peak_fraction:.1f}% of the tensor-core "
                   f"peak ({res.peak_tflops:.0f} TFLOP/s at {clk:.3f} GHz)")
    else:
        out.append("throughput                n/a   (the GEMM does not finish)")
    out.append(f"tensor cores busy  {100 * res.tensor_core_utilization:10.1f} % of the CTA makespan")
    out.append(f"HBM traffic        read {_gb(res.hbm_read_bytes)}, write {_gb(res.hbm_write_bytes)}; "
               f"compulsory {_gb(res.compulsory_bytes)} (x{res.hbm_bytes / max(1, res.compulsory_bytes):.2f}); "
               f"L2 hit rate {100 * res.l2_hit_rate:.1f}%")
    if res.decomposition:
        out.append(f"decomposition      {res.decomposition}")
        out.append(f"workspace          partials written {res.workspace_write_bytes / 1e6:.3f} MB, read "
                   f"{res.workspace_read_bytes / 1e6:.3f} MB (L2 atomics read what they add to)")
    unit = "output tile-halves (2-SM)" if getattr(cfg, "use_2sm", False) and arch.sm_version == 100 else "output tiles"
    out.append(f"work               {once} {unit} computed once of {res.tiles_expected} expected"
               + (f", {twice} MORE THAN ONCE" if twice else "")
               + (f"; {res.clc_queries} CLC queries" if arch.sm_version == 100 else ""))
    out.append("")
    out.append(f"{'role':<14}{'CTAs':>6}{'active':>9}{'busy':>8}   waiting on (fraction of kernel time)")
    for r in res.role_times:
        waits = ", ".join(f"{b} {100 * f:.1f}%" for b, f in sorted(r.wait_fraction.items(), key=lambda x: -x[1])
                          if f >= 0.0005) or "-"
        out.append(f"{r.role:<14}{r.ctas:>6}{100 * r.active_fraction:>8.1f}%{100 * r.busy_fraction:>7.1f}%   {waits}")
    out.append("  (active: role lifetime; busy: active minus barrier waits)")
    if arch.sm_version == 100:
        out.append("  (the MMA warp issues asynchronously: its 'waiting' includes the time the tensor cores work")
        out.append("   through earlier K-blocks)")
    else:
        out.append("  (mma.wait_group: a consumer waiting for its previous wgmma batch, i.e. for the tensor core)")
    out.append("")
    out.append("model notes")
    out += [f"  {n}" for n in res.timing_notes]
    out.append("")
    out.append("constants used")
    width = max(len(c.name) for c in res.constants)
    for c in res.constants:
        out.append(f"  {c.name:<{width}}  {c.value:>12g} {c.unit:<10} [{c.label}] {c.source}")
    if res.clock_prediction:
        out += ["", f"power model constants ({res.clock_prediction['model']}; --clock predicted)"]
        pcs = res.clock_prediction["constants"]
        pw = max(len(c["name"]) for c in pcs)
        out += [f"  {c['name']:<{pw}}  {c['value']:>12g} {c['unit']:<10} [{KIND_LABELS.get(c['kind'], c['kind'])}] {c['source']}"
                for c in pcs]
    out.append("")
    out.append(f"simulated {res.events or 'n/a'} events in {res.wall_s:.2f} s wall ({res.engine} engine"
               + (f"; {res.engine_note}" if res.engine_note else "") + ")")
    return "\n".join(out)


def format_side_by_side(results: dict) -> str:
    """A few finished runs (label -> :class:`~simulator.engine.SimResult`, e.g. one problem on B200 and
    on H200) as one table: time, clock (and the power a predicted clock settled at), throughput,
    tensor-core use, memory, bottleneck word; then each run's config and the bottleneck's numbers."""
    from dataclasses import asdict

    from simulator.engine.bottleneck import classify
    from simulator.engine.tune import describe_config as one_line

    def row(name: str, f) -> str:
        return f"{name:<20}" + "".join(f"{f(r):>{w}}" for r, w in zip(results.values(), widths, strict=True))

    widths = [max(26, len(k) + 2) for k in results]
    lines = [f"{'':<20}" + "".join(f"{k:>{w}}" for k, w in zip(results, widths, strict=True))]
    lines += [
        row("arch", lambda r: f"{r.arch.name} (sm_{r.arch.sm_version}), {r.arch.sm_count.value:g} SMs"),
        row("predicted time", lambda r: f"{r.time_ns / 1e3:.2f} us" if r.deadlock is None else "deadlock"),
        row("clock", lambda r: f"{r.arch.clock_ghz.value:.3f} GHz"),
        *([row("predicted power", lambda r: (f"{r.clock_prediction['power_w']:.0f} W, {r.clock_prediction['limited_by']}"
                                              if r.clock_prediction else "-"))]
          if any(r.clock_prediction for r in results.values()) else []),
        row("throughput", lambda r: f"{r.tflops:.1f} TFLOP/s"),
        row("of the peak", lambda r: f"{100 * r.peak_fraction:.1f}% of {r.peak_tflops:.0f}"),
        row("tensor cores busy", lambda r: f"{100 * r.tensor_core_utilization:.1f}%"),
        row("HBM read+write", lambda r: f"{_gb(r.hbm_bytes)} (x{r.hbm_bytes / max(1, r.compulsory_bytes):.2f})"),
        row("L2 hit rate", lambda r: f"{100 * r.l2_hit_rate:.1f}%"),
        row("bottleneck", lambda r: classify(r).name if r.deadlock is None else "-"),
    ]
    configs = [f"  {k}: {one_line(asdict(r.config))}" for k, r in results.items()]
    details = [f"  {k}: {classify(r).detail}" for k, r in results.items() if r.deadlock is None]
    return "\n".join(lines + ["", "configs:"] + configs + ["", "bottleneck numbers:"] + details)
