"""``wsim sweep``: many configs on every core, one result row per config (CSV / JSON / JSON lines).

    wsim sweep --grid mma_tile_n=64,128,256 --grid cluster_m=2,4 --set m=4096 --set n=4096 --out s.csv
    wsim sweep --configs list.toml --arch h200 --out s.json
    wsim sweep --configs list.csv --grid swizzle=1,8 --backend ray

``--configs`` reads a list (TOML: ``[[config]]`` tables and an optional ``[base]`` table applied to
each; CSV: a header of field names, one config per row, an empty cell = the default; or a result
file of wsim sweep or wsim tune, .csv/.json/.jsonl, whose result columns (index, arch, status,
time_us, ..., rank, stage, ...) are skipped with a note, so that its configs run again); each ``--grid
FIELD=V1,V2,...`` multiplies the list (or the single default config) by its values; ``--set
FIELD=VALUE`` fixes a field everywhere (each field once: two axes on one field, or a ``--set`` of a
grid field, is an error; so is an empty value). Rows go to ``--out`` as they finish (the closed file
in input order); without ``--out`` a short table is printed. Ctrl-C (exit 130) and SIGTERM (143)
keep the rows finished so far in ``--out``.
Both the printed table and the file say which arch and constants produced the rows (arch, clock,
overrides, fitted and estimated constants: a header block; a .json file's "constants" object, or
the sidecar NAME.constants.json beside a .csv/.jsonl file).
"""

from __future__ import annotations

import sys

from simulator.engine.sweep import (
    FORMATS,
    RESULT_FILE_COLUMNS,
    constants_path,
    expand_grid,
    load_config_list,
    out_format,
    parse_value,
    run_sweep,
)
from simulator.engine.tune import EXTRA_COLUMNS as TUNE_COLUMNS
from simulator.errors import ConfigError
from simulator.kernels.config_io import config_from_mapping
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.provenance import arch_provenance, provenance_lines
from simulator.views.run_args import (
    EXIT_TERMINATED,
    add_batch_arguments,
    batch_options,
    check_output_file,
    interrupted_exit_code,
    note_core,
    split_kv,
)


def add_sweep_parser(sub):
    s = sub.add_parser("sweep", help="simulate many configs on every core (or Ray); one row per config")
    s.add_argument("--configs", metavar="FILE", help="config list: .toml ([[config]], optional [base]), .csv, or a "
                   "sweep/tune result file (.csv/.json/.jsonl; its result columns are skipped)")
    s.add_argument("--grid", action="append", default=[], metavar="FIELD=V1,V2,...",
                   help="multiply the configs by these values of a field (repeatable)")
    s.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="fix a field in every config (repeatable; wins over the list)")
    s.add_argument("--out", metavar="FILE", help="write the rows to .csv, .json or .jsonl as they finish")
    add_batch_arguments(s)
    return s


def grid_and_set(grid_args: list[str], set_args: list[str], cls) -> tuple[list, dict]:
    """``--grid FIELD=V1,V2,...`` axes and ``--set FIELD=VALUE`` values, checked: every value given
    (no empty value; ``none`` only for a field derived when left out), one axis or value per field."""
    given: dict[str, str] = {}

    def claim(name: str, flag: str) -> None:
        if name in given:
            raise ConfigError(f"{flag} and {given[name]} both set {name}: give each field once (one --grid axis "
                              f"with every value, e.g. --grid {name}=V1,V2,V3, or one --set)")
        given[name] = flag

    grid = []
    for g in grid_args:
        name, text = split_kv(g, "--grid")
        if not text or any(v.strip() == "" for v in text.split(",")):
            raise ConfigError(f"--grid {g!r}: empty value in the list (expected FIELD=V1,V2,...)")
        claim(name, f"--grid {g}")
        grid.append((name, [parse_value(cls, name, v, f"--grid {name}", empty_ok=False) for v in text.split(",")]))
    fixed = {}
    for a in set_args:
        name, text = split_kv(a, "--set")
        claim(name, f"--set {a}")
        fixed[name] = parse_value(cls, name, text, f"--set {name}", empty_ok=False)
    return grid, fixed


def build_configs(args, cls, arch_name: str | None = None) -> list:
    base_list = [{}]
    if args.configs:
        # a sweep's or a tune's own result file may be re-run: its result columns are skipped
        base_list = load_config_list(args.configs, cls, ignore_columns=(*RESULT_FILE_COLUMNS, *TUNE_COLUMNS),
                                     arch_name=arch_name,
                                     note=lambda m: print(f"wsim: note: {m}", file=sys.stderr))
    if args.configs and not base_list:
        raise ConfigError(f"--configs {args.configs}: no config in the file")
    grid, fixed = grid_and_set(args.grid, args.set, cls)
    out = []
    for i, base in enumerate(base_list):
        for d in expand_grid(base, grid):
            d = {**d, **fixed}
            origin = f"{args.configs} config {i + 1}" if args.configs else "--grid/--set"
            out.append(config_from_mapping(cls, {k: v for k, v in d.items() if v is not None}, origin))
    return out


def run_sweep_cmd(args) -> int:
    arch, opts = batch_options(args)
    if args.out:
        check_output_file(args.out, "--out", FORMATS, "result rows")
    cls = Sm100GemmConfig if arch.sm_version == 100 else Sm90GemmConfig
    configs = build_configs(args, cls, arch.name)
    note_core()
    rows = []
    try:
        rows = run_sweep(configs, arch, out=args.out, **opts)
    except KeyboardInterrupt:
        code = interrupted_exit_code()
        where = f"; the rows finished so far are in {args.out}" if args.out else ""
        print(f"wsim: sweep {'terminated' if code == EXIT_TERMINATED else 'interrupted'}{where}", file=sys.stderr)
        return code
    bad = [r for r in rows if not r.ok]
    print(f"wsim sweep: {len(configs)} config(s) on {arch.name}")
    print("\n".join(provenance_lines(arch_provenance(arch, opts["clock"]))))
    print()
    if args.out:
        where = "" if out_format(args.out) == ".json" else f"; constants in {constants_path(args.out)}"
        print(f"{len(rows)} rows written to {args.out} ({len(bad)} with an error{where})")
    else:
        from simulator.views.sweep_view import rows_table  # (matplotlib loads only here)
        print(rows_table(rows))
    internal = [r for r in bad if r.error.startswith("internal error")]
    if internal:
        print(f"wsim: {len(internal)} config(s) hit an internal error of the simulator, e.g. row {internal[0].index}: "
              f"{internal[0].error}", file=sys.stderr)
        return 1
    return 0
