"""The H200's power as a function of the SM clock and of what a kernel does, and the clock its power
controller settles on (issue 16).

    P(f) = base + sms x tc_busy x tc_w_per_sm x (f / ref_clock)^clock_exponent x gemm_tc_scale
           + l2_j_per_byte x L2 bytes/s x gemm_l2_scale + dram_j_per_byte x DRAM bytes/s x gemm_dram_scale

``f`` is the in-kernel SM clock (clock64 over %globaltimer), the one the cycle counts are turned into
time with. L2 bytes are charged at their L2 -> SM occupancy (rows that straddle 128-B lines cost
x1.48 per byte: simulator/kernels/tma_alignment.py; the caller's Activity carries that). Measured (validation/results/h200_power.json, ``python -m validation.microbench.power``):
tensor-core power per busy SM at the clock it ran (1.79 GHz), its growth with the clock (from the runs the
controller held below that), L2 and DRAM energy per byte (their power does not follow the SM clock:
at 1.28-1.56 GHz the tensor + L2 runs drew what the sum predicts without scaling the L2 term), the
700 W limit and the clocks: tensor-core kernels never ran above ~1.80 GHz in-kernel (NVML showed
1980 MHz), other work ran at 1.98 GHz.

The clock (:meth:`PowerModel.settled_clock`) is the highest clock, within the cap, at which the power
stays within the limit; a kernel of ``Activity`` that changes with the clock (memory-bound parts count
fewer cycles at a lower clock) is passed as a function of the clock. In a stream of kernels the
controller follows their power averaged over the last ``window_ms`` (:meth:`PowerModel.stream_clocks`).

A fast limit holds before the controller responds (:data:`controller_delay_ms`: the clock of a
full-load wgmma kernel held for ~33 ms, then fell): while the tensor cores are busy the clock is
the highest at which fully busy tensor cores and the kernel's memory traffic (weighted by
``fast_limit_mem_weight``) stay within ``fast_limit_w``; in between it returns to the cap, so the
in-kernel clock is their mix by the busy fraction (:meth:`PowerModel.fast_clock`; the bursts plan of
validation.microbench.power measured it). A launch after light work that ends before the controller
responds runs at :meth:`PowerModel.transient_clock`; a settled kernel at :meth:`PowerModel.steady_clock`,
the lower of the two limits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace

from simulator.errors import ConfigError
from simulator.machine.constants import Constant

_PW = "validation/results/h200_power.json (python -m validation.microbench.power, 2026-12-01)"
_DRAM = "validation/results/h200_power_dram.json (python -m validation.microbench.power_dram, 2026-12-01)"
_BURSTS = ("validation/results/h200_power_bursts.json (python -m validation.microbench.power --plan bursts, "
           "2026-12-02)")
_FIT = "validation/results/h200_clock_fit.json (python -m validation.power_fit --out validation/results)"
#: The rows the fitted constants were fitted on (their cross-validated clock error is in _FIT).
_FIT_ROWS = ("on the campaign's 1248 'space' rows (13 problems, in-kernel clocks; validation/results/h200_campaign.json); "
             "leave-one-problem-out clock error in h200_clock_fit.md")


@dataclass(frozen=True)
class Activity:
    """What a kernel does per unit time, at one clock: the power model's inputs."""

    sms: int                    # SMs that hold a CTA
    tc_busy: float              # tensor-core busy fraction of each such SM (0..1)
    l2_bytes_per_s: float       # bytes through L2 (TMA loads, hits and misses, and stores)
    dram_bytes_per_s: float     # HBM bytes read and written
    tensor: bool = True         # uses the tensor cores (their clock cap applies)

    def __post_init__(self):
        for name in ("tc_busy", "l2_bytes_per_s", "dram_bytes_per_s"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and v >= 0 and math.isfinite(v)):
                raise ConfigError(f"Activity.{name}={v!r}: must be a finite number >= 0")
        if not 0 <= self.tc_busy <= 1.0 + 1e-9:
            raise ConfigError(f"Activity.tc_busy={self.tc_busy!r}: a busy fraction is in [0, 1]")
        if not (isinstance(self.sms, int) and self.sms >= 0):
            raise ConfigError(f"Activity.sms={self.sms!r}: must be a count >= 0")


ActivityAt = Callable[[float], Activity]


