"""The clock-control microbenchmark (validation/microbench/power.py) and the NVML sampler on the CPU: the
kernel arguments and the plan, the analysis of traces and samples, and the whole measuring section run
against a stand-in GPU and NVML (so its host code runs before it meets the GPU)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from validation import nvml_sampler as ns
from validation.microbench import power
from validation.microbench import power_analysis as pa


# --------------------------------------------------------------------------------- arguments and plan
def test_kernel_ints_duty_and_full():
    full = power.kernel_ints(power.Load("tc", seconds=0.5))
    assert full[0] == 500_000_000 and full[2] == 16 and full[3] == 0     # full duty: no idle
    half = power.kernel_ints(power.Load("tc", duty=0.5))
    assert half[3] == power.PERIOD_CYCLES and half[2] == power.PERIOD_CYCLES // 2 // power.BATCH_CYCLES
    hbm = power.kernel_ints(power.Load("none", mem="hbm", mem_duty=0.5))
    assert hbm[2] == 0 and hbm[4] == round(0.5 * power.PERIOD_CYCLES / power.MEM_BATCH_CYCLES["hbm"])
    assert hbm[6] == power.MEM_FOOTPRINT["hbm"] and hbm[6] % (16384 * 132) != 0 or hbm[6] > 16384 * 132
    every, cap = full[7] & 0xFFFFF, full[7] >> 20
    assert every >= 1 and cap == power.trace_capacity(power.Load("tc", seconds=0.5))
    # enough trace slots for the run at the H200's 1.98 GHz maximum
    assert cap * power.TRACE_CYCLES >= 0.5 * 1.98e9


@pytest.mark.parametrize("bad, msg", [({"compute": "dsp"}, "compute="), ({"duty": 0.0}, "duty="),
                                      ({"mem": "dram"}, "mem="), ({"sms": 200}, "sms="),
                                      ({"data": "pink"}, "data="), ({"seconds": 0}, "seconds=")])
def test_load_check_names_the_bad_value(bad, msg):
    with pytest.raises(ValueError, match=msg):
        power.kernel_ints(power.Load(**bad))


def test_plan_is_valid_and_fits_the_budget():
    for quick in (False, True):
        ex = power.plan(quick)
        names = [e["name"] for e in ex]
        assert len(names) == len(set(names))
        for e in ex:
            for ld in [e[k] for k in ("load", "heavy", "probe") if k in e] + list(e.get("loads", [])):
                power.kernel_ints(ld)
        # the GPU time of the kernels section stays well inside its share of the budget
        assert power.plan_seconds(ex) < 0.6 * power.SECTIONS["kernels"]
    assert power.plan_seconds(power.plan(True)) < power.plan_seconds(power.plan(False)) / 5


def test_burst_plan_alternates_each_load_with_the_light_one_after_idle():
    for quick in (False, True):
        ex = power.burst_plan(quick)
        assert len({e["name"] for e in ex}) == len(ex) and all(e["name"].startswith("bursts.") for e in ex)
        for e in ex:
            loads = e["loads"]
            assert loads[0].compute == "none" and loads[0].mem == "none"
            assert all(ld.seconds == power.BURST_S for ld in loads[1:])
            assert {ld.label for ld in loads[2::2]} == {"tc@0.2 132sm"} and len({ld.label for ld in loads[1::2]}) == 1
            for ld in loads:
                power.kernel_ints(ld)
        assert power.plan_seconds(ex) < 0.6 * power.SECTIONS["kernels"]
    assert power.PLANS["bursts"] is power.burst_plan and power.OUT_NAMES["bursts"] != power.OUT_NAME


def test_long_period_duty_keeps_the_duty_and_names_its_period():
    ld = power.Load("tc", duty=0.5, period_cycles=1 << 16)
    ints = power.kernel_ints(ld)
    assert ints[3] == 1 << 16 and ints[2] == (1 << 15) // power.BATCH_CYCLES
    assert ld.label == "tc@0.5/p65536 132sm" and power.Load("tc", duty=0.5).label == "tc@0.5 132sm"
    with pytest.raises(ValueError, match="period_cycles"):
        power.kernel_ints(power.Load("tc", duty=0.5, period_cycles=100))


def test_burst_quantities_split_the_load_from_the_light_launches():
    def ln(mhz, duty):
        return {"clock_mhz": mhz, "tc_busy_fraction": duty, "load": {"duty": duty}}
    rep = {"launches": [{"clock_mhz": 1980.0}, ln(1660, 1.0), ln(1820, 0.2), ln(1650, 1.0), ln(1830, 0.2)],
           "nvml": {"sm_mhz_median": 1980.0}}
    q = pa._burst_quantities("bursts.tc@1 132sm", [rep, rep])
    assert q["bursts.tc@1 132sm.load_clock_mhz"]["value"] == 1655
    assert q["bursts.tc@1 132sm.light_clock_mhz"]["value"] == 1825
    assert q["bursts.tc@1 132sm.load_tc_busy_fraction"]["value"] == 1.0
    assert q["bursts.tc@1 132sm.nvml_sm_mhz"]["value"] == 1980.0
    assert "bursts.tc@1 132sm.light_tc_busy_fraction" not in q


def test_dry_run_builds_and_prints_the_plan(capsys):
    import shutil
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    assert power.main(["--dry-run", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "step.tc" in out and "kernel experiments" in out


def test_unknown_section_is_one_line_error(capsys):
    assert power.main(["--sections", "kernels,lasers"]) == 2
    assert "lasers" in capsys.readouterr().err
    assert power.main(["--plan", "bursts", "--sections", "matmul"]) == 2
    assert "kernels section only" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ analysis
def _trace(ghz_of_ms, ms: float, every_ns: int = 20_000):
    """Synthetic (clock64, globaltimer) samples of a clock that follows ghz_of_ms(t)."""
    rows, c, g = [], 10_000, 5_000_000
    for _ in range(int(ms * 1e6 / every_ns)):
        rows.append((c, g))
        c += int(ghz_of_ms((g - 5_000_000) / 1e6) * every_ns)
        g += every_ns
    return rows


def test_clock_series_and_fall_times_recover_a_known_step():
    # 1.8 GHz falling exponentially (tau 2 ms) to 1.2 GHz
    f = lambda t: 1.2 + 0.6 * np.exp(-t / 2.0)   # noqa: E731
    rows = _trace(f, 60.0)
    s = pa.clock_series(rows, pa.default_edges(0.06))
    assert len(s["t_ms"]) == len(s["mhz"]) > 50
    ft = pa.fall_times(s)
    # the start is the first 0.3 ms (1.2 + 0.6 exp(-0.075) at its middle), the fall measured from there
    assert ft["start_mhz"] == pytest.approx(1756, abs=10) and ft["settled_mhz"] == pytest.approx(1200, abs=5)
    for frac in (0.5, 0.9):
        level = ft["start_mhz"] - frac * (ft["start_mhz"] - 1200)
        assert ft[f"t{int(frac * 100)}_ms"] == pytest.approx(-2.0 * np.log((level - 1200) / 600), abs=0.15)
    assert pa.span_clock(rows, 30, 60) == pytest.approx(1200, abs=2)


def test_trace_rows_stops_at_the_end_marker():
    arr = np.array([[5, 1], [6, 2], [-1, 0], [7, 3]], dtype=np.int64)
    assert pa.trace_rows(arr) == [(5, 1), (6, 2)]
    assert pa.trace_rows([(5, 1), (0, 0)]) == [(5, 1)]


def test_launch_result_rates():
    ld = power.Load("tc", mem="hbm", sms=2, seconds=0.001)
    # two blocks, 1e6 ns at 1.5 GHz, 1000 batches per compute warpgroup, 64 MiB of loads each
    summ = np.array([[0, 1_500_000, 0, 1_000_000, s, 1_400_000, 1000, 64 << 20, 0, 0] for s in (3, 9)])
    r = pa.launch_result(ld, summ, [])
    assert r["clock_mhz"] == 1500.0 and r["sms"] == 2 and r["compute_busy_fraction"] == pytest.approx(1.4 / 1.5, abs=1e-3)
    flops = 2 * 2 * 1000 * pa.TC_FLOPS_PER_BATCH
    assert r["tflops"] == pytest.approx(flops / 1e6 / 1e3, abs=0.05)
    assert r["tc_busy_fraction"] == pytest.approx(flops / 2 / 1.5e6 / 4096, rel=1e-3)
    assert r["mem_gb_per_s"] == pytest.approx(2 * (64 << 20) / 1e6, rel=1e-3)
    assert pa.launch_result(ld, np.zeros((2, 10), dtype=np.int64), [])["error"]


def test_matmul_summary():
    s = pa.matmul_summary(8192, 8192, 8192, [2.0, 1.5, 1.5, 1.5])
    assert s["tflops_settled"] == pytest.approx(2 * 8192**3 / 1.5e-3 / 1e12, rel=1e-3)
    assert s["tflops_first_chunk"] < s["tflops_settled"]


# ----------------------------------------------------------------------------------------- sampler
class FakeNvml:
    """The pynvml functions the sampler and the section use, with a power that rises over time."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0
    NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1

    def __init__(self):
        self.calls = 0
        self.energy = 0.0

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("gpu", i)

    def nvmlDeviceGetPowerUsage(self, h):
        self.calls += 1
        return 500_000 + 1000 * self.calls

    def nvmlDeviceGetFieldValues(self, h, ids):
        class U:
            uiVal = 650_000
            dVal = ulVal = ullVal = sllVal = siVal = usVal = 0

        class V:
            nvmlReturn, valueType, value = 0, 1, U()
        return [V(), V()]

    def nvmlDeviceGetClockInfo(self, h, which):
        return 1500

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x4 | 0x20

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        self.energy += 7.0
        return int(self.energy)

    def nvmlDeviceGetTemperature(self, h, s):
        return 55

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700_000

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h):
        return 700_000

    def __getattr__(self, name):        # any other query: this driver lacks it
        if name.startswith("nvml"):
            def missing(*a):
                raise RuntimeError(f"{name} not supported")
            return missing
        raise AttributeError(name)


