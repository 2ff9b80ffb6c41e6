"""``wsim plot``: timelines, stage occupancy, stall breakdowns, comparisons and Perfetto files.

    wsim plot                                   # simulate the default config, write wsim_overview.png
    wsim plot run.npz                           # overview of a saved trace (Trace.save)
    wsim plot run.npz --what timeline --sms 0,1 --window 10us:14us -o tl.svg
    wsim plot run.npz --what perfetto -o run.json      # open in ui.perfetto.dev
    wsim plot a.npz b.npz                       # compare two runs on one time axis
    wsim plot --m 4096 --n 4096 --k 4096 --what stalls

Bad input (missing file, unknown SM, empty window, unknown --what) prints one line naming the
value and exits 2. ``python -m simulator.views.plot_cli`` runs the same command on its own (its own
parser, the same arguments and exit codes).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any

from simulator.engine.trace import Trace, TraceFormatError
from simulator.errors import ConfigError, SimulationLimitError
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import get_arch
from simulator.protocol.knobs import PIPELINES
from simulator.views.breakdown import (
    SelectionError,
    check_sms,
    occupancy_series,
    role_breakdown,
    trace_extent,
)
from simulator.views.run_args import (
    ArgError,
    OneLineParser,
    add_run_arguments,
    check_trace_sms,
    parse_sm_list,
    run_command,
    run_simulation,
)

WHATS = ("overview", "timeline", "occupancy", "stalls", "compare", "perfetto")
_DEFAULT_OUT = {"perfetto": "wsim_trace.json"}
#: Above this many spans a Perfetto export with no --sms keeps the default few SMs.
PERFETTO_ALL_SMS_LIMIT = 300_000


def add_plot_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``plot`` sub-command to ``wsim``'s sub-parsers and return it."""
    p = subparsers.add_parser(
        "plot", help="timelines, stage occupancy, stall breakdowns, comparisons, Perfetto JSON",
        description="Plot a trace (.npz from Trace.save or `wsim simulate --trace`), compare two, or "
                    "simulate a config and plot it. Times are ns unless suffixed (us, µs, ms).")
    add_plot_arguments(p)
    return p


def add_plot_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("traces", nargs="*", metavar="TRACE.npz",
                   help="0 traces: simulate (see --m/--n/--k); 1: plot it; 2: compare them")
    p.add_argument("--what", default=None, metavar="|".join(WHATS),
                   help="what to make (default: overview for one trace, compare for two)")
    p.add_argument("--sms", default=None, metavar="LIST",
                   help="SMs to show, e.g. 0,1,2 or 0-7 or all (default: the first SM, its cluster peer "
                        "and the SM that finishes last)")
    p.add_argument("--window", default=None, metavar="START:END",
                   help="time window, e.g. 2000:6000 (ns), 2us:6us, :10us (default: start, steady state, tail)")
    p.add_argument("-o", "--output", default=None, metavar="PATH",
                   help="output file: .png/.svg/.pdf for plots, .json or .json.gz for perfetto "
                        "(default: wsim_<what>.png, wsim_trace.json)")
    p.add_argument("--labels", default=None, metavar="A,B", help="names of the two traces in a comparison")
    p.add_argument("--pipeline", default=None, help="pipeline for --what occupancy (default mainloop)")
    p.add_argument("--per-sm", action="store_true", help="stall breakdown per SM instead of summed")
    g = p.add_argument_group("simulate when no trace is given")
    g.add_argument("--arch", default=None, help="b200 (default) or h200")
    g.add_argument("--m", type=int, default=None, dest="plot_m", metavar="M", help="GEMM M (default: the config default)")
    g.add_argument("--n", type=int, default=None, dest="plot_n", metavar="N")
    g.add_argument("--k", type=int, default=None, dest="plot_k", metavar="K")
    add_run_arguments(g, engine=False)


# -- parsing --------------------------------------------------------------------------------
_TIME_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms)?\s*$")
_UNIT_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, None: 1.0}


