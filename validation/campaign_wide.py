"""The ``wide`` phase of the H200 campaign: problems the project had not measured before it, each
assigned to ``dev`` or ``held_out`` before anything is measured, and the NVML power and clock of every
row over its own launches.

Problems (:data:`WIDE_PROBLEMS`): M from 16 to 16384 against LLM layer N/K (N up to 57344, K from 256
to 65536), small M x N with a long K, wave tails, ragged sizes and short K; fp16 and bf16 (the twin's
rules: N and K multiples of 8). Each runs every ``--space hw`` candidate alternating with cuBLAS on the
same random-normal inputs, every config checked once against a float32 reference (the ``space``
phase's method: ``Campaign.measure_shape``). They run in :func:`run_order` (round robin over the
classes, so that a time limit cuts every class a little rather than the last ones whole).

Held out: the ``held_out`` flag of each entry of :data:`WIDE_PROBLEMS` (a fixed list written before the
campaign ran: about a third of each class, :func:`held_out_share`). Held-out rows are published to
their own file (:data:`HELDOUT_JSON`), never summarised in Markdown, and their timings are never
printed while the campaign runs; they exist to score a model chosen without them.

Power: :class:`validation.nvml_sampler.NvmlSampler` samples every ``NVML_PERIOD_S`` during the
measuring phases; each launch's host-time window (``validation.timing.queued_round``'s ``host_t``)
selects the samples of its row (:func:`row_power`). NVML's ``power_w`` is a ~1 s running average, so
for a row it mostly reflects the whole alternation of its problem; ``power_instant_w`` is the local
reading; rows of kernels much shorter than the sampling period have few or no samples (``nvml_samples``
says how many; None then). Every sample of a problem is kept with the problem (``nvml`` in the
published file), so that other windows can be cut later.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

#: Row classes of the wide phase (what each is for).
CLASSES = {
    "m_le_128": "M <= 128 against LLM N/K: decode-like, one row of 128-row tiles, B streamed once",
    "m_129_512": "128 < M <= 512 against LLM N/K: few tile rows, fewer tiles than SMs at wide N tiles",
    "llm_large": "M > 512 LLM layer shapes (QKV, up/gate, down projections)",
    "long": "kernels of 3-7 ms (does the clock fall during one launch?)",
    "small_mn_large_k": "few output tiles sharing a long K (16 to 65536)",
    "wave_tail": "tile counts just over a multiple of the 132 SMs",
    "ragged": "extents that divide no tile, K not a multiple of 64",
    "small_k": "K from 256 to 512: per-tile prologue and epilogue costs",
}


@dataclass(frozen=True)
class WideProblem:
    """One problem of the wide phase: D[m, n] = A[m, k] @ B[n, k]^T in ``dtype``."""

    m: int
    n: int
    k: int
    dtype: str
    cls: str
    held_out: bool = False

    @property
    def split(self) -> str:
        return "held_out" if self.held_out else "dev"

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m, self.n, self.k)

    def key(self, phase: str = "wide") -> str:
        """The campaign's problem key (``phase|dtype|MxNxK``, as its launch records use)."""
        return f"{phase}|{self.dtype}|{self.m}x{self.n}x{self.k}"


def _p(shape: str, dtype: str, cls: str, held_out: bool = False) -> WideProblem:
    m, n, k = (int(x) for x in shape.split("x"))
    return WideProblem(m, n, k, dtype, cls, held_out)


