"""The committed H200 timings, as rows the accuracy and tuning helpers read (CPU, no GPU, no DSL).

``load_h200_timings()`` reads ``validation/results/h200_campaign.json`` (written by
``python -m validation.campaign --publish RUN_DIR`` from a GPU run of ``python -m validation.campaign``)
and returns one dict per (phase, dtype, problem, kernel). ``load_h200_wide()`` reads the wide campaign
(``--phases wide``): its dev part, ``h200_campaign_wide.json``, by default; its held-out part
(``h200_campaign_wide_heldout.json``) only when asked for by name (``split="held_out"``), and no
loader reads a held-out file without it. Rows:

=====================  ==========================================================================
key                    meaning
=====================  ==========================================================================
``phase``              ``"space"`` (every ``simulator.kernels.space.hw_space()`` candidate),
                       ``"bf16"``, ``"small"`` (1-10 us problems, also timed with CUDA graphs),
                       ``"overhead"`` (instrumentation on/off pairs)
``dtype``              ``"fp16"`` or ``"bf16"`` (A, B and D; fp32 accumulate)
``m, n, k``            the problem: D[m, n] = A[m, k] @ B[n, k]^T
``kernel``             ``"wsim_sm90_twin"`` (hw_kernels.sm90_gemm) or ``"cublas"`` (torch.matmul)
``config``             ``KernelConfig.name()`` of our kernel (``_trace-span``: the span level every
                       timed launch carries), or ``"cublas"``
``fields``             our kernel's ``KernelConfig`` fields (tile_m, tile_n, tile_k, cluster_m,
                       cluster_n, schedule, raster, swizzle, epilogue_tile_n, epilogue_store_stages,
                       mainloop_stages, instrument), None for cuBLAS
``n_launches``         timed launches behind the row (alternating with every other kernel of the
                       same problem, order rotating per round, same random-normal inputs)
``event_us``           median CUDA-event time of one launch, queued behind a busy kernel (no host
                       launch path); ``_p10``, ``_p90``, ``_min`` likewise
``span_us``            median in-kernel span: first role start to last TMA store landed
                       (%globaltimer, 32 ns ticks); ``_p10``, ``_p90``
``clock_ghz``          median effective SM clock of the launches (clock64 ticks over globaltimer ns,
                       inside the kernel); ``_min``, ``_max`` over launches. cuBLAS has none:
                       ``neighbor_clock_ghz`` is the median clock of our launches run just before
                       and after it
``event_minus_span_us`` median per-launch (event - span): the GPU-side launch latency and drain
``queued_fraction``    share of launches in rounds the host had fully enqueued before the GPU ran them
``vs_cublas``          cuBLAS's event_us over this row's (> 1: faster than cuBLAS)
``graph_us_per_launch`` (small) per-launch time in a CUDA graph of 20 launches; ``graph_span_us``,
                       ``graph_clock_ghz``
``ok``                 checked once per problem: every output written and max abs error against a
                       float32 reference <= 2 x cuBLAS's (``max_abs_err``, ``cublas_max_abs_err``,
                       ``err_vs_cublas``); None when not checked
``error``              why a config did not run (then no timing)
``*_repeat``           (when the campaign was run twice with the same command) the second run's
                       ``event_us``, ``span_us``, ``clock_ghz``, ``neighbor_clock_ghz``, ``n_launches``
``split``, ``cls``     (wide) ``"dev"`` or ``"held_out"``, fixed before the campaign ran
                       (validation/campaign_wide.py), and the problem's class
``problem_order``      (wide) the problem's place in the run; ``prev_problem``, ``next_problem``:
                       the keys (``wide|dtype|MxNxK``) of the problems measured before and after
``t_first_s``          (wide) host time of the row's first and last launch (``t_last_s``), s from
                       the campaign's start (the GPU ran its problems back to back in this order)
``nvml_*``             (wide) NVML over the row's own launches' windows (sampled every 5 ms):
                       ``nvml_samples`` (how many; 0: the launches were too short, all None),
                       medians ``nvml_power_w`` (NVML's ~1 s average), ``nvml_power_instant_w``,
                       ``nvml_sm_mhz`` (+ ``_min``, ``_max``), ``nvml_temp_c``, ``nvml_reasons``
                       (fraction of samples per clock-event reason, e.g. ``sw_power_cap``)
``env``                device, driver, DSL version, torch, date, the exact command (shared dict)
=====================  ==========================================================================
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def shown_path(path) -> str:
    """``path`` as a report prints it: relative to the checkout when inside it (the same text wherever the
    checkout lives), else as given."""
    try:
        return str(Path(path).resolve().relative_to(RESULTS.parent.parent))
    except ValueError:
        return str(path)


CAMPAIGN = RESULTS / "h200_campaign.json"
#: The wide campaign (validation/campaign_wide.py): dev rows, and the held-out rows kept apart.
WIDE = RESULTS / "h200_campaign_wide.json"
WIDE_HELDOUT = RESULTS / "h200_campaign_wide_heldout.json"
#: The stream-K campaign (validation/campaign.py --phases streamk): data-parallel, stream-K and split-K rows.
STREAMK = RESULTS / "h200_streamk.json"
#: The M <= 128 campaign (validation/campaign.py --phases small_m): 64-row ping-pong, 128-row ping-pong and
#: cooperative tiles (written once the lead has run it on the H200).
SMALL_M = RESULTS / "h200_small_m.json"
#: The stream-K campaign's stream-K scheduler candidates with the nondeterministic reduction
#: (validation/campaign.py --phases streamk_nd).
STREAMK_ND = RESULTS / "h200_streamk_nd.json"
#: The ragged-N campaign on the H200 (validation/campaign.py --phases ragged_n): cooperative widths 96-256.
RAGGED_N = RESULTS / "h200_ragged_n.json"
#: The 64-row cooperative campaign on the H200 (validation/campaign.py --phases coop64): the one-warpgroup
#: cooperative kernel with the stream-K scheduler, beside the 64-row ping-pong.
COOP64 = RESULTS / "h200_coop64.json"
SPLITS = ("dev", "held_out")


#: KernelConfig.name() suffixes of the instrumentation levels (hw_kernels/records.py).
_LEVELS = {"": 0, "tile": 1, "kblock": 2, "kblock-epi": 3, "span": 4}


def twin_config(name: str):
    """The twin's ``hw_kernels.host.KernelConfig`` that a campaign row's config name stands for, at the
    instrumentation level its ``_trace-`` suffix names; None for cuBLAS or any other name."""
    from dataclasses import replace

    from hw_kernels.host import KernelConfig
    base, _, level = name.partition("_trace-")
    cfg = KernelConfig.from_name(base)
    if cfg is None or level not in _LEVELS:
        return None
    return replace(cfg, instrument=_LEVELS[level])


def rows_from_published(pub: dict) -> list[dict]:
    """Rows (dicts, the keys above) of a published campaign dict (its ``columns`` + ``rows`` table)."""
    cols = pub["columns"]
    env = pub.get("env", {})
    rep = pub.get("repeat")
    out = []
    for i, vals in enumerate(pub["rows"]):
        r = dict(zip(cols, vals, strict=True))
        if rep:
            r.update({f"{c}_repeat": v for c, v in zip(rep["columns"], rep["rows"][i], strict=True)})
        r["kernel"] = r.get("kernel") or ("cublas" if r["config"] == "cublas" else "wsim_sm90_twin")
        cfg = twin_config(r["config"])
        fields = None
        if cfg is not None:
            fields = cfg.asdict()
            fields.pop("instrument_roles", None)
        r["fields"] = fields
        r["env"] = env
        out.append(r)
    return out


def load_h200_timings(path: str | Path | None = None, *, phase: str | None = None, dtype: str | None = None,
                      kernel: str | None = None, ok_only: bool = True, split: str | None = None,
                      allow_dry_run: bool = False) -> list[dict]:
    """The committed H200 timings (schema in this module's docstring), optionally filtered.

    ``ok_only``: drop rows of our kernel that failed their correctness check or did not run.
    ``split``: keep the rows of that split only (``"dev"``, ``"held_out"``); a file that holds held-out
    rows is read only with ``split="held_out"``.
    Raises FileNotFoundError if the campaign was not committed, ValueError for a dry run, an unknown
    split, or held-out rows not asked for.
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"split={split!r}: unknown; valid: {', '.join(SPLITS)}")
    p = Path(path) if path is not None else CAMPAIGN
    pub = json.loads(p.read_text())
    if pub.get("env", {}).get("dry_run") and not allow_dry_run:
        raise ValueError(f"{p}: a --dry-run campaign (synthetic timings), not a measurement")
    rows = rows_from_published(pub)
    if split != "held_out" and (pub.get("split") == "held_out" or any(r.get("split") == "held_out" for r in rows)):
        raise ValueError(f"{p}: holds held-out rows (kept to score a model chosen without them); "
                         "read them only with split='held_out'")
    if split is not None:
        rows = [r for r in rows if r.get("split") == split]
    if phase is not None:
        rows = [r for r in rows if r["phase"] == phase]
    if dtype is not None:
        rows = [r for r in rows if r["dtype"] == dtype]
    if kernel is not None:
        rows = [r for r in rows if r["kernel"] == kernel]
    if ok_only:
        rows = [r for r in rows if r.get("error") is None and r.get("ok") is not False and r.get("event_us")]
    return rows


