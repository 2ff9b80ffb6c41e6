"""The simulator's sub-commands of ``wsim`` (``simulate``, ``plot``, ``sweep``, ``tune``, ``check``).

    wsim simulate                      # 8192^3 BF16 on B200 with CUTLASS's default SM100 config
    wsim simulate --arch h200 --schedule pingpong --m 4096 --n 4096 --k 4096
    wsim simulate --config my.toml --json
    wsim simulate --arrival-count clc.empty=224      # what if the CLC count forgot the cluster factor?
    wsim plot ...                      # timelines, stage occupancy, stall breakdowns, Perfetto
    wsim check                         # every mutation of the seed's barriers, found and named

The ``wsim`` command itself is :mod:`wsim.cli`: it adds the sub-commands that compare the model
with measurements (``validate``, ``accuracy``, from ``validation``), which this package never imports.

Every config field is a flag (``--mma-tile-n 128``); a TOML file may set them too, in a
``[config]`` table, with the arch name and constant overrides in ``[arch]`` and protocol knobs in
``[knobs]``. Flags win over the file. Values are never converted: a count is an integer, a switch
is true/false.

Exit codes (:data:`EXIT_CODES`): 0 done; 2 bad input (usage or config: one line naming the value
and the rule it breaks); 3 the run deadlocked; 4 the run finished but arrivals landed in the wrong
barrier phase (protocol violations); 1 an internal error (a bug in wsim, said so in one line);
130 interrupted (Ctrl-C); 143 terminated (SIGTERM, handled as Ctrl-C: finished sweep/tune rows are
written).

Sub-commands are registered in :data:`COMMANDS` (name -> (add_parser, run)); ``build_parser``
adds a table's commands in order and ``main`` dispatches on the name.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
from simulator.kernels.config_io import config_from_mapping, load_run_file
from simulator.kernels.gemm_config import field_hints
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec, get_arch
from simulator.protocol.knobs import ProtocolKnobs
from simulator.views.plot_cli import PERFETTO_ALL_SMS_LIMIT, add_plot_parser, run_plot
from simulator.views.run_args import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    OneLineParser,
    add_run_arguments,
    arch_overrides,
    check_output_file,
    check_trace_sms,
    run_clock,
    run_command,
    run_simulation,
    warn,
)

EXIT_DEADLOCK, EXIT_VIOLATIONS = 3, 4
EXIT_CODES = {
    EXIT_OK: "done",
    EXIT_INTERNAL: "internal error (a bug in wsim, not in the input)",
    EXIT_USAGE: "bad input: usage or config error, one line naming the value and the rule",
    EXIT_DEADLOCK: "the simulated kernel deadlocked",
    EXIT_VIOLATIONS: "protocol violations (arrivals in the wrong barrier phase, or races the detectors found) "
                     "without a deadlock",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
    EXIT_TERMINATED: "terminated (SIGTERM; handled as Ctrl-C)",
}

#: File endings ``wsim simulate --trace`` writes: the shared trace format, or Perfetto JSON.
TRACE_SUFFIXES = (".npz", ".json", ".json.gz")


def _config_fields() -> dict[str, tuple[type, tuple[str, ...]]]:
    """field name -> (python type, config classes that have it)."""
    out: dict[str, tuple[type, tuple[str, ...]]] = {}
    for cls in (Sm100GemmConfig, Sm90GemmConfig):
        hints = field_hints(cls)
        for f in fields(cls):
            tp = hints[f.name]
            typ = bool if tp is bool else (str if tp is str else int)
            prev = out.get(f.name, (typ, ()))
            out[f.name] = (typ, prev[1] + (cls.__name__,))
    return out


def _bool(s: str) -> bool:
    v = s.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"{s!r} is not a boolean (use true or false)")


def _kv(s: str) -> tuple[str, str]:
    if "=" not in s:
        raise argparse.ArgumentTypeError(f"{s!r}: expected NAME=VALUE")
    k, v = s.split("=", 1)
    if not k.strip():
        raise argparse.ArgumentTypeError(f"{s!r}: the name before '=' is empty")
    return k.strip(), v.strip()


# ------------------------------------------------------------------------------------ arguments
def add_config_arguments(s: argparse.ArgumentParser) -> None:
    """The inputs of one simulation: arch, TOML file, every config field, arch overrides, knobs."""
    s.add_argument("--arch", default=None, help="b200 (sm100, default) or h200 (sm90)")
    s.add_argument("--config", metavar="FILE.toml", help="TOML file with [config], [arch], [knobs] tables")
    g = s.add_argument_group("kernel config (every field of Sm100GemmConfig / Sm90GemmConfig)")
    for name, (typ, owners) in _config_fields().items():
        flag = "--" + name.replace("_", "-")
        g.add_argument(flag, dest=f"cfg_{name}", default=None,
                       type=_bool if typ is bool else typ, metavar=typ.__name__.upper(),
                       help=f"({'/'.join(o.replace('GemmConfig', '') for o in owners)})")
    s.add_argument("--arch-set", action="append", type=_kv, default=[], metavar="NAME=VALUE",
                   help="override an arch constant, e.g. clc_query_latency_cycles=800")
    s.add_argument("--clock", default=None, metavar="predicted|max|sustained|GHz",
                   help="SM clock: predicted (what the power controller settles on for this kernel, from its "
                        "simulated activity: the default on h200), max (the spec clock: the default on b200), "
                        "sustained (a documented clock under load) or a number of GHz")
    k = s.add_argument_group("protocol knobs (what if?)")
    k.add_argument("--arrival-count", action="append", type=_kv, default=[], metavar="PIPE.SIDE=N",
                   help="initialise a barrier with another arrival count, e.g. clc.empty=224")
    k.add_argument("--producer-start-phase", action="append", type=_kv, default=[], metavar="PIPE=PHASE",
                   help="start a producer in another phase, e.g. mainloop=0")
    k.add_argument("--skip-release", action="append", default=[], metavar="PIPE",
                   help="consumers of this pipeline never release a stage")
    k.add_argument("--no-clc-throttle", action="store_true",
                   help="take the CLC throttle out: neither MainloopLoad nor Sched takes part "
                        "(SM100 with the clc scheduler only)")
    k.add_argument("--skip-wait", action="append", default=[], metavar="BARRIER",
                   help="no role waits on this barrier, e.g. mainloop.empty or tmem_alloc")
    k.add_argument("--wrong-parity", action="append", default=[], metavar="BARRIER",
                   help="every wait on this mbarrier waits on the other phase parity, e.g. accumulator.full")
    k.add_argument("--expect-tx", action="append", type=_kv, default=[], metavar="PIPE=BYTES",
                   help="the bytes each expect-tx of this pipeline posts, e.g. mainloop=32768")
    k.add_argument("--fixup-delta", type=int, default=None, metavar="N",
                   help="every stream-K / split-K fixup arrival adds its K tiles plus N (--skip-release fixup: "
                        "non-final splits never arrive; --skip-wait fixup: no peer waits)")


def _add_simulate_parser(sub) -> argparse.ArgumentParser:
    s = sub.add_parser("simulate", help="predict time, throughput, per-role waits and deadlocks of one GEMM",
                       description="Simulate one GEMM launch. Exit codes: "
                                   + "; ".join(f"{c} {d}" for c, d in EXIT_CODES.items()))
    add_config_arguments(s)
    add_run_arguments(s)
    s.add_argument("--json", action="store_true", help="print machine-readable results")
    s.add_argument("--trace", metavar="FILE",
                   help="write the run in the shared trace format (.npz), or as Perfetto JSON (.json, .json.gz)")
    s.add_argument("--trace-sms", metavar="LIST", help="SMs to trace, e.g. 0-7,64 (default: all)")
    return s


def cmd_simulate(args) -> int:
    return simulate_command(args)


def _lazy(module: str, name: str):
    import importlib
    return getattr(importlib.import_module(module), name)


def _add_check_parser(sub) -> argparse.ArgumentParser:
    s = sub.add_parser("check", help="every mutation of the seed's barriers over a grid of configs, run and "
                                     "classified (deadlock, race, no effect and why)",
                       description="wsim check: the quick grid (default), --grid full, or --config FILE for one "
                                   "config (with knob flags: your own change). Exit codes: 0 nothing found on the "
                                   "unmutated protocol / your change has no effect; 3 deadlock; 4 race; 2 bad input")
    add_config_arguments(s)
    _lazy("simulator.views.check_cli", "add_check_arguments")(s)
    return s


def cmd_check(args, twins=None) -> int:
    """``wsim check``; ``twins`` (report -> rows): the hardware twins' counts for the catalogue."""
    return _lazy("simulator.views.check_cli", "run_check_cmd")(args, resolve_inputs, twins)


