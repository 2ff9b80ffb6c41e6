"""The measured rows ``wsim accuracy`` scores: one loader per data set, and the quick subset.

A data set is a list of :class:`Row` (a measured launch, the config that ran, the arch at the clock
it ran at) plus what its scoring needs: the constants fitted or derived on its rows (see
:mod:`.fitting`) and the published predictions that come with it. Rows a loader cannot use are
listed in ``DataSet.skipped`` with the reason, never dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simulator.machine.arch import ArchSpec

from .fitting import DerivedConstant, FittedConstant


@dataclass
class Row:
    """One measured launch, ready to simulate."""

    dataset: str
    key: str                    # unique within the data set
    label: str                  # shape and config, for tables
    shape: str                  # the problem (the unit of leave-one-shape-out)
    row_class: str              # the primary class (tables; the quick subset's strata)
    config: object              # Sm100GemmConfig / Sm90GemmConfig
    arch: ArchSpec              # the shipped constants, at the clock the row ran at
    measured_us: float
    baselines: dict[str, float] = field(default_factory=dict)   # published predictions, us
    measured: dict[str, float] = field(default_factory=dict)    # other measured values (derived constants)
    est_events: int = 0
    classes: dict[str, str] = field(default_factory=dict)       # further class dimensions -> class


@dataclass
class DataSet:
    name: str
    title: str
    source: str                 # where the measurements come from (and their metadata)
    rows: list[Row]
    #: Constants fitted on the rows by minimising MAPE (B200), and derived from measured values of
    #: the rows (H200's launch overhead): both are re-made for every leave-one-shape-out fold.
    fitted: tuple[FittedConstant, ...] = ()
    derived: tuple[DerivedConstant, ...] = ()
    baseline_names: tuple[str, ...] = ()
    class_title: str = "row class"      # what ``Row.row_class`` classifies by
    #: The campaign's config order per phase (H200): its rows are also scored at the clock the power
    #: model predicts for them in the campaign's conditions (:mod:`.clock`).
    campaign_plan: dict[str, list[str]] | None = None
    #: Measurements from a public repository that we read but do not commit: written results keep
    #: the scores and the per-row ratios, not the measured times or the published predictions.
    external: bool = False
    skipped: list[str] = field(default_factory=list)             # rows (or the set) not used, and why
    notes: list[str] = field(default_factory=list)


# ======================================================================================== B200
def _b200_class(m: int, n: int, k: int) -> str:
    if max(m, n, k) >= 100_000:
        return "huge (a dim >= 100k)"
    if k <= 512:
        return "small K (<= 512)"
    if min(m, n) <= 512:
        return "skinny (M or N <= 512)"
    return "large"


#: The B200 constants nothing publishes, fitted on the gemm-model rows (search grids, and for the
#: in-model ones the values each row is simulated at to build the fit's surrogate).
B200_FITTED = (
    FittedConstant("launch_overhead_ns", "ns", np.arange(0.0, 10_001.0, 500.0),
                   "GPU time per launch the simulation does not cover (grid launch, barrier init, TMEM "
                   "alloc, teardown, the gap between back-to-back kernels); not published for B200"),
    FittedConstant("tma_load_bytes_per_clk_per_sm", "B/clk/SM", np.arange(60.0, 128.1, 4.0),
                   "TMA bytes landing in one SM's SMEM per cycle under full load (SemiAnalysis's "
                   "microbenchmark reached 58 with one CTA per SM; the 256x256 rows at 98% of peak need >= 64)",
                   simulated=(72.0, 108.0), scale="inv"),
    FittedConstant("epilogue_subtile_sync_cycles", "cycles", np.arange(200.0, 1400.1, 100.0),
                   "per epilogue subtile, the DSL epilogue's fence, two named-barrier syncs and TMA-store "
                   "issue/wait beyond the modelled TMEM load, conversion and SMEM write; not published",
                   simulated=(300.0, 1000.0)),
    FittedConstant("epilogue_tile_cycles", "cycles", np.arange(0.0, 3000.1, 250.0),
                   "per output tile, the DSL epilogue's tail beyond its subtiles (the barrier after the last "
                   "subtile, the accumulator stage's release, the scheduler's advance, the next hand-off's wake): "
                   "the fixed cost that grows with the tile count; not published (gemm-model's own model: 1000)",
                   simulated=(0.0, 2000.0)),
)


def load_b200(path=None) -> DataSet:
    from simulator.engine.run import estimate_events
    from validation import b200_data as bd
    ds = DataSet("b200", "B200, hbarclay/gemm-model fp16 rows (CuTe-DSL dense_gemm_persistent, 2-CTA, "
                 "static scheduler)", "", [], fitted=B200_FITTED, baseline_names=("gemm-model",), external=True,
                 class_title="shape class")
    try:
        d = bd.data_dir(path)
        rows = bd.load_rows(d)
        preds = bd.load_predictions("l2hit", d)
    except bd.GemmModelDataMissing as e:
        ds.skipped.append(str(e))
        return ds
    ds.source = (f"{bd.REPO_URL} @ {bd.source_commit(d)}: {bd.FP16_CSV} (B200, CUDA 13.0, driver 580, "
                 f"CuTe DSL 4.3.0.dev0, {bd.CLOCK_SOURCE}; warmup {bd.WARMUP_ITERATIONS}, {bd.ITERATIONS} "
                 "back-to-back launches between CUDA events, cold L2); gemm-model's predictions: "
                 f"{bd.PREDICTIONS['l2hit']}")
    arch = ArchSpec.b200().with_overrides({"clock_ghz": bd.CLOCK_GHZ}, origin=bd.CLOCK_SOURCE)
    for r in rows:
        cfg = r.config()
        ds.rows.append(Row("b200", str(r.index), f"{r.shape_name} {r.config_name}", r.shape_name,
                           _b200_class(r.m, r.n, r.k), cfg, arch, r.runtime_us,
                           {"gemm-model": preds[r.index]}, est_events=estimate_events(cfg.resolved(arch)),
                           classes={"MMA tile": f"{r.mma_m}x{r.mma_n}", "cluster": f"{r.cluster_m}x{r.cluster_n}"}))
    ds.notes.append("each measurement is the mean of 5 back-to-back launches from Python between two CUDA "
                    "events; the model's time per launch (cycles / clock + the launch overhead) is compared "
                    "with it directly: a host launch interval fitted beside it sits below every row's "
                    "modelled time, so it never binds and is not a constant of the model")
    if any(r.padded != r.shape for r in rows):
        ds.notes.append("rows listed with K=257 or N=257 ran padded to 264 (benchmark_gemm.py pad_mnk, 16-byte "
                        "multiples); they are simulated as run, padded (528-B rows: not a multiple of 128 B)")
    return ds


# ======================================================================================== H200
def _h200_class(cfg) -> str:
    return f"{cfg.schedule} {cfg.tile_m}x{cfg.tile_n}"


def _h200_classes(cfg, measured_us: float) -> dict[str, str]:
    m = cfg.m
    return {"M": "M <= 256" if m <= 256 else ("256 < M <= 2560" if m <= 2560 else "M > 2560"),
            "cluster": f"{cfg.cluster_m}x{cfg.cluster_n}", "dtype": cfg.dtype_ab,
            "kernel time": "< 1 ms" if measured_us < 1000 else ">= 1 ms"}


def _decomposition(cfg) -> str:
    """The work decomposition as the stream-K campaign names it (split-K with its split count)."""
    if cfg.decomposition == "split_k":
        return f"split-K {cfg.splits}"
    return {"data_parallel": "data-parallel", "stream_k": "stream-K"}.get(cfg.decomposition, cfg.decomposition)


def _median_launch(rows: list[Row]) -> float:
    return float(round(np.median([r.measured["event_minus_span_us"] for r in rows]) * 1e3))


#: The H200 launch overhead: the median of the CUDA-event time minus the in-kernel span over the
#: rows (measured per row by the campaign), re-derived per fold without the held-out problem.
H200_DERIVED = (
    DerivedConstant("launch_overhead_ns", "ns", _median_launch,
                    "median over the rows of (CUDA-event time - in-kernel span): the GPU-side launch, the "
                    "prologue before the first role starts and the drain, measured per row by the campaign"),
)

_H200_SKIP_PHASES = {"overhead": "instrumentation on/off pairs of the overhead phase (not a config timing)"}


def _h200_skip_reason(row: dict) -> str | None:
    if row.get("phase") in _H200_SKIP_PHASES:
        return _H200_SKIP_PHASES[row["phase"]]
    if row.get("error"):
        return f"did not run: {row['error']}"
    if row.get("ok") is False:
        return "failed its correctness check"
    for key in ("event_us", "clock_ghz", "fields", "event_minus_span_us"):
        if not row.get(key):
            return f"no {key} recorded"
    return None


def load_h200(path=None, *, split: str | None = None) -> DataSet:
    """Our H200 timings of the SM90 twin (``validation/results/h200_campaign.json``; with ``split``, the
    wide campaign's part of that name: ``h200_campaign_wide.json``, ``h200_campaign_wide_heldout.json``),
    each row at its own in-kernel clock."""
    from simulator.engine.run import estimate_events
    from validation.campaign import COOP64_HELD_OUT, RAGGED_N_HELD_OUT, gpu_tag
    from validation.compare import sim_config_from_measured
    from validation.measurements import (
        CAMPAIGN,
        COOP64,
        RAGGED_N,
        SMALL_M,
        SPLITS,
        STREAMK,
        STREAMK_ND,
        WIDE,
        WIDE_HELDOUT,
        load_h200_timings,
        shown_path,
    )
    default_src, name, part = {
        None: (CAMPAIGN, "h200", ""),
        "dev": (WIDE, "h200-wide", ", wide campaign, dev"),
        "held_out": (WIDE_HELDOUT, "h200-wide-heldout", ", wide campaign, held_out"),
        "streamk": (STREAMK, "h200-streamk", ", stream-K campaign (data-parallel, stream-K and split-K rows)"),
        "small_m": (SMALL_M, "h200-small-m", ", M <= 128 campaign (64-row and 128-row tiles, data-parallel)"),
        "streamk_nd": (STREAMK_ND, "h200-streamk-nd", ", stream-K campaign, nondeterministic reduction (stream-K and "
                       "split-K rows)"),
        "ragged_n": (RAGGED_N, "h200-ragged-n", ", ragged-N campaign (cooperative widths 96-256; data-parallel, "
                     "heuristic and stream-K rows)"),
        "coop64": (COOP64, "h200-coop64", ", 64-row campaign (the one-warpgroup cooperative kernel, data-parallel and "
                   "every stream-K decomposition; the 64-row ping-pong)"),
    }[split]
    held_out = {"ragged_n": RAGGED_N_HELD_OUT, "coop64": COOP64_HELD_OUT}.get(split)
    src = path or default_src
    title = "H200, our CuTe-DSL SM90 twin (validation/results)" + part
    ds = DataSet(name, title, "", [], derived=H200_DERIVED, class_title="schedule and tile")
    try:
        campaign = load_h200_timings(src, kernel="wsim_sm90_twin", ok_only=False,
                                     split=split if split in SPLITS else None)
    except (FileNotFoundError, ValueError) as e:
        ds.skipped.append(f"no H200 campaign: {e}")
        return ds
    env = campaign[0].get("env", {}) if campaign else {}
    if campaign and gpu_tag(env) != "h200":
        ds.skipped.append(f"{src}: measured on {env.get('device')!r}; the H200 model scores H200 rows only")
        return ds
    plan = json.loads(Path(src).read_text()).get("plan", {})
    ds.campaign_plan = {ph: list(p["configs"]) for ph, p in plan.items() if isinstance(p, dict) and "configs" in p}
    ds.source = (f"{shown_path(src)}: {env.get('device')}, driver {env.get('driver')}, CuTe DSL {env.get('nvidia_cutlass_dsl')}, "
                 f"{env.get('date_utc')}, `{env.get('command')}`; median CUDA-event time of launches queued "
                 "behind a busy kernel; each row simulated at its in-kernel clock")
    base = ArchSpec.h200()
    for row in campaign:
        shape = f"{row['dtype']} {row['m']}x{row['n']}x{row['k']}"
        reason = _h200_skip_reason(row)
        if reason:
            ds.skipped.append(f"{row['phase']} {shape} {row['config']}: {reason}")
            continue
        cfg = sim_config_from_measured({"config": row["fields"], "dtype": row["dtype"],
                                        "problem": {"m": row["m"], "n": row["n"], "k": row["k"], "l": 1}})
        arch = base.with_overrides({"clock_ghz": round(row["clock_ghz"], 4)},
                                   origin="in-kernel clock of this measurement")
        ds.rows.append(Row("h200", f"{row['phase']} {shape} {row['config']}", f"{shape} {row['config']}", shape,
                           _h200_class(cfg), cfg, arch, float(row["event_us"]),
                           measured={"event_minus_span_us": float(row["event_minus_span_us"])},
                           est_events=estimate_events(cfg.resolved(arch)),
                           classes={**_h200_classes(cfg, float(row["event_us"])),
                                    **({"campaign class": row["cls"]} if row.get("cls") else {}),
                                    **({"decomposition": _decomposition(cfg)}
                                       if split in ("streamk", "streamk_nd", "ragged_n", "coop64") else {}),
                                    **({"problems": "held out" if (row["m"], row["n"], row["k"]) in held_out
                                        else "development"} if held_out else {})}))
    return ds


#: name -> loader(path or None) -> DataSet. A new data set is one more entry. The wide campaign's
#: parts are scored only when named: ``h200-wide`` (dev rows) and ``h200-wide-heldout`` (the held-out
#: rows: the final score of a model chosen without them); so are ``h200-streamk``, the stream-K campaign,
#: ``h200-small-m``, the M <= 128 campaign, ``h200-streamk-nd``, the nondeterministic reduction's rows, and
#: ``h200-ragged-n``, the ragged-N widths, and ``h200-coop64``, the 64-row cooperative kernel (each measured after
#: the model was frozen, used for no choice).
DATASETS: dict[str, Callable[..., DataSet]] = {
    "h200": load_h200, "b200": load_b200,
    "h200-wide": lambda path=None: load_h200(path, split="dev"),
    "h200-wide-heldout": lambda path=None: load_h200(path, split="held_out"),
    "h200-streamk": lambda path=None: load_h200(path, split="streamk"),
    "h200-small-m": lambda path=None: load_h200(path, split="small_m"),
    "h200-streamk-nd": lambda path=None: load_h200(path, split="streamk_nd"),
    "h200-ragged-n": lambda path=None: load_h200(path, split="ragged_n"),
    "h200-coop64": lambda path=None: load_h200(path, split="coop64")}
#: What ``wsim accuracy`` scores without ``--data``.
DEFAULT_DATASETS = ("h200", "b200")


# ================================================================================== subsetting
def quick_subset(rows: list[Row], budget_events: int) -> list[Row]:
    """Every row (all configs) of the cheapest shapes of each row class: shapes are added cheapest
    first, round-robin over the classes, while the estimated events stay within ``budget_events``.
    A class whose cheapest shape alone exceeds the budget is left out."""
    by_shape: dict[str, list[Row]] = {}
    for r in rows:
        by_shape.setdefault(r.shape, []).append(r)
    classes: dict[str, list[tuple[int, str]]] = {}
    for shape, rs in by_shape.items():
        classes.setdefault(rs[0].row_class, []).append((sum(r.est_events for r in rs), shape))
    for v in classes.values():
        v.sort()
    chosen: set[str] = set()
    spent = 0
    progress = True
    while progress:
        progress = False
        for cls in sorted(classes):
            if not classes[cls]:
                continue
            cost, shape = classes[cls][0]
            if spent + cost > budget_events:
                classes[cls] = []
                continue
            classes[cls].pop(0)
            chosen.add(shape)
            spent += cost
            progress = True
    return [r for r in rows if r.shape in chosen]