@dataclass(frozen=True)
class PowerModel:
    """One GPU's power model; every field but ``name`` is a :class:`Constant`."""

    name: str
    limit_w: Constant
    base_w: Constant
    tc_w_per_sm: Constant
    ref_clock_ghz: Constant
    clock_exponent: Constant
    l2_j_per_byte: Constant
    dram_j_per_byte: Constant
    tensor_clock_cap_ghz: Constant
    max_clock_ghz: Constant
    fast_limit_w: Constant
    fast_limit_mem_weight: Constant
    controller_delay_ms: Constant
    gemm_tc_scale: Constant
    gemm_l2_scale: Constant
    gemm_dram_scale: Constant
    window_ms: Constant

    def constants(self) -> tuple[Constant, ...]:
        return tuple(getattr(self, f.name) for f in fields(self) if f.name != "name")

    def with_values(self, **values: float) -> PowerModel:
        """A copy with some constants' values replaced (e.g. while fitting), sources kept."""
        changes = {}
        for k, v in values.items():
            c = getattr(self, k, None)
            if not isinstance(c, Constant):
                raise ConfigError(f"power model constant {k!r}: unknown; valid: "
                                  f"{', '.join(f.name for f in fields(self) if f.name != 'name')}")
            changes[k] = replace(c, value=float(v))
        return replace(self, **changes)

    # ------------------------------------------------------------------ power
    def breakdown(self, ghz: float, act: Activity) -> dict[str, float]:
        """The power's terms (W) at in-kernel clock ``ghz``."""
        if not ghz > 0:
            raise ConfigError(f"clock {ghz!r} GHz: must be > 0")
        scale = (ghz / self.ref_clock_ghz.value) ** self.clock_exponent.value
        return {"base": self.base_w.value,
                "tensor": act.sms * act.tc_busy * self.tc_w_per_sm.value * scale * self.gemm_tc_scale.value,
                "l2": self.l2_j_per_byte.value * act.l2_bytes_per_s * self.gemm_l2_scale.value,
                "dram": self.dram_j_per_byte.value * act.dram_bytes_per_s * self.gemm_dram_scale.value}

    def power_w(self, ghz: float, act: Activity) -> float:
        return sum(self.breakdown(ghz, act).values())

    def cap_ghz(self, act: Activity) -> float:
        """The clock a kernel runs at when power does not hold it back."""
        if act.tensor:
            return min(self.tensor_clock_cap_ghz.value, self.max_clock_ghz.value)
        return self.max_clock_ghz.value

    # ------------------------------------------------------------------ clocks
    def settled_clock(self, act: Activity | ActivityAt, limit_w: float | None = None) -> float:
        """The highest clock within the cap at which ``act``'s power stays within ``limit_w`` (default:
        the power limit). ``act`` is an Activity or a function of the clock returning one."""
        at = _as_function(act)
        limit = self.limit_w.value if limit_w is None else float(limit_w)
        hi = self.cap_ghz(at(self.max_clock_ghz.value))
        return _highest(lambda g: self.power_w(g, at(g)) <= limit, hi)

    def busy_clock(self, act: Activity) -> float:
        """The clock the fast limit allows while the tensor cores are busy: the highest, within the cap,
        at which base power, fully busy tensor cores on ``act.sms`` SMs and ``fast_limit_mem_weight`` x
        ``act``'s memory power stay within ``fast_limit_w``."""
        cap = self.cap_ghz(act)
        bd = self.breakdown(self.ref_clock_ghz.value, replace(act, tc_busy=1.0))
        room = self.fast_limit_w.value - bd["base"] - self.fast_limit_mem_weight.value * (bd["l2"] + bd["dram"])
        if bd["tensor"] <= 0:
            return cap
        if room <= 0:
            return _LOWEST_GHZ
        g = self.ref_clock_ghz.value * (room / bd["tensor"]) ** (1.0 / self.clock_exponent.value)
        return min(cap, max(_LOWEST_GHZ, g))

    def fast_clock(self, act: Activity) -> float:
        """The in-kernel clock under the fast limit: :meth:`busy_clock` for the busy fraction of the
        time, the cap for the rest."""
        return act.tc_busy * self.busy_clock(act) + (1.0 - act.tc_busy) * self.cap_ghz(act)

    def transient_clock(self, act: Activity | ActivityAt) -> float:
        """The clock of a kernel that starts after light work and ends within :data:`controller_delay_ms`:
        only the fast limit holds; the highest clock at or below :meth:`fast_clock` of the activity there."""
        at = _as_function(act)
        hi = self.cap_ghz(at(self.max_clock_ghz.value))
        return _highest(lambda g: g <= self.fast_clock(at(g)) + 1e-12, hi)

    def steady_clock(self, act: Activity | ActivityAt) -> tuple[float, str]:
        """The clock of a kernel run back to back, and what holds it there ("clock cap", "power limit"
        or "fast limit"): the lower of :meth:`settled_clock` and :meth:`transient_clock`."""
        at = _as_function(act)
        settled, fast = self.settled_clock(at), self.transient_clock(at)
        f = min(settled, fast)
        if f >= self.cap_ghz(at(f)) - 1e-3:
            return f, "clock cap"
        return f, ("fast limit" if fast < settled else "power limit")

    def stream_clocks(self, kernels: Sequence[tuple[ActivityAt, Callable[[float], float]]], *,
                      window_ms: float | None = None, cyclic: bool = True, idle_before_ms: float = 0.0,
                      idle_w: float | None = None) -> list[float]:
        """Clocks of kernels run back to back: kernel i runs at the clock at which the power of the
        kernels before it (and its own), averaged over the last ``window_ms`` of GPU time with weights
        falling as exp(-age / window), stays within the limit, and at most its own cap. Each kernel is
        (activity at clock, duration in ms at clock). ``cyclic``: the stream repeats (the last
        kernels precede the first); ``idle_before_ms`` of idle work at ``idle_w`` (default: base power)
        precede the first kernel instead."""
        win = self.window_ms.value if window_ms is None else float(window_ms)
        if not win > 0:
            raise ConfigError(f"window_ms={win!r}: must be > 0")
        idle_w = self.base_w.value if idle_w is None else float(idle_w)
        n = len(kernels)
        out = []
        for i in range(n):
            own_act, own_ms = kernels[i]

            def avg_power(g, i=i):
                num = den = 0.0
                age = 0.0
                for back in range(n if cyclic else i + 1):
                    j = i - back
                    if j < 0 and not cyclic:
                        break
                    act_j, ms_j = kernels[j % n]
                    d = ms_j(g)
                    # weight of the interval [age, age + d] of GPU time before kernel i's end
                    w = win * (math.exp(-age / win) - math.exp(-(age + d) / win))
                    num += w * self.power_w(g, act_j(g))
                    den += w
                    age += d
                    if age > 8 * win:
                        break
                if not cyclic and idle_before_ms > 0 and age <= 8 * win:
                    w = win * (math.exp(-age / win) - math.exp(-(age + idle_before_ms) / win))
                    num += w * idle_w
                    den += w
                return num / den if den > 0 else self.base_w.value

            cap = self.cap_ghz(own_act(self.max_clock_ghz.value))
            out.append(_highest(lambda g, avg=avg_power: avg(g) <= self.limit_w.value, cap, tol=1e-4))
        return out