#: name -> (add the sub-parser to argparse's sub-parsers, run it with the parsed args -> exit code).
COMMANDS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], int]]] = {
    "simulate": (_add_simulate_parser, cmd_simulate),
    "check": (_add_check_parser, cmd_check),
    "plot": (add_plot_parser, run_plot),
    "sweep": (lambda sub: _lazy("simulator.views.sweep_cli", "add_sweep_parser")(sub),
              lambda args: _lazy("simulator.views.sweep_cli", "run_sweep_cmd")(args)),
    "tune": (lambda sub: _lazy("simulator.views.tune_cli", "add_tune_parser")(sub),
             lambda args: _lazy("simulator.views.tune_cli", "run_tune_cmd")(args)),
}


def build_parser(commands: dict | None = None) -> argparse.ArgumentParser:
    """The ``wsim`` parser with the sub-commands of ``commands`` (default: :data:`COMMANDS`)."""
    p = OneLineParser(prog="wsim", description="Cycle-approximate simulator of warp-specialized GEMM kernels",
                      epilog="exit codes: " + "; ".join(f"{c} {d}" for c, d in EXIT_CODES.items()))
    sub = p.add_subparsers(dest="command", parser_class=OneLineParser)
    for add, _ in (COMMANDS if commands is None else commands).values():
        add(sub)
    return p


