"""The H200 measurement campaign: every hardware-twin candidate against cuBLAS, with the in-kernel
span and clock of every timed launch, the host launch paths and the instrumentation overhead.

    python -m validation.campaign --out OUT [--quick] [--time-limit S] [--phases ...]   # on the GPU
    python -m validation.campaign --phases wide --out OUT --time-limit 470                # the wide campaign
    python -m validation.campaign --dry-run [--compile] --out OUT [--quick]             # CPU: plan + logic
    python -m validation.campaign --publish OUT [--dest validation/results]             # CPU: commit

Phases (in this order; each writes OUT/campaign.json when it finishes, and every shape as it goes):

* ``launch``: host time per launch of our kernel through the DSL's ordinary call, through arguments
  marshalled once (``Runner.launch``), through a captured CUDA graph, against cuBLAS (torch.matmul)
  and a graph of it; per-launch CUDA events with the GPU idle (the host path shows) and queued
  behind a busy kernel (it does not).
* ``overhead``: the span instrumentation (``LEVEL_SPAN``: per role a header and a footer) and the
  tile level against the uninstrumented kernel, alternating, same inputs.
* ``space``: for each problem of ``SPACE_SHAPES`` every candidate of
  ``simulator.kernels.space.hw_space()`` (96) plus cuBLAS, fp16, in one alternating run on the same
  random-normal inputs; each config checked once against a float32 reference (every output
  written; max abs error at most 2 x cuBLAS's on the same inputs).
* ``bf16``: bf16 rows, raster M and the heuristic, 128x64 tiles, clusters 1x1 and 2x1.
* ``small``: 1-10 us problems, timed both by queued per-launch events and by CUDA-graph replays
  of ``GRAPH_LAUNCHES`` launches (per launch = replay / launches), fp16 and bf16.
* ``streamk`` (not run unless named): the stream-K scheduler (issue 18) on small-MN/large-K, M <= 128 and
  wave-tail problems (``STREAMK_SHAPES``): every ``hw_space()`` candidate with max swizzle 1 (both rasters),
  data-parallel and each stream-K decomposition, plus cuBLAS, checked and timed as in ``space``.
* ``streamk_nd`` (not run unless named): the ``streamk`` phase's stream-K scheduler candidates (heuristic,
  stream-K, split-K by 2, 4, 8) with the nondeterministic reduction (middle splits add their partials with
  ``red.global.add.f32`` instead of waiting their turn), on ``STREAMK_SHAPES``, plus cuBLAS, checked and timed
  as in ``space``; published to ``h200_streamk_nd.json`` / ``.md``.
* ``streamk_fv4`` (not run unless named): the ``streamk`` phase's stream-K scheduler candidates with the
  16-byte fixup (``fixup_vec=4``: ld.global.cg.v4 / st.global.v4 per thread instead of one word), deterministic
  reduction, on ``STREAMK_SHAPES``, plus cuBLAS, checked and timed as in ``space``; published to
  ``<gpu>_streamk_fv4.json`` / ``.md``.
* ``small_m`` (not run unless named): M <= 128 (issue 18): the 64-row ping-pong tiles (each consumer
  warpgroup one 64 x tile_n tile, every tile_n the rules allow) beside the 128-row ping-pong and cooperative
  tiles, clusters 1x1, 1x2, 2x1, rasters M and N, max swizzle 1, data-parallel, on ``SMALL_M_SHAPES``, plus
  cuBLAS, checked and timed as in ``space``; published to ``h200_small_m.json`` / ``.md``.
* ``ragged_n`` (not run unless named): N that the 128/192/256-column tiles leave a part-empty last tile column
  (issue 18; ``RAGGED_N_SHAPES``, ``RAGGED_N_HELD_OUT`` reported apart): the cooperative tiles of ``hw_space()``
  beside the ragged-N widths (``HW_RAGGED_TILE_N``), every cluster and raster, max swizzle 1, data-parallel,
  heuristic and stream-K (deterministic), plus cuBLAS, checked and timed as in ``space``; published to
  ``<gpu>_ragged_n.json`` / ``.md`` (``h100`` or ``h200``: the lent machine is either).
* ``coop64`` (not run unless named): the twin's one-warpgroup cooperative kernel at 64 rows (issue 18), so that
  the stream-K scheduler splits 64-row tiles: data-parallel and every ``HW_DECOMPOSITIONS`` entry beside the
  64-row ping-pong, on ``COOP64_SHAPES`` (``COOP64_HELD_OUT`` reported apart), plus cuBLAS, checked and timed as
  in ``space``; published to ``<gpu>_coop64.json`` / ``.md``.
* ``picks`` (not run unless named): per problem of the issue-18 phases, ``wsim tune --arch h200 --space hw``'s
  pick (written down beforehand by :mod:`validation.tune_picks` in ``h200_tune_picks_plan.json``) beside the
  fastest config of each committed campaign that measured it, plus cuBLAS, checked and timed as in ``space``;
  published to ``<gpu>_picks.json`` / ``.md``.
* ``wide`` (not run unless named in ``--phases``): :mod:`validation.campaign_wide`'s
  problems, each split ``dev`` / ``held_out`` before anything runs, every candidate as in ``space``,
  fp16 and bf16; ``--publish`` writes held-out rows to their own file and no summary of them.

While the measuring phases run, :class:`validation.nvml_sampler.NvmlSampler` samples NVML power, SM
clock and clock-event reasons every 5 ms; every row gets the medians over its own launches' host-time
windows (``nvml_*``), every problem its samples and their medians over its alternating rounds.

Every timed launch of our kernel is compiled at ``LEVEL_SPAN`` and has its own record buffer: its row
carries the CUDA-event time (queued behind a busy kernel, so no host launch path: ``queued`` says
whether the whole round was enqueued before the GPU got to it), the in-kernel span (first role start
to last store landed, %globaltimer) and the effective SM clock (clock64 over globaltimer, inside the
kernel). Rounds alternate the configs of a shape (order rotating each round). The script stops
starting new work at ``--time-limit`` and always writes what it has.

Compiles: one per ``KernelConfig.compile_key()`` (raster and swizzle are run-time kernel arguments)
and dtype. ``--dry-run`` runs the same plan on a CPU: every config and problem through the kernel's
rules, the schedules, (``--compile``) every compile key compiled for sm_90a, and synthetic timings
(a roofline, not measurements) through the same summaries and writers. Nothing a dry run prints or
writes can pass for a measurement: every line it prints starts with ``[dry run]``, its result file
is ``campaign.dry_run.json`` (:data:`DRY_RUN_RESULT`, its ``env`` marked ``dry_run``), its default
folder ``campaign_out_dry_run``, and ``--publish`` refuses it (tests publish one only to check the
writers; those files are named ``h200_campaign.dry_run.*`` and titled DRY RUN).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from dataclasses import replace
from itertools import product
from pathlib import Path

from hw_kernels import records as R
from hw_kernels.host import KernelConfig
from hw_kernels.rules import can_implement, config_problems
from simulator.engine.out_path import check_output_dir
from simulator.kernels.space import HW_DECOMPOSITIONS, HW_RAGGED_TILE_N, HW_REDUCTIONS, hw_space
from validation import campaign_wide as W

RESULT = "campaign.json"
#: A dry run's result file (synthetic timings): named so that it cannot pass for a measured campaign.
DRY_RUN_RESULT = "campaign.dry_run.json"
#: What every line a dry run prints starts with.
DRY_RUN_PREFIX = "[dry run]"

#: Square, skinny M, skinny N, small K, large K, shapes that do not divide the tile, 1k-16k
#: (N and K multiples of 8), ordered so that the most informative come first under a time limit.
SPACE_SHAPES = [
    (8192, 8192, 8192),     # square, large
    (4096, 4096, 4096),     # square
    (2048, 2048, 2048),     # square, small (~30 us)
    (3000, 5000, 1000),     # divides no tile
    (1024, 16384, 8192),    # skinny M
    (16384, 1024, 8192),    # skinny N
    (8192, 8192, 512),      # small K
    (2048, 2048, 16384),    # large K
    (5000, 3000, 4104),     # divides no tile, K not a multiple of 64
    (777, 1536, 4104),      # small, M divides no tile
    (16384, 16384, 1024),   # large M and N
    (1024, 1024, 1024),     # smallest of the set (~5 us)
    (6144, 12288, 3000),    # rectangular, K not a multiple of 64
]
#: bf16 rows: shapes and configs (raster M and the heuristic, 128x64, clusters 1x1/2x1).
BF16_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048), (3000, 5000, 1000),
               (777, 1536, 4104), (8192, 8192, 512)]
BF16_CONFIGS = [
    KernelConfig(cluster_m=2, raster="heuristic", swizzle=4),
    KernelConfig(cluster_m=1, raster="heuristic", swizzle=1),
    KernelConfig(cluster_m=2, raster="m", swizzle=4),
    KernelConfig(tile_n=192, cluster_m=1, raster="heuristic", swizzle=1),
    KernelConfig(tile_n=192, cluster_m=2, raster="heuristic", swizzle=4),
    KernelConfig(tile_n=128, cluster_m=2, raster="heuristic", swizzle=4),
    KernelConfig(tile_n=128, cluster_m=1, raster="m", swizzle=1),
    KernelConfig(tile_n=64, cluster_m=1, raster="heuristic", swizzle=1),
    KernelConfig(tile_n=64, cluster_m=2, raster="m", swizzle=4),
    KernelConfig(schedule="pingpong", tile_n=128, cluster_m=2, raster="heuristic", swizzle=4),
    KernelConfig(schedule="pingpong", tile_n=128, cluster_m=1, raster="heuristic", swizzle=1),
    KernelConfig(schedule="pingpong", tile_n=128, cluster_m=2, raster="m", swizzle=1),
    KernelConfig(schedule="pingpong", tile_n=64, cluster_m=2, raster="heuristic", swizzle=4),
    KernelConfig(schedule="pingpong", tile_n=64, cluster_m=1, raster="heuristic", swizzle=1),
    KernelConfig(schedule="pingpong", tile_n=64, cluster_m=1, raster="m", swizzle=4),
    KernelConfig(schedule="pingpong", tile_n=64, cluster_m=2, raster="m", swizzle=1),
]
#: 1-10 us problems (timed with CUDA graphs as well), fp16 and bf16.
SMALL_SHAPES = [(128, 256, 128), (256, 256, 512), (512, 512, 1024), (256, 2048, 2048), (1024, 1024, 1024)]
SMALL_CONFIGS = [
    KernelConfig(cluster_m=1, raster="heuristic", swizzle=1),
    KernelConfig(tile_n=128, cluster_m=1, raster="heuristic", swizzle=1),
    KernelConfig(tile_n=128, cluster_m=2, raster="heuristic", swizzle=4),
    KernelConfig(tile_n=64, cluster_m=1, raster="m", swizzle=1),
    KernelConfig(schedule="pingpong", tile_n=128, cluster_m=1, raster="heuristic", swizzle=1),
    KernelConfig(schedule="pingpong", tile_n=64, cluster_m=1, raster="heuristic", swizzle=1),
    KernelConfig(schedule="pingpong", tile_n=64, cluster_m=2, raster="m", swizzle=4),
    KernelConfig(cluster_m=2, raster="heuristic", swizzle=4),
]
#: The ``streamk`` phase's problems (fp16): few output tiles on a long K, M <= 128, and wave tails, in the
#: order the time limit should keep them.
STREAMK_SHAPES = [(512, 512, 32768), (128, 4096, 65536), (1536, 1536, 12288), (12000, 800, 3000), (64, 28672, 4096),
                  (256, 1024, 65536), (32, 8192, 8192), (2304, 2304, 2304), (5000, 5000, 5000)]
#: The ``small_m`` phase's problems (fp16): M <= 128 (LLM decode / small-batch shapes), where a 128-row tile
#: runs at least partly empty, in the order the time limit should keep them.
SMALL_M_SHAPES = [(16, 28672, 4096), (32, 8192, 8192), (64, 28672, 4096), (64, 8192, 28672), (96, 12288, 4096),
                  (128, 4096, 65536), (128, 28672, 4096), (112, 4096, 14336)]
#: The ``small_m`` phase's tiles (schedule, tile_m, tile_n): the 64-row ping-pong at every tile_n the kernel's
#: rules accept, the 128-row ping-pong and cooperative tiles of ``hw_space()``.
SMALL_M_TILES = ([("pingpong", 64, tn) for tn in (64, 128, 192, 256)] + [("pingpong", 128, tn) for tn in (64, 128)]
                 + [("cooperative", 128, tn) for tn in (64, 128, 192, 256)])
SMALL_M_CLUSTERS = ((1, 1), (1, 2), (2, 1))
SMALL_M_RASTERS = ("m", "n")
#: The ``ragged_n`` phase's problems (fp16): N not a multiple of 128 (800 = 5 x 160, 672 = 7 x 96 = 3 x 224, ...),
#: in the order the time limit should keep them; ``RAGGED_N_HELD_OUT`` (chosen with the rest, before any was
#: measured) are summarised apart and used for no choice.
RAGGED_N_SHAPES = [(12000, 800, 3000), (8192, 1440, 4096), (16384, 672, 2048), (4096, 2400, 8192),
                   (6144, 3360, 4096), (3000, 5600, 2048)]
RAGGED_N_HELD_OUT = frozenset({(6144, 3360, 4096), (3000, 5600, 2048)})
#: Its stream-K scheduler decompositions (beside data-parallel): the ones a wave tail calls for.
RAGGED_N_DECOMPOSITIONS = (("data_parallel", 1), ("heuristic", 1), ("stream_k", 1))
#: The ``coop64`` phase's problems (fp16): M <= 512 with few output tiles or a long K, where the twin's
#: one-warpgroup cooperative kernel lets the stream-K scheduler split 64-row tiles, in the order the time limit
#: should keep them; ``COOP64_HELD_OUT`` (chosen with the rest, before any was measured) are summarised apart
#: and used for no choice.
COOP64_SHAPES = [(32, 8192, 8192), (256, 1024, 65536), (512, 512, 32768), (48, 16384, 8192), (384, 768, 40960),
                 (128, 4096, 65536), (64, 8192, 28672), (112, 4096, 14336), (64, 28672, 4096), (16, 28672, 4096)]
COOP64_HELD_OUT = frozenset({(48, 16384, 8192), (384, 768, 40960)})
#: Its tiles: the 64-row cooperative kernel at every tile_n of the small_m phase's 64-row ping-pong, which it
#: measures beside them (data-parallel).
COOP64_TILE_N = (64, 128, 192, 256)
#: Host time per config per alternating round beyond ``EST_ROUND_S`` (record-buffer read and span decode):
#: validation/results/h200_streamk.json, 64x28672x4096: 14.1 s of rounds over 15 rounds x 209 configs.
EST_CONFIG_ROUND_S = 0.0045
#: Launches per CUDA graph in the ``small`` phase.
GRAPH_LAUNCHES = 20
#: The instrumentation-overhead configs and problems.
OVERHEAD_CONFIGS = [KernelConfig(cluster_m=2, swizzle=4),
                    KernelConfig(schedule="pingpong", tile_n=128, cluster_m=2, swizzle=4),
                    KernelConfig(schedule="pingpong", tile_n=64, cluster_m=1)]
OVERHEAD_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048), (1024, 1024, 1024)]
#: The host-launch-path problems.
LAUNCH_SHAPES = [(128, 256, 64), (1024, 1024, 1024), (2048, 2048, 2048)]

PHASES = ("launch", "overhead", "space", "bf16", "small", "wide", "streamk", "small_m", "streamk_nd", "ragged_n",
          "coop64", "streamk_fv4", "picks")
#: The wide phase writes its result file at most this often (s) and at its end.
SAVE_EVERY_S = 30.0
#: What runs without ``--phases``: every phase but ``wide``, ``streamk``, ``small_m``, ``streamk_nd``,
#: ``ragged_n``, ``coop64``, ``streamk_fv4`` and ``picks`` (campaigns of their own).
DEFAULT_PHASES = PHASES[:-8]
#: The measuring phases (NVML sampled meanwhile); ``launch`` times host paths, so it runs without.
SAMPLED_PHASES = ("overhead", "space", "bf16", "small", "wide", "streamk", "small_m", "streamk_nd", "ragged_n",
                  "coop64", "streamk_fv4", "picks")


def space_configs() -> list[KernelConfig]:
    """The 96 data-parallel candidates of ``hw_space()`` as span-instrumented KernelConfigs (the stream-K
    ones are the ``streamk`` phase's)."""
    return [KernelConfig(**d, instrument=R.LEVEL_SPAN) for d in hw_space(HW_DECOMPOSITIONS[:1])]


def streamk_configs() -> list[KernelConfig]:
    """The ``streamk`` phase's candidates: every ``hw_space()`` config with max swizzle 1 and the deterministic
    reduction (span-instrumented)."""
    return [KernelConfig(**d, instrument=R.LEVEL_SPAN) for d in hw_space(reductions=HW_REDUCTIONS[:1])
            if d["swizzle"] == 1]


def streamk_nd_configs() -> list[KernelConfig]:
    """The ``streamk_nd`` phase's candidates: every stream-K scheduler config of ``hw_space()`` with max swizzle
    1 and the nondeterministic reduction (the ``streamk`` phase's, each with the other reduction)."""
    return [KernelConfig(**d, instrument=R.LEVEL_SPAN) for d in hw_space(reductions=HW_REDUCTIONS[1:])
            if d["swizzle"] == 1 and d.get("decomposition", "data_parallel") != "data_parallel"]


def streamk_fv4_configs() -> list[KernelConfig]:
    """The ``streamk_fv4`` phase's candidates: the ``streamk`` phase's stream-K scheduler configs (deterministic
    reduction) with the 16-byte fixup."""
    return [replace(c, fixup_vec=4) for c in streamk_configs() if c.decomposition != "data_parallel"]


def ragged_n_configs() -> list[KernelConfig]:
    """The ``ragged_n`` phase's candidates: the cooperative tiles of ``hw_space()`` but 128x64, and every
    ``HW_RAGGED_TILE_N`` width, each cluster and raster, max swizzle 1, ``RAGGED_N_DECOMPOSITIONS`` with the
    deterministic reduction (span-instrumented)."""
    return [KernelConfig(**d, instrument=R.LEVEL_SPAN)
            for d in hw_space(RAGGED_N_DECOMPOSITIONS, HW_REDUCTIONS[:1], ragged_n=HW_RAGGED_TILE_N)
            if d["swizzle"] == 1 and d["schedule"] == "cooperative" and d["tile_n"] > 64]


def small_m_configs() -> list[KernelConfig]:
    """The ``small_m`` phase's candidates (span-instrumented, data-parallel, max swizzle 1): every tile of
    ``SMALL_M_TILES`` the kernel's rules accept, in every cluster and raster of the phase."""
    out = []
    for sched, tm, tn in SMALL_M_TILES:
        for cm, cn in SMALL_M_CLUSTERS:
            for r in SMALL_M_RASTERS:
                c = KernelConfig(tile_m=tm, tile_n=tn, cluster_m=cm, cluster_n=cn, schedule=sched, raster=r,
                                 swizzle=1, instrument=R.LEVEL_SPAN)
                if not config_problems(c.tile_m, c.tile_n, c.tile_k, c.cluster_m, c.cluster_n, c.schedule, c.raster,
                                       c.swizzle, c.epilogue_tile_n, c.epilogue_store_stages, c.instrument):
                    out.append(c)
    return out


def coop64_configs() -> list[KernelConfig]:
    """The ``coop64`` phase's candidates (span-instrumented, max swizzle 1, clusters and rasters of the small_m
    phase): the 64-row cooperative tiles (``COOP64_TILE_N``) data-parallel and with each stream-K decomposition
    of ``HW_DECOMPOSITIONS`` (deterministic), then the 64-row ping-pong tiles (data-parallel)."""
    out = []
    for (dec, splits), tn, (cm, cn), r in product(HW_DECOMPOSITIONS, COOP64_TILE_N, SMALL_M_CLUSTERS, SMALL_M_RASTERS):
        out.append(KernelConfig(tile_m=64, tile_n=tn, cluster_m=cm, cluster_n=cn, schedule="cooperative", raster=r,
                                swizzle=1, decomposition=dec, splits=splits, instrument=R.LEVEL_SPAN))
    for tn, (cm, cn), r in product(COOP64_TILE_N, SMALL_M_CLUSTERS, SMALL_M_RASTERS):
        out.append(KernelConfig(tile_m=64, tile_n=tn, cluster_m=cm, cluster_n=cn, schedule="pingpong", raster=r,
                                swizzle=1, instrument=R.LEVEL_SPAN))
    return out


def _span(cfgs):
    return [replace(c, instrument=R.LEVEL_SPAN) for c in cfgs]


#: wsim tune's picks for the ``picks`` phase, written beforehand by :mod:`validation.tune_picks`.
TUNE_PICKS_PLAN = Path(__file__).resolve().parent / "results" / "h200_tune_picks_plan.json"


def load_tune_picks(path: Path | None = None) -> dict:
    """The committed tune-picks plan (:data:`TUNE_PICKS_PLAN`); a clear error if it is missing or names a
    config that is not a KernelConfig name."""
    path = TUNE_PICKS_PLAN if path is None else path
    if not path.is_file():
        raise SystemExit(f"{path}: missing; write it with python -m validation.tune_picks --out {path}")
    d = json.loads(path.read_text())
    for p in d.get("problems", []):
        for name in p["configs"]:
            if KernelConfig.from_name(name) is None:
                raise SystemExit(f"{path}: {p['m']}x{p['n']}x{p['k']}: config {name!r} is not a KernelConfig name")
    return d


def picks_plan(quick: bool = False) -> dict:
    """The ``picks`` phase's plan entry from the committed tune-picks plan (:data:`TUNE_PICKS_PLAN`): per
    problem its own configs (``per_shape``: wsim tune's pick and the committed campaigns' fastest),
    span-instrumented; ``configs`` is their union (rules and compiles). No plan file: an empty entry (the
    phase then measures nothing). ``quick``: two of its configs on a small problem."""
    if not TUNE_PICKS_PLAN.is_file():
        return {"shapes": [], "configs": [], "per_shape": {}, "dtype": "fp16"}
    per_shape: dict = {}
    for pr in load_tune_picks()["problems"]:
        per_shape[(pr["m"], pr["n"], pr["k"])] = [replace(KernelConfig.from_name(c), instrument=R.LEVEL_SPAN)
                                                  for c in pr["configs"]]
    if quick:
        first = next(iter(per_shape.values()))[:2]
        per_shape = {(200, 256, 8192): first}
    union = list({c.name(): c for cs in per_shape.values() for c in cs}.values())
    return {"shapes": list(per_shape), "configs": union, "per_shape": per_shape, "dtype": "fp16"}


def plan(quick: bool = False) -> dict:
    """What each phase measures (shapes, configs); ``quick``: a small subset that exercises everything."""
    space = space_configs()
    p = {
        "launch": {"shapes": LAUNCH_SHAPES, "configs": [KernelConfig(cluster_m=2, swizzle=4)]},
        "overhead": {"shapes": OVERHEAD_SHAPES,
                     "configs": [c for oc in OVERHEAD_CONFIGS for c in
                                 (oc, replace(oc, instrument=R.LEVEL_SPAN))]
                     + [replace(OVERHEAD_CONFIGS[0], instrument=R.LEVEL_TILE)]},
        "space": {"shapes": SPACE_SHAPES, "configs": space, "dtype": "fp16"},
        "bf16": {"shapes": BF16_SHAPES, "configs": _span(BF16_CONFIGS), "dtype": "bf16"},
        "small": {"shapes": SMALL_SHAPES, "configs": _span(SMALL_CONFIGS), "dtypes": ("fp16", "bf16")},
        "wide": _wide(W.run_order(), space),
        "streamk": {"shapes": STREAMK_SHAPES, "configs": streamk_configs(), "dtype": "fp16"},
        "small_m": {"shapes": SMALL_M_SHAPES, "configs": small_m_configs(), "dtype": "fp16"},
        "streamk_nd": {"shapes": STREAMK_SHAPES, "configs": streamk_nd_configs(), "dtype": "fp16"},
        "ragged_n": {"shapes": RAGGED_N_SHAPES, "configs": ragged_n_configs(), "dtype": "fp16"},
        "coop64": {"shapes": COOP64_SHAPES, "configs": coop64_configs(), "dtype": "fp16"},
        "streamk_fv4": {"shapes": STREAMK_SHAPES, "configs": streamk_fv4_configs(), "dtype": "fp16"},
        "picks": picks_plan(quick),
    }
    if quick:
        p["launch"]["shapes"] = LAUNCH_SHAPES[1:2]
        p["overhead"]["shapes"] = [(4096, 4096, 4096), (1024, 1024, 1024)]
        pick = [c for c in space if c.cluster_m * c.cluster_n <= 2 and c.swizzle == 4][:6] + space[-6:]
        p["space"] = {"shapes": [(2048, 2048, 2048), (3000, 5000, 1000)], "configs": pick, "dtype": "fp16"}
        p["bf16"] = {"shapes": [(777, 1536, 4104)], "configs": _span(BF16_CONFIGS[:4]), "dtype": "bf16"}
        p["small"] = {"shapes": [(256, 256, 512)], "configs": _span(SMALL_CONFIGS[:3]), "dtypes": ("fp16",)}
        order = [x for x in W.run_order() if x.cls != "long"]
        quick_wide = [next(x for x in order if not x.held_out and x.dtype == "fp16"), next(x for x in order if x.held_out),
                      next(x for x in order if not x.held_out and x.dtype == "bf16")]
        p["wide"] = _wide(quick_wide, pick)
        sk = streamk_configs()
        for ph, cfgs in (("streamk", sk), ("streamk_nd", streamk_nd_configs()), ("streamk_fv4", streamk_fv4_configs())):
            p[ph] = {"shapes": [(512, 512, 32768), (1000, 1032, 520)], "dtype": "fp16",
                     "configs": [c for c in cfgs if c.cluster_m * c.cluster_n <= 2 and c.tile_n in (64, 128)][:24]}
        sm = small_m_configs()
        p["small_m"] = {"shapes": [(64, 8192, 4096), (100, 4096, 2048)], "dtype": "fp16",
                        "configs": [c for c in sm if c.raster == "m" and c.cluster_m * c.cluster_n == 1]}
        p["ragged_n"] = {"shapes": [(1000, 800, 520)], "dtype": "fp16",
                         "configs": [c for c in ragged_n_configs() if c.raster == "m" and c.cluster_m * c.cluster_n == 1
                                     and c.tile_n in (128, 160)]}
        p["coop64"] = {"shapes": [(40, 1024, 4104), (200, 256, 8192)], "dtype": "fp16",
                       "configs": [c for c in coop64_configs() if c.raster == "m" and c.cluster_m * c.cluster_n == 1
                                   and c.tile_n in (64, 128)]}
    return p


def _wide(problems: list, configs: list) -> dict:
    """The wide phase's plan entry: problems in run order (each with its split), their shapes and dtypes."""
    return {"problems": problems, "shapes": [x.shape for x in problems], "configs": configs,
            "dtypes": tuple(sorted({x.dtype for x in problems}))}


def check_plan(p: dict) -> dict:
    """Every config through the kernel's rules, every problem through ``can_implement``; the compile
    keys the plan needs (per dtype). Raises ValueError naming what breaks a rule."""
    keys: dict[str, set] = {}
    bad = []
    for phase, d in p.items():
        dtypes = d.get("dtypes") or (d.get("dtype", "fp16"),)
        for cfg in d["configs"]:
            probs = config_problems(cfg.tile_m, cfg.tile_n, cfg.tile_k, cfg.cluster_m, cfg.cluster_n, cfg.schedule,
                                    cfg.raster, cfg.swizzle, cfg.epilogue_tile_n, cfg.epilogue_store_stages,
                                    cfg.instrument, cfg.decomposition, cfg.splits, cfg.reduction)
            bad += [f"{phase}: {cfg.name()}: {x}" for x in probs]
            for dt in dtypes:
                keys.setdefault(dt, set()).add(cfg.compile_key())
        for (m, n, k) in d["shapes"]:
            bad += [f"{phase}: {x}" for x in can_implement(m, n, k)]
    if bad:
        raise ValueError("; ".join(bad))
    return {dt: sorted(v, key=lambda c: c.name()) for dt, v in keys.items()}


# =============================================================================================== stats
def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))]