def parse_window(text: str, extent: tuple[float, float]) -> tuple[float, float]:
    """``"START:END"`` in ns (or with a us/µs/ms suffix) -> (start_ns, end_ns); empty sides = trace ends."""
    if ":" not in text:
        raise ArgError(f"--window {text!r}: expected START:END, e.g. 2us:6us")
    a, b = text.split(":", 1)
    parsed = []
    for side in (a, b):
        if not side.strip():
            parsed.append(None)
            continue
        m = _TIME_RE.match(side)
        if not m:
            raise ArgError(f"--window {text!r}: {side!r} is not a time (a number, optionally with ns/us/ms)")
        value = float(m.group(1))
        if not math.isfinite(value):
            raise ArgError(f"--window {text!r}: {side.strip()!r} is not a finite time")
        parsed.append((value, m.group(2)))
    units = {u for p in parsed if p is not None for u in [p[1]] if u is not None}
    default_unit = units.pop() if len(units) == 1 else None   # "2:6us" means 2us:6us
    w = []
    for p, edge in zip(parsed, extent, strict=True):
        if p is None:
            w.append(edge)
        else:
            w.append(p[0] * _UNIT_NS[p[1] if p[1] is not None else default_unit])
    if not w[1] > w[0]:
        raise ArgError(f"--window {text!r} is empty: the end must be after the start")
    return (w[0], w[1])


# -- running --------------------------------------------------------------------------------
def _load(path: str):
    p = Path(path)
    if not p.exists():
        raise ArgError(f"trace file {path!r} does not exist")
    if p.is_dir():
        raise ArgError(f"trace file {path!r} is a directory")
    return Trace.load(p)


def _simulate(args, sms: list[int] | None):
    arch = get_arch(args.arch or "b200")
    cls = Sm100GemmConfig if arch.sm_version == 100 else Sm90GemmConfig
    kw = {k: v for k, v in (("m", args.plot_m), ("n", args.plot_n), ("k", args.plot_k)) if v is not None}
    cfg = cls(**kw)
    r = cfg.resolved(arch)
    r.can_implement(arch)
    if sms is not None:
        sms = check_trace_sms(args.sms, "--sms", r, arch,
                              warn=lambda m: print(f"wsim plot: warning: {m}", file=sys.stderr))
    print(f"simulating {cfg.m}x{cfg.n}x{cfg.k} on {arch.name} ...", file=sys.stderr)
    res = run_simulation(cfg, arch, max_events=getattr(args, "max_events", None), trace=True, trace_sms=sms)
    if res.trace is None or len(res.trace) == 0:
        raise ArgError("the simulation produced no trace")
    return res.trace


def trace_pipelines(trace) -> list[str]:
    """The pipelines whose stage occupancy ``trace`` can show (counters, or spans to derive it from)."""
    sms = sorted(set(trace.columns()["sm"].tolist()))[:1]
    return [p for p in PIPELINES if sms and occupancy_series(trace, p, sms=sms)[0]]


def use_headless_backend() -> None:
    """The command line only writes files: draw with Agg (no display needed). Picked here, where a
    command runs, not when the plotting module is imported, so notebooks keep their inline figures."""
    import matplotlib

    matplotlib.use("Agg")


def _output(args, what: str) -> Path:
    out = Path(args.output or _DEFAULT_OUT.get(what, f"wsim_{what}.png"))
    suffixes = "".join(out.suffixes[-2:]).lower()
    if what == "perfetto":
        if not (suffixes.endswith(".json") or suffixes.endswith(".json.gz")):
            raise ArgError(f"-o {str(out)!r}: --what perfetto writes .json or .json.gz")
    elif out.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ArgError(f"-o {str(out)!r}: --what {what} writes .png, .svg or .pdf "
                           "(use --what perfetto for .json)")
    if out.parent and not out.parent.exists():
        raise ArgError(f"-o {str(out)!r}: directory {str(out.parent)!r} does not exist")
    return out


def _labels(args, paths: list[str], traces: list) -> tuple[str, str]:
    if args.labels:
        parts = [x.strip() for x in args.labels.split(",")]
        if len(parts) != 2 or not all(parts):
            raise ArgError(f"--labels {args.labels!r}: give two names, e.g. simulated,measured")
        return (parts[0], parts[1])
    srcs = [str(t.meta.get("source", "")) for t in traces]
    if len(set(srcs)) == 2 and all(srcs):
        return (srcs[0], srcs[1])
    stems = [Path(p).stem for p in paths] if paths else ["a", "b"]
    return (stems[0], stems[1])


