"""The H200's clock control (issue 16): power, SM clock and in-kernel clock under set loads.

    python -m validation.microbench.power --out OUT [--budget-s 300] [--quick]   # on the GPU machine
    python -m validation.microbench.power --dry-run                              # CPU: build, print the plan

The load generator (``cuda/power.cu``) holds the tensor cores (wgmma), SMEM, FP32 FMAs, L2 or HBM
(TMA bulk loads) busy for a set fraction of every period, on a set number of SMs (one CTA per SM), for
a set time, and records its own clock (clock64 over %globaltimer) every ~20 us; an NVML sampler
(:mod:`validation.nvml_sampler`) reads power, SM clock and clock-event reasons every ~5 ms meanwhile.
Experiments (:func:`plan`): idle; steps (how fast the clock falls once a heavy kernel starts);
recovery (a light probe after a heavy kernel, after a gap idle or busy-light); settled points (duty,
SMs, unit, input data); neighbours (a light kernel right after a heavy one); a long heavy run
(temperature); and torch.matmul fp16 on random-normal against low-entropy inputs. The GPU's clock
and power settings are only read, never changed.

Sections run in child processes with their own time limits and write their results as they go, so a
fault or the budget loses only what was left; OUT gets ``h200_power.json`` and ``h200_power.md``
(:mod:`.power_analysis` derives the named quantities).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

OUT_NAME = "h200_power"
#: Section -> seconds it may take in a full run (the quick run takes about a tenth).
SECTIONS = {"kernels": 190, "matmul": 60}
#: Compute kinds of cuda/power.cu (kernel names power_<kind>) and the nominal SM cycles of one batch
#: with both compute warpgroups running (4 wgmma m64n128k16 per warpgroup at 64 clk each: 512).
COMPUTE_KINDS = ("none", "tc", "smem", "fma")
BATCH_CYCLES = 512
#: Nominal SM cycles per 16 KiB TMA load of one SM when every SM streams (L2 ~9 TB/s, HBM ~4.3 TB/s
#: over 132 SMs at ~1.7 GHz): only to turn a memory duty into loads per period; the bytes moved are
#: measured.
MEM_BATCH_CYCLES = {"l2": 400, "hbm": 860}
MEM_FOOTPRINT = {"l2": 16 << 20, "hbm": 4 << 30}
PERIOD_CYCLES = 8192
#: Trace sampling: one (clock64, %globaltimer) pair per this many cycles (~18 us at 1.8 GHz).
TRACE_CYCLES = 32768
TRACE_BLOCKS = 4
SUMMARY_WORDS = 10
SMEM_BYTES = 32768 + 6 * 16384 + 1024
THREADS = 384
#: Flops of one compute batch of one warpgroup (4 x m64n128k16), SMEM bytes of one smem batch of one
#: warpgroup (128 threads x 16 x 16 B), FMAs of one fma batch of one warpgroup (128 x 4 x 64).
TC_FLOPS_PER_BATCH = 4 * 2 * 64 * 128 * 16
SMEM_BYTES_PER_BATCH = 128 * 16 * 16
FMA_PER_BATCH = 128 * 4 * 64
DATA_KINDS = ("random", "zero", "const", "sign")


@dataclass(frozen=True)
class Load:
    """One launch of the load generator."""

    compute: str = "tc"          # none, tc, smem, fma
    duty: float = 1.0            # fraction of each period the compute warpgroups are busy
    mem: str = "none"            # none, l2, hbm
    mem_duty: float = 1.0
    sms: int = 132
    seconds: float = 1.0
    data: str = "random"         # SMEM operand values: random (uniform [-1, 1)), zero, const (1.0), sign (+-1)
    trace_cycles: int = TRACE_CYCLES
    period_cycles: int = PERIOD_CYCLES   # the compute duty cycle's period (busy duty x period, then idle)

    def check(self) -> None:
        if self.compute not in COMPUTE_KINDS:
            raise ValueError(f"compute={self.compute!r}: expected one of {COMPUTE_KINDS}")
        if self.mem not in ("none", *MEM_FOOTPRINT):
            raise ValueError(f"mem={self.mem!r}: expected none, l2 or hbm")
        for name in ("duty", "mem_duty"):
            v = getattr(self, name)
            if not 0 < v <= 1:
                raise ValueError(f"{name}={v!r}: a duty cycle is in (0, 1]")
        if not 1 <= self.sms <= 132:
            raise ValueError(f"sms={self.sms!r}: expected 1..132 (one CTA per SM)")
        if not self.seconds > 0:
            raise ValueError(f"seconds={self.seconds!r}: must be > 0")
        if self.data not in DATA_KINDS:
            raise ValueError(f"data={self.data!r}: expected one of {DATA_KINDS}")
        if not (isinstance(self.period_cycles, int) and BATCH_CYCLES <= self.period_cycles <= 1 << 24):
            raise ValueError(f"period_cycles={self.period_cycles!r}: expected an int in {BATCH_CYCLES}..{1 << 24}")

    @property
    def label(self) -> str:
        s = f"{self.compute}"
        if self.compute != "none":
            s += f"@{self.duty:g}"
            if self.duty < 1.0 and self.period_cycles != PERIOD_CYCLES:
                s += f"/p{self.period_cycles}"
        if self.mem != "none":
            s += f"+{self.mem}@{self.mem_duty:g}"
        s += f" {self.sms}sm"
        if self.data != "random":
            s += f" {self.data}"
        return s


def _per_period(duty: float, batch_cycles: float, period: int = PERIOD_CYCLES) -> tuple[int, int]:
    """(batches per period, period cycles) for a duty cycle: full duty runs 16 batches between stop
    checks and never idles."""
    if duty >= 1.0:
        return 16, 0
    return max(1, round(duty * period / batch_cycles)), period


def kernel_ints(load: Load) -> list[int]:
    """The eight ``Args.i`` of ``power_<compute>`` for ``load`` (see cuda/power.cu)."""
    load.check()
    cb, cp = _per_period(load.duty, BATCH_CYCLES, load.period_cycles) if load.compute != "none" else (0, 0)
    if load.mem != "none":
        mb, mp = _per_period(load.mem_duty, MEM_BATCH_CYCLES[load.mem])
        foot = MEM_FOOTPRINT[load.mem]
    else:
        mb, mp, foot = 0, 0, MEM_FOOTPRINT["l2"]
    pace = cp if cp else (16 * BATCH_CYCLES if load.compute != "none" else 4096)
    every = max(1, round(load.trace_cycles / pace))
    cap = trace_capacity(load)
    return [int(load.seconds * 1e9), 0, cb, cp, mb, mp, foot, every | (cap << 20)]


def trace_capacity(load: Load) -> int:
    """Trace samples per traced block: the run's length at up to 2.2 GHz (above the H200's 1.98 GHz
    maximum), plus a margin."""
    return int(min(400_000, load.seconds * 2.2e9 / load.trace_cycles + 64))


# ============================================================================================ the plan
def plan(quick: bool = False) -> list[dict]:
    """The experiments, in order. Each is {"name", "kind", ...}; seconds shrink 10x with ``quick``."""
    s = 0.1 if quick else 1.0
    settle = 1.6 * s
    ex: list[dict] = [{"name": "idle", "kind": "idle", "seconds": 1.5 * s}]
    ex.append({"name": "step.fma", "kind": "single", "load": Load("fma", seconds=0.6 * s), "idle_after": 0.5 * s})
    ex.append({"name": "step.tc", "kind": "single", "load": Load("tc", seconds=3.0 * s), "idle_after": 1.0 * s})
    for gap in (0.0, 0.001, 0.005, 0.02, 0.1, 0.5):
        for how in ("idle", "busy"):
            if gap == 0.0 and how == "busy":
                continue
            ex.append({"name": f"recovery.{how}.gap{gap * 1e3:g}ms", "kind": "recovery", "gap_s": gap * (1 if not quick else 0.5),
                       "gap": how, "heavy": Load("tc", seconds=0.3 * s),
                       "probe": Load("tc", duty=0.1, seconds=0.02, trace_cycles=8192)})
    settled = [Load("none", seconds=settle)]
    settled += [Load("tc", duty=d, seconds=settle) for d in (0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0)]
    settled += [Load("tc", sms=n, seconds=settle) for n in (33, 66, 99)] + [Load("tc", 0.5, sms=66, seconds=settle)]
    for unit in ("smem", "fma"):
        settled += [Load(unit, sms=n, seconds=settle) for n in (132, 66, 33)] + [Load(unit, 0.5, seconds=settle)]
    for mem in ("l2", "hbm"):
        settled += [Load("none", mem=mem, sms=n, seconds=settle) for n in (132, 66, 33)]
        settled += [Load("none", mem=mem, mem_duty=0.5, seconds=settle)]
    settled += [Load("tc", mem="l2", seconds=settle), Load("tc", mem="hbm", seconds=settle),
                Load("tc", 0.5, mem="hbm", seconds=settle), Load("tc", 0.5, mem="l2", seconds=settle)]
    settled += [Load("tc", data=dk, seconds=settle) for dk in ("zero", "const", "sign")]
    settled += [Load("tc", 0.5, data="zero", seconds=settle)]
    for ld in settled:
        ex.append({"name": f"settle.{ld.label}", "kind": "single", "load": ld, "idle_after": 0.3 * s})
    light, heavy = Load("tc", duty=0.2, seconds=0.005), Load("tc", seconds=0.05)
    ex.append({"name": "neighbours.after_heavy", "kind": "sequence", "loads": [heavy, light], "repeat": 3,
               "idle_after": 0.3 * s})
    ex.append({"name": "neighbours.after_light", "kind": "sequence", "loads": [replace(light, seconds=0.05), light],
               "repeat": 3, "idle_after": 0.3 * s})
    short_h, short_l = Load("tc", seconds=0.0015), Load("tc", duty=0.2, seconds=0.0015)
    ex.append({"name": "neighbours.round_alternating", "kind": "sequence",
               "loads": [Load("none", seconds=0.003)] + [short_h, short_l] * 10, "repeat": 3, "idle_after": 0.3 * s})
    ex.append({"name": "neighbours.round_light", "kind": "sequence",
               "loads": [Load("none", seconds=0.003)] + [short_l] * 20, "repeat": 3, "idle_after": 0.3 * s})
    ex.append({"name": "neighbours.round_heavy", "kind": "sequence",
               "loads": [Load("none", seconds=0.003)] + [short_h] * 20, "repeat": 3, "idle_after": 0.3 * s})
    ex.append({"name": "thermal.tc+hbm", "kind": "single",
               "load": Load("tc", mem="hbm", seconds=12.0 * s, trace_cycles=262144), "idle_after": 0.5 * s})
    return ex


#: The loads of :func:`burst_plan`: tensor duty, memory load and duty, SMs, input data.
BURST_LOADS = tuple(
    [Load("tc", duty=d) for d in (0.3, 0.45, 0.6, 0.7, 0.8, 0.9, 1.0)]
    + [Load("tc", duty=d, mem="l2", mem_duty=m) for d in (0.45, 0.7, 1.0) for m in (0.5, 1.0)]
    + [Load("none", mem="l2"), Load("none", mem="hbm"), Load("tc", duty=0.6, mem="hbm", mem_duty=0.5)]
    + [Load("tc", data="zero"), Load("tc", duty=0.6, data="zero"), Load("tc", sms=66), Load("tc", sms=99)]
    # the same duty in long periods (~36 and ~145 us busy-idle, a GEMM tile's mainloop and epilogue):
    # does the limiter follow the average power or the busy phase's?
    + [Load("tc", duty=d, period_cycles=p) for d in (0.45, 0.7) for p in (1 << 16, 1 << 18)])
BURST_S = 0.0015


def burst_plan(quick: bool = False) -> list[dict]:
    """Short rounds like the campaign's (issue 16): after 3 ms of idle SMs, 1.5 ms kernels of one load
    alternate with a light one (tc@0.2) six times, so that the average power stays low and the slow
    loop does not act: each launch's clock is what the fast limiter allows that load."""
    light = Load("tc", duty=0.2, seconds=BURST_S)
    loads = BURST_LOADS[::3] if quick else BURST_LOADS
    return [{"name": f"bursts.{ld.label}", "kind": "sequence", "repeat": 2 if quick else 3, "idle_after": 0.3,
             "loads": [Load("none", seconds=0.003)] + [replace(ld, seconds=BURST_S), light] * 6} for ld in loads]