def summarize(name: str, launches: list[dict]) -> dict:
    """One row's statistics from its launches (``event_us``, ``span_us``, ``clock_ghz``, ``queued``)."""
    ev = [x["event_us"] for x in launches if x.get("event_us") is not None]
    sp = [x["span_us"] for x in launches if x.get("span_us") is not None]
    ck = [x["clock_ghz"] for x in launches if x.get("clock_ghz") is not None]
    gap = [x["event_us"] - x["span_us"] for x in launches
           if x.get("event_us") is not None and x.get("span_us") is not None]
    row = {"config": name, "n_launches": len(ev),
           "event_us": statistics.median(ev) if ev else None,
           "event_us_p10": _pct(ev, 0.1) if ev else None, "event_us_p90": _pct(ev, 0.9) if ev else None,
           "event_us_min": min(ev) if ev else None,
           "span_us": statistics.median(sp) if sp else None,
           "span_us_p10": _pct(sp, 0.1) if sp else None, "span_us_p90": _pct(sp, 0.9) if sp else None,
           "clock_ghz": statistics.median(ck) if ck else None,
           "clock_ghz_min": min(ck) if ck else None, "clock_ghz_max": max(ck) if ck else None,
           "event_minus_span_us": statistics.median(gap) if gap else None,
           "queued_fraction": (sum(bool(x.get("queued")) for x in launches) / len(launches)) if launches else None}
    nb = [x["neighbor_clock_ghz"] for x in launches if x.get("neighbor_clock_ghz") is not None]
    if nb:
        row["neighbor_clock_ghz"] = statistics.median(nb)
    return row