def test_sampler_samples_and_summarises():
    fake = FakeNvml()
    s = ns.NvmlSampler(period_s=0.001, nvml=fake)
    for _ in range(5):
        s.sample()
    row = s.rows[0]
    assert row[1] == pytest.approx(501.0) and row[2] == 650.0 and row[4] == 1500.0
    assert row[7] == 55.0 and s.rows[1][7] is None       # temperature every temp_every samples
    w = s.window(s.rows[0][0], s.rows[-1][0])
    assert w["samples"] == 5 and w["power_instant_w_median"] == 650.0 and w["sm_mhz_median"] == 1500.0
    assert w["reasons"] == {"sw_power_cap": 1.0, "sw_thermal_slowdown": 1.0}
    assert w["energy_power_w"] is not None and w["energy_power_w"] > 0
    cols = s.columns()
    assert list(cols) == list(ns.COLUMNS) and cols["t"][0] == 0.0 and len(cols["power_w"]) == 5


def test_sampler_thread_runs_and_stops():
    s = ns.NvmlSampler(period_s=0.001, nvml=FakeNvml())
    import time
    with s:
        s.mark("x")
        time.sleep(0.03)
    n = len(s.rows)
    assert n >= 3 and s.marks[0][1] == "x"
    time.sleep(0.01)
    assert len(s.rows) == n


