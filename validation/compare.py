"""Validate the SM90 model against a measured run: same config, same clock, same trace format.

The measured trace (``validation/results/measured_*.npz``, written by ``validation.collect`` on the
H200) carries its kernel config, problem, dtype and the effective SM clock of the run (clock64
ticks over %globaltimer ns, read inside the kernel). The comparison

1. builds the ``Sm90GemmConfig`` the hardware kernel ran (``sim_config_from_measured``),
2. simulates it on the H200 spec with ``clock_ghz`` replaced by the run's measured effective clock
   (an input measured in the same run, not a fitted constant: the model counts cycles, the clock
   turns them into the nanoseconds the GPU measured), every other constant as published,
3. compares, metric by metric: the kernel's duration, per-tile durations per role, the MMA K-block
   and epilogue-subtile times, the per-role wait breakdown by barrier, and the tile order each CTA
   processed.

Everything runs on a CPU from the committed files: ``wsim validate`` (or
``python -m validation.compare``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simulator.engine.run import DEFAULT_MAX_EVENTS
from simulator.engine.trace import Trace, TraceFormatError, check_trace_file
from simulator.errors import ConfigError
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.machine.arch import ArchSpec
from simulator.views.breakdown import check_sms, role_breakdown
from simulator.views.plot_cli import use_headless_backend
from simulator.views.run_args import (
    ArgError,
    OneLineParser,
    add_run_arguments,
    check_output_file,
    parse_sm_list,
    run_command,
)

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_GLOB = "measured_*trace-kblock*.npz"


@dataclass
class Metric:
    name: str
    simulated: float
    measured: float
    unit: str
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.simulated / self.measured if self.measured else float("nan")


@dataclass
class Comparison:
    measured_path: str
    config: Sm90GemmConfig
    clock_ghz: float
    metrics: list[Metric] = field(default_factory=list)
    waits: list[tuple[str, str, float, float]] = field(default_factory=list)   # role, barrier, sim, measured
    tile_order_match: tuple[int, int] = (0, 0)                                    # CTAs equal, CTAs compared
    sim_trace: Trace | None = None
    measured_trace: Trace | None = None
    sim_result: object = None

    def to_dict(self) -> dict:
        return {
            "measured": self.measured_path,
            "clock_ghz": self.clock_ghz,
            "config": {k: getattr(self.config, k) for k in self.config.__dataclass_fields__},
            "metrics": [{"name": m.name, "simulated": m.simulated, "measured": m.measured, "unit": m.unit,
                         "ratio": m.ratio, "note": m.note} for m in self.metrics],
            "waits": [{"role": r, "barrier": b, "simulated": s, "measured": m} for r, b, s, m in self.waits],
            "tile_order_match": {"equal": self.tile_order_match[0], "compared": self.tile_order_match[1]},
        }


def default_measured() -> Path:
    found = sorted(RESULTS.glob(DEFAULT_GLOB))
    if not found:
        raise FileNotFoundError(f"no measured trace matching {RESULTS / DEFAULT_GLOB}")
    return found[0]


def load_measured(path: Path) -> Trace:
    """A measured trace: a shared-format ``.npz``, or a raw record dump (``raw_*.npz`` with the
    kernel's buffer and metadata), decoded with :mod:`validation.hw_trace`. Anything else is a
    one-line TraceFormatError."""
    path = Path(path)
    head = check_trace_file(path)
    is_raw = False
    if head.startswith(b"PK"):
        try:
            with np.load(path, allow_pickle=False) as data:
                is_raw = "buf" in data.files
        except Exception as e:  # noqa: BLE001 - untrusted bytes: numpy/zipfile raise many kinds
            raise TraceFormatError(f"{path}: not a trace or raw record file (truncated or corrupt .npz: "
                                   f"{type(e).__name__})") from None
    if not is_raw:
        return Trace.load(path)     # says what is wrong with a file that is not a trace
    from validation.hw_trace import load_raw, to_trace
    try:
        buf, meta = load_raw(path)
        return to_trace(buf, meta)
    except (TraceFormatError, ConfigError):
        raise
    except Exception as e:  # noqa: BLE001 - untrusted bytes
        raise TraceFormatError(f"{path}: not a readable raw record file ({type(e).__name__}: "
                               f"{(str(e).splitlines() or [''])[0]})") from None


def sim_config_from_measured(meta: dict) -> Sm90GemmConfig:
    """The Sm90GemmConfig of the hardware kernel's run (its KernelConfig uses the same field names)."""
    try:
        k = meta["config"]
        p = meta["problem"]
        dtype = meta["dtype"]
    except KeyError as e:
        raise ConfigError(f"measured trace metadata lacks {e}: not written by validation.collect?") from None
    try:
        return _sm90_config(k, p, dtype, meta)
    except ConfigError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ConfigError(f"measured trace metadata: config/problem {type(e).__name__} {e}: not written by "
                          "validation.collect?") from None


def _sm90_config(k: dict, p: dict, dtype: str, meta: dict) -> Sm90GemmConfig:
    from simulator.kernels.space import HW_FIELDS, unknown_hw_fields
    unknown = [f for f in unknown_hw_fields(k) if not (f == "fixup_vec" and k[f] == 1)]   # the model's one-word fixup
    if unknown:
        raise ConfigError(f"measured config fields {unknown} ({', '.join(f'{f}={k[f]!r}' for f in unknown)}): "
                          f"not in the SM90 model's hardware fields ({', '.join(HW_FIELDS)}); it would simulate "
                          "another kernel")
    return Sm90GemmConfig(
        m=int(p["m"]), n=int(p["n"]), k=int(p["k"]), l=int(p.get("l", 1)),
        dtype_ab=dtype, dtype_c=dtype, dtype_d=dtype,
        tile_m=int(k["tile_m"]), tile_n=int(k["tile_n"]), tile_k=int(k["tile_k"]),
        cluster_m=int(k["cluster_m"]), cluster_n=int(k["cluster_n"]), schedule=k["schedule"],
        mainloop_stages=_int_or_none(meta.get("mainloop_stages") or k.get("mainloop_stages")),
        raster=k["raster"], swizzle=int(k["swizzle"]),
        # the hardware kernel's epilogue subtile is tile_m x epilogue_tile_n in both schedules
        epilogue_tile_m=int(k["tile_m"]), epilogue_tile_n=int(k["epilogue_tile_n"]),
        epilogue_store_stages=int(k["epilogue_store_stages"]),
        # the work decomposition (data-parallel unless the run recorded stream-K / split-K)
        **{f: k[f] for f in ("decomposition", "splits", "reduction") if f in k},
    )


def _int_or_none(v) -> int | None:
    return None if v is None else int(v)


def measured_clock(meta: dict) -> float:
    clk = meta.get("effective_clock") or {}
    ghz = clk.get("median_ghz") if isinstance(clk, dict) else None
    if not ghz:
        raise ConfigError("measured trace metadata has no effective_clock.median_ghz")
    if isinstance(ghz, bool) or not isinstance(ghz, (int, float)) or not 0 < ghz < 100:
        raise ConfigError(f"measured trace metadata effective_clock.median_ghz={ghz!r}: expected a clock in GHz")
    return float(ghz)


def _median(trace: Trace, role: str, kind: str) -> float:
    c = trace.columns()
    m = (c["role"] == role) & (c["kind"] == kind)
    if not m.any():
        return float("nan")
    return float(np.median(c["end_ns"][m] - c["start_ns"][m]))


def _tile_sequences(trace: Trace, cluster_size: int, measured: bool) -> dict[tuple[int, int], list]:
    """(cluster, rank) -> the tiles its Consumer0 processed, in order."""
    c = trace.columns()
    m = (c["role"] == "Consumer0") & (c["kind"] == "tile")
    idx = np.where(m)[0]
    idx = idx[np.argsort(c["start_ns"][idx], kind="stable")]
    out: dict[tuple[int, int], list] = {}
    for i in idx:
        if measured:  # the hardware trace's cta column is the CTA's linear index in the grid
            key = (int(c["cta"][i]) // cluster_size, int(c["cta"][i]) % cluster_size)
        else:
            key = (int(c["cluster"][i]), int(c["cta"][i]))
        out.setdefault(key, []).append((int(c["tile_m"][i]), int(c["tile_n"][i])))
    return out


def compare(measured_path: str | Path | None = None, *, arch: ArchSpec | None = None,
            max_events: int | None = DEFAULT_MAX_EVENTS, progress=None) -> Comparison:
    from simulator.engine import simulate

    path = Path(measured_path) if measured_path else default_measured()
    meas = load_measured(path)
    if meas.meta.get("source") != "measured":
        raise TraceFormatError(f"{path}: meta source is {meas.meta.get('source')!r}, not a measured trace")
    cfg = sim_config_from_measured(meas.meta)
    clk = measured_clock(meas.meta)
    base = arch or ArchSpec.h200()
    arch = base.with_overrides({"clock_ghz": clk}, origin=f"effective SM clock measured in this run ({path.name})")
    res = simulate(cfg, arch, trace=True, max_events=max_events, progress=progress)
    sim = res.trace
    cmp = Comparison(str(path), res.config, clk, sim_trace=sim, measured_trace=meas, sim_result=res)
    M = cmp.metrics
    M.append(Metric("kernel span (first to last record)", sim.duration_ns / 1e3, meas.duration_ns / 1e3, "us",
                    "simulated: CTA makespan; measured: globaltimer span of the records"))
    ev = meas.meta.get("kernel_ms_events")
    if ev:
        M.append(Metric("kernel time (CUDA events)", res.time_ns / 1e3, float(ev) * 1e3, "us",
                        f"simulated includes the {res.launch_overhead_ns / 1e3:.2f} us launch overhead (arch constant "
                        "launch_overhead_ns); measured: an instrumented run's event pair, which may include "
                        "the host launch path"))
    for role in ("MainloopLoad", "Consumer0", "Consumer1"):
        M.append(Metric(f"{role} tile duration (median)", _median(sim, role, "tile") / 1e3,
                        _median(meas, role, "tile") / 1e3, "us"))
    M.append(Metric("MMA K-block issue -> complete (median)", _median(sim, "Consumer0", "mma"),
                    _median(meas, "Consumer0", "mma"), "ns",
                    "measured: up to the wait_group that saw it complete (upper bound)"))
    M.append(Metric("epilogue subtile (median)", _median(sim, "Consumer0", "epilogue"),
                    _median(meas, "Consumer0", "epilogue"), "ns"))
    M.append(Metric("TMA load issue -> landed (median)", _median(sim, "MainloopLoad", "tma_load"),
                    _median(meas, "MainloopLoad", "tma_load"), "ns",
                    "measured: up to the first consumer that saw the stage full (upper bound)"))
    bs, bm = role_breakdown(sim), role_breakdown(meas)
    for role in ("MainloopLoad", "Consumer0", "Consumer1"):
        try:
            rs, rm = bs.row(role), bm.row(role)
        except KeyError:
            continue
        for b in sorted(set(rs.waits) | set(rm.waits)):
            cmp.waits.append((role, b, rs.fraction(b), rm.fraction(b)))
        cmp.waits.append((role, "busy", rs.fraction("busy"), rm.fraction("busy")))
    csize = cfg.cluster_m * cfg.cluster_n
    ss, sm = _tile_sequences(sim, csize, False), _tile_sequences(meas, csize, True)
    keys = sorted(set(ss) & set(sm))
    cmp.tile_order_match = (sum(1 for k in keys if ss[k] == sm[k]), len(keys))
    return cmp


def format_comparison(c: Comparison) -> str:
    cfg = c.config
    lines = [f"validation: SM90 model vs measured H200 run ({Path(c.measured_path).name})",
             f"config: {cfg.m}x{cfg.n}x{cfg.k} {cfg.dtype_ab}, tile {cfg.tile_m}x{cfg.tile_n}x{cfg.tile_k} "
             f"{cfg.schedule}, cluster {cfg.cluster_m}x{cfg.cluster_n}, {cfg.mainloop_stages} stages, raster "
             f"{cfg.raster} swizzle {cfg.swizzle}",
             f"clock: the run's measured effective SM clock, {c.clock_ghz:.3f} GHz (clock_ghz override); "
             "all other constants as published", ""]
    lines.append(f"{'metric':<42}{'simulated':>12}{'measured':>12}{'sim/meas':>10}  unit")
    for m in c.metrics:
        lines.append(f"{m.name:<42}{m.simulated:>12.2f}{m.measured:>12.2f}{m.ratio:>10.3f}  {m.unit}"
                     + (f"   ({m.note})" if m.note else ""))
    lines.append("")
    lines.append("time per role (fraction of the role's window; same breakdown code for both traces)")
    lines.append(f"{'role':<14}{'part':<24}{'simulated':>10}{'measured':>10}")
    for role, b, s, m in c.waits:
        if max(s, m) < 0.005:
            continue
        lines.append(f"{role:<14}{b:<24}{100 * s:>9.1f}%{100 * m:>9.1f}%")
    eq, n = c.tile_order_match
    lines.append("")
    lines.append(f"tile order: {eq} of {n} CTAs processed the same tiles in the same order as simulated")
    return "\n".join(lines)


def add_validate_parser(sub):
    """Add ``validate`` to ``wsim``'s sub-parsers and return it."""
    p = sub.add_parser("validate", help="compare the SM90 model with a measured H200 trace (CPU only)")
    add_validate_arguments(p)
    return p


def add_validate_arguments(p) -> None:
    p.add_argument("measured", nargs="?", help=f"measured trace .npz (default: {RESULTS.name}/{DEFAULT_GLOB})")
    p.add_argument("--json", action="store_true", help="print machine-readable results")
    p.add_argument("--plot", metavar="PNG", help="also draw simulated and measured timelines on one time axis "
                                                 "(.png, .svg or .pdf)")
    p.add_argument("--sms", default=None, help="SMs (simulated numbering) for --plot, e.g. 0,1 or 0-3")
    add_run_arguments(p, engine=False)


def run_validate(args) -> int:
    sms = None
    if args.sms is not None:
        if not args.plot:
            raise ConfigError(f"--sms {args.sms}: selects the SMs that --plot draws; give --plot FILE.png too")
        try:
            sms = parse_sm_list(args.sms, "--sms")
        except ArgError as e:
            raise ConfigError(str(e)) from None
    if args.plot:
        check_output_file(args.plot, "--plot", (".png", ".svg", ".pdf"), "plots")
    c = compare(args.measured, max_events=getattr(args, "max_events", DEFAULT_MAX_EVENTS))
    if sms is not None:
        try:
            check_sms(c.sim_trace, sms)
        except ValueError as e:
            raise ConfigError(f"--sms {args.sms}: {e}") from None
    if args.json:
        print(json.dumps(c.to_dict(), indent=2))
    else:
        print(format_comparison(c))
    if args.plot:
        use_headless_backend()
        from simulator.views.plots import plot_compare
        plot_compare(c.sim_trace, with_simulated_sm_numbers(c.measured_trace), labels=("simulated", "measured"),
                     sms=sms, path=args.plot)
        print(f"wrote {args.plot}")
    return 0


def with_simulated_sm_numbers(meas: Trace) -> Trace:
    """The measured trace with SMs numbered like the simulator's (cluster x size + rank, which is
    the hardware trace's linear CTA index), so that a comparison lines up the same CTA in both."""
    return meas.with_columns(sm=meas.columns()["cta"].copy())


def main(argv: list[str] | None = None) -> int:
    """``python -m validation.compare`` = ``wsim validate`` (same arguments, errors and exit codes)."""
    p = OneLineParser(prog="wsim validate", description="Compare the SM90 model with a measured H200 trace.")
    add_validate_arguments(p)
    return run_command(run_validate, p.parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