def _f(x, digits: int = 1) -> str:
    return "-" if x is None or x is False else f"{x:.{digits}f}"


def tflops(m, n, k, us):
    return 2.0 * m * n * k / (us * 1e-6) / 1e12 if us else None


# =============================================================================================== backends
class Gpu:
    """Device operations of the campaign on an H200 (torch + the DSL)."""

    dry_run = False

    def __init__(self, out: Path, log):
        import torch
        self.torch = torch
        self.out = out
        self.log = log
        self._kernels: dict = {}
        self.compile_s: dict = {}
        self.stream = torch.cuda.Stream()

    # ---- compile and prepare
    def kernel(self, cfg: KernelConfig, dtype: str):
        from hw_kernels.host import compile_sm90
        key = (cfg.compile_key(), dtype)
        if key not in self._kernels:
            t0 = time.time()
            self._kernels[key] = compile_sm90(key[0], dtype)
            self.compile_s[f"{key[0].name()}_{dtype}"] = round(time.time() - t0, 2)
        return self._kernels[key]

    def inputs(self, m, n, k, dtype, seed):
        from validation.collect import _inputs
        return _inputs(m, n, k, dtype, seed)

    def runner(self, cfg, dtype, a, b, c, slots=1):
        from hw_kernels.host import Runner
        return Runner(self.kernel(cfg, dtype), config=cfg).prepare(a, b, c, slots=slots)

    # ---- correctness
    def reference(self, a, b):
        from validation.collect import reference_errors
        return reference_errors(a, b)

    def check(self, launch, c, ref, cub_err) -> dict:
        from validation.collect import compare_to_reference
        c.fill_(float("nan"))
        launch()
        self.torch.cuda.synchronize()
        return compare_to_reference(c, ref, cub_err)

    # ---- timing
    def queued_round(self, launchers, order, busy_ms):
        from validation.timing import queued_round
        return queued_round(launchers, order, busy_ms)

    def spans(self, runner, slot=0) -> dict:
        from validation.timing import span_and_clock
        if not runner.config.instrument:  # the uninstrumented twin (overhead phase) records nothing
            return {"span_ns": None, "clock_ghz": None, "slices": 0, "slices_expected": 0}
        m, n, k = runner.problem
        return span_and_clock(runner.trace_buffer(slot), runner.cap, runner.grid_ctas(m, n, k),
                              runner.config.roles_per_cta)

    def zero_traces(self, runners):
        for r in runners:
            r._trace.zero_()

    def sampler(self):
        """An NVML sampler of this GPU (not started), or None with the reason logged."""
        from validation.nvml_sampler import NvmlSampler
        try:
            return NvmlSampler(period_s=W.NVML_PERIOD_S, index=self.torch.cuda.current_device())
        except (RuntimeError, ValueError) as e:
            self.log(f"no NVML samples: {e}")
            return None

    def sync(self):
        self.torch.cuda.synchronize()

    def free(self):
        self.torch.cuda.empty_cache()


class DryGpu:
    """A CPU stand-in with the same interface: rules, schedules and (optionally) real sm_90a compiles;
    synthetic timings from a roofline (:func:`roofline_us`) + 4 us, synthetic NVML readings
    (:class:`validation.campaign_wide.DryNvml`). Never published."""

    dry_run = True

    def __init__(self, out: Path, log, compile_kernels: bool = False):
        self.out, self.log = out, log
        self.compile_kernels = compile_kernels
        self._kernels: dict = {}
        self.compile_s: dict = {}
        self._rng = __import__("random").Random(1)
        self.stream = None

    def kernel(self, cfg, dtype):
        key = (cfg.compile_key(), dtype)
        if key not in self._kernels:
            t0 = time.time()
            if self.compile_kernels:
                import tempfile

                from hw_kernels.host import compile_sm90
                cwd = os.getcwd()
                with tempfile.TemporaryDirectory() as d:
                    os.chdir(d)
                    try:
                        self._kernels[key] = compile_sm90(key[0], dtype, device="cpu")
                    finally:
                        os.chdir(cwd)
                self.compile_s[f"{key[0].name()}_{dtype}"] = round(time.time() - t0, 2)
            else:
                self._kernels[key] = key      # planned, not compiled: no compile time to record
        return self._kernels[key]

    def inputs(self, m, n, k, dtype, seed):
        return (m, k, dtype), (n, k, dtype)

    class _Runner:
        def __init__(self, cfg, dtype, m, n, k, slots):
            self.config, self.problem, self.slots = cfg, (m, n, k), slots
            self.us, self.ctas = roofline_us(cfg, m, n, k)

        def launch(self, slot=0):
            pass

    def runner(self, cfg, dtype, a, b, c, slots=1):
        self.kernel(cfg, dtype)
        m, k, _ = a
        n = b[0]
        bad = can_implement(m, n, k)
        if bad:
            from simulator.errors import ConfigError
            raise ConfigError("; ".join(bad))
        return self._Runner(cfg, dtype, m, n, k, slots)

    def reference(self, a, b):
        return None, 0.05

    def check(self, launch, c, ref, cub_err):
        return {"nan": 0, "max_abs_err": 0.06, "rel_err": 3e-4, "cublas_max_abs_err": cub_err,
                "err_vs_cublas": 1.2, "ok": True}

    def queued_round(self, launchers, order, busy_ms):
        t_start = time.perf_counter()
        time.sleep(W.NVML_PERIOD_S)  # a round as long as the sampling period, so samples land in windows
        ev = {}
        for n in order:
            base = getattr(launchers[n], "dry_us", 10.0)
            ev[n] = (base + 4.0) * (1 + 0.02 * self._rng.random())
        # host windows: the round's real wall time shared out in proportion (so NVML samples land in them)
        t, scale, host_t = t_start, (time.perf_counter() + 1e-3 - t_start) / sum(ev.values()), {}
        for n in order:
            host_t[n] = (t, t + ev[n] * scale)
            t += ev[n] * scale
        return {"event_us": ev, "gap_us": dict.fromkeys(order, 0.0), "queued": True, "enqueue_ms": 1.0,
                "host_t": host_t}

    def spans(self, runner, slot=0):
        return {"span_ns": int(runner.us * 1e3 * (1 + 0.01 * self._rng.random())), "clock_ghz": 1.3 + 0.05 *
                self._rng.random(), "clock_ghz_min": 1.25, "clock_ghz_max": 1.4,
                "slices": runner.config.roles_per_cta * runner.ctas,
                "slices_expected": runner.config.roles_per_cta * runner.ctas}

    def zero_traces(self, runners):
        pass

    def sampler(self):
        from validation.nvml_sampler import NvmlSampler
        return NvmlSampler(period_s=W.NVML_PERIOD_S, nvml=W.DryNvml())

    def sync(self):
        pass

    def free(self):
        pass


