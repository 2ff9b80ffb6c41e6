"""What the ``wsim`` sub-commands share: their exit codes and error handling (``run_command``),
run arguments, SM lists, output paths, progress on stderr, ``run_simulation`` (``simulate()``
with an up-front estimate), and the flags of the batch commands (``add_batch_arguments``,
``batch_options``: ``wsim sweep`` and ``wsim tune``).

``wsim simulate`` (:mod:`simulator.views.cli`), ``wsim plot`` (:mod:`simulator.views.plot_cli`), ``wsim
sweep``/``tune`` (:mod:`simulator.views.sweep_cli`, :mod:`simulator.views.tune_cli`) and ``wsim
validate`` (:mod:`validation.compare`) import from here; this module imports none of them.
Bad input raises :class:`ArgError`, :class:`~simulator.errors.ConfigError` (or another of
:data:`INPUT_ERRORS`) with a message that names the value; :func:`run_command` turns it into one
line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from simulator import _native
from simulator.engine.out_path import check_output_dir, check_output_file  # noqa: F401 - re-exported
from simulator.engine.run import DEFAULT_MAX_EVENTS, estimate_events, simulate, sms_in_run
from simulator.engine.sweep import BACKENDS
from simulator.engine.trace import TraceFormatError
from simulator.errors import ConfigError, SimulationLimitError
from simulator.machine.arch import ArchSpec, get_arch
from simulator.protocol.knobs import ProtocolKnobs
from simulator.views.breakdown import SelectionError

#: Exit codes every sub-command shares (``wsim simulate`` adds 3 and 4, see simulator.views.cli):
#: 130 = 128 + SIGINT (Ctrl-C), 143 = 128 + SIGTERM, the shell's codes for those signals.
EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143
#: A run estimated at more events than this prints the estimate and shows progress on stderr.
#: The fast engine runs about 0.7M events/s on this project's 2-core VM, the reference engine about
#: 0.3M (``python benchmarks/sim_speed.py``): this is a run of roughly half a second to a second or more.
PROGRESS_MIN_EVENTS = 300_000


class ArgError(ValueError):
    """Bad command-line input; the message names the value."""


#: Exceptions that mean bad input (or an output that cannot be written): one line, exit 2.
INPUT_ERRORS: tuple[type[BaseException], ...] = (ConfigError, TraceFormatError, SimulationLimitError, ArgError,
                                                 SelectionError)


class Terminated(KeyboardInterrupt):
    """SIGTERM while a sub-command runs: handled as Ctrl-C is (a sweep or a tune keeps and writes its
    finished rows), then exit :data:`EXIT_TERMINATED`."""


_SIGNALS = {"terminated": False}     # whether SIGTERM arrived during the running sub-command


def _on_sigterm(signum, frame) -> None:
    _SIGNALS["terminated"] = True
    raise Terminated()


def _default_sigterm_in_child() -> None:
    """A process forked while a sub-command runs (a sweep's or accuracy's worker pool) ends on SIGTERM
    as processes do, instead of raising the parent's :class:`Terminated`."""
    import signal

    if signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_default_sigterm_in_child)


def interrupted_exit_code() -> int:
    """The exit code of a sub-command stopped by a signal: 143 after SIGTERM, else 130 (Ctrl-C)."""
    return EXIT_TERMINATED if _SIGNALS["terminated"] else EXIT_INTERRUPTED


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors (the value and what was expected), exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def warn(message: str) -> None:
    print(f"wsim: warning: {message}", file=sys.stderr)


def one_line(e: BaseException) -> str:
    """An exception's message on one line (an OSError as ``file: reason``)."""
    if isinstance(e, OSError) and e.strerror:
        return f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    text = " ".join(str(e).split("\n")).strip()
    return text or type(e).__name__