H = True  # held out
#: The wide phase's problems, per class in priority order (the first ones run first under a time
#: limit); ``H``: held out. Fixed before the campaign ran; do not move a problem between splits.
WIDE_PROBLEMS = [
    _p("64x28672x4096", "fp16", "m_le_128"),
    _p("16x28672x4096", "fp16", "m_le_128"),
    _p("128x28672x4096", "fp16", "m_le_128", H),
    _p("32x8192x8192", "fp16", "m_le_128"),
    _p("16x4096x14336", "bf16", "m_le_128", H),
    _p("64x14336x4096", "bf16", "m_le_128"),
    _p("96x12288x4096", "fp16", "m_le_128"),
    _p("32x57344x8192", "bf16", "m_le_128", H),
    _p("128x57344x8192", "fp16", "m_le_128"),
    _p("128x8192x28672", "fp16", "m_le_128"),
    _p("64x8192x28672", "bf16", "m_le_128", H),
    _p("48x6144x4096", "bf16", "m_le_128"),
    _p("128x4096x4096", "fp16", "m_le_128"),
    _p("80x28672x4096", "bf16", "m_le_128"),
    _p("112x4096x14336", "fp16", "m_le_128", H),

    _p("512x4096x14336", "fp16", "m_129_512"),
    _p("256x14336x4096", "fp16", "m_129_512"),
    _p("256x4096x14336", "bf16", "m_129_512", H),
    _p("192x28672x4096", "fp16", "m_129_512"),
    _p("384x8192x8192", "fp16", "m_129_512", H),
    _p("512x28672x4096", "bf16", "m_129_512"),
    _p("320x6144x4096", "fp16", "m_129_512"),
    _p("512x57344x8192", "fp16", "m_129_512", H),
    _p("448x8192x28672", "bf16", "m_129_512"),
    _p("160x57344x8192", "bf16", "m_129_512"),
    _p("480x14336x4096", "fp16", "m_129_512"),
    _p("384x28672x4096", "fp16", "m_129_512", H),

    _p("4096x28672x4096", "fp16", "llm_large"),
    _p("8192x57344x1024", "fp16", "llm_large"),
    _p("4096x28672x4096", "bf16", "llm_large", H),
    _p("2048x6144x4096", "fp16", "llm_large"),
    _p("4096x4096x14336", "bf16", "llm_large"),
    _p("1024x28672x4096", "fp16", "llm_large", H),
    _p("8192x6144x4096", "bf16", "llm_large"),
    _p("2048x4096x14336", "fp16", "llm_large", H),
    _p("16384x4096x4096", "fp16", "llm_large"),
    _p("8192x14336x4096", "fp16", "llm_large"),
    _p("4096x8192x8192", "bf16", "llm_large"),
    _p("3072x28672x4096", "fp16", "llm_large", H),

    _p("8192x28672x8192", "fp16", "long"),
    _p("16384x8192x8192", "bf16", "long", H),
    _p("12288x12288x8192", "fp16", "long"),
    _p("8192x8192x16384", "bf16", "long"),

    _p("512x512x32768", "fp16", "small_mn_large_k"),
    _p("2048x2048x65536", "fp16", "small_mn_large_k"),
    _p("1024x1024x32768", "bf16", "small_mn_large_k", H),
    _p("256x1024x65536", "fp16", "small_mn_large_k"),
    _p("1536x1536x12288", "fp16", "small_mn_large_k", H),
    _p("768x2048x16384", "bf16", "small_mn_large_k"),
    _p("256x256x65536", "fp16", "small_mn_large_k"),
    _p("1024x4096x32768", "fp16", "small_mn_large_k", H),
    _p("128x4096x65536", "fp16", "small_mn_large_k"),
    _p("2048x512x49152", "bf16", "small_mn_large_k"),
    _p("640x640x24576", "fp16", "small_mn_large_k", H),

    _p("2304x2304x2304", "fp16", "wave_tail"),
    _p("5000x5000x5000", "fp16", "wave_tail"),
    _p("4224x4224x4224", "bf16", "wave_tail", H),
    _p("1408x4224x4096", "fp16", "wave_tail"),
    _p("2688x2688x8192", "fp16", "wave_tail", H),
    _p("3200x3200x3200", "bf16", "wave_tail"),
    _p("1152x2304x8192", "fp16", "wave_tail"),
    _p("2176x2176x4096", "bf16", "wave_tail"),
    _p("4480x4480x2048", "fp16", "wave_tail", H),

    _p("3333x4448x2952", "fp16", "ragged"),
    _p("12000x800x3000", "fp16", "ragged"),
    _p("7777x2056x1000", "bf16", "ragged", H),
    _p("1111x7000x2000", "bf16", "ragged"),
    _p("2500x3496x4000", "fp16", "ragged", H),
    _p("999x1000x1000", "fp16", "ragged"),
    _p("300x10000x3000", "fp16", "ragged"),
    _p("5555x3000x1504", "bf16", "ragged"),
    _p("1777x776x4000", "fp16", "ragged", H),

    _p("8192x8192x256", "fp16", "small_k"),
    _p("16384x8192x384", "bf16", "small_k", H),
    _p("4096x16384x256", "fp16", "small_k"),
    _p("12288x12288x512", "bf16", "small_k"),
    _p("8192x28672x256", "fp16", "small_k", H),
    _p("2048x2048x256", "fp16", "small_k"),
    _p("6000x6000x264", "fp16", "small_k"),
    _p("16384x16384x256", "bf16", "small_k"),
    _p("4096x4096x512", "fp16", "small_k"),
    _p("32768x4096x256", "fp16", "small_k", H),
]
del H

#: Files ``--publish`` writes for the wide phase (in ``--dest``; a dry run's names say ``.dry_run``).
DEV_BASE = "h200_campaign_wide"
HELDOUT_BASE = "h200_campaign_wide_heldout"
HELDOUT_JSON = HELDOUT_BASE + ".json"
#: NVML sampling period of the measuring phases (validation/results/h200_power.md used 5 ms).
NVML_PERIOD_S = 0.005
#: Alternating rounds per problem: enough for ~6 s of GPU time, 6 to 30 rounds (the space phase: 5 s, 5-30).
WIDE_BUDGET_S, WIDE_MIN_ROUNDS, WIDE_MAX_ROUNDS = 6.0, 6, 30


