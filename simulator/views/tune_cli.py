"""``wsim tune``: rank the candidate configs for one GEMM problem (see simulator.engine.tune).

    wsim tune --m 4096 --n 4096 --k 4096                       # B200, full SM100 space, staged search
    wsim tune --m 4096 --n 4096 --k 4096 --arch h200 --space hw --out tune.csv
    wsim tune --m 4096 --n 7168 --k 16384 --dtype fp16 --space gemm-model
"""

from __future__ import annotations

import sys

from simulator.engine.sweep import FORMATS, constants_path, out_format
from simulator.engine.tune import SEARCHES, tune
from simulator.errors import ConfigError
from simulator.kernels.space import SPACES
from simulator.views.run_args import (
    EXIT_TERMINATED,
    EXIT_USAGE,
    add_batch_arguments,
    batch_options,
    check_output_file,
    interrupted_exit_code,
    note_core,
    positive_int,
)


def add_tune_parser(sub):
    s = sub.add_parser("tune", help="rank the candidate configs of a GEMM problem by predicted time")
    s.add_argument("--m", required=True, metavar="M", help="problem rows")
    s.add_argument("--n", required=True, metavar="N", help="problem columns")
    s.add_argument("--k", required=True, metavar="K", help="reduction extent")
    s.add_argument("--dtype", default="bf16", help="A/B data type (default bf16); D is the same 16-bit type, "
                   "or bf16 for 8-bit inputs")
    s.add_argument("--dtype-d", default=None, help="output type (default: see --dtype)")
    s.add_argument("--space", default="full", help="full (default), hw (the SM90 hardware twin's configs) or "
                   "gemm-model (the 16 B200 configs of hbarclay/gemm-model)")
    s.add_argument("--search", default="auto", help="auto (default: exhaustive for small spaces), staged or exhaustive")
    s.add_argument("--beam", default="2", metavar="N", help="best configs each later search stage starts from (default 2)")
    s.add_argument("--no-prune", action="store_true", help="simulate candidates the bound rules out too")
    s.add_argument("--top", default="10", metavar="N", help="rows of the printed table (default 10)")
    s.add_argument("--out", metavar="FILE", help="write the whole ranked table (.csv, .json or .jsonl)")
    add_batch_arguments(s)
    return s


def run_tune_cmd(args) -> int:
    m = positive_int(args.m, "--m")
    n = positive_int(args.n, "--n")
    k = positive_int(args.k, "--k")
    top = positive_int(args.top, "--top")
    beam = positive_int(args.beam, "--beam")
    if args.space not in SPACES:
        raise ConfigError(f"--space={args.space!r}: unknown; valid: {', '.join(SPACES)}")
    if args.search not in SEARCHES:
        raise ConfigError(f"--search={args.search!r}: unknown; valid: {', '.join(SEARCHES)}")
    arch, opts = batch_options(args)
    if args.out:
        check_output_file(args.out, "--out", FORMATS, "tables")
    note_core()
    res = tune(m, n, k, dtype=args.dtype, dtype_d=args.dtype_d, arch=arch, space=args.space, top=top,
               search=args.search, beam=beam, prune=False if args.no_prune else None, on_interrupt="return",
               **opts)
    print(res.table(top))
    if args.out:
        res.write(args.out)
        where = "" if out_format(args.out) == ".json" else f"; constants in {constants_path(args.out)}"
        print(f"\nthe whole table ({len(res.rows)} rows) written to {args.out}{where}")
    if res.interrupted:
        code = interrupted_exit_code()
        print(f"wsim: tune {'terminated' if code == EXIT_TERMINATED else 'interrupted'}: the table holds what had "
              "finished", file=sys.stderr)
        return code
    if res.best is None:
        bad = next((r for r in res.rows if r.status == "error"), None)
        why = f": e.g. rank {bad.extra.get('rank')}: {bad.error}" if bad is not None else ""
        print(f"wsim: error: no candidate of M={m} N={n} K={k} could be simulated{why}", file=sys.stderr)
        return EXIT_USAGE
    return 0