# ------------------------------------------------------------------------------------ inputs
def _integer(option: str, key: str, text: str) -> int:
    t = text.strip()
    if not re.fullmatch(r"[+-]?\d+", t):
        raise ConfigError(f"{option} {key}={text!r}: expected an integer")
    return int(t)


def _resolve_arch(args, arch_table: dict, where: str) -> ArchSpec:
    file_name = arch_table.pop("name", None)
    if file_name is not None and not isinstance(file_name, str):
        raise ConfigError(f"[arch] name = {file_name!r} in {where}: expected a string such as \"b200\" or \"h200\"")
    if args.arch and file_name:
        a, b = get_arch(args.arch), get_arch(file_name)
        if a.name != b.name:
            raise ConfigError(f"--arch {args.arch} conflicts with [arch] name = {file_name!r} in {where}: "
                              "give one architecture (the flag or the file)")
    arch = get_arch(args.arch or file_name or "b200")
    if arch_table:
        arch = arch.with_overrides(arch_table, origin=f"[arch] in {where}")
    cli = arch_overrides(args.arch_set)
    if cli:
        arch = arch.with_overrides(cli, origin="--arch-set")
    clock = getattr(args, "clock", None)
    if clock is not None:
        from simulator.machine.clocks import parse_clock, with_clock
        if "clock_ghz" in cli or "clock_ghz" in arch_table:
            raise ConfigError(f"--clock {clock} and an arch override of clock_ghz: give the clock once")
        if parse_clock(clock) != "predicted":      # predicted: solved by the run itself (run_clock)
            arch = with_clock(arch, clock)
    return arch


def _resolve_config(args, arch: ArchSpec, table: dict, where: str):
    cls = Sm100GemmConfig if arch.sm_version == 100 else Sm90GemmConfig
    other = Sm90GemmConfig if cls is Sm100GemmConfig else Sm100GemmConfig
    valid = {f.name for f in fields(cls)}
    other_names = {f.name for f in fields(other)} - valid
    for key in table:
        if key in other_names:
            raise ConfigError(f"[config] {key} in {where}: a field of {other.__name__}, not of {cls.__name__} "
                              f"(arch {arch.name}); use --arch {'h200' if cls is Sm100GemmConfig else 'b200'}")
    cfg = config_from_mapping(cls, table, f"[config] in {where}")
    flags: dict[str, Any] = {}
    for name in _config_fields():
        v = getattr(args, f"cfg_{name}", None)
        if v is None:
            continue
        if name not in valid:
            raise ConfigError(f"--{name.replace('_', '-')}={v}: not a field of {cls.__name__} "
                              f"(arch {arch.name}); valid: {', '.join(sorted(valid))}")
        flags[name] = v
    return replace(cfg, **flags) if flags else cfg


def _resolve_knobs(args, cfg, table: dict, where: str) -> ProtocolKnobs:
    base = ProtocolKnobs.from_mapping(table, f"[knobs] in {where}")
    arrival = dict(base.arrival_counts)
    for key, v in args.arrival_count:
        arrival[key] = _integer("--arrival-count", key, v)
    phases = dict(base.producer_start_phase)
    for key, v in args.producer_start_phase:
        phases[key] = _integer("--producer-start-phase", key, v)
    tx = dict(base.expect_tx)
    for key, v in args.expect_tx:
        tx[key] = _integer("--expect-tx", key, v)
    knobs = ProtocolKnobs.make(arrival_counts=arrival, producer_start_phase=phases,
                               skip_release=list(base.skip_release) + list(args.skip_release),
                               clc_throttle=base.clc_throttle and not args.no_clc_throttle,
                               skip_wait=sorted(set(base.skip_wait) | set(args.skip_wait)),
                               wrong_parity=sorted(set(base.wrong_parity) | set(args.wrong_parity)), expect_tx=tx,
                               fixup_delta=base.fixup_delta if args.fixup_delta is None else args.fixup_delta)
    knobs.check_applies(cfg)
    return knobs


