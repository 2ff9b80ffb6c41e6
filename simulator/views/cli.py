"""``wsim``: the command-line tool.

    wsim simulate                      # 8192^3 BF16 on B200 with CUTLASS's default SM100 config
    wsim simulate --arch h200 --schedule pingpong --m 4096 --n 4096 --k 4096
    wsim simulate --config my.toml --json
    wsim simulate --arrival-count clc.empty=224      # what if the CLC count forgot the cluster factor?
    wsim plot ...                      # timelines, stage occupancy, stall breakdowns, Perfetto

Every config field is a flag (``--mma-tile-n 128``); a TOML file may set them too, in a
``[config]`` table, with arch constant overrides in ``[arch]`` and protocol knobs in ``[knobs]``.
Flags win over the file. Bad input prints one line naming the value and the rule, and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import MISSING, fields
from typing import Any

from simulator.engine.trace import TraceFormatError
from simulator.errors import ConfigError
from simulator.kernels.config_io import load_toml
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec, get_arch
from simulator.protocol.knobs import ProtocolKnobs

_BOOL_FIELDS = {"use_2sm", "read_c", "overlapping_accum"}


def _config_fields() -> dict[str, tuple[type, tuple[str, ...]]]:
    """field name -> (python type, config classes that have it)."""
    out: dict[str, tuple[type, tuple[str, ...]]] = {}
    for cls in (Sm100GemmConfig, Sm90GemmConfig):
        for f in fields(cls):
            typ = int if ("int" in str(f.type) and f.name not in _BOOL_FIELDS) else (
                bool if f.name in _BOOL_FIELDS else str)
            prev = out.get(f.name, (typ, ()))
            out[f.name] = (typ, prev[1] + (cls.__name__,))
    return out


def _bool(s: str) -> bool:
    v = s.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"{s!r} is not a boolean (use true/false)")


def _kv(s: str) -> tuple[str, str]:
    if "=" not in s:
        raise argparse.ArgumentTypeError(f"{s!r}: expected NAME=VALUE")
    k, v = s.split("=", 1)
    return k.strip(), v.strip()


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (the value and what was expected), exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="wsim", description="Cycle-approximate simulator of warp-specialized GEMM kernels")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    s = sub.add_parser("simulate", help="predict time, throughput, per-role waits and deadlocks of one GEMM")
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
    k = s.add_argument_group("protocol knobs (what if?)")
    k.add_argument("--arrival-count", action="append", type=_kv, default=[], metavar="PIPE.SIDE=N",
                   help="initialise a barrier with another arrival count, e.g. clc.empty=224")
    k.add_argument("--producer-start-phase", action="append", type=_kv, default=[], metavar="PIPE=PHASE",
                   help="start a producer in another phase, e.g. mainloop=0")
    k.add_argument("--skip-release", action="append", default=[], metavar="PIPE",
                   help="consumers of this pipeline never release a stage")
    k.add_argument("--no-clc-throttle", action="store_true", help="Sched does not wait for the CLC throttle")
    s.add_argument("--json", action="store_true", help="print machine-readable results")
    s.add_argument("--trace", metavar="FILE", help="write the run in the shared trace format (.npz, or .json for Perfetto)")
    s.add_argument("--trace-sms", metavar="LIST", help="SMs to trace, e.g. 0-7,64 (default: all)")
    from simulator.views.plot_cli import add_plot_parser
    add_plot_parser(sub)
    try:
        from validation.compare import add_validate_parser
    except ImportError:  # pragma: no cover - validation is installed with the package
        pass
    else:
        add_validate_parser(sub)
    return p


def _coerce(name: str, value: Any, typ: type) -> Any:
    if value is None or isinstance(value, typ):
        return value
    if typ is bool:
        if isinstance(value, str):
            return _bool(value)
        raise ConfigError(f"config field {name}={value!r}: expected true or false")
    try:
        return typ(value)
    except (TypeError, ValueError):
        raise ConfigError(f"config field {name}={value!r}: expected {typ.__name__}") from None


def resolve_inputs(args) -> tuple[Any, ArchSpec, ProtocolKnobs]:
    """Config, arch and knobs from the TOML file and the flags (flags win)."""
    file: dict[str, Any] = load_toml(args.config) if args.config else {}
    unknown = set(file) - {"config", "arch", "knobs"}
    if unknown:
        raise ConfigError(f"{args.config}: unknown table(s) {sorted(unknown)}; allowed: [config], [arch], [knobs]")
    arch_table = dict(file.get("arch", {}))
    arch_name = args.arch or arch_table.pop("name", None) or "b200"
    arch = get_arch(arch_name)
    overrides = {k: v for k, v in arch_table.items()}
    overrides.update({k: v for k, v in args.arch_set})
    if overrides:
        arch = arch.with_overrides(overrides, origin="--arch-set/[arch]")
    cls = Sm100GemmConfig if arch.sm_version == 100 else Sm90GemmConfig
    valid = {f.name: f for f in fields(cls)}
    types = _config_fields()
    values: dict[str, Any] = {}
    for key, val in dict(file.get("config", {})).items():
        if key not in valid:
            raise ConfigError(f"[config] {key}={val!r}: not a field of {cls.__name__}; valid: {', '.join(valid)}")
        values[key] = _coerce(key, val, types[key][0])
    for name in types:
        v = getattr(args, f"cfg_{name}", None)
        if v is None:
            continue
        if name not in valid:
            raise ConfigError(f"--{name.replace('_', '-')}={v}: not a field of {cls.__name__} "
                              f"(arch {arch.name}); valid: {', '.join(valid)}")
        values[name] = v
    for name, f in valid.items():
        if f.default is MISSING and name not in values:
            raise ConfigError(f"config field {name} has no default and was not given")
    cfg = cls(**values)
    kn = dict(file.get("knobs", {}))
    arrival = dict(kn.get("arrival_counts", {}))
    for key, v in args.arrival_count:
        arrival[key] = v
    phases = dict(kn.get("producer_start_phase", {}))
    for key, v in args.producer_start_phase:
        phases[key] = v
    try:
        arrival = {k: int(v) for k, v in arrival.items()}
        phases = {k: int(v) for k, v in phases.items()}
    except ValueError as e:
        raise ConfigError(f"protocol knob: {e}; counts and phases are integers") from None
    knobs = ProtocolKnobs.make(arrival_counts=arrival, producer_start_phase=phases,
                               skip_release=tuple(kn.get("skip_release", ())) + tuple(args.skip_release),
                               clc_throttle=bool(kn.get("clc_throttle", True)) and not args.no_clc_throttle)
    return cfg, arch, knobs


def cmd_simulate(args) -> int:
    from simulator.engine import simulate
    from simulator.views.plot_cli import PlotArgError, parse_sm_list
    from simulator.views.report import format_result

    cfg, arch, knobs = resolve_inputs(args)
    trace_sms = None
    if args.trace_sms:
        try:
            trace_sms = parse_sm_list(args.trace_sms, "--trace-sms")
        except PlotArgError as e:
            raise ConfigError(str(e)) from None
    res = simulate(cfg, arch, knobs=knobs, trace=bool(args.trace), trace_sms=trace_sms)
    if args.trace and res.trace is not None:
        if args.trace.endswith((".json", ".json.gz")):
            from simulator.views.perfetto import write_perfetto
            from simulator.views.plot_cli import PERFETTO_ALL_SMS_LIMIT
            from simulator.views.plots import default_sms
            sms = None
            if trace_sms is None and len(res.trace) > PERFETTO_ALL_SMS_LIMIT:
                # A whole 8192^3 run is millions of Perfetto events: keep a few SMs unless asked.
                sms = default_sms(res.trace)
                print(f"wsim: note: {len(res.trace)} spans; the Perfetto file keeps SMs "
                      f"{','.join(map(str, sms))} (use --trace-sms, or a .npz trace and wsim plot)",
                      file=sys.stderr)
            write_perfetto(res.trace, args.trace, sms=sms)
        else:
            res.trace.save(args.trace)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2, default=str))
    else:
        print(format_result(res))
        if args.trace:
            print(f"\ntrace written to {args.trace} ({len(res.trace)} spans simulated)")
    return 0 if res.deadlock is None else 3


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        argv = ["simulate"]
    args = parser.parse_args(argv)
    try:
        if args.command == "simulate":
            return cmd_simulate(args)
        if args.command == "plot":
            from simulator.views.plot_cli import run_plot
            return run_plot(args)
        if args.command == "validate":
            from validation.compare import run_validate
            return run_validate(args)
        parser.print_help()
        return 2
    except (ConfigError, TraceFormatError) as e:
        print(f"wsim: error: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"wsim: error: {e.filename or e}: no such file", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into head & co.
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