def run_command(command: Callable[[Any], int], args: Any, prog: str = "wsim") -> int:
    """Run a parsed sub-command and return its exit code: bad input (:data:`INPUT_ERRORS`, an
    output that cannot be written) is one line and exit 2; Ctrl-C is 130; any other exception is a
    bug of wsim, said so in one line with exit 1 (``WSIM_TRACEBACK=1`` re-raises it). SIGTERM is
    handled like Ctrl-C (:class:`Terminated`), with exit 143."""
    import signal
    import threading

    _SIGNALS["terminated"] = False
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return command(args)
    except INPUT_ERRORS as e:
        print(f"{prog}: error: {one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        if isinstance(e, BrokenPipeError):  # output piped into head & co.
            return EXIT_OK
        print(f"{prog}: error: {one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"\n{prog}: {'terminated (SIGTERM)' if _SIGNALS['terminated'] else 'interrupted'}", file=sys.stderr)
        return interrupted_exit_code()
    except Exception as e:  # a bug: one line that says so; WSIM_TRACEBACK=1 shows where
        if os.environ.get("WSIM_TRACEBACK"):
            raise
        print(f"{prog}: internal error (a bug in wsim, not in your input): {type(e).__name__}: {one_line(e)} "
              "(set WSIM_TRACEBACK=1 to see where)", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


# ------------------------------------------------------------------------------------ arguments
def max_events_type(s: str) -> int | None:
    """``--max-events`` text -> an event budget; 0 means no limit (None)."""
    if not re.fullmatch(r"\s*\+?\d+\s*", s):
        raise argparse.ArgumentTypeError(f"{s!r} is not a whole number of events (0 = no limit)")
    n = int(s)
    return None if n == 0 else n


def add_run_arguments(s: argparse.ArgumentParser, *, engine: bool = True) -> None:
    """How a simulation runs: its event budget (and, where one run is simulated, the engine)."""
    s.add_argument("--max-events", type=max_events_type, default=DEFAULT_MAX_EVENTS, metavar="N",
                   help=f"stop a run that needs more than N events (default {DEFAULT_MAX_EVENTS:,}; 0 = no "
                        "limit); runs estimated above it are refused before they start")
    if engine:
        s.add_argument("--engine", choices=("fast", "reference"), default="fast",
                       help="fast (default: the same model on a compiled event loop, bit-identical results) "
                            "or reference (SimPy)")


# ------------------------------------------------------------------------------------ SM lists
#: SM numbers an SM list may name are below this: far above any GPU's SM count (148 on B200), it
#: keeps a typo such as ``0-999999999999`` from expanding into a list of a trillion SMs.
SM_NUMBER_LIMIT = 1 << 16


def parse_sm_list(text: str, option: str = "--sms") -> list[int] | None:
    """``"0,1,4-7"`` -> [0, 1, 4, 5, 6, 7]; ``"all"`` -> None (every SM). ``option`` names the
    flag in error messages; SM numbers are below :data:`SM_NUMBER_LIMIT`."""
    if text.strip().lower() == "all":
        return None
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise ArgError(f"{option} {text!r}: range {part!r} runs backwards")
        elif part.isdigit():
            lo = hi = int(part)
        else:
            raise ArgError(f"{option} {text!r}: {part!r} is not an SM number or a range like 0-7")
        if hi >= SM_NUMBER_LIMIT:
            raise ArgError(f"{option} {text!r}: SM {hi} is not an SM of any GPU (SM numbers here are below "
                           f"{SM_NUMBER_LIMIT:,}; give the SMs of the run, e.g. 0-7, or all)")
        out += range(lo, hi + 1)
    if not out:
        raise ArgError(f"{option} {text!r}: no SMs given")
    return out


def compact_sms(sms: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    parts, start = [], None
    for i, s in enumerate(sms):
        if start is None:
            start = s
        if i + 1 == len(sms) or sms[i + 1] != s + 1:
            parts.append(str(start) if start == s else f"{start}-{s}")
            start = None
    return ",".join(parts)


def check_trace_sms(text: str, option: str, cfg, arch: ArchSpec, warn: Callable[[str], None] = warn) -> list[int]:
    """The SM list of ``option``, checked against the SMs the run uses: none of them is an error,
    some missing is a warning."""
    try:
        sms = parse_sm_list(text, option)
    except ArgError as e:
        raise ConfigError(str(e)) from None
    n = sms_in_run(cfg, arch)
    if sms is None:
        return list(range(n))
    inside = sorted({s for s in sms if s < n})
    if not inside:
        raise ConfigError(f"{option} {text}: selects no SM of this run, which uses SMs 0-{n - 1} "
                          f"({n} CTAs resident)")
    outside = sorted({s for s in sms if s >= n})
    if outside:
        warn(f"{option}: SM(s) {compact_sms(outside)} are not in this run (it uses SMs 0-{n - 1}); "
             f"tracing SM(s) {compact_sms(inside)}")
    return inside


# ------------------------------------------------------------------------------------ progress
class ProgressReporter:
    """Shows how far a long run is on ``stream`` (stderr): a one-line bar redrawn in place on a
    terminal; elsewhere (a log, a pipe) a line at every further 10% of the output tiles."""

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.width = width
        self.t0 = time.monotonic()
        self.next_step = 0.1
        self.drawn = False

    def __call__(self, fraction: float) -> None:
        fraction = min(1.0, max(0.0, float(fraction)))
        elapsed = time.monotonic() - self.t0
        if self.tty:
            filled = int(round(fraction * self.width))
            self.stream.write(f"\rwsim: [{'#' * filled}{'.' * (self.width - filled)}] {100 * fraction:3.0f}%  "
                              f"{elapsed:.1f} s")
            self.stream.flush()
            self.drawn = True
        elif fraction >= self.next_step:
            self.stream.write(f"wsim: {100 * fraction:.0f}% of the output tiles done after {elapsed:.1f} s\n")
            self.stream.flush()
            while self.next_step <= fraction:
                self.next_step += 0.1

    def close(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\r" + " " * (self.width + 24) + "\r")
            self.stream.flush()


def progress_for(cfg, max_events: int | None, stream: TextIO | None = None) -> ProgressReporter | None:
    """For a run of resolved ``cfg`` estimated above :data:`PROGRESS_MIN_EVENTS`: print the estimate
    and return a reporter for ``simulate(progress=...)``; None for a short run (or one the event
    budget refuses: the refusal says the estimate)."""
    stream = stream if stream is not None else sys.stderr
    est = estimate_events(cfg)
    if est < PROGRESS_MIN_EVENTS or (max_events is not None and est > max_events):
        return None
    limit = f"; stops at max_events={max_events:,}" if max_events is not None else ""
    print(f"wsim: this run simulates about {est:,} events (an estimate, within ~2x{limit}); "
          "progress follows", file=stream)
    return ProgressReporter(stream)


def run_clock(clock_text, arch: ArchSpec) -> str | None:
    """The ``clock`` to pass to ``simulate`` for ``--clock clock_text`` (already applied to ``arch``
    unless it is "predicted"), or, with no ``--clock``, the arch's default: "predicted" on the archs
    whose power model was checked (:func:`simulator.machine.clocks.default_clock`), else None."""
    from simulator.machine.clocks import default_clock, parse_clock
    if clock_text is not None:
        return "predicted" if parse_clock(clock_text) == "predicted" else None
    return "predicted" if default_clock(arch) == "predicted" else None


def run_simulation(cfg, arch: ArchSpec, *, knobs: ProtocolKnobs | None = None, max_events: int | None,
                   **kw) -> Any:
    """``simulate()`` with an up-front estimate and progress on stderr for a long run."""
    experiments = kw.pop("allow_protocol_experiments", False) or (knobs is not None and not knobs.is_default)
    r = cfg.resolved(arch)
    r.can_implement(arch, allow_protocol_experiments=experiments)
    progress = progress_for(r, max_events)
    try:
        return simulate(cfg, arch, knobs=knobs, max_events=max_events, progress=progress,
                        allow_protocol_experiments=experiments, **kw)
    finally:
        if progress is not None:
            progress.close()


# ------------------------------------------------------------------------------------ sweep and tune
def add_batch_arguments(s: argparse.ArgumentParser) -> None:
    """The flags of the commands that simulate many configs (``wsim sweep``, ``wsim tune``): arch and
    constant overrides, worker processes, backend (and Ray cluster), event budget, engine, progress.
    Values stay text here and are checked by :func:`batch_options` (one-line errors naming them)."""
    s.add_argument("--arch", default="b200", help="b200 (sm100, default) or h200 (sm90)")
    s.add_argument("--arch-set", action="append", default=[], metavar="NAME=VALUE",
                   help="override an arch constant, e.g. clock_ghz=1.3")
    s.add_argument("--workers", metavar="N", help="worker processes (default: every CPU this process may use)")
    s.add_argument("--backend", default="process", help="process (default), serial or ray")
    s.add_argument("--ray-address", metavar="ADDR", help="Ray cluster to attach to (default: $RAY_ADDRESS or local)")
    s.add_argument("--max-events", metavar="N", help="event budget of each run (a config over it becomes an error "
                   "row; 0 = no limit; default: simulate's, as for wsim simulate)")
    s.add_argument("--engine", default=None, help="simulation engine: fast or reference (default: simulate's)")
    s.add_argument("--clock", default=None, metavar="predicted|max|sustained|GHz",
                   help="SM clock: predicted (each config at the clock the power controller settles on for it, "
                        "from its simulated activity: the default on h200), max (the spec clock: the default on "
                        "b200), sustained, or a number of GHz")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")


def batch_options(args) -> tuple[ArchSpec, dict]:
    """The arch and the run options (``workers``, ``backend``, ``ray_address``, ``max_events``,
    ``engine``, ``progress``: keyword arguments of ``run_sweep`` and ``tune``) of
    :func:`add_batch_arguments`' flags, checked."""
    workers = positive_int(args.workers, "--workers") if args.workers is not None else None
    max_events = max_events_arg(args.max_events)
    if args.backend not in BACKENDS:
        raise ConfigError(f"--backend={args.backend!r}: unknown; valid: {', '.join(BACKENDS)}")
    if args.engine is not None and args.engine not in ("fast", "reference"):
        raise ConfigError(f"--engine={args.engine!r}: unknown; valid: fast, reference")
    arch = arch_from_args(args.arch, args.arch_set)
    if args.clock is not None and arch.clock_ghz.kind == "override":
        raise ConfigError(f"--clock {args.clock} and --arch-set clock_ghz: give the clock once")
    clock = run_clock(args.clock, arch)
    if args.clock is not None and clock is None:
        from simulator.machine.clocks import with_clock
        arch = with_clock(arch, args.clock)
    return arch, {"workers": workers, "backend": args.backend, "ray_address": args.ray_address,
                  "max_events": max_events, "engine": args.engine, "progress": not args.no_progress,
                  "clock": clock}


def note_core() -> None:
    """Say on stderr when the simulator's hot modules run as pure Python (a stale or missing build):
    a sweep or a tune then takes several times as long, with the same results."""
    if not _native.COMPILED:
        print(f"wsim: note: the simulator runs on its {_native.status()}: same results, several times slower",
              file=sys.stderr)


def positive_int(text: str, flag: str) -> int:
    try:
        v = int(text)
    except (TypeError, ValueError):
        raise ConfigError(f"{flag}={text!r}: must be a positive integer") from None
    if v < 1:
        raise ConfigError(f"{flag}={text!r}: must be a positive integer")
    return v


def max_events_arg(text: str | None):
    """``--max-events`` of sweep and tune, read as ``wsim simulate`` reads it: a whole number, 0 for no
    limit (None); not given: simulate's default budget (``...``)."""
    if text is None:
        return ...
    try:
        v = int(text)
    except (TypeError, ValueError):
        v = -1
    if v < 0:
        raise ConfigError(f"--max-events={text!r}: must be a whole number of events (0 = no limit)")
    return None if v == 0 else v


def split_kv(text: str, flag: str) -> tuple[str, str]:
    if "=" not in text:
        raise ConfigError(f"{flag} {text!r}: expected FIELD=VALUE")
    k, v = text.split("=", 1)
    if not k.strip():
        raise ConfigError(f"{flag} {text!r}: empty field name")
    return k.strip(), v.strip()


def number_text(option: str, key: str, text: str) -> int | float:
    """A number given as text on the command line: an integer or a decimal number, nothing else
    (not nan, inf, true or a word)."""
    t = text.strip()
    if re.fullmatch(r"[+-]?\d+", t):
        return int(t)
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", t):
        return float(t)
    raise ConfigError(f"{option} {key}={text!r}: expected a number")


def arch_overrides(pairs: list[tuple[str, str]], option: str = "--arch-set") -> dict[str, int | float]:
    """``--arch-set NAME=VALUE`` pairs -> {constant: number} (every sub-command reads them here)."""
    values: dict[str, int | float] = {}
    for key, text in pairs:
        if key == "name":
            raise ConfigError(f"{option} name={text}: the architecture is chosen with --arch, not overridden")
        values[key] = number_text(option, key, text)
    return values


def arch_from_args(name: str, overrides: list[str]) -> ArchSpec:
    """``--arch`` and its ``--arch-set NAME=VALUE`` overrides (numbers only)."""
    arch = get_arch(name)
    values = arch_overrides([split_kv(o, "--arch-set") for o in overrides])
    return arch.with_overrides(values, origin="--arch-set") if values else arch