def load_h200_wide(split: str = "dev", path: str | Path | None = None, **filters) -> list[dict]:
    """The wide campaign's rows of ``split`` (``"dev"``: ``h200_campaign_wide.json``; ``"held_out"``:
    ``h200_campaign_wide_heldout.json``, for scoring only); ``filters``: those of
    :func:`load_h200_timings` (phase, dtype, kernel, ok_only, allow_dry_run)."""
    if split not in SPLITS:
        raise ValueError(f"split={split!r}: unknown; valid: {', '.join(SPLITS)}")
    default = WIDE if split == "dev" else WIDE_HELDOUT
    return load_h200_timings(path if path is not None else default, split=split, **filters)


def wide_problems(split: str = "dev", path: str | Path | None = None) -> dict:
    """The wide campaign's problems of ``split``: ``{key: record}`` with ``order``, ``prev``, ``next``,
    ``cls``, ``rounds``, host times (s from the campaign's start) and ``nvml`` (medians over the
    problem's alternating rounds: power, SM clock, clock-event reasons, energy-counter power)."""
    if split not in SPLITS:
        raise ValueError(f"split={split!r}: unknown; valid: {', '.join(SPLITS)}")
    p = Path(path) if path is not None else (WIDE if split == "dev" else WIDE_HELDOUT)
    return json.loads(p.read_text()).get("problems") or {}


def launch_path(path: str | Path | None = None) -> list[dict]:
    """The host-launch-path measurements (per problem: method -> host us per launch, back-to-back us,
    event us with the GPU idle and queued)."""
    p = Path(path) if path is not None else CAMPAIGN
    return json.loads(p.read_text()).get("launch_path") or []


def instrumentation_overhead(path: str | Path | None = None) -> list[dict]:
    """The span (and tile) instrumentation's overhead rows: problem, config, level, ratios."""
    p = Path(path) if path is not None else CAMPAIGN
    return json.loads(p.read_text()).get("overhead") or []