#: Experiment plans by name, and the results file each writes.
PLANS = {"full": plan, "bursts": burst_plan}
OUT_NAMES = {"full": OUT_NAME, "bursts": "h200_power_bursts"}


def matmul_plan(quick: bool = False) -> list[dict]:
    """torch.matmul fp16 runs: (m, n, k, input kind, seconds)."""
    s = 0.15 if quick else 1.0
    big = [(8192, 8192, 8192, kind, 1.5 * s) for kind in ("randn", "ones", "sign", "zeros", "randn")]
    return [{"m": m, "n": n, "k": k, "inputs": kind, "seconds": sec} for m, n, k, kind, sec in big] + \
        [{"m": 4096, "n": 4096, "k": 4096, "inputs": kind, "seconds": 1.0 * s} for kind in ("randn", "zeros")]


def plan_seconds(ex: list[dict]) -> float:
    """GPU seconds the kernel experiments take (idle gaps included)."""
    t = 0.0
    for e in ex:
        if e["kind"] == "idle":
            t += e["seconds"]
        elif e["kind"] == "single":
            t += e["load"].seconds + e.get("idle_after", 0)
        elif e["kind"] == "recovery":
            t += e["heavy"].seconds + e["gap_s"] + e["probe"].seconds + 0.2
        elif e["kind"] == "sequence":
            t += e["repeat"] * (sum(ld.seconds for ld in e["loads"]) + e.get("idle_after", 0))
    return t