def test_decode_reasons_and_energy():
    assert ns.decode_reasons(0) == [] and ns.decode_reasons(None) == []
    assert ns.decode_reasons(0x4 | 0x1000) == ["sw_power_cap", "bits0x1000"]
    rows = [(t, None, None, None, None, None, e, None) for t, e in ((0.0, 100), (0.01, 100), (0.02, 107), (1.02, 7107))]
    assert ns.energy_power_w(rows) == pytest.approx(7.0)   # 7000 mJ over 1.0 s between the counter's steps
    assert ns.energy_power_w(rows[:2]) is None


def test_sampler_error_is_one_line():
    class Broken(FakeNvml):
        def nvmlInit(self):
            raise OSError("libnvidia-ml.so.1: cannot open shared object file")
    with pytest.raises(RuntimeError, match="NVML initialisation failed"):
        ns.NvmlSampler(nvml=Broken())
    with pytest.raises(ValueError, match="period_s"):
        ns.NvmlSampler(period_s=0, nvml=FakeNvml())


# ------------------------------------------------------------------- the section on a stand-in GPU
class FakeGpu:
    """Buffers and launches of validation.microbench.driver.Gpu without a GPU: a launch of the load
    generator writes summaries and traces of a 1.5 GHz clock (1.8 GHz for light loads)."""

    name, sm_count, l2_bytes, driver_version = "Fake H200", 132, 60 << 20, 13000

    def __init__(self):
        self.mem: dict[int, object] = {}
        self.next = 1 << 20
        self.launches = []
        self.g = 10**12

    def alloc(self, n):
        p = self.next
        self.next += int(n) + 4096
        self.mem[p] = None
        return p

    def free(self, p):
        self.mem.pop(p)

    def memset(self, p, byte, n):
        self.mem[p] = None

    def h2d(self, p, arr):
        assert p in self.mem

    def fill_random(self, p, elems, seed=1, bf16=False):
        assert p in self.mem

    def func(self, cubin, name):
        assert name in ("power_none", "power_tc", "power_smem", "power_fma"), name
        return name

    def launch(self, fn, grid, block, args, *, smem=0, sync=True, **kw):
        assert block == power.THREADS and smem == power.SMEM_BYTES and 1 <= grid <= 132
        dur = int(args.i[0])
        ghz = 1.8 if fn in ("power_none",) or args.i[3] else 1.5
        g0 = self.g
        self.g += dur + 5000
        cap = int(args.i[7]) >> 20
        summ = np.zeros((grid, power.SUMMARY_WORDS), dtype=np.int64)
        for b in range(grid):
            summ[b, :8] = [1000, 1000 + int(dur * ghz), g0, g0 + dur, b, int(dur * ghz * 0.9), dur // 400, 0]
        step = max(1, dur // max(1, min(cap - 1, 2000)))
        n = min(cap - 1, dur // step)
        tr = np.zeros((power.TRACE_BLOCKS, cap, 2), dtype=np.int64)
        t = np.arange(n, dtype=np.int64) * step
        tr[:, :n, 0] = 1000 + (t * ghz).astype(np.int64)
        tr[:, :n, 1] = g0 + t
        tr[:, n, 0] = -1
        self.mem[int(args.p[3])] = summ
        self.mem[int(args.p[2])] = tr
        self.launches.append((fn, grid, dur))

    def d2h(self, arr, p):
        src = self.mem[p]
        arr[...] = src[: arr.shape[0]] if src is not None else 0
        return arr

    def wait(self):
        import time
        time.sleep(0.012)      # long enough for the sampler (period 5 ms) to see every launch

    def sync(self):
        pass


def test_kernels_section_on_a_stand_in_gpu(tmp_path, monkeypatch):
    import validation.microbench.driver as driver
    monkeypatch.setattr(driver, "Gpu", FakeGpu)
    monkeypatch.setattr(power, "_idle", lambda s: None)
    monkeypatch.setattr(ns.NvmlSampler, "__init__", _fake_sampler_init)
    monkeypatch.setattr("subprocess.run", lambda *a, **k: type("P", (), {"stdout": "Power Readings\n"})())
    monkeypatch.setattr("validation.microbench.build.cubin_path", lambda name: tmp_path / f"{name}.cubin")
    part = tmp_path / "part.json"
    import time
    assert power.section_kernels(part, quick=True, deadline=time.time() + 120) == 0
    res = json.loads(part.read_text())
    ex = res["experiments"]
    assert not [n for n, e in ex.items() if "error" in e], {n: e["error"] for n, e in ex.items() if "error" in e}
    assert set(ex) == {e["name"] for e in power.plan(True)} and not res["skipped"]
    assert ex["step.tc"]["clock_mhz"] == 1500.0 and ex["step.tc"]["clock_series"]["mhz"]
    assert ex["recovery.idle.gap0ms"]["probe"]["clock_mhz"] == 1800.0
    assert res["static"]["enforced_power_limit_mw"] == 700_000
    doc = {"meta": {"command": "x", "nvidia_smi_before": {}}, "results": {"kernels": res}}
    doc["meta"]["effective_sm_clock"] = pa.effective_clock(doc)
    q = pa.quantities(doc)
    assert q["power.enforced_limit_w"]["value"] == 700.0
    assert q["settle.tc@1 132sm.clock_mhz"]["value"] == 1500.0
    assert q["settle.tc@1 132sm.power_w"]["value"] == 650.0
    assert all(set(v) == {"value", "unit", "what"} for v in q.values())
    md = pa.markdown({**doc, "quantities": q})
    assert "Settled points" in md and "settle.tc@0.5 66sm" in md


def _fake_sampler_init(self, period_s=0.005, index=0, temp_every=20, nvml=None):
    self.nvml, self.handle = FakeNvml(), ("gpu", 0)
    self.period_s, self.temp_every = period_s, temp_every
    self.rows, self.marks, self.errors = [], [], {}
    self._fields_ok = True
    import threading
    self._stop, self._thread = threading.Event(), None


# ------------------------------------------------------------------------------ the committed result
RESULT = power.Path(__file__).resolve().parent.parent / "validation" / "results" / "h200_power.json"


@pytest.fixture(scope="module")
def doc():
    return json.loads(RESULT.read_text())


def test_result_metadata(doc):
    m = doc["meta"]
    assert m["command"].startswith("python -m validation.microbench.power --out OUT")
    assert m["nvidia_smi_before"]["name"] == "NVIDIA H200" and m["nvidia_smi_before"]["driver_version"]
    assert m["date_utc"] and m["versions"]["torch"] and m["effective_sm_clock"]["launches"] > 100
    assert all(s["rc"] == 0 for s in m["section_status"].values())
    assert doc["results"]["kernels"]["static"]["enforced_power_limit_mw"] == 700_000


def test_quantities_rederive_from_raw_results(doc):
    q = pa.quantities(doc)
    assert q == doc["quantities"]
    assert pa.effective_clock(doc) == doc["meta"]["effective_sm_clock"]


def test_markdown_is_what_the_command_wrote(doc):
    md = (RESULT.parent / "h200_power.md").read_text()
    assert md == pa.markdown(doc)


def test_ncu_csv_parse_and_combine():
    from validation.microbench import power_dram as pd
    head = ['"ID"', '"Process ID"', '"Kernel Name"'] + [f'"{m}"' for m in pd.METRICS]
    units = ['""', '""', '""'] + ['"byte"'] * len(pd.METRICS)
    row = ['"0"', '"77"', '"power_none"', '"1,000,000"', '"10"', '"3000000"', '"66.5"', '"20000000"', '"1.5e9"']
    text = "==PROF== Connected\n" + "\n".join(",".join(r) for r in (head, units, row))
    rows = pd.parse_ncu_csv(text)
    assert rows == [{"kernel": "power_none", "dram__bytes_read.sum": 1e6, "dram__bytes_write.sum": 10.0,
                     "lts__t_bytes.sum": 3e6, "lts__t_sector_hit_rate.pct": 66.5,
                     "gpu__time_duration.sum": 2e7, "sm__cycles_elapsed.avg.per_second": 1.5e9}]
    c = pd.combine([{"load": "none+hbm@1 132sm", "mem_bytes": 4e6}], rows)
    assert c[0]["dram_read_fraction"] == 0.25 and c[0]["ncu_kernel"] == "power_none"
    assert "none+hbm@1 132sm" in pd.markdown({"meta": {"command": "x", "date_utc": "d"}, "rows": c})
