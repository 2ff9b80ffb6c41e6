"""``wsim sweep``: many configs on every core, one result row per config (CSV / JSON / JSON lines).

    wsim sweep --grid mma_tile_n=64,128,256 --grid cluster_m=2,4 --set m=4096 --set n=4096 --out s.csv
    wsim sweep --configs list.toml --arch h200 --out s.json
    wsim sweep --configs list.csv --grid swizzle=1,8 --backend ray

``--configs`` reads a list (TOML: ``[[config]]`` tables and an optional ``[base]`` table applied to
each; CSV: a header of field names, one config per row, an empty cell = the default); each ``--grid
FIELD=V1,V2,...`` multiplies the list (or the single default config) by its values; ``--set
FIELD=VALUE`` fixes a field everywhere. Rows go to ``--out`` as they finish (input order kept);
without ``--out`` a short table is printed. Ctrl-C keeps the rows finished so far in ``--out``.
"""

from __future__ import annotations

import sys

from simulator.errors import ConfigError


def add_sweep_parser(sub):
    s = sub.add_parser("sweep", help="simulate many configs on every core (or Ray); one row per config")
    s.add_argument("--arch", default="b200", help="b200 (sm100, default) or h200 (sm90)")
    s.add_argument("--configs", metavar="FILE", help="config list: .toml ([[config]], optional [base]) or .csv")
    s.add_argument("--grid", action="append", default=[], metavar="FIELD=V1,V2,...",
                   help="multiply the configs by these values of a field (repeatable)")
    s.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="fix a field in every config (repeatable; wins over the list)")
    s.add_argument("--arch-set", action="append", default=[], metavar="NAME=VALUE",
                   help="override an arch constant, e.g. clock_ghz=1.3")
    s.add_argument("--out", metavar="FILE", help="write the rows to .csv, .json or .jsonl as they finish")
    s.add_argument("--workers", metavar="N", help="worker processes (default: every CPU this process may use)")
    s.add_argument("--backend", default="process", help="process (default), serial or ray")
    s.add_argument("--ray-address", metavar="ADDR", help="Ray cluster to attach to (default: $RAY_ADDRESS or local)")
    s.add_argument("--max-events", metavar="N", help="event budget of each run (configs over it become error rows; "
                   "0 = no limit; default: simulate's, as for wsim simulate)")
    s.add_argument("--engine", default=None, help="simulation engine: fast or reference (default: simulate's)")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    return s


def note_core() -> None:
    """Say on stderr when the simulator's hot modules run as pure Python (a stale or missing build):
    a sweep or a tune then takes several times as long, with the same results."""
    from simulator import _native

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


def arch_from_args(name: str, overrides: list[str]):
    from simulator.machine.arch import get_arch

    arch = get_arch(name)
    if overrides:
        values: dict[str, float] = {}
        for o in overrides:
            key, text = split_kv(o, "--arch-set")
            try:
                values[key] = int(text)
            except ValueError:
                try:
                    values[key] = float(text)
                except ValueError:
                    raise ConfigError(f"--arch-set {key}={text!r}: must be a number") from None
        arch = arch.with_overrides(values, origin="--arch-set")
    return arch


def build_configs(args, cls) -> list:
    from simulator.engine.sweep import expand_grid, load_config_list, parse_value
    from simulator.kernels.config_io import config_from_mapping

    base_list = load_config_list(args.configs, cls) if args.configs else [{}]
    if args.configs and not base_list:
        raise ConfigError(f"--configs {args.configs}: no config in the file")
    grid = []
    for g in args.grid:
        name, text = split_kv(g, "--grid")
        if not text or any(v.strip() == "" for v in text.split(",")):
            raise ConfigError(f"--grid {g!r}: empty value in the list (expected FIELD=V1,V2,...)")
        values = [parse_value(cls, name, v, f"--grid {name}") for v in text.split(",")]
        grid.append((name, values))
    fixed = {}
    for s in args.set:
        name, text = split_kv(s, "--set")
        fixed[name] = parse_value(cls, name, text, f"--set {name}")
    out = []
    for i, base in enumerate(base_list):
        for d in expand_grid(base, grid):
            d = {**d, **fixed}
            origin = f"{args.configs} config {i + 1}" if args.configs else "--grid/--set"
            out.append(config_from_mapping(cls, {k: v for k, v in d.items() if v is not None}, origin))
    return out


def run_sweep_cmd(args) -> int:
    from simulator.engine.sweep import BACKENDS, run_sweep
    from simulator.kernels.sm90_config import Sm90GemmConfig
    from simulator.kernels.sm100_config import Sm100GemmConfig

    arch = arch_from_args(args.arch, args.arch_set)
    cls = Sm100GemmConfig if arch.sm_version == 100 else Sm90GemmConfig
    workers = positive_int(args.workers, "--workers") if args.workers is not None else None
    max_events = max_events_arg(args.max_events)
    if args.backend not in BACKENDS:
        raise ConfigError(f"--backend={args.backend!r}: unknown; valid: {', '.join(BACKENDS)}")
    if args.engine is not None and args.engine not in ("fast", "reference"):
        raise ConfigError(f"--engine={args.engine!r}: unknown; valid: fast, reference")
    configs = build_configs(args, cls)
    note_core()
    rows = []
    try:
        rows = run_sweep(configs, arch, workers=workers, progress=not args.no_progress, out=args.out,
                         backend=args.backend, max_events=max_events, engine=args.engine,
                         ray_address=args.ray_address)
    except KeyboardInterrupt:
        where = f"; the rows finished so far are in {args.out}" if args.out else ""
        print(f"wsim: sweep interrupted{where}", file=sys.stderr)
        return 130
    bad = [r for r in rows if not r.ok]
    if args.out:
        print(f"{len(rows)} rows written to {args.out} ({len(bad)} with an error)")
    else:
        from simulator.engine.tune import describe_config

        print(f"{'#':>4} {'time us':>10} {'TFLOP/s':>8}  {'bottleneck':<17}  config / error")
        for r in rows:
            if r.ok:
                print(f"{r.index:>4} {r.time_us:>10.2f} {r.tflops:>8.1f}  {r.bottleneck:<17}  {describe_config(r.config)}")
            else:
                print(f"{r.index:>4} {'-':>10} {'-':>8}  {'error':<17}  {r.error}")
    internal = [r for r in bad if r.error.startswith("internal error")]
    if internal:
        print(f"wsim: {len(internal)} config(s) hit an internal error of the simulator, e.g. row {internal[0].index}: "
              f"{internal[0].error}", file=sys.stderr)
        return 1
    return 0