def _unused_overrides(cfg, arch: ArchSpec) -> list[str]:
    """Arch constants overridden by the user that this run never reads, and why."""
    if cfg.arch_name == "sm90":
        from simulator.kernels.sm90_tma_ws import Sm90Timing as Timing
    else:
        from simulator.kernels.sm100_tma_ws import Sm100Timing as Timing
    used = set(Timing.constants_used()) | {"smem_bytes_per_cta", "max_cluster_size", "sm_count"}
    if cfg.arch_name == "sm100":
        used |= {"tmem_columns", "tmem_lanes"}
    out = []
    for c in arch.constants():
        if c.kind != "override":
            continue
        why = ""
        if c.name not in used:
            why = f"the {cfg.arch_name.upper()} kernel model does not use it"
        elif c.name == "clc_query_latency_cycles" and cfg.tile_scheduler != "clc":
            why = f"tile_scheduler={cfg.tile_scheduler!r} makes no CLC queries"
        elif c.name == "mma_fp8_factor" and cfg.bits_ab != 8:
            why = f"dtype_ab={cfg.dtype_ab!r} is not an 8-bit type"
        if why:
            out.append(f"arch constant {c.name}={c.value:g} is overridden but has no effect on this run: {why}")
    return out


def resolve_inputs(args, warn: Callable[[str], None] = warn) -> tuple[Any, ArchSpec, ProtocolKnobs]:
    """Config, arch and knobs from the TOML file and the flags (flags win); every bad value is a
    ConfigError, settings that cannot affect the run are errors (knobs) or warnings (arch constants)."""
    where = args.config or "-"
    tables = load_run_file(args.config) if args.config else {"config": {}, "arch": {}, "knobs": {}}
    arch = _resolve_arch(args, dict(tables["arch"]), where)
    cfg = _resolve_config(args, arch, tables["config"], where)
    knobs = _resolve_knobs(args, cfg, tables["knobs"], where)
    for w in _unused_overrides(cfg, arch):
        warn(w)
    return cfg, arch, knobs


# ------------------------------------------------------------------------------------ simulate
def simulate_command(args) -> int:
    from simulator.views.report import format_result

    cfg, arch, knobs = resolve_inputs(args)
    trace_path = check_output_file(args.trace, "--trace", TRACE_SUFFIXES, "traces") if args.trace else None
    if args.trace_sms is not None and trace_path is None:
        raise ConfigError(f"--trace-sms {args.trace_sms}: selects the SMs that --trace writes; give --trace FILE too")
    r = cfg.resolved(arch)
    r.can_implement(arch, allow_protocol_experiments=not knobs.is_default)
    trace_sms = check_trace_sms(args.trace_sms, "--trace-sms", r, arch) if args.trace_sms is not None else None
    res = run_simulation(cfg, arch, knobs=knobs, max_events=args.max_events, trace=trace_path is not None,
                         trace_sms=trace_sms, engine=args.engine, clock=run_clock(args.clock, arch))
    written = None
    if trace_path is not None and res.trace is not None:
        written = _write_trace(res, trace_path, explicit_sms=trace_sms is not None)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2, default=str))
        if written is not None:
            print(f"wsim: trace written to {written}", file=sys.stderr)
    else:
        print(format_result(res))
        if written is not None:
            print(f"\ntrace written to {written} ({len(res.trace)} spans simulated)")
    if res.deadlock is not None:
        return EXIT_DEADLOCK
    return EXIT_VIOLATIONS if (res.violation_count or res.race_count) else EXIT_OK


def _write_trace(res, path: Path, explicit_sms: bool) -> Path:
    if len(res.trace) == 0:
        warn(f"the trace has no spans; writing an empty trace to {path}")
    if path.name.lower().endswith((".json", ".json.gz")):
        from simulator.views.perfetto import write_perfetto
        from simulator.views.plots import default_sms
        sms = None
        if not explicit_sms and len(res.trace) > PERFETTO_ALL_SMS_LIMIT:
            # A whole 8192^3 run is millions of Perfetto events: keep a few SMs unless asked.
            sms = default_sms(res.trace)
            print(f"wsim: note: {len(res.trace)} spans; the Perfetto file keeps SMs "
                  f"{','.join(map(str, sms))} (use --trace-sms, or a .npz trace and wsim plot)", file=sys.stderr)
        return Path(write_perfetto(res.trace, path, sms=sms))
    return Path(res.trace.save(path))


# ------------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None, commands: dict | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``; none: ``simulate``) and run the sub-command it names,
    from ``commands`` (default: :data:`COMMANDS`; ``wsim`` passes :data:`wsim.cli.COMMANDS`)."""
    commands = COMMANDS if commands is None else commands
    parser = build_parser(commands)
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        argv = ["simulate"]
    args = parser.parse_args(argv)
    command = commands.get(args.command or "")
    if command is None:
        parser.print_help()
        return EXIT_USAGE
    return run_command(command[1], args)