#: The lowest clock the solvers return (where even it breaks the limit).
_LOWEST_GHZ = 0.05


def _as_function(act: Activity | ActivityAt) -> ActivityAt:
    return act if callable(act) else (lambda _g, a=act: a)


def _highest(ok: Callable[[float], bool], hi: float, tol: float = 1e-5) -> float:
    """The highest clock in [_LOWEST_GHZ, hi] at which ``ok`` holds (``ok`` true below some clock, false
    above it), by bisection to ``tol`` GHz; _LOWEST_GHZ if it fails even there."""
    if ok(hi):
        return hi
    lo = _LOWEST_GHZ
    if not ok(lo):
        return lo
    while hi - lo >= tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def h200_power() -> PowerModel:
    """The H200 SXM's (700 W) power model; sources name the result keys they come from."""
    C = Constant
    return PowerModel(
        name="H200",
        limit_w=C("limit_w", 700.0, "W", f"{_PW} power.enforced_limit_w (NVML enforced = default limit)",
                  "measured-here"),
        base_w=C("base_w", 128.84, "W",
                 f"{_PW}: intercept of power against tensor busy fraction over settle.tc@{{0.05..0.6}} 132sm "
                 "(at ~1.79 GHz; no kernel: idle.power_w 124.9, sleeping warps on all SMs: settle.none 132sm 141.3)",
                 "measured-here"),
        tc_w_per_sm=C("tc_w_per_sm", 6.9641, "W/SM",
                      f"{_PW}: slope of that line / 132 SMs: one SM's tensor cores fully busy (wgmma m64n128k16 SS, "
                      "uniform random fp16 operands) at ref_clock_ghz; settle.tc@1 33sm/66sm agree (7.4, 7.1)",
                      "measured-here"),
        ref_clock_ghz=C("ref_clock_ghz", 1.793, "GHz",
                        f"{_PW}: median in-kernel clock of settle.tc@{{0.05..0.6}} 132sm (where tc_w_per_sm was measured)",
                        "measured-here"),
        clock_exponent=C("clock_exponent", 2.915, "",
                         f"{_PW}: median over step.tc, settle.tc@1 132sm, settle.tc@1 99sm, settle.tc@0.8 132sm (held "
                         "below the cap by the controller, 1.50-1.68 GHz) of log((power - base) / (tensor term at "
                         "ref_clock_ghz)) / log(clock / ref_clock_ghz): 2.36-3.12 (dynamic power ~ f V^2, V rising with f)",
                         "measured-here"),
        l2_j_per_byte=C("l2_j_per_byte", 33.417e-12, "J/B",
                        f"{_PW}: slope of power against bulk-load bytes/s over settle.none+l2@1 {{132,66,33}}sm and "
                        f"none+l2@0.5 132sm (all L2 hits: {_DRAM}); not scaled with the SM clock (settle.tc@1+l2@1 "
                        "and tc@0.5+l2@1, at 1.28 and 1.56 GHz, drew within 4% of the sum with it unscaled)",
                        "measured-here"),
        dram_j_per_byte=C("dram_j_per_byte", 85.631e-12, "J/B",
                          f"{_PW} settle.none+hbm@0.5 132sm: its power less the L2 line's at its bytes/s (2.41 TB/s, "
                          f"all DRAM in {_DRAM}); what a DRAM byte costs beyond its pass through L2. The unpaced "
                          "'hbm' runs are not used (their long runs hit L2 for part of their bytes)",
                          "measured-here"),
        tensor_clock_cap_ghz=C("tensor_clock_cap_ghz", 1.80, "GHz",
                               f"{_PW}: median in-kernel clock of the tensor runs the power limit did not hold back "
                               "(settle.tc@{0.05..0.6} 132sm, tc@1 33/66sm, tc@0.5 66sm: 1.73-1.82) while NVML read "
                               "1980 MHz; the campaign's 1-10 us kernels ran at 1.77-1.80", "measured-here"),
        max_clock_ghz=C("max_clock_ghz", 1.98, "GHz",
                        f"{_PW} clock.nvml_max_sm_mhz and the in-kernel clock of settle.fma/smem/l2 runs (1.98)",
                        "measured-here"),
        fast_limit_w=C("fast_limit_w", 858.0, "W",
                       f"{_PW} step.tc: this model's power at the clock the full-load wgmma kernel started at "
                       "(step.tc.fall.start_mhz 1660, before the controller acted; NVML read 844 W there in "
                       "settle.tc@1 132sm)", "measured-here"),
        fast_limit_mem_weight=C("fast_limit_mem_weight", 0.399, "x",
                                f"{_BURSTS}: the share of L2 power the fast limit counts, least squares through "
                                "zero over bursts.tc@1+l2@0.5 and tc@1+l2@1 132sm (0.20, 0.44): fast_limit_w less "
                                "base and fully busy tensor power at the busy clock their in-kernel clock implies "
                                f"(fast_clock's mix), over their L2 power; DRAM assumed alike. fast_limit_w: {_PW}",
                                "measured-here"),
        controller_delay_ms=C("controller_delay_ms", 32.996, "ms",
                              f"{_PW} step.tc.fall.t50_ms: the full-load kernel kept its starting clock this long "
                              "(t90 35 ms); after it, a light kernel within 5 ms ran at the heavy one's clock "
                              "(recovery.*.gap{0,1,5}ms), half-way back at ~20 ms, at the cap after 500 ms",
                              "measured-here"),
        gemm_tc_scale=C("gemm_tc_scale", 1.0, "x",
                        f"{_FIT}: the twin GEMM's power per tensor-busy SM relative to the microbenchmark's "
                        f"(its data, SMEM traffic, epilogue and issue); [fitted] {_FIT_ROWS}", "fitted"),
        gemm_l2_scale=C("gemm_l2_scale", 1.0, "x",
                        f"{_FIT}: the twin GEMM's L2 power per simulated L2 byte relative to the microbenchmark's "
                        f"bulk loads (tensor-map loads, multicast); [fitted] {_FIT_ROWS}", "fitted"),
        gemm_dram_scale=C("gemm_dram_scale", 0.25, "x",
                          f"{_FIT}: the twin GEMM's DRAM power per simulated DRAM byte relative to the paced "
                          f"bulk-load measurement; [fitted] {_FIT_ROWS}", "fitted"),
        window_ms=C("window_ms", 300.0, "ms",
                    f"{_FIT}: the time over which the controller averages the power of a stream of kernels "
                    f"(the largest value tried; the clock took 20-500 ms to recover after a heavy kernel: "
                    f"recovery.*); [fitted] {_FIT_ROWS}", "fitted"),
    )