def run_order(problems: list[WideProblem] | None = None) -> list[WideProblem]:
    """The problems in the order they run: round robin over the classes (in :data:`CLASSES` order),
    each class in its listed order."""
    probs = WIDE_PROBLEMS if problems is None else problems
    queues = {c: [p for p in probs if p.cls == c] for c in CLASSES}
    unknown = sorted({p.cls for p in probs} - set(CLASSES))
    if unknown:
        raise ValueError(f"wide problem classes {unknown}: unknown; valid: {', '.join(CLASSES)}")
    out = []
    while any(queues.values()):
        for c in CLASSES:
            if queues[c]:
                out.append(queues[c].pop(0))
    return out


def held_out_share(problems: list[WideProblem] | None = None) -> dict[str, tuple[int, int]]:
    """Per class: (held-out problems, problems)."""
    probs = WIDE_PROBLEMS if problems is None else problems
    return {c: (sum(p.held_out for p in probs if p.cls == c), sum(p.cls == c for p in probs)) for c in CLASSES}


def covering_subset(configs: list) -> list:
    """A deterministic half of ``--space hw`` that still has every tile, schedule and cluster and both
    rasters and swizzles: raster m with swizzle 1 and raster n with swizzle 4 (for problems too long
    for all 96; none of :data:`WIDE_PROBLEMS` uses it now)."""
    return [c for c in configs if (c.raster == "m") == (c.swizzle == 1)]


# ================================================================================= power per row
def row_power(samples: list[tuple], launches: list[dict]) -> dict:
    """NVML fields of one row: the samples whose host time falls inside the row's own launches
    (``t0_host``/``t1_host`` of each launch record, perf_counter seconds)."""
    from validation.nvml_sampler import summarize_windows
    wins = [(x["t0_host"], x["t1_host"]) for x in launches if x.get("t0_host") is not None]
    s = summarize_windows(samples, wins)
    return {"nvml_samples": s["samples"], "nvml_power_w": s["power_w_median"],
            "nvml_power_instant_w": s["power_instant_w_median"], "nvml_sm_mhz": s["sm_mhz_median"],
            "nvml_sm_mhz_min": s["sm_mhz_min"], "nvml_sm_mhz_max": s["sm_mhz_max"],
            "nvml_temp_c": s["temp_c_median"], "nvml_reasons": s["reasons"] or None}


#: Per-row columns the wide phase adds (published when any row has them).
ROW_COLUMNS = ("split", "cls", "problem_order", "prev_problem", "next_problem", "t_first_s", "t_last_s",
               "nvml_samples", "nvml_power_w", "nvml_power_instant_w", "nvml_sm_mhz", "nvml_sm_mhz_min",
               "nvml_sm_mhz_max", "nvml_temp_c", "nvml_reasons")


class DryNvml:
    """A synthetic NVML for ``--dry-run`` (never a measurement): 300-320 W, 1980 MHz, no reasons."""

    NVML_CLOCK_SM = 1
    NVML_TEMPERATURE_GPU = 0

    def __init__(self):
        self._rng = random.Random(7)
        self._mj = 0

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetPowerUsage(self, h):
        return int(300_000 + 20_000 * self._rng.random())

    def nvmlDeviceGetFieldValues(self, h, ids):
        raise RuntimeError("no field values in a dry run")

    def nvmlDeviceGetClockInfo(self, h, which):
        return 1980

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        self._mj += 1500
        return self._mj

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 40


