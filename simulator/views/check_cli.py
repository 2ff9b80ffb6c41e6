"""``wsim check``: every mutation of the seed's barriers, run and classified (simulator.engine.check).

    wsim check                                  # the quick grid (CI): a few configs of both kernels
    wsim check --grid full --out validation/results/check_catalogue.md   # the catalogue (+ .json)
    wsim check --config my.toml                 # every mutation on your config
    wsim check --config my.toml --arrival-count clc.empty=223           # your own change, on your config

Exit codes (as ``wsim simulate``): 0 nothing found on the unmutated protocol (grid) or your change has
no effect; 3 your change (or the unmutated protocol) deadlocks; 4 it races (wrong-phase arrivals,
a stage overwritten while read, a read before its bytes landed, TMEM used after free); 2 bad input.
The parser's config and knob flags are ``wsim simulate``'s (``simulator.views.cli`` adds them).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from simulator.engine.check import CLASSES, GRIDS, Case, check_change, run_case, run_check
from simulator.errors import ConfigError
from simulator.views.check_report import describe_outcome
from simulator.views.run_args import EXIT_OK, check_output_file, positive_int

EXIT_DEADLOCK, EXIT_VIOLATIONS = 3, 4


def add_check_arguments(s) -> None:
    """The flags of ``wsim check`` besides the config and knob flags it shares with ``wsim simulate``."""
    g = s.add_argument_group("check")
    g.add_argument("--grid", choices=tuple(GRIDS), default=None,
                   help="the grid of configs: quick (default, CI) or full (the catalogue's); not with a config")
    g.add_argument("--out", metavar="FILE.md", help="write the catalogue (Markdown, and FILE.json beside it)")
    g.add_argument("--workers", default="1", metavar="N", help="processes for a grid (default 1)")
    g.add_argument("--mutation", action="append", default=[], metavar="TEXT",
                   help="only the mutations whose name contains TEXT (repeatable)")


def _exit_for(cls: str) -> int:
    return {"race+deadlock": EXIT_DEADLOCK, "deadlock": EXIT_DEADLOCK, "race": EXIT_VIOLATIONS}.get(cls, EXIT_OK)


def _config_given(args) -> bool:
    return bool(args.config) or any(getattr(args, a) is not None for a in vars(args) if a.startswith("cfg_")) \
        or bool(args.arch)


def _knobs_given(args) -> bool:
    return bool(args.arrival_count or args.producer_start_phase or args.skip_release or args.no_clc_throttle
                or args.skip_wait or args.wrong_parity or args.expect_tx or args.fixup_delta)


def _user_change(args, resolve_inputs: Callable) -> int:
    cfg, arch, knobs = resolve_inputs(args)
    if knobs.is_default:
        raise ConfigError("wsim check: give a change to check (--arrival-count, --skip-wait, --expect-tx, ...) "
                          "or no knob at all to run every mutation")
    base, o = check_change(cfg, arch, knobs, name="your change (" + "; ".join(knobs.describe()) + ")")
    print(f"wsim check: {type(cfg).__name__} M={cfg.m} N={cfg.n} K={cfg.k} on {arch.name}")
    print(f"seed protocol: {base.cls}" + (f": {base.detail}" if base.detail else " (nothing found)"))
    print(describe_outcome(o))
    if base.cls != "no effect":
        return _exit_for(base.cls)
    return _exit_for(o.cls)


def _only(args):
    if not args.mutation:
        return None
    return lambda m: any(t in m.id for t in args.mutation)


def _one_config(args, resolve_inputs: Callable) -> int:
    cfg, arch, _ = resolve_inputs(args)
    r = run_case(Case("your config", cfg, arch.name, arch), _only(args))
    print(f"wsim check: every mutation on {type(cfg).__name__} M={cfg.m} N={cfg.n} K={cfg.k} on {arch.name}")
    print(f"seed protocol: {r.baseline.cls}" + (f": {r.baseline.detail}" if r.baseline.detail else
                                                f" (nothing found, {r.baseline_cycles:,.0f} cycles)"))
    width = max((len(o.mutation) for o in r.outcomes), default=10)
    for o in r.outcomes:
        text = o.detail or o.why
        where = f"{o.cycle:>10,.0f}" if o.cycle is not None else " " * 10
        print(f"  {o.mutation:<{width}}  {o.cls:<13} {where}  {text[:160]}")
    return _exit_for(r.baseline.cls)


def _grid(args, twins: Callable | None) -> int:
    from simulator.views.check_report import catalogue, write

    grid = args.grid or "quick"
    workers = positive_int(args.workers, "--workers")
    out = check_output_file(args.out, "--out", (".md",), "the catalogue") if args.out else None
    cases = GRIDS[grid]()
    t0 = time.perf_counter()

    def progress(r, done: int, total: int) -> None:
        print(f"\r  [{done}/{total}] {r.case.id:<32}", end="", file=sys.stderr, flush=True)

    rep = run_check(cases, workers=workers, only=_only(args), progress=progress)
    print(file=sys.stderr)
    print(f"wsim check: {grid} grid, {len(cases)} configs, {len(rep.outcomes)} mutation runs in "
          f"{time.perf_counter() - t0:.1f} s")
    print(f"{'kernel':<8}" + "".join(f"{c:>15}" for c in CLASSES))
    for k in ("sm100", "sm90"):
        counts = rep.counts(k)
        print(f"{k:<8}" + "".join(f"{counts[c]:>15}" for c in CLASSES))
    bad = rep.baseline_findings
    print(f"unmutated protocol: {len(rep.cases) - len(bad)} of {len(rep.cases)} configs with nothing found")
    for b in bad:
        print(f"  FINDING on {b.config}: {b.cls}: {b.detail}")
    for o in rep.unexplained():
        print(f"  no effect without a reason: {o.mutation} on {o.config}: {o.why}")
    if out is not None:
        cmd = "wsim check --grid " + grid + (f" --out {args.out}" if args.out else "")
        md, js = write(catalogue(rep, grid=grid, command=cmd, twins=twins(rep) if twins else None), str(out))
        print(f"catalogue written to {md} and {js}")
    return max((_exit_for(b.cls) for b in bad), default=EXIT_OK)


def run_check_cmd(args, resolve_inputs: Callable, twins: Callable | None = None) -> int:
    """``wsim check``: ``resolve_inputs`` is ``wsim simulate``'s (config, arch and knobs from the flags);
    ``twins`` (report -> rows) adds the hardware twins' counts to a written catalogue."""
    if _config_given(args) or _knobs_given(args):
        if args.grid or args.out:
            raise ConfigError("wsim check: --grid/--out check a grid of configs; with --config, an --arch or "
                              "config flags it checks that one config (give one or the other)")
        return _user_change(args, resolve_inputs) if _knobs_given(args) else _one_config(args, resolve_inputs)
    return _grid(args, twins)