#: The B200 model's assumption behind every constant taken from the H200's (nothing here is measured
#: on a B200; a B200 run of ``python -m validation.microbench.power`` and a campaign with unlocked
#: clocks would check it, constant by constant).
_B200_FROM_H200 = "estimate: no B200 measurement; the H200's value assumed (same HBM3e, L2 and power controller)"


def b200_power() -> PowerModel:
    """The B200's (1000 W) power model: the H200's form, its constants scaled by published B200
    figures where there are any, else assumed equal to the H200's (each says which)."""
    C, h = Constant, h200_power()

    def same(c: Constant) -> Constant:
        return replace(c, kind="estimate", source=f"{_B200_FROM_H200}: {c.source}")
    # Energy per tensor FLOP: datasheet dense BF16 per watt, B200 2250 TFLOP/s at 1000 W against the
    # H200's 989 at 700 W; 8192 against 4096 FLOP/clk/SM.
    per_flop = (989.0 / 700.0) / (2250.0 / 1000.0)
    return PowerModel(
        name="B200",
        limit_w=C("limit_w", 1000.0, "W", "NVIDIA HGX B200 specifications: up to 1000 W per GPU (TDP)", "datasheet"),
        base_w=C("base_w", round(h.base_w.value * 148 / 132, 2), "W",
                 f"estimate: the H200's base power x 148/132 SMs ({h.base_w.value:g} W: {h.base_w.source})", "estimate"),
        tc_w_per_sm=C("tc_w_per_sm", round(h.tc_w_per_sm.value * 2 * per_flop, 4), "W/SM",
                      f"estimate: the H200's {h.tc_w_per_sm.value:g} W per fully busy SM x 2 (8192 vs 4096 FLOP/clk/SM) x "
                      f"{per_flop:.3f} (energy per FLOP from the datasheets' dense BF16 TFLOP/s per W: H200 989 at "
                      "700 W, B200 2250 at 1000 W)", "estimate"),
        ref_clock_ghz=same(h.ref_clock_ghz), clock_exponent=same(h.clock_exponent),
        l2_j_per_byte=same(h.l2_j_per_byte), dram_j_per_byte=same(h.dram_j_per_byte),
        tensor_clock_cap_ghz=C("tensor_clock_cap_ghz", 1.965, "GHz",
                               "estimate: no tensor clock cap below the clock SemiAnalysis's microbenchmarks ran at "
                               "(microbench-blackwell); the H200's cap (1.80 of 1.98) was found by measurement only",
                               "estimate"),
        max_clock_ghz=C("max_clock_ghz", 1.965, "GHz", "SemiAnalysis microbench-blackwell (the SM clock of its cycle "
                        "figures; 1.98 GHz boost in spec databases)", "microbenchmark"),
        fast_limit_w=C("fast_limit_w", round(h.fast_limit_w.value / h.limit_w.value * 1000.0, 1), "W",
                       f"estimate: the H200's fast limit over its limit ({h.fast_limit_w.value:g}/{h.limit_w.value:g} W) "
                       "x 1000 W", "estimate"),
        fast_limit_mem_weight=same(h.fast_limit_mem_weight), controller_delay_ms=same(h.controller_delay_ms),
        gemm_tc_scale=same(h.gemm_tc_scale),
        gemm_l2_scale=same(h.gemm_l2_scale), gemm_dram_scale=same(h.gemm_dram_scale), window_ms=same(h.window_ms),
    )


def power_model_for(arch_name: str) -> PowerModel:
    """The power model of arch ``arch_name``: "H200" (measured and checked against measured clocks)
    or "B200" (published figures and the H200's constants, all estimates)."""
    key = str(arch_name).upper()
    if key == "H200":
        return h200_power()
    if key == "B200":
        return b200_power()
    raise ConfigError(f"arch {arch_name}: no power model (H200 and B200 have one); give the clock in GHz")


__all__ = ["Activity", "PowerModel", "h200_power", "b200_power", "power_model_for"]
