"""Simulate a launch at the clock the GPU's power controller settles on (issue 16).

The clock changes the cycle count of memory-bound parts (HBM and L2 bandwidths are bytes per second),
and the cycle count changes the power, so the two are iterated: simulate at the tensor clock cap,
solve the power model (:mod:`simulator.machine.power`) for the clock its activity allows, simulate
there, and solve again with the activity interpolated (linearly in the clock) between the last two
simulations, until the clock moves less than ``tol``. Usually two or three simulations.

    simulate(cfg, arch, clock="predicted")        # what users call: SimResult.clock_prediction says how
    p = simulate_at_predicted_clock(cfg, arch, run=simulate)   # p.result (at p.clock_ghz), p.power_w

``run`` is the one-launch simulation (``simulator.engine.run.simulate``), passed in so that this module
sits beside ``run`` in the engine layer without importing it back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simulator.errors import ConfigError
from simulator.kernels.tma_alignment import RowPitchCost
from simulator.machine.arch import ArchSpec
from simulator.machine.power import Activity, PowerModel, power_model_for


@dataclass
class PredictedClock:
    """A simulation at its predicted clock, the power there and how the clock was found."""

    result: Any                       # the simulator.engine.run.SimResult at the predicted clock
    clock_ghz: float
    power_w: float
    breakdown: dict[str, float]
    limited_by: str                   # "clock cap", "power limit" or "fast limit"
    model: PowerModel
    clocks_simulated: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        """JSON-ready: the clock, the power and its terms, what limited the clock, the clocks simulated,
        and every constant of the power model (name, value, unit, kind, source)."""
        return {"clock_ghz": self.clock_ghz, "power_w": self.power_w, "breakdown": dict(self.breakdown),
                "limited_by": self.limited_by, "clocks_simulated": list(self.clocks_simulated),
                "model": self.model.name,
                "constants": [{"name": c.name, "value": c.value, "unit": c.unit, "kind": c.kind, "source": c.source}
                              for c in self.model.constants()]}

    def describe(self) -> str:
        return (f"predicted clock {self.clock_ghz:.3f} GHz ({self.limited_by}), power {self.power_w:.0f} W "
                f"(limit {self.model.limit_w.value:g} W; " +
                ", ".join(f"{k} {v:.0f}" for k, v in self.breakdown.items()) + ")")


def l2_cost_of(cfg) -> float:
    """L2 -> SM occupancy per byte of the config's A/B rows (x1.48 when they straddle 128-B lines)."""
    return RowPitchCost.of(cfg.k, cfg.bits_ab).l2_cost


def activity_of(res: Any) -> Activity:
    """The power model's inputs from a simulated launch (at the clock it was simulated at); L2 bytes
    are charged at their row pitch's L2 occupancy per byte (:func:`l2_cost_of`)."""
    clk = res.arch.clock_ghz.value
    secs = res.cycles / (clk * 1e9) if res.cycles > 0 else 0.0
    sms = max((r.ctas for r in res.role_times), default=0)
    if secs <= 0:
        return Activity(sms, 0.0, 0.0, 0.0)
    return Activity(sms=sms, tc_busy=min(1.0, max(0.0, res.tensor_core_utilization)),
                    l2_bytes_per_s=(res.l2_load_bytes + res.hbm_write_bytes) * l2_cost_of(res.config) / secs,
                    dram_bytes_per_s=res.hbm_bytes / secs)


def _interpolated(a: Any, b: Any):
    """Activity as a function of the clock, linear in the clock between two simulations (cycles, tensor
    busy cycles and bytes), held (compute-bound: same cycles) beyond them."""
    fa, fb = a.arch.clock_ghz.value, b.arch.clock_ghz.value
    pa, pb = activity_of(a), activity_of(b)

    def per_launch(res, act):
        return (res.cycles, act.tc_busy * res.cycles, (res.l2_load_bytes + res.hbm_write_bytes) * l2_cost_of(res.config),
                res.hbm_bytes)

    ca, cb = per_launch(a, pa), per_launch(b, pb)

    def at(f: float) -> Activity:
        w = 0.0 if fb == fa else min(1.0, max(0.0, (f - fa) / (fb - fa)))
        cyc, busy, l2, dram = (x + w * (y - x) for x, y in zip(ca, cb, strict=True))
        secs = max(cyc, 1.0) / (f * 1e9)
        return Activity(pa.sms, min(1.0, busy / max(cyc, 1.0)), l2 / secs, dram / secs)
    return at


def _held(res: Any):
    """Activity as a function of the clock from one simulation: same cycles at any clock."""
    act = activity_of(res)
    f0 = res.arch.clock_ghz.value

    def at(f: float) -> Activity:
        return Activity(act.sms, act.tc_busy, act.l2_bytes_per_s * f / f0, act.dram_bytes_per_s * f / f0)
    return at


def simulate_at_predicted_clock(cfg, arch: ArchSpec, *, run: Callable[..., Any], model: PowerModel | None = None,
                                transient: bool = False, tol: float = 0.002, max_simulations: int = 5,
                                **simulate_kw) -> PredictedClock:
    """Simulate ``cfg`` at the clock ``arch``'s power controller settles on for it, run back to back
    (``transient``: a launch after light work, shorter than the controller's response, where only the
    fast limit holds; otherwise the lower of the power and fast limits' clocks). ``run(cfg, arch, **simulate_kw)`` simulates one launch at ``arch``'s clock
    (``simulate``); ``simulate_kw``: engine, knobs, trace, max_events..."""
    model = model or power_model_for(arch.name)
    if "clock" in simulate_kw:
        raise ConfigError("simulate_at_predicted_clock: the clock is predicted; do not pass clock=")
    if not 0 < tol < 0.1:
        raise ConfigError(f"tol={tol!r}: a relative clock tolerance in (0, 0.1)")
    def solve(at) -> tuple[float, str]:
        return (model.transient_clock(at), "fast limit") if transient else model.steady_clock(at)

    def at_clock(f: float) -> Any:
        return run(cfg, arch.with_overrides({"clock_ghz": round(f, 4)},
                                            origin=f"predicted by the {model.name} power model"), **simulate_kw)

    f = model.tensor_clock_cap_ghz.value
    sims = [at_clock(f)]
    at = _held(sims[-1])
    while True:
        f_new, bound = solve(at)
        if abs(f_new - f) <= tol * f or len(sims) >= max_simulations:
            break
        f = f_new
        sims.append(at_clock(f))
        at = _interpolated(sims[-2], sims[-1])
    res = sims[-1]
    f = res.arch.clock_ghz.value
    act = activity_of(res)
    cap = model.cap_ghz(act)
    bd = model.breakdown(f, act)
    limited = "clock cap" if f >= cap - 1e-3 else bound
    return PredictedClock(res, f, sum(bd.values()), bd, limited, model, [s.arch.clock_ghz.value for s in sims])


__all__ = ["PredictedClock", "activity_of", "simulate_at_predicted_clock"]