def roofline_us(cfg: KernelConfig, m: int, n: int, k: int) -> tuple[float, int]:
    """The dry run's synthetic time of ``cfg`` on (m, n, k) and its CTA count: waves of tiles at 1/132 of
    660 TFLOP/s per SM (fewer CTAs than SMs run at their own SMs' rate), or the unique bytes at 4.8 TB/s;
    15% more for ping-pong 128x64. Not a model: a stand-in of the right size for plans and estimates."""
    from hw_kernels.host import H200_SMS
    cs = cfg.cluster_m * cfg.cluster_n
    ctas = min(cfg.schedule_for(m, n).clusters, H200_SMS // cs) * cs
    waves = math.ceil(math.ceil(m / cfg.tile_m) * math.ceil(n / cfg.tile_n) / ctas)
    flop_s = 2.0 * cfg.tile_m * cfg.tile_n * math.ceil(k / 64) * 64 * waves / (660e12 / H200_SMS)
    byte_s = 2.0 * (m * k + n * k + m * n) / 4.8e12
    return max(flop_s, byte_s) * 1e6 * (1.15 if cfg.schedule == "pingpong" and cfg.tile_n == 64 else 1.0), ctas


#: GPU-time estimate of a plan (:func:`estimate_seconds`), from the committed campaign
#: (validation/results/h200_campaign.json): measured event time over roofline_us + 4 us summed over
#: each space problem's 96 configs + cuBLAS: 0.98-1.57 (median 1.17), so 1.3; its elapsed 67.5 s held
#: 29.8 s of 40 compiles (0.75 s each) and ~19 s of event time over 36 measured problems, so at most
#: ~0.5 s of host work per problem: 1.5 s assumed (NVML sampling, larger problems), and 15 ms of host
#: work per round (97 enqueues, 96 record-buffer reads).
EST_ROOFLINE_FACTOR, EST_COMPILE_S, EST_PROBLEM_S, EST_ROUND_S = 1.3, 0.75, 1.5, 0.015


def estimate_seconds(shape, configs, *, budget_s: float, max_rounds: int, min_rounds: int) -> tuple[float, int]:
    """Estimated wall time of one ``measure_shape`` call (prepare, checks, 2 warm-up rounds and its
    rounds, with cuBLAS) and its round count, by the rule ``measure_shape`` uses."""
    m, n, k = shape
    t_round = EST_ROOFLINE_FACTOR * (sum(roofline_us(c, m, n, k)[0] + 4.0 for c in configs)
                                     + 2e6 * m * n * k / 700e12 + 4.0)
    rounds = max(min_rounds, min(max_rounds, int(budget_s * 1e6 / t_round)))
    return EST_PROBLEM_S + (rounds + 2) * (t_round * 1e-6 + EST_ROUND_S), rounds


def small_m_rounds(quick: bool) -> dict:
    """The ``small_m`` phase's round rule (``measure_shape``'s budget_s, max_rounds, min_rounds)."""
    return {"budget_s": 0.6 if quick else 1.5, "max_rounds": 30, "min_rounds": 10}


def small_m_estimate_seconds(p: dict, quick: bool = False) -> float:
    """Estimated GPU-machine seconds of the ``small_m`` phase's measuring (compiles apart):
    :func:`estimate_seconds` per problem plus ``EST_CONFIG_ROUND_S`` per config and round (warm-ups
    included)."""
    total = 0.0
    for shape in p["shapes"]:
        t, rounds = estimate_seconds(shape, p["configs"], **small_m_rounds(quick))
        total += t + (rounds + 2) * len(p["configs"]) * EST_CONFIG_ROUND_S
    return total


# =============================================================================================== phases
class Campaign:
    def __init__(self, gpu, out: Path, command: str, deadline: float, quick: bool):
        from validation.collect import environment
        self.gpu, self.out, self.deadline, self.quick = gpu, out, deadline, quick
        env = environment(command) if not gpu.dry_run else {"command": command}
        env["dry_run"] = gpu.dry_run
        if not gpu.dry_run:
            import torch
            env["cublas_fp16_reduced_precision_reduction"] = torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
            env["cublas_bf16_reduced_precision_reduction"] = torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        env["date_utc"] = env.get("date_utc") or time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
        self.res = {"env": env, "plan": {}, "rows": [], "launch_path": [], "overhead": [], "checks": [],
                    "launches": {}, "problems": {}, "nvml": {}, "skipped": [], "errors": []}
        self.t0 = time.time()
        self.pc0 = time.perf_counter()   # the origin of every host time written (launch windows, NVML)
        self.sampler = None
        self._saved = 0.0

    def left(self) -> float:
        return self.deadline - time.time()

    @property
    def result_path(self) -> Path:
        return self.out / (DRY_RUN_RESULT if self.gpu.dry_run else RESULT)

    def save(self, every_s: float = 0.0):
        """Write the result file (atomically); ``every_s``: only if the last write is that old (the file
        grows to tens of MB in the wide phase, and each write costs about a second there)."""
        if every_s and time.time() - self._saved < every_s:
            return
        self._saved = time.time()
        self.res["compile_s"] = self.gpu.compile_s
        self.res["elapsed_s"] = round(time.time() - self.t0, 1)
        tmp = self.result_path.with_name(self.result_path.name + ".part")
        tmp.write_text(json.dumps(self.res, separators=(",", ":"), default=str))
        tmp.replace(self.result_path)

    def log(self, *a):
        prefix = (DRY_RUN_PREFIX,) if self.gpu.dry_run else ()
        print(*prefix, f"[{time.time() - self.t0:6.1f}s]", *a, flush=True)

    # ------------------------------------------------------------------ one alternating shape
    def measure_shape(self, phase: str, dtype: str, shape, configs, *, budget_s: float, max_rounds: int,
                      min_rounds: int, seed: int, graphs: bool = False, check: bool = True,
                      cublas: bool = True, quiet: bool = False) -> list[dict]:
        """One problem: compile/prepare every config, check each once, then alternating queued rounds
        (each launch with its own record buffer: event time, span, clock; its host-time window);
        optionally CUDA graphs. ``quiet``: log no number of this problem but its correctness count (a
        held-out problem). The problem's record (rounds, windows, NVML) goes to ``res["problems"]``."""
        g = self.gpu
        m, n, k = shape
        t_problem = time.perf_counter()
        a, b = g.inputs(m, n, k, dtype, seed)
        torch = getattr(g, "torch", None)
        c = torch.empty(m, n, device="cuda", dtype=a.dtype) if torch else None
        runners, errors = {}, {}
        slots = GRAPH_LAUNCHES if graphs else 1
        for cfg in configs:
            if self.left() < 5:
                break
            try:
                runners[cfg.name()] = g.runner(cfg, dtype, a, b, c, slots=slots)
            except Exception as e:  # a config that cannot run is recorded, not fatal
                errors[cfg.name()] = f"{type(e).__name__}: {e}"[:300]
                self.log(f"{phase} {dtype} {shape} {cfg.name()}: {errors[cfg.name()]}")
        checks = {}
        if check and runners:
            ref, cub_err = g.reference(a, b)
            for name, r in runners.items():
                try:
                    checks[name] = g.check(r.launch, c, ref, cub_err)
                except Exception as e:
                    checks[name] = {"ok": False, "error": f"{type(e).__name__}: {e}"[:300]}
                    errors[name] = checks[name]["error"]
            del ref
            bad = [x for x in checks if not checks[x].get("ok")]
            self.log(f"{phase} {dtype} {m}x{n}x{k}: {len(checks) - len(bad)}/{len(checks)} correct"
                     + ("" if quiet else f", cuBLAS max abs err {cub_err:.3g}") + (f"; FAILED: {bad[:5]}" if bad else ""))
            for x in bad:  # a wrong kernel is not timed
                runners.pop(x, None)
        launchers = {name: r.launch for name, r in runners.items()}
        if g.dry_run:
            for name, r in runners.items():
                launchers[name] = type("L", (), {"__call__": lambda self: None, "dry_us": r.us})()
        if cublas and not g.dry_run:
            bt = b.t()
            launchers["cublas"] = lambda: torch.matmul(a, bt, out=c)
        elif cublas:
            launchers["cublas"] = type("L", (), {"__call__": lambda self: None,
                                                  "dry_us": 2e6 * m * n * k / 700e12 + 2})()
        names = list(launchers)
        launches = {nm: [] for nm in names}
        # warm-up round (module load, clocks), then rounds until the budget or max_rounds
        busy_ms = 3.0
        t_round_us = 0.0
        for _ in range(2):
            w = g.queued_round(launchers, names, busy_ms)
            t_round_us = sum(w["event_us"].values())
            busy_ms = max(2.0, 1.5 * w["enqueue_ms"])
        rounds = max(min_rounds, min(max_rounds, int(budget_s * 1e6 / max(t_round_us, 1.0))))
        t_start = time.time()
        t_rounds = time.perf_counter()
        done = 0
        for rnd in range(rounds):
            if self.left() < 3 and rnd >= 2:
                self.res["skipped"].append(f"{phase} {dtype} {shape}: stopped after {rnd} rounds (time limit)")
                break
            done = rnd + 1
            g.zero_traces(runners.values())
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            w = g.queued_round(launchers, order, busy_ms)
            busy_ms = max(2.0, 1.5 * w["enqueue_ms"])
            clocks = {}
            for i, nm in enumerate(order):
                x = {"event_us": round(w["event_us"][nm], 3), "gap_us": round(w["gap_us"][nm], 3),
                     "queued": w["queued"], "round": rnd, "pos": i}
                if nm in w.get("host_t", {}):
                    x["t0_host"], x["t1_host"] = w["host_t"][nm]
                if nm in runners:
                    sc = g.spans(runners[nm])
                    x["span_us"] = sc["span_ns"] / 1e3 if sc["span_ns"] is not None else None
                    x["clock_ghz"] = round(sc["clock_ghz"], 4) if sc["clock_ghz"] else None
                    x["slices_ok"] = sc["slices"] == sc["slices_expected"]
                    clocks[i] = x["clock_ghz"]
                launches[nm].append(x)
            # cuBLAS has no in-kernel clock: the median clock of our launches just before and after it
            for i, nm in enumerate(order):
                if nm not in runners:
                    near = [clocks[j] for j in (i - 2, i - 1, i + 1, i + 2) if clocks.get(j)]
                    if near:
                        launches[nm][-1]["neighbor_clock_ghz"] = statistics.median(near)
        t_rounds_end = time.perf_counter()
        graph_rows = {}
        if graphs and not g.dry_run and self.left() > 10:
            graph_rows = self._graph_timing(runners, a, b, c, rounds=min(10, rounds))
        samples = self._problem_record(f"{phase}|{dtype}|{m}x{n}x{k}", done, t_problem, t_rounds, t_rounds_end)
        rows = []
        cub = summarize("cublas", launches.get("cublas", [])) if "cublas" in launches else None
        for nm in names:
            row = summarize(nm, launches[nm])
            cfg = runners[nm].config if nm in runners else None
            row.update({"phase": phase, "dtype": dtype, "m": m, "n": n, "k": k,
                        "kernel": "cublas" if nm == "cublas" else "wsim_sm90_twin",
                        "fields": None if cfg is None else {kk: v for kk, v in cfg.asdict().items()
                                                            if kk not in ("instrument_roles",)},
                        "tflops": tflops(m, n, k, row["event_us"]),
                        "span_tflops": tflops(m, n, k, row["span_us"])})
            if nm in checks:
                row["check"] = checks[nm]
            if cub and cub["event_us"] and row["event_us"]:
                row["vs_cublas"] = cub["event_us"] / row["event_us"]
            if nm in graph_rows:
                row.update(graph_rows[nm])
            hosts = [x["t0_host"] for x in launches[nm] if x.get("t0_host") is not None]
            if hosts:
                row["t_first_s"], row["t_last_s"] = round(min(hosts) - self.pc0, 4), round(max(hosts) - self.pc0, 4)
            if samples is not None:
                row.update(W.row_power(samples, launches[nm]))
            rows.append(row)
            self.res["launches"][f"{phase}|{dtype}|{m}x{n}x{k}|{nm}"] = [
                [x.get("event_us"), x.get("span_us"), x.get("clock_ghz"), x.get("neighbor_clock_ghz"),
                 int(bool(x.get("queued"))), x.get("gap_us"), self._rel(x.get("t0_host")),
                 self._rel(x.get("t1_host"))] for x in launches[nm]]
        for nm, e in errors.items():
            rows.append({"phase": phase, "dtype": dtype, "m": m, "n": n, "k": k, "config": nm, "error": e})
        best = min((r for r in rows if r.get("kernel") == "wsim_sm90_twin" and r.get("event_us")),
                   key=lambda r: r["event_us"], default=None)
        if quiet:
            self.log(f"{phase} {dtype} {m}x{n}x{k}: {done} rounds x {len(names)} kernels (held out: no timing printed)")
        else:
            self.log(f"{phase} {dtype} {m}x{n}x{k}: {done} rounds x {len(names)} kernels in "
                     f"{time.time() - t_start:.1f}s; cuBLAS {_f(cub and cub['event_us'])} us; best "
                     f"{best and best['config']} {_f(best and best['event_us'])} us (span "
                     f"{_f(best and best['span_us'])} us, clock {_f(best and best['clock_ghz'], 3)} GHz)")
        del runners, launchers
        g.free()
        return rows

    def _rel(self, t):
        return None if t is None else round(t - self.pc0, 6)

    def _problem_record(self, key: str, rounds: int, t_problem: float, t_rounds: float, t_end: float):
        """``res["problems"][key]``: rounds and host times (s from the campaign's start) of the problem
        (prepare and checks from ``t_problem``, timed rounds from ``t_rounds``); with a sampler, its
        NVML samples over the whole problem (``res["nvml"][key]``, columns) and their summary over the
        timed rounds. Returns those samples (None without a sampler)."""
        rec = {"rounds": rounds, "t_start_s": self._rel(t_problem), "t_rounds_s": self._rel(t_rounds),
               "t_end_s": self._rel(t_end)}
        self.res["problems"][key] = rec
        if self.sampler is None:
            return None
        from validation.nvml_sampler import in_window, summarize, to_columns
        samples = in_window(list(self.sampler.rows), t_problem, t_end)
        rec["nvml"] = summarize(samples, t_rounds, t_end)
        rec["nvml"]["t0"], rec["nvml"]["t1"] = self._rel(t_rounds), self._rel(t_end)
        self.res["nvml"][key] = to_columns(samples, t_ref=self.pc0)
        return samples

    def _graph_timing(self, runners, a, b, c, rounds: int) -> dict:
        """CUDA graphs of GRAPH_LAUNCHES launches per config (each launch its own record slot) and of
        as many cuBLAS calls, replayed alternately, queued behind a busy kernel; per launch = replay
        time / launches. Spans: the launches of the last replay."""
        torch = self.gpu.torch
        graphs = {}
        for nm, r in runners.items():
            try:
                graphs[nm] = r.graph()
            except Exception as e:
                self.res["errors"].append(f"graph {nm}: {type(e).__name__}: {e}"[:300])
        bt = b.t()
        try:
            gc = torch.cuda.CUDAGraph()
            with torch.cuda.graph(gc, stream=self.gpu.stream, capture_error_mode="relaxed"):
                for _ in range(GRAPH_LAUNCHES):
                    torch.matmul(a, bt, out=c)
            graphs["cublas"] = gc
        except Exception as e:
            self.res["errors"].append(f"graph cublas: {type(e).__name__}: {e}"[:300])
        names = list(graphs)
        per = {nm: [] for nm in names}
        launchers = {nm: g.replay for nm, g in graphs.items()}
        self.gpu.queued_round(launchers, names, 3.0)  # warm-up
        for rnd in range(rounds):
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            w = self.gpu.queued_round(launchers, order, 3.0)
            for nm in names:
                per[nm].append(w["event_us"][nm] / GRAPH_LAUNCHES)
        out = {}
        for nm in names:
            d = {"graph_us_per_launch": statistics.median(per[nm]), "graph_replays": len(per[nm]),
                 "graph_launches": GRAPH_LAUNCHES}
            if nm in runners:
                sp = [self.gpu.spans(runners[nm], s) for s in range(GRAPH_LAUNCHES)]
                ok = [x for x in sp if x["span_ns"] is not None]
                if ok:
                    d["graph_span_us"] = statistics.median(x["span_ns"] / 1e3 for x in ok)
                    d["graph_clock_ghz"] = statistics.median(x["clock_ghz"] for x in ok if x["clock_ghz"])
            out[nm] = d
        return out

    # ------------------------------------------------------------------ phases
    def phase_launch(self, p):
        """Host launch paths and per-launch events, idle vs queued."""
        if self.gpu.dry_run:
            self.res["launch_path"].append({"dry_run": True})
            return
        import torch

        from validation.timing import host_us_per_call, queued_round, time_launches
        cfg = p["configs"][0]
        for (m, n, k) in p["shapes"]:
            a, b = self.gpu.inputs(m, n, k, "fp16", 5)
            c = torch.empty(m, n, device="cuda", dtype=a.dtype)
            bt = b.t()
            r = self.gpu.runner(cfg, "fp16", a, b, c)
            r.launch()
            torch.cuda.synchronize()
            methods = {"dsl_call": r.launch_plain, "dsl_premarshalled": r.launch,
                       "cublas": lambda a=a, bt=bt, c=c: torch.matmul(a, bt, out=c)}
            try:
                g1 = r.graph(slots=[0])
                methods["dsl_graph_1"] = g1.replay
            except Exception as e:
                self.res["errors"].append(f"launch graph: {type(e).__name__}: {e}"[:300])
            try:
                gc = torch.cuda.CUDAGraph()
                with torch.cuda.graph(gc, stream=self.gpu.stream, capture_error_mode="relaxed"):
                    torch.matmul(a, bt, out=c)
                methods["cublas_graph_1"] = gc.replay
            except Exception as e:
                self.res["errors"].append(f"launch cublas graph: {type(e).__name__}: {e}"[:300])
            row = {"m": m, "n": n, "k": k, "config": cfg.name(), "methods": {}}
            for nm, fn in methods.items():
                h = host_us_per_call(fn, n=200)
                idle = time_launches(fn, 60)
                row["methods"][nm] = {**h, "event_us_idle_median": statistics.median(idle) * 1e3}
            # the same launches queued behind a busy kernel (no host path in the events)
            q = {nm: [] for nm in methods}
            for rnd in range(20):
                names = list(methods)
                order = names[rnd % len(names):] + names[:rnd % len(names)]
                w = queued_round(methods, order, 3.0)
                for nm in methods:
                    q[nm].append(w["event_us"][nm])
            for nm in methods:
                row["methods"][nm]["event_us_queued_median"] = statistics.median(q[nm])
            self.res["launch_path"].append(row)
            self.log(f"launch {m}x{n}x{k}: " + "; ".join(
                f"{nm} host {v['host_us']:.1f} us, stream {v['stream_us']:.1f} us, event idle "
                f"{v['event_us_idle_median']:.1f} / queued {v['event_us_queued_median']:.1f} us"
                for nm, v in row["methods"].items()))
            self.save()

    def phase_overhead(self, p):
        for (m, n, k) in p["shapes"]:
            if self.left() < 20:
                self.res["skipped"].append(f"overhead {m}x{n}x{k}")
                continue
            rows = self.measure_shape("overhead", "fp16", (m, n, k), p["configs"], budget_s=3.0, max_rounds=40,
                                      min_rounds=8, seed=21, check=False, cublas=True)
            by = {r["config"]: r for r in rows if r.get("event_us")}
            for cfg in p["configs"]:
                if cfg.instrument == R.LEVEL_OFF:
                    continue
                base = by.get(replace(cfg, instrument=R.LEVEL_OFF).name())
                mine = by.get(cfg.name())
                if base and mine:
                    key = f"overhead|fp16|{m}x{n}x{k}|"
                    paired = [x[0] / y[0] - 1 for x, y in zip(self.res["launches"][key + cfg.name()],
                                                               self.res["launches"][key + base["config"]],
                                                               strict=False) if x[0] and y[0]]
                    self.res["overhead"].append({
                        "m": m, "n": n, "k": k, "config": base["config"], "level": cfg.instrument,
                        "overhead_median_ratio": mine["event_us"] / base["event_us"] - 1,
                        "overhead_paired_median": statistics.median(paired) if paired else None,
                        "rounds": len(paired)})
            self.res["rows"] += rows
            self.save()

    def phase_rows(self, name, p, *, budget_s, max_rounds, min_rounds, graphs=False):
        dtypes = p.get("dtypes") or (p["dtype"],)
        for dtype in dtypes:
            for i, shape in enumerate(p["shapes"]):
                if self.left() < 25:
                    self.res["skipped"].append(f"{name} {dtype} {shape}: time limit")
                    continue
                cfgs = p.get("per_shape", {}).get(tuple(shape), p["configs"])
                rows = self.measure_shape(name, dtype, shape, cfgs, budget_s=budget_s,
                                          max_rounds=max_rounds, min_rounds=min_rounds, seed=100 + i,
                                          graphs=graphs)
                self.res["rows"] += rows
                self.save()

    def phase_wide(self, p, quick: bool):
        """The wide phase: each problem in run order, its split and class on every row with its place in
        the order (the previous and next problem measured)."""
        budget = 1.2 if quick else W.WIDE_BUDGET_S
        prev, order = None, 0
        for wp in p["problems"]:
            if self.left() < 25:
                self.res["skipped"].append(f"wide {wp.dtype} {wp.shape}: time limit")
                continue
            key = wp.key()
            rows = self.measure_shape("wide", wp.dtype, wp.shape, p["configs"], budget_s=budget,
                                      max_rounds=W.WIDE_MAX_ROUNDS, min_rounds=W.WIDE_MIN_ROUNDS,
                                      seed=1000 + W.WIDE_PROBLEMS.index(wp), quiet=wp.held_out)
            self.res["problems"][key].update({"split": wp.split, "cls": wp.cls, "order": order, "prev": prev,
                                              "next": None, "dtype": wp.dtype, "m": wp.m, "n": wp.n, "k": wp.k})
            for r in rows:
                r.update({"split": wp.split, "cls": wp.cls, "problem_order": order, "prev_problem": prev,
                          "next_problem": None})
            if prev is not None:
                self.res["problems"][prev]["next"] = key
                for r in self.res["rows"]:
                    if r.get("phase") == "wide" and f"wide|{r['dtype']}|{r['m']}x{r['n']}x{r['k']}" == prev:
                        r["next_problem"] = key
            prev, order = key, order + 1
            self.res["rows"] += rows
            self.save(every_s=SAVE_EVERY_S)
        wide = [r for r in self.res["rows"] if r.get("phase") == "wide" and r.get("kernel") == "wsim_sm90_twin"]
        ok = [r for r in wide if (r.get("check") or {}).get("ok")]
        self.log(f"wide: {order} of {len(p['problems'])} problems measured "
                 f"({sum(1 for v in self.res['problems'].values() if v.get('split') == 'held_out')} held out), "
                 f"{len(wide)} rows of our kernel, {len(ok)} correct; "
                 f"{sum(1 for r in wide if r.get('nvml_samples'))} with NVML samples in their own launches")

    def run(self, phases, quick):
        p = plan(quick)
        check_plan(p)
        keys = check_plan({ph: p[ph] for ph in phases if ph in p})  # compile what the phases run
        self.res["plan"] = {ph: {"shapes": d["shapes"], "configs": [c.name() for c in d["configs"]]}
                            for ph, d in p.items()}
        self.res["plan"]["wide"]["problems"] = [{"dtype": x.dtype, "m": x.m, "n": x.n, "k": x.k, "cls": x.cls,
                                                 "split": x.split} for x in p["wide"]["problems"]]
        self.res["plan"]["picks"]["per_shape"] = {"x".join(map(str, sh)): [c.name() for c in cs]
                                                  for sh, cs in p["picks"]["per_shape"].items()}
        self.res["plan"]["compile_keys"] = {dt: [c.name() for c in v] for dt, v in keys.items()}
        self.log(f"plan: {sum(len(v) for v in keys.values())} compiles "
                 f"({', '.join(f'{dt}: {len(v)}' for dt, v in keys.items())}); phases {phases}")
        if "wide" in phases:
            est = [estimate_seconds(x.shape, p["wide"]["configs"], budget_s=1.2 if quick else W.WIDE_BUDGET_S,
                                    max_rounds=W.WIDE_MAX_ROUNDS, min_rounds=W.WIDE_MIN_ROUNDS)[0]
                   for x in p["wide"]["problems"]]
            self.log(f"wide: {len(est)} problems ({sum(x.held_out for x in p['wide']['problems'])} held out), "
                     f"estimated {sum(est):.0f} s of measuring + {EST_COMPILE_S * sum(len(v) for v in keys.values()):.0f} s "
                     "of compiles (validation.campaign.estimate_seconds)")
        if "small_m" in phases:
            n_keys = len({c.compile_key() for c in p["small_m"]["configs"]})
            self.log(f"small_m: {len(p['small_m']['shapes'])} problems x {len(p['small_m']['configs'])} configs "
                     f"({n_keys} compiles), estimated {small_m_estimate_seconds(p['small_m'], quick):.0f} s of "
                     f"measuring + {EST_COMPILE_S * n_keys:.0f} s of compiles (validation.campaign.small_m_estimate_seconds)")
        for dt, ks in keys.items():  # compile everything first (about 1 s each on the GPU machine)
            for kc in ks:
                if self.left() < 60:
                    break
                self.gpu.kernel(kc, dt)
        if getattr(self.gpu, "compile_kernels", True):
            self.log(f"compiled {len(self.gpu.compile_s)} kernels")
        else:
            self.log(f"compiled no kernel ({sum(len(v) for v in keys.values())} planned; a dry run compiles "
                     "only with --compile)")
        self.save()
        if "launch" in phases:
            self.phase_launch(p["launch"])
        if any(ph in phases for ph in SAMPLED_PHASES):
            self.sampler = self.gpu.sampler()
            if self.sampler is not None:
                self.sampler.start()
                self.res["nvml_sampler"] = {"period_s": self.sampler.period_s}
        try:
            self._measuring_phases(p, phases, quick)
        finally:
            if self.sampler is not None:
                self.sampler.stop()
                self.res["nvml_sampler"].update({"samples": len(self.sampler.rows), "errors": self.sampler.errors})
        self.res["done"] = True
        self.save()
        return self.res

    def _measuring_phases(self, p, phases, quick):
        if "overhead" in phases:
            self.phase_overhead(p["overhead"])
        if "space" in phases:
            self.phase_rows("space", p["space"], budget_s=1.2 if quick else 5.0, max_rounds=30, min_rounds=5)
        if "bf16" in phases:
            self.phase_rows("bf16", p["bf16"], budget_s=1.5, max_rounds=25, min_rounds=8)
        if "small" in phases:
            self.phase_rows("small", p["small"], budget_s=0.5, max_rounds=30, min_rounds=20, graphs=True)
        if "wide" in phases:
            self.phase_wide(p["wide"], quick)
        for ph in OWN_FILE_PHASES:                  # the campaigns of their own, in their order
            if ph in phases:
                rounds = small_m_rounds(quick) if ph == "small_m" else {
                    "budget_s": 0.6 if quick else 1.5, "max_rounds": 15, "min_rounds": 5}
                self.phase_rows(ph, p[ph], **rounds)


# =============================================================================================== publish
def publish(run_dir: Path, dest: Path, *, repeat_dir: Path | None = None, launches_npz: bool = False,
            allow_dry_run: bool = False) -> list[Path]:
    """(CPU) Write a finished campaign into ``dest``: ``h200_campaign.json`` (compact: environment,
    command, plan, per-row statistics, launch paths, overhead; with ``repeat_dir``, a second run of
    the same command, row by row: its event us, span us, clock GHz and launches, the run-to-run
    spread) and ``h200_campaign.md`` (a summary); with ``launches_npz``, also
    ``h200_campaign_launches.npz`` (every timed launch: event us, span us, clock GHz, neighbour
    clock, queued, gap us, host start and end s; ~0.4 MB, so not by default). Refuses a dry run.

    Rows of the ``wide`` phase go to files of their own, never to ``h200_campaign.json`` (which is
    written only when the run has rows of other phases): dev rows, their problems and NVML samples to
    ``h200_campaign_wide.json`` + ``.md``; held-out rows, theirs to ``h200_campaign_wide_heldout.json``
    (no Markdown: the dev summary says only how many held-out rows there are and of which problems)."""
    res = _load_run(run_dir, allow_dry_run)
    rep = None
    if repeat_dir is not None:
        rep = _load_run(repeat_dir, allow_dry_run)
        if _without_out(rep["env"].get("command", "")) != _without_out(res["env"].get("command", "")):
            raise SystemExit(f"{repeat_dir}: not a repeat of the same command ({rep['env'].get('command')!r})")
    tag = ".dry_run" if res["env"].get("dry_run") else ""  # a published dry run (tests only) says so in every name
    dest.mkdir(parents=True, exist_ok=True)
    rows = _flat_rows(res)
    wide = [r for r in rows if r.get("phase") == "wide"]
    own = {ph: [r for r in rows if r.get("phase") == ph] for ph in OWN_FILE_PHASES}
    rest = [r for r in rows if r.get("phase") not in ("wide", *OWN_FILE_PHASES)]
    paths = []
    for ph, sel in own.items():
        if not sel:
            continue
        base, markdown = OWN_FILE_PHASES[ph]
        base = base.format(gpu=gpu_tag(res["env"]))
        out = _published(res, sel, rep)
        keys = sorted({_problem_key(r) for r in sel})
        out.update({"problems": {kk: res.get("problems", {}).get(kk) for kk in keys},
                    "nvml_sampler": res.get("nvml_sampler")})
        paths += _write_published(dest, f"{base}{tag}", out, res, sel, launches_npz)
        pm = dest / f"{base}{tag}.md"
        pm.write_text(markdown(out))
        paths.append(pm)
    if rest or not (wide or any(own.values())):
        out = _published(res, rest, rep)
        out.update({"launch_path": res.get("launch_path"), "overhead": res.get("overhead")})
        if rep is not None:
            out["repeat"].update({"overhead": rep.get("overhead"), "launch_path": rep.get("launch_path")})
        paths += _write_published(dest, f"h200_campaign{tag}", out, res, rest, launches_npz)
        pm = dest / f"h200_campaign{tag}.md"
        pm.write_text(summary_markdown(out))
        paths.append(pm)
    if wide:
        held = [r for r in wide if r.get("split") != "dev"]
        for split, sel, base in (("dev", [r for r in wide if r.get("split") == "dev"], W.DEV_BASE),
                                 ("held_out", held, W.HELDOUT_BASE)):
            keys = sorted({_problem_key(r) for r in sel})
            out = _published(res, sel, rep)
            out.update({"split": split, "problems": {kk: res.get("problems", {}).get(kk) for kk in keys},
                        "nvml_sampler": res.get("nvml_sampler")})
            paths += _write_published(dest, f"{base}{tag}", out, res, sel, launches_npz)
            nv = {kk: res["nvml"][kk] for kk in keys if kk in res.get("nvml", {})}
            if nv:
                paths.append(_write_nvml_npz(dest / f"{base}_nvml{tag}.npz", nv))
            if split == "dev":
                probs = [f"{r['dtype']} {r['m']}x{r['n']}x{r['k']}" for r in
                         {_problem_key(r): r for r in held}.values()]
                pm = dest / f"{base}{tag}.md"
                pm.write_text(W.wide_markdown(out, {"rows": len(held), "problems": probs}))
                paths.append(pm)
    return paths


#: The published files of the ``streamk`` phase (``.json``, ``.md``).
STREAMK_BASE = "h200_streamk"
#: The published files of the ``small_m`` phase (``.json``, ``.md``).
SMALL_M_BASE = "h200_small_m"
#: The published files of the ``streamk_nd`` phase (``.json``, ``.md``).
STREAMK_ND_BASE = "h200_streamk_nd"
#: The published files of the ``ragged_n`` phase (``.json``, ``.md``), named by the GPU that ran it
#: (:func:`gpu_tag`).
RAGGED_N_BASE = "{gpu}_ragged_n"


def gpu_tag(env: dict) -> str:
    """``h100`` or ``h200`` by the device a run names (``gpu`` for another): the lent machine is either."""
    name = str(env.get("device", "")).upper()
    return next((t.lower() for t in ("H100", "H200") if t in name), "gpu")


def _fastest(rows: list[dict]) -> dict | None:
    return min(rows, key=lambda x: x["event_us"], default=None)


def _phase_head(pub: dict, title: str, extra: str) -> list[str]:
    """A phase summary's title and provenance lines (``extra``: what the phase's candidates have in common)."""
    env = pub["env"]
    return [f"# {title} ({'DRY RUN: synthetic timings, not measurements' if env.get('dry_run') else 'measured'})",
            "", f"`{env.get('command', '')}`; {env.get('device', '?')}, driver {env.get('driver', '?')}, CuTe DSL "
            f"{env.get('nvidia_cutlass_dsl', '?')}, {env.get('date_utc', env.get('date', '?'))}. Median CUDA-event "
            "time of launches queued behind a busy kernel, alternating with cuBLAS (torch.matmul) on the same "
            f"random-normal fp16 inputs; every output checked against a float32 reference first.{extra}", ""]


def _per_problem(pub: dict):
    """Per problem, in the file's order: ((m, n, k), cuBLAS us, our timed rows, outputs correct, outputs checked)."""
    by: dict = {}
    for r in (dict(zip(pub["columns"], row, strict=True)) for row in pub["rows"]):
        by.setdefault((r["m"], r["n"], r["k"]), []).append(r)
    for shape, rs in by.items():
        cub = next((r["event_us"] for r in rs if r.get("kernel") == "cublas" and r.get("event_us")), None)
        twin = [r for r in rs if r.get("kernel") == "wsim_sm90_twin"]
        yield (shape, cub, [r for r in twin if r.get("event_us")], sum(1 for r in twin if r.get("ok")),
               sum(1 for r in twin if r.get("ok") is not None))


def streamk_markdown(pub: dict) -> str:
    """The ``streamk`` phase's summary: per problem cuBLAS, our best (all candidates, data-parallel only,
    stream-K scheduler only) and how many outputs were correct."""
    out = _phase_head(pub, "H200 stream-K / split-K campaign", "") + [
           "| problem | cuBLAS us | best (all) | us | x cuBLAS | best data-parallel | x cuBLAS | best stream-K scheduler "
           "| x cuBLAS | correct |", "| --- | ---: | --- | ---: | ---: | --- | ---: | --- | ---: | ---: |"]
    for (m, n, k), cub, ours, ok, checked in _per_problem(pub):
        cells = []
        for b in (_fastest(ours), _fastest([x for x in ours if "_d" not in x["config"]]),
                  _fastest([x for x in ours if "_d" in x["config"]])):
            ratio = cub / b["event_us"] if b and cub else None
            cells.append((b["config"] if b else "-", b["event_us"] if b else None, ratio))
        (a, au, ar), (d, _, dr), (s_, _, sr) = cells
        out.append(f"| {m}x{n}x{k} | {_f(cub)} | {a} | {_f(au)} | {_f(ar, 2)} | {d} | {_f(dr, 2)} | {s_} | "
                   f"{_f(sr, 2)} | {ok}/{checked} |")
    out += ["", "x cuBLAS = cuBLAS time / ours (> 1: ours is faster). Config names: hw_kernels.host.KernelConfig.name() "
            "(`_dh` heuristic, `_dsk` stream-K, `_ds<N>` split-K by N; no `_d`: the static scheduler)."]
    return "\n".join(out) + "\n"


def _tile_family(config: str) -> str:
    """A ``small_m`` row's tile family: ``"64-row ping-pong"``, ``"128-row ping-pong"`` or ``"cooperative"``."""
    if "_pp_" not in config:
        return "cooperative"
    return f"{config.split('x', 1)[0]}-row ping-pong"


SMALL_M_FAMILIES = ("64-row ping-pong", "128-row ping-pong", "cooperative")


def _best_by_kind(pub: dict, title: str, extra: str, kinds, names: str) -> str:
    """A phase summary: per problem cuBLAS, our best candidate of each kind (``kinds``: (name, predicate on
    the config name)) against it, and how many outputs were correct; ``names``: how to read the names."""
    head = " | ".join(f"best {name} | us | x cuBLAS" for name, _ in kinds)
    out = _phase_head(pub, title, extra) + [
           f"| problem | cuBLAS us | {head} | correct |",
           "| --- | ---: | " + " | ".join("--- | ---: | ---:" for _ in kinds) + " | ---: |"]
    for (m, n, k), cub, ours, ok, checked in _per_problem(pub):
        cells = []
        for _, sel in kinds:
            b = _fastest([x for x in ours if sel(x["config"])])
            ratio = cub / b["event_us"] if b and cub else None
            cells.append(f"{b['config'] if b else '-'} | {_f(b and b['event_us'])} | {_f(ratio, 2)}")
        out.append(f"| {m}x{n}x{k} | {_f(cub)} | {' | '.join(cells)} | {ok}/{checked} |")
    out += ["", "x cuBLAS = cuBLAS time / ours (> 1: ours is faster). Config names: hw_kernels.host.KernelConfig.name() "
            f"({names})."]
    return "\n".join(out) + "\n"


def small_m_markdown(pub: dict) -> str:
    """The ``small_m`` phase's summary: our best of all candidates and of each tile family (64-row ping-pong,
    128-row ping-pong, cooperative) against cuBLAS."""
    kinds = [("(all)", lambda c: True)] + [(f, lambda c, f=f: _tile_family(c) == f) for f in SMALL_M_FAMILIES]
    return _best_by_kind(pub, "H200 M <= 128 campaign", " Data-parallel, max swizzle 1, clusters 1x1, 1x2, 2x1, "
                         "rasters M and N.", kinds, "`_pp`: ping-pong, the leading MxN the CTA tile")


#: The stream-K scheduler phases' summary columns: (kind, predicate on the config name).
STREAMK_SCHEDULER_KINDS = (("(all)", lambda c: True), ("stream-K or heuristic", lambda c: "_dsk" in c or "_dh" in c),
                           ("split-K", lambda c: "_ds" in c and "_dsk" not in c))


def streamk_nd_markdown(pub: dict) -> str:
    """The ``streamk_nd`` phase's summary: our best nondeterministic-reduction candidate of each kind (all,
    stream-K or heuristic, split-K) against cuBLAS."""
    return _best_by_kind(pub, "H200 stream-K / split-K campaign, nondeterministic reduction",
                         " Cooperative tiles, max swizzle 1, every cluster and raster of the streamk phase; middle "
                         "splits add with red.global.add.f32 (no turn order).", STREAMK_SCHEDULER_KINDS,
                         "`_dh` heuristic, `_dsk` stream-K, `_ds<N>` split-K by N, `_nd` the nondeterministic reduction")


def streamk_fv4_markdown(pub: dict) -> str:
    """The ``streamk_fv4`` phase's summary: our best 16-byte-fixup candidate of each kind (all, stream-K or
    heuristic, split-K) against cuBLAS."""
    return _best_by_kind(pub, f"{gpu_tag(pub['env']).upper()} stream-K / split-K campaign, 16-byte fixup",
                         " Cooperative tiles, max swizzle 1, every cluster and raster of the streamk phase, deterministic "
                         "reduction; the fixup moves 16 B per thread per access (ld.global.cg.v4 / st.global.v4).",
                         STREAMK_SCHEDULER_KINDS,
                         "`_dh` heuristic, `_dsk` stream-K, `_ds<N>` split-K by N, `_fv4` the 16-byte fixup")


def ragged_n_markdown(pub: dict) -> str:
    """The ``ragged_n`` phase's summary: our best candidate of all, of the ragged-N widths and of the wide tiles
    against cuBLAS; the held-out problems (``RAGGED_N_HELD_OUT``) in a table of their own."""
    from validation.measurements import twin_config
    kinds = (("(all)", lambda c: True), ("ragged-N width", lambda c: twin_config(c).tile_n in HW_RAGGED_TILE_N),
             ("128/192/256 width", lambda c: twin_config(c).tile_n not in HW_RAGGED_TILE_N))
    extra = (f" Cooperative tiles (ragged-N widths {', '.join(map(str, HW_RAGGED_TILE_N))} beside 128, 192, 256), "
             "every cluster and raster, max swizzle 1, data-parallel, heuristic and stream-K.")
    return _dev_and_held_out(pub, RAGGED_N_HELD_OUT, "ragged-N campaign", extra, kinds,
                             "`_dh` heuristic, `_dsk` stream-K; no `_d`: the static scheduler")


def _dev_and_held_out(pub: dict, held_out: frozenset, title: str, extra: str, kinds, names: str) -> str:
    """:func:`_best_by_kind` of the development problems, then of the ``held_out`` ones (a table each, titled
    ``<GPU> <title>, development problems`` / ``held-out problems``)."""
    mnk = [pub["columns"].index(c) for c in ("m", "n", "k")]
    parts = []
    for name, held in (("development problems", False), ("held-out problems", True)):
        rows = [r for r in pub["rows"] if (tuple(r[i] for i in mnk) in held_out) == held]
        if rows:
            parts.append(_best_by_kind(dict(pub, rows=rows), f"{gpu_tag(pub['env']).upper()} {title}, {name}", extra,
                                       kinds, names))
    return "\n".join(parts)


def _coop64_kind(config: str) -> str:
    """A ``coop64`` row's kind: 64-row cooperative with the stream-K scheduler or data-parallel, 64-row ping-pong."""
    if "_pp_" in config:
        return "64-row ping-pong"
    return "64-row cooperative, stream-K scheduler" if "_d" in config else "64-row cooperative, data-parallel"


COOP64_KINDS = ("64-row cooperative, stream-K scheduler", "64-row cooperative, data-parallel", "64-row ping-pong")


def coop64_markdown(pub: dict) -> str:
    """The ``coop64`` phase's summary: our best candidate of all and of each kind against cuBLAS; the held-out
    problems (``COOP64_HELD_OUT``) in a table of their own."""
    kinds = [("(all)", lambda c: True)] + [(f, lambda c, f=f: _coop64_kind(c) == f) for f in COOP64_KINDS]
    extra = (" The twin's one-warpgroup cooperative kernel at 64 rows (data-parallel, heuristic, stream-K, split-K "
             "by 2, 4, 8; deterministic reduction) beside the 64-row ping-pong, clusters 1x1, 1x2, 2x1, rasters M "
             "and N, max swizzle 1.")
    return _dev_and_held_out(pub, COOP64_HELD_OUT, "64-row cooperative campaign", extra, kinds,
                             "`_pp`: ping-pong; `_dh` heuristic, `_dsk` stream-K, `_ds<N>` split-K by N; no `_d`: "
                             "the static scheduler")


#: The published files of the ``coop64`` phase, named by the GPU that ran it.
COOP64_BASE = "{gpu}_coop64"

#: The published files of the ``picks`` phase, named by the GPU that ran it.
PICKS_BASE = "{gpu}_picks"


def picks_markdown(pub: dict) -> str:
    """The ``picks`` phase's summary: per problem, wsim tune's pick (the first config of the problem's plan)
    and the fastest of the committed campaigns' bests, each against the cuBLAS of the same run; the held-out
    problems of the coop64 and ragged_n phases apart; and how many problems meet issue 18's bars."""
    per_shape = (pub.get("plan", {}).get("picks") or {}).get("per_shape") or {}
    held = COOP64_HELD_OUT | RAGGED_N_HELD_OUT
    extra = (" Per problem: `wsim tune --arch h200 --space hw`'s pick (each candidate at its own predicted clock; "
             "validation/results/h200_tune_picks_plan.json, `python -m validation.tune_picks`) and the fastest config of "
             "each committed issue-18 campaign that measured the problem (h200_streamk, h200_streamk_nd, h200_small_m, "
             "h200_ragged_n, h100_coop64), timed again here.")
    out = _phase_head(pub, f"{gpu_tag(pub['env']).upper()} wsim tune's picks against cuBLAS", extra)
    tally = {False: [0, 0, 0], True: [0, 0, 0]}
    for name, is_held in (("development problems", False), ("held-out problems", True)):
        lines = []
        for (m, n, k), cub, ours, ok, checked in _per_problem(pub):
            if ((m, n, k) in held) != is_held:
                continue
            plan_cfgs = per_shape.get(f"{m}x{n}x{k}") or []
            pick = next((r for r in ours if plan_cfgs and r["config"] == plan_cfgs[0]), None)
            refs = _fastest([r for r in ours if r is not pick])
            pr = cub / pick["event_us"] if pick and cub else None
            rr = cub / refs["event_us"] if refs and cub else None
            best = max((x for x in (pr, rr) if x is not None), default=None)
            t = tally[is_held]
            t[0] += 1
            t[1] += pr is not None and pr >= 0.95
            t[2] += best is not None and best >= 0.97
            ratio = pick["event_us"] / refs["event_us"] if pick and refs else None
            lines.append(f"| {m}x{n}x{k} | {_f(cub)} | {pick['config'] if pick else '-'} | {_f(pick and pick['event_us'])} | "
                         f"{_f(pr, 2)} | {refs['config'] if refs else '-'} | {_f(refs and refs['event_us'])} | {_f(rr, 2)} | "
                         f"{_f(ratio, 3)} | {ok}/{checked} |")
        if lines:
            out += [f"### {name}", "", "| problem | cuBLAS us | tune's pick | us | x cuBLAS | fastest earlier best | us | "
                    "x cuBLAS | pick / that best | correct |", "| --- | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
                    *lines, ""]
    for is_held, name in ((False, "development"), (True, "held-out")):
        n, p95, b97 = tally[is_held]
        if n:
            out.append(f"- {name}: the pick >= 0.95x cuBLAS on {p95} of {n} problems; ours (pick or earlier best) "
                       f">= 0.97x on {b97} of {n}")
    out += ["", "x cuBLAS = cuBLAS time / ours (> 1: ours is faster); pick / that best > 1: the pick is slower. Config "
            "names: hw_kernels.host.KernelConfig.name() (`_pp`: ping-pong; `_dh` heuristic, `_dsk` stream-K, `_ds<N>` "
            "split-K by N, `_nd` the nondeterministic reduction; no `_d`: the static scheduler)."]
    return "\n".join(out) + "\n"

#: The published files of the ``streamk_fv4`` phase, named by the GPU that ran it.
STREAMK_FV4_BASE = "{gpu}_streamk_fv4"

#: Phases published to files of their own: (file base, Markdown summary).
OWN_FILE_PHASES = {"streamk": (STREAMK_BASE, streamk_markdown), "small_m": (SMALL_M_BASE, small_m_markdown),
                   "streamk_nd": (STREAMK_ND_BASE, streamk_nd_markdown), "ragged_n": (RAGGED_N_BASE, ragged_n_markdown),
                   "coop64": (COOP64_BASE, coop64_markdown), "streamk_fv4": (STREAMK_FV4_BASE, streamk_fv4_markdown),
                   "picks": (PICKS_BASE, picks_markdown)}


#: The per-row columns of every published campaign (the wide phase adds campaign_wide.ROW_COLUMNS).
COLUMNS = ["phase", "dtype", "m", "n", "k", "kernel", "config", "n_launches", "event_us", "event_us_p10",
           "event_us_p90", "event_us_min", "span_us", "span_us_p10", "span_us_p90", "clock_ghz", "clock_ghz_min",
           "clock_ghz_max", "neighbor_clock_ghz", "event_minus_span_us", "queued_fraction", "vs_cublas",
           "graph_us_per_launch", "graph_span_us", "graph_clock_ghz", "ok", "max_abs_err", "cublas_max_abs_err",
           "err_vs_cublas", "error"]
#: The columns of every launch record (``res["launches"]``; runs before the host times have 6).
LAUNCH_COLUMNS = ["event_us", "span_us", "clock_ghz", "neighbor_clock_ghz", "queued", "gap_us", "t0_s", "t1_s"]


def _write_nvml_npz(path: Path, nvml: dict) -> Path:
    """Every NVML sample of the given problems (``{problem key: columns}``, times in s from the
    campaign's start): ``keys``, ``problem`` (index into keys per sample), ``samples`` (float64,
    ``columns``: validation.nvml_sampler.COLUMNS; NaN where NVML gave nothing)."""
    import numpy as np

    from validation.nvml_sampler import COLUMNS as NVML_COLUMNS
    keys = sorted(nvml)
    blocks = [np.asarray([[np.nan if v is None else float(v) for v in col] for col in
                          (nvml[kk].get(c, []) for c in NVML_COLUMNS)], dtype=np.float64).reshape(len(NVML_COLUMNS), -1).T
              for kk in keys]
    np.savez_compressed(path, keys=np.asarray(keys), problem=np.repeat(np.arange(len(keys)), [len(b) for b in blocks]
                                                                          ).astype(np.int32),
                        samples=np.concatenate(blocks) if blocks else np.zeros((0, len(NVML_COLUMNS))),
                        columns=np.asarray(NVML_COLUMNS))
    return path


def _problem_key(r) -> str:
    return f"{r.get('phase')}|{r.get('dtype')}|{r.get('m')}x{r.get('n')}x{r.get('k')}"


def _published(res: dict, rows: list[dict], rep: dict | None) -> dict:
    """The published dict of ``rows`` (flattened rows of ``res``) and, with ``rep``, their repeat."""
    cols = COLUMNS + [c for c in W.ROW_COLUMNS if any(c in r for r in rows)]
    out = {"schema": "validation/measurements.py load_h200_timings", "env": res["env"], "plan": res["plan"],
           "compile_s": res.get("compile_s"), "elapsed_s": res.get("elapsed_s"), "done": res.get("done", False),
           "skipped": res.get("skipped"), "errors": res.get("errors"), "columns": cols,
           "rows": [[_round(v.get(c)) for c in cols] for v in rows]}
    if rep is not None:
        by = {_row_key(v): v for v in _flat_rows(rep)}
        rcols = ["event_us", "span_us", "clock_ghz", "neighbor_clock_ghz", "n_launches"]
        out["repeat"] = {"env": rep["env"], "columns": rcols, "elapsed_s": rep.get("elapsed_s"),
                         "rows": [[_round((by.get(_row_key(v)) or {}).get(c)) for c in rcols] for v in rows]}
    return out


def _write_published(dest: Path, base: str, out: dict, res: dict, rows: list[dict], launches_npz: bool) -> list[Path]:
    """``base.json`` and, with ``launches_npz``, ``base``'s launches npz (the launches of ``rows`` only)."""
    pj = dest / f"{base}.json"
    pj.write_text(json.dumps(out, separators=(",", ":"), default=str))
    paths = [pj]
    if launches_npz:
        import numpy as np
        want = {_row_key(r) for r in rows}
        keys = sorted(kk for kk in res["launches"] if kk in want)
        width = len(LAUNCH_COLUMNS)
        arr = [np.asarray([[np.nan if v is None else float(v) for v in [*x, *[None] * (width - len(x))]]
                           for x in res["launches"][kk]], dtype=np.float64).reshape(-1, width) for kk in keys]
        idx = np.repeat(np.arange(len(keys)), [len(a) for a in arr])
        stem = base.replace(".dry_run", "")
        pn = dest / f"{stem}_launches{base[len(stem):]}.npz"
        np.savez_compressed(pn, keys=np.asarray(keys), row=idx.astype(np.int32),
                            launches=np.concatenate(arr) if arr else np.zeros((0, width)),
                            columns=np.asarray(LAUNCH_COLUMNS))
        paths.append(pn)
    return paths


def _without_out(command: str) -> list[str]:
    """A command's words without its ``--out FOLDER`` (two runs of one command write to two folders)."""
    w = command.split()
    return [x for i, x in enumerate(w) if x != "--out" and (i == 0 or w[i - 1] != "--out")]


def _load_run(run_dir, allow_dry_run: bool) -> dict:
    measured, dry = Path(run_dir) / RESULT, Path(run_dir) / DRY_RUN_RESULT
    if not (measured.exists() or dry.exists()):
        what = "no such directory" if not Path(run_dir).is_dir() else f"no {RESULT} (or {DRY_RUN_RESULT}) in it"
        raise CampaignArgError(f"{run_dir!s}: {what}: give the --out folder of a finished campaign")
    res = json.loads((measured if measured.exists() else dry).read_text())
    if res["env"].get("dry_run") and not allow_dry_run:
        raise SystemExit(f"{run_dir}: a --dry-run campaign (synthetic timings) is never published")
    return res


def _row_key(r) -> str:
    return f"{r.get('phase')}|{r.get('dtype')}|{r.get('m')}x{r.get('n')}x{r.get('k')}|{r.get('config')}"


def _flat_rows(res: dict) -> list[dict]:
    """A run's rows with their check flattened and the launch count taken from the per-launch record
    (runs before the ``n_launches`` key stored it under "n", which the problem's N overwrote)."""
    out = []
    for r in res["rows"]:
        chk = r.get("check") or {}
        n_l = len([x for x in res["launches"].get(_row_key(r), []) if x[0] is not None])
        out.append({**r, "n_launches": n_l, "ok": chk.get("ok"), "max_abs_err": chk.get("max_abs_err"),
                    "cublas_max_abs_err": chk.get("cublas_max_abs_err"), "err_vs_cublas": chk.get("err_vs_cublas")})
    return out


def _round(x):
    return round(x, 4 if abs(x) < 10 else 2) if isinstance(x, float) else x


def summary_markdown(pub: dict) -> str:
    """A short markdown summary of a published campaign (the loader's rows)."""
    from validation.measurements import rows_from_published
    rows = rows_from_published(pub)
    env = pub["env"]
    ours = [r for r in rows if r["kernel"] == "wsim_sm90_twin"]
    clocks = [r["clock_ghz"] for r in ours if r["clock_ghz"]]
    title = "# H200 measurement campaign (hardware twin vs cuBLAS)"
    if env.get("dry_run"):
        title = ("# DRY RUN: synthetic timings from a roofline on a CPU, not measurements "
                 "(H200 measurement campaign, its plan and writers)")
    lines = [title, "",
             f"- device: {env.get('device')}, driver {env.get('driver')}, nvidia-cutlass-dsl "
             f"{env.get('nvidia_cutlass_dsl')}, torch {env.get('torch')}, {env.get('sms')} SMs; date {env.get('date_utc')}",
             f"- command: `{env.get('command')}`; load with `validation.measurements.load_h200_timings()`",
             f"- rows: {len(rows)} ({len(ours)} of our kernel, {len(rows) - len(ours)} cuBLAS); timed launches: "
             f"{sum(r['n_launches'] or 0 for r in rows)}; every launch of our kernel carries its CUDA-event time "
             "(queued behind a busy kernel), in-kernel span and effective SM clock",
             f"- effective SM clock over rows: {min(clocks):.3f}-{max(clocks):.3f} GHz" if clocks else "- no clock",
             f"- correctness: {sum(1 for r in ours if r['ok'])}/{sum(1 for r in ours if r['ok'] is not None)} "
             "configs x shapes passed (every output written; max abs error <= 2 x cuBLAS's against float32)",
             ""]
    if pub.get("skipped"):
        lines += [f"- skipped (time limit): {len(pub['skipped'])}: {'; '.join(pub['skipped'][:6])}", ""]
    lp = pub.get("launch_path") or []
    if lp and "methods" in lp[0]:
        lines += ["## Host launch path (us per launch)", "",
                  "| problem | method | host enqueue | back-to-back (idle start) | event, GPU idle | event, queued |",
                  "| --- | --- | ---: | ---: | ---: | ---: |"]
        for row in lp:
            for nm, v in row["methods"].items():
                lines.append(f"| {row['m']}x{row['n']}x{row['k']} | {nm} | {v['host_us']:.1f} | {v['stream_us']:.1f} | "
                             f"{v['event_us_idle_median']:.1f} | {v['event_us_queued_median']:.1f} |")
        lines.append("")
    if pub.get("overhead"):
        lines += ["## Instrumentation overhead (event time, same kernel uninstrumented, alternating)", "",
                  "| problem | config | level | median ratio - 1 | paired median |", "| --- | --- | --- | ---: | ---: |"]
        for o in pub["overhead"]:
            pm = o.get("overhead_paired_median")
            lines.append(f"| {o['m']}x{o['n']}x{o['k']} | {o['config']} | {o['level']} | "
                         f"{100 * o['overhead_median_ratio']:+.2f}% | {'' if pm is None else f'{100 * pm:+.2f}%'} |")
        lines.append("")
    es = {}
    for r in ours:
        if r["event_minus_span_us"] is not None:
            es.setdefault(r["phase"], []).append(r["event_minus_span_us"])
    gs = [r["graph_us_per_launch"] - r["graph_span_us"] for r in ours
          if r["graph_us_per_launch"] is not None and r["graph_span_us"] is not None]
    cg = [(r["event_us"], r["graph_us_per_launch"]) for r in rows
          if r["kernel"] == "cublas" and r["graph_us_per_launch"] is not None]
    if es:
        lines += ["## GPU-side launch overhead of our kernel (us)", "",
                  "CUDA-event time minus in-kernel span, per launch queued behind a busy kernel (launch to the "
                  "first role's start plus last store to the end event; the event pair included), median over "
                  "each phase's rows (min-max of the row medians):", ""]
        lines += [f"- {ph}: {statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f}), {len(v)} rows" for ph, v in es.items()]
        if gs:
            lines.append(f"- back to back in a CUDA graph of {GRAPH_LAUNCHES} launches (per-launch time minus "
                         f"span): {statistics.median(gs):.2f} ({min(gs):.2f}-{max(gs):.2f}), {len(gs)} rows")
        if cg:
            lines.append("- cuBLAS, same problems: queued event " + ", ".join(f"{e:.2f}" for e, _ in cg)
                         + " us; per launch in a graph " + ", ".join(f"{g:.2f}" for _, g in cg) + " us")
        lines.append("")
    if pub.get("repeat"):
        lines += _repeat_markdown(pub, rows)
    lines += ["## Best of our kernel vs cuBLAS per problem (CUDA-event medians, queued)", "",
              "`vs cuBLAS`: cuBLAS's time over our best's. Under the power cap each kernel runs at its own "
              "clock; cuBLAS has no in-kernel clock, so `at equal clock` scales both times to cycles with our "
              "clock and the clock of our launches just before and after cuBLAS's (an estimate).", "",
              "| phase | dtype | M x N x K | cuBLAS us | best config | us | span us | clock GHz | vs cuBLAS | "
              "at equal clock | configs |",
              "| --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    groups: dict = {}
    for r in rows:
        if r["phase"] == "overhead":
            continue
        groups.setdefault((r["phase"], r["dtype"], r["m"], r["n"], r["k"]), []).append(r)
    for (ph, dt, m, n, k), rs in groups.items():
        cub = next((r for r in rs if r["kernel"] == "cublas"), None)
        mine = [r for r in rs if r["kernel"] == "wsim_sm90_twin" and r["event_us"]]
        if not mine:
            continue
        best = min(mine, key=lambda r: r["event_us"])
        cu = cub["event_us"] if cub else None
        ratio = None if cu is None else cu / best["event_us"]
        eq = None
        if cu and cub.get("neighbor_clock_ghz") and best["clock_ghz"]:
            eq = cu * cub["neighbor_clock_ghz"] / (best["event_us"] * best["clock_ghz"])
        lines.append(f"| {ph} | {dt} | {m}x{n}x{k} | {_f(cu)} | {best['config']} | {_f(best['event_us'])} | "
                     f"{_f(best['span_us'])} | {_f(best['clock_ghz'], 3)} | {_f(ratio, 3)} | {_f(eq, 3)} | "
                     f"{len(mine)} |")
    return "\n".join(lines) + "\n"


def _repeat_markdown(pub: dict, rows: list[dict]) -> list[str]:
    """Run-to-run spread: the same command run twice, row by row."""
    rep = pub["repeat"]
    rc = rep["columns"]
    rr = [dict(zip(rc, v, strict=True)) for v in rep["rows"]]
    lines = ["## Run to run (the same command again: " + str(rep["env"].get("date_utc")) + ")", "",
             "Per problem: median and max |change| of the event time over its rows, median |change| of the "
             "cycles (span x clock), whether the best config is the same, and run 1's best measured in run 2 "
             "over run 2's best (the regret of picking by run 1).", "",
             "| phase | dtype | M x N x K | rows | event median abs change | max | cycles median abs change | "
             "same best | regret of run 1's pick |", "| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |"]
    groups: dict = {}
    for r, q in zip(rows, rr, strict=True):
        if r["event_us"] and q["event_us"]:
            groups.setdefault((r["phase"], r["dtype"], r["m"], r["n"], r["k"]), []).append((r, q))
    for (ph, dt, m, n, k), pairs in groups.items():
        d = sorted(abs(q["event_us"] / r["event_us"] - 1) for r, q in pairs)
        cyc = sorted(abs(q["span_us"] * q["clock_ghz"] / (r["span_us"] * r["clock_ghz"]) - 1) for r, q in pairs
                     if r["span_us"] and q["span_us"] and r["clock_ghz"] and q["clock_ghz"])
        ours = [(r, q) for r, q in pairs if r["kernel"] == "wsim_sm90_twin"]
        if not ours:
            continue
        b1 = min(ours, key=lambda x: x[0]["event_us"])
        b2 = min(ours, key=lambda x: x[1]["event_us"])
        lines.append(f"| {ph} | {dt} | {m}x{n}x{k} | {len(pairs)} | {100 * statistics.median(d):.2f}% | "
                     f"{100 * d[-1]:.1f}% | {100 * statistics.median(cyc) if cyc else float('nan'):.2f}% | "
                     f"{'yes' if b1 is b2 else 'no'} | {100 * (b1[1]['event_us'] / b2[1]['event_us'] - 1):.2f}% |")
    return lines + [""]


class CampaignArgError(ValueError):
    """A bad command line or input folder: one line on stderr, exit 2."""


def check_args(a) -> None:
    """The flags of a campaign command line that only apply together, and values that cannot run:
    raises :class:`CampaignArgError` naming the flag and the rule."""
    import importlib.util

    if not (math.isfinite(a.time_limit) and a.time_limit > 0):
        raise CampaignArgError(f"--time-limit {a.time_limit}: must be a finite number of seconds > 0")
    if a.publish:
        if a.dry_run:
            raise CampaignArgError("--dry-run and --publish: --publish writes a finished run (RUN_DIR) into --dest, "
                                   "--dry-run makes a new one; give one of them")
        check_output_dir(a.dest or "validation/results", "--dest")
        return
    for flag, given in (("--dest", a.dest is not None), ("--repeat", a.repeat is not None),
                        ("--launches-npz", a.launches_npz)):
        if given:
            raise CampaignArgError(f"{flag}: applies to --publish RUN_DIR (writing a finished run), not to a run")
    if a.compile:
        if not a.dry_run:
            raise CampaignArgError("--compile: applies to --dry-run (a GPU run compiles every kernel anyway)")
        if importlib.util.find_spec("cutlass") is None:
            raise CampaignArgError("--compile: needs the CuTe DSL (the cutlass module of nvidia-cutlass-dsl), "
                                   "which is not installed here")


def main(argv=None) -> int:
    from simulator.errors import ConfigError
    try:
        return _main(argv)
    except (CampaignArgError, ConfigError) as e:
        print(f"python -m validation.campaign: error: {e}", file=sys.stderr)
        return 2


def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.campaign", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="output folder (default: $OUT, else campaign_out, or "
                    "campaign_out_dry_run with --dry-run)")
    ap.add_argument("--quick", action="store_true", help="a small subset of every phase (a smoke run)")
    ap.add_argument("--phases", default=",".join(DEFAULT_PHASES),
                    help=f"comma-separated subset of {','.join(PHASES)} (default: all but wide)")
    ap.add_argument("--time-limit", type=float, default=480.0, help="seconds: no new work starts after this")
    ap.add_argument("--dry-run", action="store_true", help="CPU: the plan, the rules and synthetic timings")
    ap.add_argument("--compile", action="store_true", help="with --dry-run: compile every kernel for sm_90a")
    ap.add_argument("--publish", metavar="RUN_DIR", help="(CPU) write RUN_DIR's campaign into --dest")
    ap.add_argument("--dest", default=None, help="with --publish: where to write (default validation/results)")
    ap.add_argument("--repeat", metavar="RUN_DIR2", help="with --publish: a second run of the same command")
    ap.add_argument("--launches-npz", action="store_true", help="with --publish: also every launch (~0.4 MB)")
    a = ap.parse_args(argv)
    check_args(a)
    if a.publish:
        for pth in publish(Path(a.publish), Path(a.dest or "validation/results"),
                           repeat_dir=Path(a.repeat) if a.repeat else None, launches_npz=a.launches_npz):
            print(f"wrote {pth} ({pth.stat().st_size / 1e3:.0f} kB)")
        return 0
    phases = [x for x in a.phases.split(",") if x]
    bad = [x for x in phases if x not in PHASES]
    if bad or not phases:
        raise CampaignArgError(f"--phases {a.phases!r}: unknown {','.join(bad) or 'empty list'}; valid: "
                               f"{','.join(PHASES)}")
    if not a.dry_run:
        from validation.timing import require_cuda_gpu
        require_cuda_gpu("python -m validation.campaign")
    out = Path(a.out or os.environ.get("OUT") or ("campaign_out_dry_run" if a.dry_run else "campaign_out"))
    check_output_dir(str(out), "--out")
    out.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python -m validation.campaign", *(sys.argv[1:] if argv is None else argv)])
    deadline = time.time() + a.time_limit
    if a.dry_run:
        gpu = DryGpu(out, lambda *x: print(DRY_RUN_PREFIX, *x), compile_kernels=a.compile)
        camp = Campaign(gpu, out, command, deadline, a.quick)
        camp.run(phases, a.quick)
        print(f"{DRY_RUN_PREFIX} wrote {camp.result_path} (synthetic timings from a roofline, not measurements; "
              "--publish refuses it)")
        return 0
    import torch
    gpu = Gpu(out, print)
    camp = Campaign(gpu, out, command, deadline, a.quick)
    with torch.cuda.stream(gpu.stream):
        try:
            camp.run(phases, a.quick)
        except Exception as e:  # keep what was measured
            import traceback
            camp.res["errors"].append(f"fatal: {type(e).__name__}: {e}"[:500])
            traceback.print_exc()
            camp.save()
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
