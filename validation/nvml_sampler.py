"""A background thread that samples the GPU's power, SM clock and clock-event reasons through NVML.

    with NvmlSampler(period_s=0.005) as s:     # pynvml (nvidia-ml-py); one sample every ~5 ms
        s.mark("gemm")                         # a labelled host time, to slice the samples by
        ...launch and wait...
    s.window(t0, t1)                           # summary of the samples taken between two host times
    s.columns()                                # every sample, columnar, for a JSON file

Each sample is taken at a host time (``time.perf_counter()``, the same clock as :meth:`mark`) and holds:
``power_w`` (``nvmlDeviceGetPowerUsage``; NVML documents it as an average over ~1 s on recent GPUs),
``power_instant_w`` and ``power_average_w`` (the NVML field values ``NVML_FI_DEV_POWER_INSTANT`` /
``_AVERAGE``, None where the driver has none), ``sm_mhz`` (``nvmlDeviceGetClockInfo(NVML_CLOCK_SM)``),
``reasons`` (``nvmlDeviceGetCurrentClocksEventReasons``, a bit mask: :func:`decode_reasons`),
``energy_mj`` (``nvmlDeviceGetTotalEnergyConsumption``: its differences give the mean power over any
interval) and, every ``temp_every`` samples, ``temp_c``. The functions below the class need no GPU.
"""

from __future__ import annotations

import bisect
import statistics
import threading
import time

#: NVML clock-event (throttle) reason bits (nvml.h ``nvmlClocksEventReason*``).
REASON_BITS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}
#: nvml.h field ids read with ``nvmlDeviceGetFieldValues``.
FI_POWER_AVERAGE = 185
FI_POWER_INSTANT = 186
#: The per-sample columns, in order.
COLUMNS = ("t", "power_w", "power_instant_w", "power_average_w", "sm_mhz", "reasons", "energy_mj", "temp_c")


def decode_reasons(mask: int | None) -> list[str]:
    """The names of the clock-event reasons set in ``mask`` (unknown bits as ``bit0x..``)."""
    if not mask:
        return []
    out = [name for bit, name in REASON_BITS.items() if mask & bit]
    rest = mask & ~sum(REASON_BITS)
    if rest:
        out.append(f"bits{rest:#x}")
    return out


def _field_value(v) -> float | None:
    """One ``c_nvmlFieldValue_t`` as a float (None when NVML returned an error for it)."""
    if getattr(v, "nvmlReturn", 1) != 0:
        return None
    kind = int(v.valueType)
    u = v.value
    return float({0: u.dVal, 1: u.uiVal, 2: u.ulVal, 3: u.ullVal, 4: u.sllVal, 5: u.siVal, 6: u.usVal}.get(kind, u.uiVal))


class NvmlSampler:
    """Samples device ``index`` every ``period_s`` in a daemon thread while the context is open.

    ``nvml``: the pynvml module (or a stand-in with the same functions, for tests); imported when None.
    Raises RuntimeError with one line when NVML cannot be initialised."""

    def __init__(self, period_s: float = 0.005, index: int = 0, temp_every: int = 20, nvml=None):
        if not period_s > 0:
            raise ValueError(f"period_s={period_s!r}: must be > 0")
        if nvml is None:
            try:
                import pynvml as nvml
            except ImportError as e:
                raise RuntimeError(f"NvmlSampler needs pynvml (nvidia-ml-py): {e}") from None
        try:
            nvml.nvmlInit()
            self.handle = nvml.nvmlDeviceGetHandleByIndex(index)
        except Exception as e:  # noqa: BLE001 - NVMLError and friends
            raise RuntimeError(f"NvmlSampler: NVML initialisation failed: {type(e).__name__}: {e}") from None
        self.nvml = nvml
        self.period_s = float(period_s)
        self.temp_every = max(1, int(temp_every))
        self.rows: list[tuple] = []
        self.marks: list[tuple[float, str]] = []
        self.errors: dict[str, str] = {}
        self._fields_ok = True
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ sampling
    def _try(self, name, fn, *args):
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - a query this GPU lacks: recorded once, sample kept
            self.errors.setdefault(name, f"{type(e).__name__}: {e}"[:200])
            return None

    def sample(self) -> tuple:
        """One sample now (also called by the thread)."""
        n, h = self.nvml, self.handle
        t = time.perf_counter()
        pw = self._try("power", n.nvmlDeviceGetPowerUsage, h)
        inst = avg = None
        if self._fields_ok:
            vals = self._try("fields", n.nvmlDeviceGetFieldValues, h, [FI_POWER_INSTANT, FI_POWER_AVERAGE])
            if vals is None:
                self._fields_ok = False
            else:
                inst, avg = (_field_value(v) for v in vals)
        clk = self._try("sm_clock", n.nvmlDeviceGetClockInfo, h, getattr(n, "NVML_CLOCK_SM", 1))
        reasons_fn = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            n.nvmlDeviceGetCurrentClocksThrottleReasons
        reasons = self._try("reasons", reasons_fn, h)
        energy = self._try("energy", n.nvmlDeviceGetTotalEnergyConsumption, h)
        temp = None
        if len(self.rows) % self.temp_every == 0:
            temp = self._try("temperature", n.nvmlDeviceGetTemperature, h, getattr(n, "NVML_TEMPERATURE_GPU", 0))
        row = (t, None if pw is None else pw / 1000.0, None if inst is None else inst / 1000.0,
               None if avg is None else avg / 1000.0, None if clk is None else float(clk),
               None if reasons is None else int(reasons), None if energy is None else float(energy),
               None if temp is None else float(temp))
        self.rows.append(row)
        return row

    def _run(self):
        nxt = time.perf_counter()
        while not self._stop.is_set():
            self.sample()
            nxt += self.period_s
            delay = nxt - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            else:
                nxt = time.perf_counter()

    def start(self) -> NvmlSampler:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> NvmlSampler:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def mark(self, label: str) -> float:
        """Record ``label`` at the current host time; returns that time."""
        t = time.perf_counter()
        self.marks.append((t, str(label)))
        return t

    # ------------------------------------------------------------------ results
    def window(self, t0: float, t1: float) -> dict:
        return summarize(self.rows, t0, t1)

    def columns(self, t_ref: float | None = None, digits: int = 4) -> dict:
        return to_columns(self.rows, t_ref, digits)


