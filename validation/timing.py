"""GPU timing helpers shared by validation/collect.py and benchmarks/hw_vs_cublas.py.

Rules (the method written up in validation/results/hw_vs_cublas.md): the same random-normal inputs
for the kernel and cuBLAS, warm-up first, the same number of runs, runs interleaved (A B A B) so that
clock and power drift hit both, per-launch CUDA events, medians; the SM clock is sampled through
NVML during every timed block and, for our kernel, read inside the kernel (clock64 over globaltimer)
by an instrumented run. Why: under its power cap the H200 ran these GEMMs at 1.28-1.32 GHz in-kernel,
not its 1.98 GHz maximum (hw_vs_cublas.md), so a kernel timed apart from its rival could be timed at
another clock.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time


def cuda_gpu_missing() -> str | None:
    """Why this machine cannot run the GPU scripts (None: it can)."""
    try:
        import torch
    except Exception:
        return "torch is not installed"
    try:
        if not torch.cuda.is_available():
            return "torch.cuda.is_available() is False"
    except Exception as e:  # a broken driver install
        return f"torch.cuda failed: {type(e).__name__}"
    return None


def require_cuda_gpu(prog: str) -> None:
    """Exit 2 with one line (``PROG: needs a CUDA GPU (...)``) on a machine without a usable CUDA GPU."""
    why = cuda_gpu_missing()
    if why:
        print(f"{prog}: needs a CUDA GPU ({why})", file=sys.stderr)
        raise SystemExit(2)


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


# ------------------------------------------------------------------ in-kernel span and clock
def span_and_clock(buf, cap: int, ctas: int, roles: int | None = None) -> dict:
    """The in-kernel time of one launch from its record buffer (any instrumented level; the span
    level writes only these): every (CTA, role) slice's header and footer.

    ``span_ns``: first role start to last role end (the consumers' footers follow their last TMA
    store's ``cp.async.bulk.wait_group 0``: the last store landed), in %globaltimer ns;
    ``clock_ghz``: median over slices of clock64 ticks over globaltimer ns (the effective SM clock
    of this launch), with its min and max; ``slices``/``slices_expected``: slices with a valid
    header and footer (fewer: the launch did not write all of them; ``roles``: the slices each CTA
    writes, ``KernelConfig.roles_per_cta``, default all ``ROLES_PER_CTA``). Pure numpy.
    """
    import numpy as np

    from hw_kernels import records as R
    n = ctas * R.ROLES_PER_CTA
    rec = np.asarray(buf, dtype=np.int32).ravel()[:n * cap * R.RECORD_WORDS].astype(np.int64) & 0xFFFFFFFF
    rec = rec.reshape(n, cap, R.RECORD_WORDS)
    h, f = rec[:, 0], rec[:, 1]
    ok = ((h[:, 0] & 0xFF) == R.HEADER) & ((f[:, 0] & 0xFF) == R.FOOTER)
    out = {"slices": int(ok.sum()), "slices_expected": ctas * (R.ROLES_PER_CTA if roles is None else roles)}
    if not ok.any():
        return {**out, "span_ns": None, "clock_ghz": None, "clock_ghz_min": None, "clock_ghz_max": None}
    h, f = h[ok], f[ok]
    clk0, gt0 = h[:, 2] | (h[:, 3] << 32), h[:, 4] | (h[:, 5] << 32)
    clk1, gt1 = f[:, 2] | (f[:, 3] << 32), f[:, 4] | (f[:, 5] << 32)
    dg = gt1 - gt0
    good = dg > 0
    ghz = (clk1 - clk0)[good] / dg[good]
    return {**out, "span_ns": int(gt1.max() - gt0.min()),
            "clock_ghz": float(np.median(ghz)) if ghz.size else None,
            "clock_ghz_min": float(ghz.min()) if ghz.size else None,
            "clock_ghz_max": float(ghz.max()) if ghz.size else None}


# ------------------------------------------------------------------ queued launches, host paths
def sleep_cycles(ms: float, ghz: float = 2.0) -> int:
    """Cycles for ``torch.cuda._sleep`` to keep the GPU busy about ``ms`` (at least; the clock is <= 2 GHz)."""
    return max(1000, int(ms * 1e6 * ghz))


def queued_round(launchers: dict, order: list, busy_ms: float) -> dict:
    """One alternating round: a busy kernel (``torch.cuda._sleep``), then, in ``order``, each
    launcher between a pair of CUDA events, all enqueued while the GPU is still busy; then sync.

    Returns ``{"event_us": {name: us}, "queued": bool, "enqueue_ms": float, "gap_us": {name: us},
    "host_t": {name: (start, end)}}``: ``queued`` is True when the host had enqueued the whole round
    before the busy kernel ended (so no launch waited for the host: the event times are GPU times);
    ``gap_us``: GPU idle between the previous launch's end event and this one's start event (0 when
    queued); ``host_t``: each launch's start and end event on the host's ``time.perf_counter()``
    clock, placed back from the moment the synchronize returned (the last end event, late by the
    synchronize's return latency, tens of us): to slice samples taken on the host (NVML) by launch.
    """
    import torch
    ev = {n: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for n in order}
    busy_end = torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(sleep_cycles(busy_ms))
    busy_end.record()
    t0 = time.perf_counter()
    for n in order:
        st, en = ev[n]
        st.record()
        launchers[n]()
        en.record()
    enqueue_ms = (time.perf_counter() - t0) * 1e3
    queued = not busy_end.query()
    torch.cuda.synchronize()
    t_done = time.perf_counter()
    out = {"event_us": {}, "gap_us": {}, "queued": queued, "enqueue_ms": enqueue_ms, "host_t": {}}
    prev = busy_end
    last = ev[order[-1]][1]
    for n in order:
        st, en = ev[n]
        out["event_us"][n] = st.elapsed_time(en) * 1e3
        out["gap_us"][n] = prev.elapsed_time(st) * 1e3
        out["host_t"][n] = (t_done - st.elapsed_time(last) * 1e-3, t_done - en.elapsed_time(last) * 1e-3)
        prev = en
    return out


def host_us_per_call(fn, n: int = 200, busy_ms: float | None = None, repeats: int = 3) -> dict:
    """Host time per call of ``fn`` (µs): ``n`` calls enqueued while the GPU is busy (so the
    calls never wait for the GPU), median of ``repeats``; and ``stream_us``: wall time per call of
    ``n`` calls from an idle GPU to their completion (host- or GPU-bound, whichever is slower)."""
    import torch
    fn()
    torch.cuda.synchronize()
    host = []
    for _ in range(repeats):
        torch.cuda._sleep(sleep_cycles(busy_ms if busy_ms is not None else n * 0.2))
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        host.append((time.perf_counter() - t0) * 1e6 / n)
        torch.cuda.synchronize()
    stream = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        stream.append((time.perf_counter() - t0) * 1e6 / n)
    return {"host_us": statistics.median(host), "host_us_all": host, "stream_us": statistics.median(stream),
            "stream_us_all": stream, "n": n}