def run_plot(args) -> int:
    """Run ``wsim plot`` with parsed ``args``; returns the exit code (2 on bad input, one line)."""
    use_headless_backend()
    try:
        return _run(args)
    except (ArgError, SelectionError, TraceFormatError, ConfigError, SimulationLimitError) as e:
        print(f"wsim plot: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    except OSError as e:  # an output that cannot be written
        print(f"wsim plot: error: {e.filename + ': ' if e.filename else ''}{e.strerror or e}", file=sys.stderr)
        return 2
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")     # the file is written; keep no figure (wsim plot may run in-process)


def _run(args) -> int:
    from simulator.views import plots  # matplotlib: loaded when a plot is drawn
    from simulator.views.perfetto import to_perfetto, write_json

    what = args.what
    if what is not None and what not in WHATS:
        raise ArgError(f"--what {what!r}: not one of {', '.join(WHATS)}")
    if len(args.traces) > 2:
        raise ArgError(f"{len(args.traces)} traces given: plot takes one, or two to compare")
    what = what or ("compare" if len(args.traces) == 2 else "overview")
    if what == "compare" and len(args.traces) != 2:
        raise ArgError(f"--what compare needs two trace files (got {len(args.traces)})")
    if what != "compare" and len(args.traces) == 2:
        raise ArgError(f"--what {what} takes one trace (got 2); use --what compare for two")
    not_applying = [
        (args.pipeline is not None and what != "occupancy", f"--pipeline applies to --what occupancy, not {what}"),
        (args.per_sm and what != "stalls", f"--per-sm applies to --what stalls, not {what}"),
        (args.labels is not None and what != "compare", f"--labels applies to --what compare, not {what}"),
        (bool(args.traces) and any(v is not None for v in (args.plot_m, args.plot_n, args.plot_k, args.arch)),
         "--m/--n/--k/--arch choose what to simulate when no trace file is given; a trace file was given"),
    ]
    for applies_not, why in not_applying:
        if applies_not:
            raise ArgError(why)
    args.pipeline = args.pipeline or "mainloop"
    sms = parse_sm_list(args.sms) if args.sms is not None else None
    out = _output(args, what)

    traces = [_load(p) for p in args.traces] or [_simulate(args, sms)]
    for t, p in zip(traces, args.traces or ["simulation"], strict=True):
        if len(t) == 0:
            raise ArgError(f"trace {p!r} has no spans")
    tr = traces[0]
    window = None
    if args.window:
        ext = (min(trace_extent(t)[0] for t in traces), max(trace_extent(t)[1] for t in traces))
        window = parse_window(args.window, ext)
    if sms is not None and what != "compare":
        check_sms(tr, sms)

    if what == "overview":
        if window is not None:
            print("wsim plot: note: --window is ignored by the overview (it picks start, steady state and tail); "
                  "use --what timeline", file=sys.stderr)
        plots.plot_overview(tr, out, sms=sms)
    elif what == "timeline":
        plots.plot_timeline(tr, sms=sms, window_ns=window, path=out)
    elif what == "occupancy":
        have = trace_pipelines(tr)
        if args.pipeline not in have:
            raise ArgError(f"--pipeline {args.pipeline!r}: this trace has no stage occupancy for it; it has "
                               f"{', '.join(have) if have else 'none'} (simulated traces show the mainloop, and "
                               "epi_load when C is read)")
        plots.plot_stage_occupancy(tr, args.pipeline, sms=sms, window_ns=window, path=out)
    elif what == "stalls":
        bd = role_breakdown(tr, sms=sms, window_ns=window, per_sm=args.per_sm)
        plots.plot_stall_breakdown(bd, path=out)
        print(bd.to_text())
    elif what == "compare":
        labels = _labels(args, args.traces, traces)
        plots.plot_compare(traces[0], traces[1], labels, sms=sms, window_ns=window, path=out)
    elif what == "perfetto":
        if sms is None and args.sms is None and len(tr) > PERFETTO_ALL_SMS_LIMIT and window is None:
            sms = plots.default_sms(tr)
            print(f"wsim plot: note: the trace has {len(tr)} spans; keeping SMs {','.join(map(str, sms))} "
                  "(use --sms all or a --window for more)", file=sys.stderr)
        obj = to_perfetto(tr, sms=sms, t_window_ns=window)
        write_json(obj, out)
        n = sum(1 for e in obj["traceEvents"] if e["ph"] != "M")
        print(f"wrote {out} ({n} events); open it in https://ui.perfetto.dev")
        return 0
    print(f"wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m simulator.views.plot_cli`` = ``wsim plot`` (same arguments, errors and exit codes)."""
    p = OneLineParser(prog="wsim plot", description="Plot a trace, compare two, or simulate a config and plot it.")
    add_plot_arguments(p)
    return run_command(run_plot, p.parse_args(sys.argv[1:] if argv is None else argv), prog="wsim plot")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