# ================================================================================= markdown (dev only)
def _f(x, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _range(xs, digits: int) -> str:
    xs = [x for x in xs if x is not None]
    return f"{min(xs):.{digits}f}-{max(xs):.{digits}f}" if xs else "-"


def wide_markdown(pub: dict, held: dict) -> str:
    """The dev part's summary (``pub``: the published dev dict) and, of the held-out part, only how
    many rows it has and of which problems (``held``: ``{"rows": int, "problems": [...]}``)."""
    from validation.measurements import rows_from_published
    rows = rows_from_published(pub)
    env = pub["env"]
    ours = [r for r in rows if r["kernel"] == "wsim_sm90_twin"]
    title = "# H200 wide campaign, dev part (hardware twin vs cuBLAS)"
    if env.get("dry_run"):
        title = "# DRY RUN: synthetic timings and NVML readings on a CPU, not measurements (H200 wide campaign)"
    checked = [r for r in ours if r["ok"] is not None]
    lines = [title, "",
             f"- device: {env.get('device')}, driver {env.get('driver')}, nvidia-cutlass-dsl "
             f"{env.get('nvidia_cutlass_dsl')}, torch {env.get('torch')}, {env.get('sms')} SMs; date {env.get('date_utc')}",
             f"- command: `{env.get('command')}`; load with `validation.measurements.load_h200_wide()`",
             f"- dev rows: {len(rows)} ({len(ours)} of our kernel, {len(rows) - len(ours)} cuBLAS) of "
             f"{len(pub.get('problems') or {})} problems; timed launches: {sum(r['n_launches'] or 0 for r in rows)}",
             f"- in-kernel SM clock over our rows: {_range([r['clock_ghz'] for r in ours], 3)} GHz; NVML SM clock "
             f"over rows (own launches): {_range([r.get('nvml_sm_mhz') for r in rows], 0)} MHz; NVML power over rows: "
             f"{_range([r.get('nvml_power_w') for r in rows], 0)} W (instant {_range([r.get('nvml_power_instant_w') for r in rows], 0)} W); "
             f"rows with NVML samples in their own launches: {sum(1 for r in rows if r.get('nvml_samples'))}/{len(rows)}",
             f"- correctness: {sum(1 for r in checked if r['ok'])}/{len(checked)} configs x problems passed (every "
             "output written; max abs error <= 2 x cuBLAS's against float32)",
             f"- held out: {held['rows']} rows of {len(held['problems'])} problems, in `{HELDOUT_JSON}` "
             "(not summarised here; never used to choose a mechanism): "
             + ", ".join(held["problems"]), ""]
    if pub.get("skipped"):
        lines += [f"- skipped (time limit): {len(pub['skipped'])}", ""]
    lines += ["## Per problem (run order; dev problems only)", "",
              "`vs cuBLAS`: cuBLAS's CUDA-event median over our best config's. NVML columns: the medians "
              "over the problem's alternating rounds (`W`: NVML's power reading, a ~1 s average, so a short "
              "problem's still shows the one before it; `inst W`: the instantaneous field; `cap`: fraction of "
              "samples with the sw_power_cap reason). Clock: the in-kernel clock of our rows (median, min-max).", "",
              "| # | class | dtype | M x N x K | cuBLAS us | best config | us | vs cuBLAS | clock GHz | "
              "clock range | NVML W | inst W | NVML MHz | cap |",
              "| ---: | --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    probs = pub.get("problems") or {}
    groups: dict = {}
    for r in rows:
        groups.setdefault(f"wide|{r['dtype']}|{r['m']}x{r['n']}x{r['k']}", []).append(r)
    for key, meta in sorted(probs.items(), key=lambda kv: kv[1].get("order", 0)):
        rs = groups.get(key, [])
        mine = [r for r in rs if r["kernel"] == "wsim_sm90_twin" and r["event_us"]]
        if not mine:
            continue
        cub = next((r for r in rs if r["kernel"] == "cublas"), None)
        best = min(mine, key=lambda r: r["event_us"])
        cu = cub["event_us"] if cub else None
        nv = meta.get("nvml") or {}
        clk = [r["clock_ghz"] for r in mine if r["clock_ghz"]]
        lines.append(f"| {meta.get('order')} | {meta.get('cls')} | {meta['dtype']} | {meta['m']}x{meta['n']}x{meta['k']} | "
                     f"{_f(cu)} | {best['config']} | {_f(best['event_us'])} | "
                     f"{_f(None if cu is None else cu / best['event_us'], 3)} | "
                     f"{_f(statistics.median(clk) if clk else None, 3)} | {_range(clk, 2)} | "
                     f"{_f(nv.get('power_w_median'), 0)} | {_f(nv.get('power_instant_w_median'), 0)} | "
                     f"{_f(nv.get('sm_mhz_median'), 0)} | "
                     f"{_f((nv.get('reasons') or {}).get('sw_power_cap', 0.0) if nv else None, 2)} |")
    wins = [(m, r) for m, r in _best_vs_cublas(groups, probs)]
    if wins:
        ratios = [x for _, x in wins]
        lines += ["", f"Our best of the candidates vs cuBLAS over {len(ratios)} dev problems: median "
                  f"{statistics.median(ratios):.3f}x, min {min(ratios):.3f}x, max {max(ratios):.3f}x; at least as fast "
                  f"on {sum(x >= 1.0 for x in ratios)}, >= 0.97x on {sum(x >= 0.97 for x in ratios)}."]
    return "\n".join(lines) + "\n"


def _best_vs_cublas(groups: dict, probs: dict):
    for key in probs:
        rs = groups.get(key, [])
        mine = [r["event_us"] for r in rs if r["kernel"] == "wsim_sm90_twin" and r["event_us"]]
        cub = next((r["event_us"] for r in rs if r["kernel"] == "cublas" and r["event_us"]), None)
        if mine and cub:
            yield key, cub / min(mine)
