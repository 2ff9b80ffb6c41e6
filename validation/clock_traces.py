"""What sets the in-kernel clock of a campaign row, read from the wide campaign's per-launch traces (dev
part only): the rounds the campaign ran, how much of the clock's spread follows the config, the round
or the time within a round, and how the clock follows a kernel's own tensor load when the power
controller is not holding it (issue 16).

    python -m validation.clock_traces [--out validation/results]

Reads ``h200_campaign_wide_launches.npz`` (each launch's in-kernel clock and %globaltimer start and
end), ``h200_campaign_wide.json`` (rows, NVML clock per row) and ``h200_power.json`` (the
microbenchmark's short rounds and settled runs, for the same relation under a set load). The held-out
part of the campaign is not read.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
LAUNCHES = RESULTS / "h200_campaign_wide_launches.npz"
ROWS = RESULTS / "h200_campaign_wide.json"
POWER = RESULTS / "h200_power.json"
#: A gap between launch starts longer than this many times the problem's median spacing (and 2 ms)
#: ends a round: the campaign syncs and checks between rounds.
ROUND_GAP_FACTOR = 5.0
ROUND_GAP_MIN_S = 0.002
#: Rounds shorter than this are "short": the controller's slow loop (it held a full-load kernel's
#: starting clock ~33 ms: h200_power.json step.tc.fall.t50_ms) has little time to act within one.
SHORT_ROUND_MS = 60.0
#: NVML SM clock (MHz) at or above which a row counts as not held back by the slow loop.
NVML_FREE_MHZ = 1965.0
UTIL_BINS = (0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 1.01)
POSITION_BINS = 10


# ============================================================================ rounds and variance
def split_rounds(t0: np.ndarray) -> np.ndarray:
    """Round index of each launch (``t0`` sorted): a new round after a long gap between starts."""
    dt = np.diff(t0)
    cut = max(ROUND_GAP_MIN_S, ROUND_GAP_FACTOR * float(np.median(dt))) if dt.size else ROUND_GAP_MIN_S
    return np.r_[0, np.cumsum(dt > cut)]


def explained(values: np.ndarray, groups: np.ndarray) -> float:
    """Share of the variance of ``values`` that the group means explain (R^2 of one factor)."""
    v = values.var()
    if v == 0:
        return 0.0
    means = {g: values[groups == g].mean() for g in np.unique(groups)}
    return float(1 - (values - np.array([means[g] for g in groups])).var() / v)


def problem_traces(z) -> dict[str, dict]:
    """Per problem: its launches sorted by start, with config index, round and ms since round start."""
    keys, launches, row = z["keys"], z["launches"], z["row"]
    col = {c: i for i, c in enumerate(z["columns"])}
    by_problem: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        by_problem.setdefault(str(k).rsplit("|", 1)[0], []).append(i)
    out = {}
    for p, idx in by_problem.items():
        m = np.isin(row, idx) & np.isfinite(launches[:, col["clock_ghz"]])
        t0, t1 = launches[m, col["t0_s"]], launches[m, col["t1_s"]]
        o = np.argsort(t0)
        t0, t1, clk, cfg = t0[o], t1[o], launches[m, col["clock_ghz"]][o], row[m][o]
        rid = split_rounds(t0)
        first = {r: t0[rid == r][0] for r in np.unique(rid)}
        pos_ms = (t0 - np.array([first[r] for r in rid])) * 1e3
        out[p] = {"t0": t0, "t1": t1, "clock": clk, "config": cfg, "round": rid, "pos_ms": pos_ms}
    return out


def round_summary(tr: dict) -> dict:
    """Rounds, their length and the GPU idle time between them (ms), and the variance shares."""
    rid, t0, t1 = tr["round"], tr["t0"], tr["t1"]
    rounds = np.unique(rid)
    length = [float((t1[rid == r].max() - t0[rid == r].min()) * 1e3) for r in rounds]
    gaps = [float((t0[rid == b].min() - t1[rid == a].max()) * 1e3) for a, b in zip(rounds[:-1], rounds[1:], strict=True)]
    lc = np.log(tr["clock"])
    edges = np.quantile(tr["pos_ms"], np.linspace(0, 1, POSITION_BINS + 1))
    pos_bin = np.clip(np.searchsorted(edges, tr["pos_ms"], side="right") - 1, 0, POSITION_BINS - 1)
    cfg_medians = np.array([np.median(tr["clock"][tr["config"] == c]) for c in np.unique(tr["config"])])
    return {"launches": int(lc.size), "rounds": int(rounds.size), "round_ms": float(np.median(length)),
            "idle_gap_ms": float(np.median(gaps)) if gaps else None,
            "clock_sd": float(lc.std()), "config_sd": float(np.std(cfg_medians) / np.median(cfg_medians)),
            "r2_config": explained(lc, tr["config"]), "r2_round": explained(lc, rid),
            "r2_position": explained(lc, pos_bin)}


# ==================================================================== clock against own tensor load
def measured_util(r: dict, tensor_flops_per_clk_per_sm: float, sms: int) -> float | None:
    """A row's tensor-core utilisation from its own measurement: FLOPs over the peak at its in-kernel
    clock for its span (the cycles the kernel took, whatever the clock)."""
    span = r.get("span_us") or r.get("event_us")
    if not span or not r.get("clock_ghz"):
        return None
    return 2.0 * r["m"] * r["n"] * r["k"] / (span * 1e-6) / (sms * tensor_flops_per_clk_per_sm * r["clock_ghz"] * 1e9)


def free_rows(rows: list[dict]) -> list[tuple[float, float]]:
    """(utilisation, in-kernel clock) of the rows the NVML clock shows not held back."""
    from simulator.machine.arch import ArchSpec
    a = ArchSpec.h200()
    out = []
    for r in rows:
        if r.get("phase") != "wide" or not re.match(r"\d+x", str(r.get("config"))):
            continue
        if (r.get("nvml_sm_mhz") or 0) < NVML_FREE_MHZ:
            continue
        u = measured_util(r, a.mma_flops_per_clk_per_sm.value, a.sm_count.value)
        if u is not None:
            out.append((u, r["clock_ghz"]))
    return out


def util_table(pairs: list[tuple[float, float]]) -> list[dict]:
    u = np.array([p[0] for p in pairs])
    c = np.array([p[1] for p in pairs])
    out = []
    for lo, hi in zip(UTIL_BINS[:-1], UTIL_BINS[1:], strict=True):
        s = c[(u >= lo) & (u < hi)]
        if s.size:
            out.append({"util": f"{lo:.1f}-{min(hi, 1.0):.1f}", "rows": int(s.size), "median_ghz": float(np.median(s)),
                        "p10_ghz": float(np.percentile(s, 10)), "p90_ghz": float(np.percentile(s, 90))})
    return out


def microbench_points(power: dict) -> list[dict]:
    """The microbenchmark's in-kernel clock under a set tensor load at an unheld NVML clock: each launch
    of its short rounds (1.5 ms kernels, heavy and light alternating) and its settled runs on 132 SMs."""
    ex = power["results"]["kernels"]["experiments"]
    out = []
    for name in ("neighbours.round_heavy", "neighbours.round_light", "neighbours.round_alternating"):
        for duty in (1.0, 0.2):
            clocks = [ln["clock_mhz"] / 1e3 for rep in ex.get(name, {}).get("repeats", [])
                      for ln in rep["launches"][1:] if ln["load"]["duty"] == duty]
            if clocks:
                out.append({"run": f"{name}, tc@{duty:g} launches", "tc_busy": duty, "launches": len(clocks),
                            "median_ghz": float(np.median(clocks))})
    for name, e in ex.items():
        ld = e.get("spec", {}).get("load") or {}
        nv = e.get("nvml_settled") or {}
        if (name.startswith("settle.tc@") and ld.get("sms") == 132 and ld.get("mem") == "none"
                and ld.get("data") == "random" and (nv.get("sm_mhz_median") or 0) >= NVML_FREE_MHZ):
            out.append({"run": name, "tc_busy": e.get("tc_busy_fraction"), "launches": 1,
                        "median_ghz": (e.get("clock_mhz_settled") or e.get("clock_mhz")) / 1e3})
    return out


# ============================================================================ the figure
def plot_round_clocks(problems: list[str], rounds: int = 6, z=None):
    """Each problem's in-kernel clock against the time since its round began, ``rounds`` rounds overlaid
    (one line each), the launches coloured by their config's tile N: a figure with a panel per problem
    (``problems`` as the launches file names them, e.g. ``"wide|fp16|1408x4224x4096"``)."""
    import matplotlib.pyplot as plt
    z = np.load(LAUNCHES, allow_pickle=False) if z is None else z
    traces = problem_traces(z)
    missing = [p for p in problems if p not in traces]
    if missing:
        raise ValueError(f"problems {missing}: not in {LAUNCHES.name} (e.g. {next(iter(traces))!r})")
    tile_n = np.array([int(m.group(1)) if (m := re.match(r"\d+x(\d+)", str(k).rsplit("|", 1)[1])) else 0
                       for k in z["keys"]])
    fig, axes = plt.subplots(len(problems), 1, figsize=(9, 2.6 * len(problems)), squeeze=False, layout="constrained")
    for ax, p in zip(axes[:, 0], problems, strict=True):
        tr, s = traces[p], round_summary(traces[p])
        for r in np.unique(tr["round"])[:rounds]:
            m = tr["round"] == r
            ax.plot(tr["pos_ms"][m], tr["clock"][m], lw=0.5, color="0.6")
            sc = ax.scatter(tr["pos_ms"][m], tr["clock"][m], c=tile_n[tr["config"][m]], s=6, cmap="viridis",
                            vmin=64, vmax=256)
        ax.set_title(f"{p.split('|', 1)[1]}: round {s['round_ms']:.0f} ms; R2 config {s['r2_config']:.2f}, "
                     f"position {s['r2_position']:.2f}", fontsize=9)
        ax.set_ylabel("in-kernel GHz")
    axes[-1, 0].set_xlabel("ms since the round began")
    fig.colorbar(sc, ax=axes[:, 0].tolist(), label="tile N (cuBLAS: 0)")
    return fig


# ============================================================================ the report
def run() -> dict:
    z = np.load(LAUNCHES, allow_pickle=False)
    data = json.loads(ROWS.read_text())
    cols = data["columns"]
    rows = [dict(zip(cols, r, strict=True)) for r in data["rows"]]
    if any(r.get("split") not in (None, "dev") for r in rows):
        raise ValueError(f"{ROWS}: rows of a split other than dev; this analysis reads the dev part only")
    problems = {p: round_summary(tr) for p, tr in problem_traces(z).items()}
    pairs = free_rows(rows)
    return {"sources": [str(p.relative_to(RESULTS.parents[1])) for p in (LAUNCHES, ROWS, POWER)],
            "short_round_ms": SHORT_ROUND_MS, "problems": problems,
            "classes": _classes(problems), "free_rows": util_table(pairs),
            "free_rows_corr": float(np.corrcoef(*np.array(pairs).T)[0, 1]) if len(pairs) > 2 else None,
            "microbench": microbench_points(json.loads(POWER.read_text()))}


def _classes(problems: dict) -> dict:
    out = {}
    for name, keep in (("short rounds", lambda s: s["round_ms"] < SHORT_ROUND_MS),
                       ("long rounds", lambda s: s["round_ms"] >= SHORT_ROUND_MS)):
        ss = [s for s in problems.values() if keep(s)]
        if ss:
            out[name] = {"problems": len(ss), **{k: float(np.median([s[k] for s in ss]))
                                                 for k in ("round_ms", "clock_sd", "config_sd", "r2_config",
                                                           "r2_round", "r2_position")},
                         "idle_gap_ms": float(np.median([s["idle_gap_ms"] for s in ss if s["idle_gap_ms"] is not None]))}
    return out


def markdown(res: dict, command: str) -> str:
    L = ["# What sets a campaign row's clock: the wide campaign's per-launch traces (issue 16)", "",
         f"`{command}`; reads {', '.join(res['sources'])} (the campaign's dev part only). Written by the command.", "",
         f"Launches are grouped into rounds (a gap between starts over {ROUND_GAP_FACTOR:g}x the median spacing and "
         f"{ROUND_GAP_MIN_S * 1e3:g} ms). Shares of the variance of log(clock) over a problem's launches explained by "
         f"its config, its round, and its position in the round ({POSITION_BINS} bins); config sd: spread of the "
         f"per-config median clocks (what a row reports). Medians over the problems of each class (short: rounds "
         f"< {res['short_round_ms']:g} ms).", "",
         "| class | problems | round (ms) | idle between rounds (ms) | clock sd | config sd | R2 config | R2 round | R2 position |",
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, c in res["classes"].items():
        L.append(f"| {name} | {c['problems']} | {c['round_ms']:.1f} | {c['idle_gap_ms']:.1f} | {c['clock_sd']:.3f} | "
                 f"{c['config_sd']:.3f} | {c['r2_config']:.2f} | {c['r2_round']:.2f} | {c['r2_position']:.2f} |")
    L += ["", f"Rows whose NVML SM clock read >= {NVML_FREE_MHZ:g} MHz (the slow loop not holding the clock): "
          f"in-kernel clock by the row's own tensor utilisation (its FLOPs over the peak at its clock for its span; "
          f"correlation {res['free_rows_corr']:.2f}):", "",
          "| utilisation | rows | median GHz | p10 | p90 |", "| --- | ---: | ---: | ---: | ---: |"]
    L += [f"| {t['util']} | {t['rows']} | {t['median_ghz']:.3f} | {t['p10_ghz']:.3f} | {t['p90_ghz']:.3f} |"
          for t in res["free_rows"]]
    L += ["", "The microbenchmark under a set tensor load (h200_power.json), NVML clock not held:", "",
          "| run | tensor busy | launches | median GHz |", "| --- | ---: | ---: | ---: |"]
    L += [f"| {m['run']} | {m['tc_busy']:.2f} | {m['launches']} | {m['median_ghz']:.3f} |" for m in res["microbench"]]
    L += ["", "| problem | launches | rounds | round (ms) | idle gap (ms) | clock sd | config sd | R2 config | R2 round | R2 position |",
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for p, s in sorted(res["problems"].items(), key=lambda kv: -kv[1]["round_ms"]):
        gap = "-" if s["idle_gap_ms"] is None else f"{s['idle_gap_ms']:.1f}"
        L.append(f"| {p.split('|', 1)[1]} | {s['launches']} | {s['rounds']} | {s['round_ms']:.1f} | {gap} | "
                 f"{s['clock_sd']:.3f} | {s['config_sd']:.3f} | {s['r2_config']:.2f} | {s['r2_round']:.2f} | "
                 f"{s['r2_position']:.2f} |")
    return "\n".join(L + [""])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write h200_clock_traces.json/.md here")
    a = ap.parse_args(argv)
    try:
        res = run()
    except (OSError, ValueError, KeyError) as e:
        print(f"validation.clock_traces: {e}", file=sys.stderr)
        return 2
    cmd = "python -m validation.clock_traces" + (f" --out {a.out}" if a.out else "")
    md = markdown(res, cmd)
    print(md)
    if a.out:
        out = Path(a.out)
        (out / "h200_clock_traces.json").write_text(json.dumps({"command": cmd, **res}, indent=1))
        (out / "h200_clock_traces.md").write_text(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