# ========================================================================== pure functions (no GPU)
def _col(rows, name: str) -> list:
    j = COLUMNS.index(name)
    return [r[j] for r in rows]


def in_window(rows, t0: float, t1: float) -> list[tuple]:
    return [r for r in rows if t0 <= r[0] <= t1]


def energy_power_w(rows) -> float | None:
    """Mean power (W) over ``rows`` from the energy counter: (last - first) mJ / elapsed s / 1000,
    between the first and last sample whose counter changed (the counter updates in steps)."""
    pts = [(r[0], r[6]) for r in rows if r[6] is not None]
    if len(pts) < 2:
        return None
    first = pts[0]
    changes = [p for p in pts if p[1] != first[1]]
    if not changes:
        return None
    # the first change marks the start of a counter step; the last change the start of the last step
    a = changes[0]
    b = changes[-1]
    if b[0] <= a[0]:
        return None
    return (b[1] - a[1]) / (b[0] - a[0]) / 1000.0


def summarize(rows, t0: float, t1: float) -> dict:
    """Medians of the samples taken in ``[t0, t1]``: power (each reading), SM clock, temperature, the
    mean power from the energy counter, and the fraction of samples with each clock-event reason."""
    w = in_window(rows, t0, t1)
    out: dict = {"samples": len(w), "t0": t0, "t1": t1, **_stats(w)}
    e = energy_power_w(w)
    out["energy_power_w"] = None if e is None else round(e, 2)
    return out


def in_windows(rows, windows) -> list[tuple]:
    """The samples (``rows`` in time order, as the sampler takes them) inside any of ``windows``
    (``(t0, t1)`` host times), each sample once."""
    ts = [r[0] for r in rows]
    picked: dict[int, tuple] = {}
    for t0, t1 in windows:
        for i in range(bisect.bisect_left(ts, t0), bisect.bisect_right(ts, t1)):
            picked[i] = rows[i]
    return [picked[i] for i in sorted(picked)]


def summarize_windows(rows, windows) -> dict:
    """:func:`summarize` over the union of several windows (e.g. the launches of one kernel, which
    alternate with others): the sample count and the medians and reason fractions of the samples
    inside them (no energy-counter power: the windows are not one interval)."""
    w = in_windows(rows, windows)
    return {"samples": len(w), **_stats(w)}


def _stats(w) -> dict:
    out: dict = {}

    def med(name):
        xs = [x for x in _col(w, name) if x is not None]
        return round(statistics.median(xs), 3) if xs else None

    for name in ("power_w", "power_instant_w", "power_average_w", "sm_mhz", "temp_c"):
        out[f"{name}_median"] = med(name)
    clk = [x for x in _col(w, "sm_mhz") if x is not None]
    out["sm_mhz_min"] = min(clk) if clk else None
    out["sm_mhz_max"] = max(clk) if clk else None
    masks = [m for m in _col(w, "reasons") if m is not None]
    counts: dict[str, int] = {}
    for m in masks:
        for name in decode_reasons(m):
            counts[name] = counts.get(name, 0) + 1
    out["reasons"] = {k: round(v / len(masks), 3) for k, v in sorted(counts.items())} if masks else {}
    return out


def to_columns(rows, t_ref: float | None = None, digits: int = 4) -> dict:
    """Every sample as columns (times relative to ``t_ref``, default the first sample), rounded."""
    if not rows:
        return {c: [] for c in COLUMNS}
    ref = rows[0][0] if t_ref is None else t_ref
    out = {}
    for j, c in enumerate(COLUMNS):
        vals = [r[j] for r in rows]
        if c == "t":
            out[c] = [round(v - ref, 5) for v in vals]
        elif c in ("reasons", "energy_mj"):
            out[c] = [None if v is None else int(v) for v in vals]
        else:
            out[c] = [None if v is None else round(v, digits) for v in vals]
    return out


__all__ = ["NvmlSampler", "REASON_BITS", "COLUMNS", "decode_reasons", "summarize", "summarize_windows",
           "energy_power_w", "in_window", "in_windows", "to_columns"]
