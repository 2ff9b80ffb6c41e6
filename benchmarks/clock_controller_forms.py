"""Other forms of the power controller, scored like the shipped one (issue 16): leave-one-problem-out on the
campaign's 13 ``space`` problems (1248 rows), on the same simulations (``validation.power_sims``) and the
same grids, so that the shipped form's figure here is the baseline of the same run.

    python benchmarks/clock_controller_forms.py [--out validation/results/clock_controller_forms.md]

Forms (each fits its constants on 12 problems and predicts the 13th):

* ``shipped``: ``validation.power_fit``'s form: each kernel at the clock at which its stream's power,
  averaged over ``window_ms``, stays within the limit, and at most its fast clock;
* ``two-window``: the controller sees ``a`` x the stream averaged over a short window (0.3 or 3 ms: about the
  kernel's own power) plus (1 - a) x the long one (the in-kernel clock of a light kernel can rise above the
  stream's, which the campaign's clock traces show for short rounds);
* ``set-clock``: the slow loop sets one clock for the stream, at which the stream's power stays within the
  limit with every kernel at the lower of that clock and its own fast clock (heavy kernels, held below it by
  the fast limit, leave room for the rest); ``fast_limit_w`` is fitted as well;
* ``idle-traced``: the shipped form with the campaign's idle time per round fixed at the 19.7 ms the
  wide campaign's launch traces show between rounds (validation/results/h200_clock_traces.md), not fitted.

Development figures: the campaign's rows are the ones the shipped form was built on.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.machine.power import h200_power  # noqa: E402
from validation import power_fit as pf  # noqa: E402

GAP_MS = 4256e-6
TRACED_IDLE_MS = 19.7
TC = (1.0, 1.2, 1.4)
L2 = (0.5, 1.0)
DRAM = (0.25,)
WINDOW = (33.0, 300.0)


class Forms:
    """The campaign's problems on the clock grid, and each form's prediction of their clocks."""

    def __init__(self, groups: dict):
        self.model = h200_power()
        self.keys = [k for k in groups if k[0] == "space"]
        self.arrs = {k: [pf.row_arrays(s, self.model, GAP_MS, pf.l2_cost_of(r.config))
                         for r, s in zip(groups[k]["rows"], groups[k]["sims"], strict=True)] for k in self.keys}
        self.meas = {k: np.array([r.arch.clock_ghz.value for r in groups[k]["rows"]]) for k in self.keys}
        self.caps = {k: np.array([a["cap"] for a in self.arrs[k]]) for k in self.keys}
        self._memo: dict = {}

    def _terms(self, k, arrs, win, idle, tag=None):
        ck = ("terms", k, win, idle, tag)
        if ck not in self._memo:
            self._memo[ck] = pf.campaign_terms(arrs, win, idle)
        return self._memo[ck]

    def _fast(self, k, tc, l2, dr, flw=None):
        ck = ("fast", k, tc, l2, dr, flw)
        if ck not in self._memo:
            m = self.model if flw is None else self.model.with_values(fast_limit_w=flw)
            self._memo[ck] = pf.fast_clocks(self.arrs[k], m, tc, l2, dr)
        return self._memo[ck]

    def shipped(self, k, tc, l2, dr, win, idle=pf.SLEEP_MS):
        t = self._terms(k, self.arrs[k], win, idle)
        return pf.clocks_from_terms(t, self.caps[k], tc, l2, self.model.limit_w.value, self._fast(k, tc, l2, dr), dr)

    def two_window(self, k, tc, l2, dr, win, a, short):
        t1, t2 = self._terms(k, self.arrs[k], short, pf.SLEEP_MS), self._terms(k, self.arrs[k], win, pf.SLEEP_MS)
        t = {x: a * t1[x] + (1 - a) * t2[x] for x in pf.TERMS}
        return pf.clocks_from_terms(t, self.caps[k], tc, l2, self.model.limit_w.value, self._fast(k, tc, l2, dr), dr)

    def set_clock(self, k, tc, l2, dr, win, flw):
        fast = self._fast(k, tc, l2, dr, flw)
        fidx = np.searchsorted(pf.GRID, fast - 1e-9)
        arrs = []
        for a, fi in zip(self.arrs[k], fidx, strict=True):
            idx = np.minimum(np.arange(pf.GRID.size), fi)             # at set clock g: min(g, own fast clock)
            arrs.append({**a, **{t: np.asarray(a[t])[idx] for t in ("ms", "kernel_ms", *pf.TERMS)}})
        t = self._terms(k, arrs, win, pf.SLEEP_MS, tag=("set", tc, l2, dr, flw))
        return np.minimum(pf.clocks_from_terms(t, self.caps[k], tc, l2, self.model.limit_w.value, None, dr), fast)


def grids(forms: Forms) -> dict:
    base = list(itertools.product(TC, L2, DRAM, WINDOW))
    return {
        "shipped": [(lambda k, p=p: forms.shipped(k, *p), p) for p in base],
        "two-window": [(lambda k, p=p, a=a, s=s: forms.two_window(k, *p, a, s), (*p, a, s))
                       for p in base for a in (0.25, 0.5, 0.75, 1.0) for s in (0.3, 3.0)],
        "set-clock": [(lambda k, p=p, f=f: forms.set_clock(k, *p, f), (*p, f))
                      for p in base for f in (858.0, 800.0, 750.0, 700.0)],
        "idle-traced": [(lambda k, p=p: forms.shipped(k, *p, TRACED_IDLE_MS), p) for p in base],
    }


def lopo(forms: Forms, cands) -> tuple[np.ndarray, dict]:
    errs = [{k: np.abs(f(k) / forms.meas[k] - 1) for k in forms.keys} for f, _ in cands]
    out, chosen = [], {}
    for k in forms.keys:
        train = [x for x in forms.keys if x != k]
        i = min(range(len(cands)), key=lambda i: float(np.mean(np.concatenate([errs[i][x] for x in train]))))
        out.append(errs[i][k])
        chosen[k] = cands[i][1]
    return np.concatenate(out), chosen


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the table here (markdown)")
    ap.add_argument("--jobs", type=int, default=0, help="processes for missing simulations (0: all cores)")
    a = ap.parse_args(argv)
    t0 = time.time()
    forms = Forms(pf.simulated_groups(a.jobs)[0])
    cmd = "python benchmarks/clock_controller_forms.py" + (f" --out {a.out}" if a.out else "")
    lines = ["# Other forms of the power controller, scored leave-one-problem-out (issue 16)", "",
             f"`{cmd}`; written by the command. Development figures: the campaign's 1248 `space` rows (13 problems), "
             "on which the shipped form was built. Same simulations and grids for every form (tensor scale "
             f"{TC}, L2 scale {L2}, DRAM scale {DRAM}, window {WINDOW} ms); `validation/power_fit.py` fits the shipped "
             "form on wider grids (its figure: h200_clock_fit.md).", "",
             "| form | rows | median clock error | p90 | mean | constants fitted without each problem (most common) |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for name, cands in grids(forms).items():
        e, chosen = lopo(forms, cands)
        common = max(set(chosen.values()), key=list(chosen.values()).count)
        lines.append(f"| {name} | {e.size} | {np.median(e):.2%} | {np.percentile(e, 90):.2%} | {e.mean():.2%} | {common} |")
        print(lines[-1], file=sys.stderr, flush=True)
    lines += ["", "Constants, in order: tensor scale, L2 scale, DRAM scale, window ms; two-window adds the long "
              "window's complement weight a and the short window (ms); set-clock adds fast_limit_w (W).",
              f"Run time {time.time() - t0:.0f} s.", ""]
    md = "\n".join(lines)
    print(md)
    if a.out:
        Path(a.out).write_text(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