def _jsonable(x):
    if isinstance(x, Load):
        return asdict(x)
    try:
        import numpy as np
        if isinstance(x, np.generic):
            return x.item()
        if isinstance(x, np.ndarray):
            return x.tolist()
    except ImportError:
        pass
    raise TypeError(f"not JSON-serialisable: {type(x).__name__}")


# ====================================================================================== the GPU side
class Runner:
    """The load generator on device 0, with an NVML sampler running throughout."""

    def __init__(self, sampler):
        import numpy as np

        from .build import cubin_path
        from .driver import Gpu
        self.np = np
        self.gpu = Gpu()
        self.sampler = sampler
        self.cubin = cubin_path("power")
        g = self.gpu
        self.src = {}
        for kind in DATA_KINDS:
            p = g.alloc(65536)
            self.src[kind] = p
            if kind == "random":
                g.fill_random(p, 65536 // 2, seed=11)
            else:
                word = {"zero": 0x0000, "const": 0x3C00}.get(kind)   # fp16 1.0 = 0x3C00
                if word is not None:
                    g.h2d(p, np.full(65536 // 2, word, dtype=np.uint16))
                else:   # sign: +-1.0 at random
                    rng = np.random.default_rng(5)
                    g.h2d(p, np.where(rng.random(65536 // 2) < 0.5, 0x3C00, 0xBC00).astype(np.uint16))
        self.mem = {"l2": g.alloc(MEM_FOOTPRINT["l2"]), "hbm": g.alloc(MEM_FOOTPRINT["hbm"])}
        g.fill_random(self.mem["l2"], MEM_FOOTPRINT["l2"] // 2, seed=3)
        g.fill_random(self.mem["hbm"], MEM_FOOTPRINT["hbm"] // 2, seed=4)
        self._bufs: list[tuple[int, int, int]] = []   # (summary, trace, trace bytes)
        g.sync()

    def _buffers(self, j: int, trace_bytes: int) -> tuple[int, int]:
        g = self.gpu
        while len(self._bufs) <= j:
            self._bufs.append((g.alloc(132 * SUMMARY_WORDS * 8), 0, 0))
        summ, tr, tb = self._bufs[j]
        if tb < trace_bytes:
            if tr:
                g.free(tr)
            tr, tb = g.alloc(trace_bytes), trace_bytes
            self._bufs[j] = (summ, tr, tb)
        g.memset(summ, 0, 132 * SUMMARY_WORDS * 8)
        g.memset(tr, 0, trace_bytes)
        return summ, tr

    def prepare(self, load: Load, j: int = 0) -> dict:
        """Buffers slot ``j`` for ``load``, cleared (before a sequence is enqueued: no memset between
        its kernels)."""
        ints = kernel_ints(load)
        cap = ints[7] >> 20
        summ, tr = self._buffers(j, TRACE_BLOCKS * cap * 16)
        return {"ints": ints, "cap": cap, "summary": summ, "trace": tr}

    def launch(self, load: Load, j: int = 0, prepared: dict | None = None):
        """Enqueue ``load`` (buffers slot ``j``); returns what :meth:`collect` needs."""
        from .driver import Args
        pre = prepared or self.prepare(load, j)
        ints, cap, summ, tr = pre["ints"], pre["cap"], pre["summary"], pre["trace"]
        fn = self.gpu.func(self.cubin, f"power_{load.compute}")
        mem = self.mem[load.mem] if load.mem != "none" else self.mem["l2"]
        args = Args.of([self.src[load.data], mem, tr, summ], ints)
        t = time.perf_counter()
        self.gpu.launch(fn, load.sms, THREADS, args, smem=SMEM_BYTES, sync=False)
        return {"load": load, "summary": summ, "trace": tr, "cap": cap, "t_launch": t, "args": args}

    def collect(self, h) -> dict:
        """Read one finished launch back: per-block summary and the traces (:mod:`.power_analysis`)."""
        from . import power_analysis as pa
        np, g = self.np, self.gpu
        summ = np.zeros((h["load"].sms, SUMMARY_WORDS), dtype=np.int64)
        g.d2h(summ, h["summary"])
        tr = np.zeros((TRACE_BLOCKS, h["cap"], 2), dtype=np.int64)
        g.d2h(tr, h["trace"])
        return pa.launch_result(h["load"], summ, [pa.trace_rows(tr[b]) for b in range(min(TRACE_BLOCKS, h["load"].sms))])

    def run(self, load: Load) -> tuple[dict, float, float]:
        h = self.launch(load)
        self.gpu.wait()
        t1 = time.perf_counter()
        return self.collect(h), h["t_launch"], t1


def _idle(seconds: float) -> None:
    if seconds > 0:
        time.sleep(seconds)


def _experiment(r: Runner, e: dict) -> dict:
    from . import power_analysis as pa
    s = r.sampler
    kind = e["kind"]
    if kind == "idle":
        t0 = time.perf_counter()
        _idle(e["seconds"])
        return {"nvml": s.window(t0, time.perf_counter())}
    if kind == "single":
        res, t0, t1 = r.run(e["load"])
        res["nvml"] = s.window(t0, t1)
        res["nvml_settled"] = s.window(t0 + 0.5 * (t1 - t0), t1)
        res["nvml_series"] = pa.nvml_series(s.rows, t0 - 0.05, t1 + 0.05, t0)
        _idle(e.get("idle_after", 0))
        return res
    if kind == "recovery":
        gap = Load("none", seconds=max(e["gap_s"], 1e-4), trace_cycles=1 << 19)
        pre = [r.prepare(ld, j) for j, ld in enumerate((e["heavy"], e["probe"], gap))]
        r.gpu.sync()
        t_a = time.perf_counter()
        hh = r.launch(e["heavy"], 0, pre[0])
        if e["gap_s"] == 0:
            hp = r.launch(e["probe"], 1, pre[1])
        elif e["gap"] == "idle":
            r.gpu.wait()
            _idle(e["gap_s"])
            hp = r.launch(e["probe"], 1, pre[1])
        else:
            r.launch(gap, 2, pre[2])
            hp = r.launch(e["probe"], 1, pre[1])
        r.gpu.wait()
        t_b = time.perf_counter()
        out = {"heavy": r.collect(hh), "probe": r.collect(hp), "nvml_series": pa.nvml_series(s.rows, t_a, t_b, t_a)}
        if "g_start_ns" in out["probe"] and "g_end_ns" in out["heavy"]:
            out["gap_ms_measured"] = round((out["probe"]["g_start_ns"] - out["heavy"]["g_end_ns"]) / 1e6, 3)
        _idle(0.2)
        return out
    if kind == "sequence":
        reps = []
        for _ in range(e["repeat"]):
            pre = [r.prepare(ld, j) for j, ld in enumerate(e["loads"])]
            r.gpu.sync()
            t0 = time.perf_counter()
            hs = [r.launch(ld, j, p) for j, (ld, p) in enumerate(zip(e["loads"], pre, strict=True))]
            r.gpu.wait()
            t1 = time.perf_counter()
            reps.append({"launches": [pa.brief(r.collect(h)) for h in hs], "nvml": s.window(t0, t1)})
            _idle(e.get("idle_after", 0))
        return {"repeats": reps}
    raise ValueError(f"experiment kind {kind!r}")


def _static_info(nvml, h) -> dict:
    """What NVML says about limits and clocks (read only)."""
    out = {}

    def q(name, fn, *a):
        try:
            v = fn(*a)
            out[name] = v.decode() if isinstance(v, bytes) else v
        except Exception as e:  # noqa: BLE001 - recorded: this driver lacks the query
            out[name] = f"error: {type(e).__name__}: {e}"[:160]

    q("name", nvml.nvmlDeviceGetName, h)
    q("driver_version", nvml.nvmlSystemGetDriverVersion)
    q("enforced_power_limit_mw", nvml.nvmlDeviceGetEnforcedPowerLimit, h)
    q("power_management_limit_mw", nvml.nvmlDeviceGetPowerManagementLimit, h)
    q("power_management_default_limit_mw", nvml.nvmlDeviceGetPowerManagementDefaultLimit, h)
    q("power_management_limit_constraints_mw", lambda x: list(nvml.nvmlDeviceGetPowerManagementLimitConstraints(x)), h)
    q("max_sm_clock_mhz", nvml.nvmlDeviceGetMaxClockInfo, h, nvml.NVML_CLOCK_SM)
    q("max_mem_clock_mhz", nvml.nvmlDeviceGetMaxClockInfo, h, nvml.NVML_CLOCK_MEM)
    q("sm_clock_mhz", nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_SM)
    q("mem_clock_mhz", nvml.nvmlDeviceGetClockInfo, h, nvml.NVML_CLOCK_MEM)
    q("applications_sm_clock_mhz", nvml.nvmlDeviceGetApplicationsClock, h, nvml.NVML_CLOCK_SM)
    q("default_applications_sm_clock_mhz", nvml.nvmlDeviceGetDefaultApplicationsClock, h, nvml.NVML_CLOCK_SM)
    q("performance_state", nvml.nvmlDeviceGetPerformanceState, h)
    q("temperature_c", nvml.nvmlDeviceGetTemperature, h, nvml.NVML_TEMPERATURE_GPU)
    for nm in ("SLOWDOWN", "SHUTDOWN", "GPU_MAX", "MEM_MAX"):
        const = getattr(nvml, f"NVML_TEMPERATURE_THRESHOLD_{nm}", None)
        if const is not None:
            q(f"temperature_threshold_{nm.lower()}_c", nvml.nvmlDeviceGetTemperatureThreshold, h, const)
    sup = getattr(nvml, "nvmlDeviceGetSupportedClocksEventReasons", None) or \
        nvml.nvmlDeviceGetSupportedClocksThrottleReasons
    q("supported_clock_event_reasons", sup, h)
    return out


def _write(path: Path, obj) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj, default=_jsonable))
    tmp.replace(path)


def section_kernels(part: Path, quick: bool, deadline: float, plan_name: str = "full") -> int:
    from validation.nvml_sampler import NvmlSampler
    s = NvmlSampler(period_s=0.005)
    res: dict = {"static": _static_info(s.nvml, s.handle), "nvml_errors": {}, "experiments": {}, "skipped": []}
    try:
        res["nvidia_smi_q"] = subprocess.run(["nvidia-smi", "-q", "-d", "POWER,CLOCK,PERFORMANCE,TEMPERATURE"],
                                             capture_output=True, text=True, timeout=20).stdout.splitlines()
    except Exception as e:  # noqa: BLE001
        res["nvidia_smi_q"] = [f"error: {type(e).__name__}: {e}"]
    with s:
        r = Runner(s)
        res["device"] = {"name": r.gpu.name, "sm_count": r.gpu.sm_count, "cuda_driver_version": r.gpu.driver_version}
        exps = PLANS[plan_name](quick)
        for e in exps:
            left = deadline - time.time()
            need = plan_seconds([e]) + 2.0
            if left < need:
                res["skipped"].append(f"{e['name']}: out of time ({left:.0f} s left, needs ~{need:.0f} s)")
                continue
            t0 = time.time()
            try:
                out = _experiment(r, e)
            except Exception as ex:  # noqa: BLE001 - one failing experiment is recorded, the rest go on
                out = {"error": f"{type(ex).__name__}: {ex}"[:400]}
            out["spec"] = {k: v for k, v in e.items() if k != "name"}
            out["host_seconds"] = round(time.time() - t0, 2)
            res["experiments"][e["name"]] = out
            res["nvml_errors"] = s.errors
            _write(part, res)
            print(f"[power] {e['name']}: {out.get('error') or _one_line(out)} ({out['host_seconds']} s)", flush=True)
    res["nvml_errors"] = s.errors
    res["sampler"] = {"period_s": s.period_s, "samples": len(s.rows)}
    _write(part, res)
    return 0


def _one_line(out: dict) -> str:
    for key in ("nvml_settled", "nvml"):
        n = out.get(key)
        if n:
            clk = out.get("clock_mhz_settled") or out.get("clock_mhz")
            return (f"{n.get('power_instant_w_median') or n.get('power_w_median')} W, NVML {n.get('sm_mhz_median')} "
                    f"MHz, in-kernel {clk} MHz")
    if "probe" in out:
        return f"probe starts at {out['probe'].get('clock_mhz_first_ms')} MHz"
    if "repeats" in out:
        return f"{len(out['repeats'])} repeats"
    return "done"


def section_matmul(part: Path, quick: bool, deadline: float) -> int:
    import torch

    from validation.nvml_sampler import NvmlSampler

    from . import power_analysis as pa
    res: dict = {"runs": [], "skipped": [], "torch": torch.__version__}
    s = NvmlSampler(period_s=0.005)
    with s:
        for spec in matmul_plan(quick):
            if deadline - time.time() < spec["seconds"] + 5:
                res["skipped"].append(f"{spec}: out of time")
                continue
            m, n, k = spec["m"], spec["n"], spec["k"]
            gen = torch.Generator(device="cuda").manual_seed(1)
            a = torch.randn(m, k, device="cuda", dtype=torch.float16, generator=gen)
            b = torch.randn(n, k, device="cuda", dtype=torch.float16, generator=gen)
            if spec["inputs"] == "ones":
                a.fill_(1.0 / 64)
                b.fill_(1.0)
            elif spec["inputs"] == "sign":
                a, b = torch.sign(a), torch.sign(b) / 64
            elif spec["inputs"] == "zeros":
                a.zero_()
                b.zero_()
            c = torch.empty(m, n, device="cuda", dtype=torch.float16)
            bt = b.t()
            for _ in range(3):
                torch.matmul(a, bt, out=c)
            torch.cuda.synchronize()
            time.sleep(0.3)
            chunk = 20
            evs = []
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < spec["seconds"]:
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                for _ in range(chunk):
                    torch.matmul(a, bt, out=c)
                e1.record()
                evs.append((time.perf_counter(), e0, e1))
                while len(evs) > 2 and not evs[-2][2].query():
                    time.sleep(0.0005)
            while not evs[-1][2].query():
                time.sleep(0.0005)
            t1 = time.perf_counter()
            per = [(t, st.elapsed_time(en) / chunk) for t, st, en in evs]
            run = {**spec, "chunks": len(per), "launches": len(per) * chunk,
                   "ms_per_matmul": [round(x, 5) for _, x in per],
                   "nvml": s.window(t0, t1), "nvml_settled": s.window(t0 + 0.5 * (t1 - t0), t1),
                   "nvml_series": pa.nvml_series(s.rows, t0, t1, t0)}
            run.update(pa.matmul_summary(m, n, k, [x for _, x in per]))
            res["runs"].append(run)
            res["nvml_errors"] = s.errors
            _write(part, res)
            print(f"[power] matmul {m}x{n}x{k} {spec['inputs']}: {run['tflops_settled']:.0f} TFLOP/s, "
                  f"NVML {run['nvml_settled']['sm_mhz_median']} MHz, "
                  f"{run['nvml_settled']['power_instant_w_median'] or run['nvml_settled']['power_w_median']} W",
                  flush=True)
            del a, b, c, bt
            torch.cuda.empty_cache()
            time.sleep(0.3)
    _write(part, res)
    return 0


# ====================================================================================== the command
def _versions() -> dict:
    v = {"python": platform.python_version()}
    for mod in ("cuda.bindings", "numpy", "torch", "pynvml"):
        try:
            m = __import__(mod, fromlist=["_"])
            v[mod] = getattr(m, "__version__", "?")
        except Exception as e:  # noqa: BLE001
            v[mod] = f"not importable ({type(e).__name__})"
    try:
        from importlib.metadata import version
        v["nvidia-ml-py"] = version("nvidia-ml-py")
    except Exception:  # noqa: BLE001
        v["nvidia-ml-py"] = "?"
    from .build import nvcc
    exe = nvcc()
    if exe:
        try:
            v["nvcc"] = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[-1]
        except Exception as e:  # noqa: BLE001
            v["nvcc"] = f"? ({type(e).__name__})"
    return v


def main(argv: list[str] | None = None) -> int:
    from .run import _nvidia_smi
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".", help="directory for h200_power.json/.md")
    ap.add_argument("--quick", action="store_true", help="every experiment ~10x shorter (a smoke run)")
    ap.add_argument("--budget-s", type=float, default=300.0, help="hard limit for the whole run")
    ap.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated subset")
    ap.add_argument("--dry-run", action="store_true", help="build the kernels and print the plan (no GPU)")
    ap.add_argument("--plan", default="full", choices=sorted(PLANS),
                    help="full: every experiment (h200_power.json); bursts: the fast limiter's short rounds "
                         "(h200_power_bursts.json, kernels section only)")
    ap.add_argument("--section", help=argparse.SUPPRESS)
    ap.add_argument("--part", help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.section == "kernels":
        return section_kernels(Path(a.part), a.quick, a.deadline, a.plan)
    if a.section:
        return section_matmul(Path(a.part), a.quick, a.deadline)
    secs = [x for x in a.sections.split(",") if x]
    if a.plan != "full":
        if a.sections not in (",".join(SECTIONS), "kernels"):
            print(f"--sections {a.sections}: --plan {a.plan} runs the kernels section only", file=sys.stderr)
            return 2
        secs = ["kernels"]
    bad = [x for x in secs if x not in SECTIONS]
    if bad:
        print(f"--sections: unknown {bad}; valid: {', '.join(SECTIONS)}", file=sys.stderr)
        return 2
    from .build import compile_module, ptxas_problems
    t_start = time.time()
    _, rep = compile_module("power")
    _, _ = compile_module("util")
    if ptxas_problems(rep):
        print(f"power.cu: ptxas problems {ptxas_problems(rep)}", file=sys.stderr)
        return 1
    if a.dry_run:
        ex = PLANS[a.plan](a.quick)
        for e in ex:
            loads = [e[k] for k in ("load", "heavy", "probe") if k in e] + list(e.get("loads", []))
            for ld in loads:
                kernel_ints(ld)
            print(f"[power] {e['name']}: {e['kind']}" + (f" ({loads[0].label}, {loads[0].seconds:g} s)" if loads else ""))
        mm = matmul_plan(a.quick) if "matmul" in secs else []
        print(f"[power] {len(ex)} kernel experiments, ~{plan_seconds(ex):.0f} GPU s; {len(mm)} "
              f"matmul runs, ~{sum(r['seconds'] + 0.6 for r in mm):.0f} s; built in "
              f"{time.time() - t_start:.1f} s")
        return 0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cmd = "python -m validation.microbench.power --out OUT" + (" --quick" if a.quick else "") + \
        f" --budget-s {a.budget_s:g}" + ("" if a.sections == ",".join(SECTIONS) else f" --sections {a.sections}") + \
        ("" if a.plan == "full" else f" --plan {a.plan}")
    meta = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": cmd,
            "nvidia_smi_before": _nvidia_smi(), "versions": _versions(), "host": platform.node()}
    results, status = {}, {}
    total = sum(SECTIONS[x] for x in secs)
    for x in secs:
        left = a.budget_s - (time.time() - t_start) - 15
        if left < 10:
            status[x] = "skipped: out of time"
            continue
        share = SECTIONS[x] / total * (a.budget_s - 30) if x != secs[-1] else left
        limit = min(left, max(share, 20))
        part = out / f"part_{x}.json"
        deadline = time.time() + limit - 8
        cmdx = [sys.executable, "-m", "validation.microbench.power", "--section", x, "--part", str(part),
                "--deadline", f"{deadline:.3f}", "--plan", a.plan] + (["--quick"] if a.quick else [])
        t0 = time.time()
        try:
            rc = subprocess.run(cmdx, timeout=limit, env=dict(os.environ, PYTHONUNBUFFERED="1")).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        status[x] = {"rc": rc, "seconds": round(time.time() - t0, 1), "limit_s": round(limit, 1)}
        if part.exists():
            results[x] = json.loads(part.read_text())
            part.unlink()
        print(f"[power] section {x}: {status[x]}", flush=True)
    meta["nvidia_smi_after"] = _nvidia_smi()
    meta["section_status"] = status
    from . import power_analysis as pa
    doc = {"meta": meta, "results": results}
    meta["effective_sm_clock"] = pa.effective_clock(doc)
    doc["quantities"] = pa.quantities(doc)
    name = OUT_NAMES[a.plan]
    if name != OUT_NAME:
        meta["out_name"] = name
    (out / f"{name}.json").write_text(json.dumps(doc, indent=1, default=_jsonable))
    (out / f"{name}.md").write_text(pa.markdown(doc))
    print(f"[power] wrote {out / name}.json ({len(doc['quantities'])} quantities) in {time.time() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
