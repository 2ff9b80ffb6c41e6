"""GPU timing helpers shared by validation/collect.py and benchmarks/hw_vs_cublas.py.

Rules (METHOD.md, shared/device/README.md): the same random-normal inputs for the kernel and cuBLAS,
warm-up first, the same number of runs, runs interleaved (A B A B) so that clock and power drift hit
both, per-launch CUDA events, medians; the SM clock is sampled through NVML during every timed block
and, for our kernel, read inside the kernel (clock64 over globaltimer) by an instrumented run.
"""

from __future__ import annotations

import statistics
import threading
import time


class ClockSampler:
    """Samples the GPU's SM clock (MHz) and power (W) through NVML every ``period_s`` in a thread."""

    def __init__(self, period_s: float = 0.005, index: int = 0):
        self.period_s = period_s
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = None
        try:
            import pynvml
            pynvml.nvmlInit()
            self._nvml = pynvml
            self._h = pynvml.nvmlDeviceGetHandleByIndex(index)
        except Exception:
            self._nvml = None

    def __enter__(self):
        if self._nvml is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self):
        n = self._nvml
        while not self._stop.is_set():
            try:
                clk = n.nvmlDeviceGetClockInfo(self._h, n.NVML_CLOCK_SM)
                pw = n.nvmlDeviceGetPowerUsage(self._h) / 1000.0
                self.samples.append((float(clk), pw))
            except Exception:
                pass
            time.sleep(self.period_s)

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def summary(self) -> dict:
        if not self.samples:
            return {"nvml_sm_clock_mhz_median": None, "nvml_power_w_median": None, "nvml_samples": 0}
        clk = [s[0] for s in self.samples]
        pw = [s[1] for s in self.samples]
        return {"nvml_sm_clock_mhz_median": statistics.median(clk), "nvml_sm_clock_mhz_min": min(clk),
                "nvml_sm_clock_mhz_max": max(clk), "nvml_power_w_median": statistics.median(pw),
                "nvml_power_w_max": max(pw), "nvml_samples": len(clk)}


def time_launches(fn, iters: int) -> list[float]:
    """Per-launch times (ms) of ``fn()`` with CUDA events, one pair around each launch."""
    import torch
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]


def interleaved(fns: dict, iters: int, rounds: int = 2, warmup: int = 10) -> dict:
    """Time several launchers on the same inputs, interleaved: for each round, each fn ``iters`` times.

    Returns ``{name: {"ms_median", "ms_min", "ms_all_rounds", clock summary}}``.
    """
    import torch
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    torch.cuda.synchronize()
    out = {name: {"times": [], "clock": []} for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            with ClockSampler() as cs:
                t = time_launches(fn, iters)
            out[name]["times"].extend(t)
            out[name]["clock"].append(cs.summary())
    res = {}
    for name, d in out.items():
        t = d["times"]
        clk = [c["nvml_sm_clock_mhz_median"] for c in d["clock"] if c["nvml_sm_clock_mhz_median"]]
        pw = [c["nvml_power_w_median"] for c in d["clock"] if c["nvml_power_w_median"]]
        res[name] = {"ms_median": statistics.median(t), "ms_min": min(t), "n": len(t),
                     "nvml_sm_clock_mhz_median": statistics.median(clk) if clk else None,
                     "nvml_power_w_median": statistics.median(pw) if pw else None}
    return res


def alternating(fns: dict, iters: int, warmup: int = 10) -> dict:
    """Time several launchers on the same inputs, alternating launch by launch (the order rotates
    every iteration), so that every kernel sees the same clock and power state.

    Returns ``{name: {"ms_median", "ms_p10", "ms_p90", "ms_min", "n"}}`` and, under ``"_clock"``,
    the NVML clock/power summary of the whole alternation.
    """
    import torch
    names = list(fns)
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    torch.cuda.synchronize()
    ev = {n: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(iters)] for n in names}
    with ClockSampler() as cs:
        for i in range(iters):
            for j in range(len(names)):
                n = names[(i + j) % len(names)]
                st, en = ev[n][i]
                st.record()
                fns[n]()
                en.record()
        torch.cuda.synchronize()
    res = {}
    for n in names:
        t = sorted(st.elapsed_time(en) for st, en in ev[n])
        res[n] = {"ms_median": statistics.median(t), "ms_p10": t[len(t) // 10], "ms_p90": t[(9 * len(t)) // 10],
                  "ms_min": t[0], "n": len(t)}
    res["_clock"] = cs.summary()
    return res


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12
