"""The H200 microbenchmarks (validation/microbench) on the CPU: every kernel compiles for sm_90a without
a serialised wgmma or a spill (needs nvcc; skipped without it), the host-side arithmetic, and the
committed result file: its metadata, its named quantities (re-derived from its raw results by the
committed code), and the ArchSpec.h200() constants that cite it."""

from __future__ import annotations

import ctypes
import json
import math
import re
import shutil
from pathlib import Path

import pytest

from simulator.machine.arch import ArchSpec
from validation.microbench import cluster, epilogue, mainloop_cuda, sync, tma, wgmma
from validation.microbench.common import linfit
from validation.microbench.driver import Args, span_summary
from validation.microbench.report import markdown

RESULT = Path(__file__).resolve().parent.parent / "validation" / "results" / "h200_microbench_v2.json"


@pytest.fixture(scope="module")
def doc():
    return json.loads(RESULT.read_text())


# ------------------------------------------------------------------------------------------- host side
def test_args_is_the_c_struct():
    assert ctypes.sizeof(Args) == 128
    a = Args.of([1, 2**40], [-3, 7])
    raw = bytes(a)
    assert int.from_bytes(raw[8:16], "little") == 2**40
    assert int.from_bytes(raw[64:72], "little", signed=True) == -3
    with pytest.raises(ValueError, match="8 pointers"):
        Args.of(range(9))


def test_span_summary():
    rows = [(0, 2000, 100, 1100, 5), (10, 1010, 200, 1200, 6), (0, 4000, 150, 2150, 6)]
    s = span_summary(rows)
    assert s["blocks"] == 3 and s["sms"] == 2
    assert s["cycles_median"] == 2000 and s["cycles_min"] == 1000 and s["cycles_max"] == 4000
    assert s["wall_ns"] == 2150 - 100
    assert s["clock_mhz"] == pytest.approx(2000.0)   # 2000 cycles / 1000 ns, 1000/1000, 4000/2000


def test_linfit_recovers_a_line():
    a, b = linfit([1024, 4096, 32768], [459 + x / 110 for x in (1024, 4096, 32768)])
    assert a == pytest.approx(459) and 1 / b == pytest.approx(110)
    with pytest.raises(ValueError):
        linfit([1, 1], [2, 3])


def test_infer_gpcs_joins_sms_that_shared_a_cluster():
    gpcs = cluster.infer_gpcs([[0, 1], [2, 3], [1, 2, 16, 17], [40, 41], [5]])
    assert gpcs == [[0, 1, 2, 3, 16, 17], [5], [40, 41]]
    assert cluster.clusters_per_gpc(gpcs, 2) == 3 + 0 + 1
    assert cluster.clusters_per_gpc(gpcs, 4) == 1


def test_expected_tiles_pattern():
    d = epilogue.expected_tiles(256, tiles_per_cta=4)
    assert d.shape == (256, epilogue.D_COLS)
    # tile (0, 0) of CTA 0 is its first tile (t = 0); tile (0, 1) its second (t = 1)
    assert float(d[5, 7]) == (5 * 3 + 7) % 61 - 30
    assert float(d[5, 128 + 7]) == (5 * 3 + 7) % 61 - 30 + 1
    # row 128 starts tile 32 = CTA 8's first tile
    assert float(d[128, 0]) == 0 - 30


def test_wgmma_source_has_every_variant_with_n_over_2_accumulators():
    for dtype in wgmma.DTYPES:
        src = wgmma.cuda_source(dtype)
        for kind, n, atoms, ksteps, wait in wgmma.variants(dtype):
            assert f"void __launch_bounds__(256, 1) {wgmma.kernel_name(kind, dtype, n, atoms, ksteps, wait)}(" in src
        ty = "f16" if dtype == "f16" else "bf16"
        for n in wgmma.NS:
            m = re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{n}k16\.f32\.{ty}\.{ty} \{{([^}}]*)\}}, %", src)
            assert m and len(m.group(1).split(",")) == n // 2
    assert "rs_bf16" not in wgmma.cuda_source("bf16")
    with pytest.raises(ValueError, match="dtype"):
        wgmma.cuda_source("fp8")


def test_wgmma_quantities_from_runs():
    def run(k, it_cycles, nwg=1, atoms=1, wait=0):
        return {"kind": "ss", "dtype": "f16", "n": 64, "atoms": atoms, "ksteps": k, "wait": wait,
                "warpgroups": nwg, "cycles_per_iter": it_cycles}
    q = wgmma.quantities([run(1, 96.0), run(4, 195.0), run(16, 591.0), run(16, 1024.0, nwg=2)])
    assert q["wgmma.ss.f16.n64.latency_cycles"]["value"] == 96.0
    assert q["wgmma.ss.f16.n64.issue_interval_cycles"]["value"] == pytest.approx(33.0)  # (591-195)/12
    assert q["wgmma.ss.f16.n64.flops_per_clk"]["value"] == pytest.approx(2 * 64 * 64 * 16 / 33.0, rel=1e-3)
    assert q["wgmma.ss.f16.n64.two_wg_interval_cycles"]["value"] == 32.0


# ------------------------------------------------------------------------------------------- kernels
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_every_kernel_builds_for_sm90a(tmp_path, monkeypatch):
    from validation.microbench import build
    monkeypatch.setenv("WSIM_MICROBENCH_BUILD", str(tmp_path))
    monkeypatch.delenv("WSIM_MICROBENCH_PREBUILT", raising=False)
    problems = build.build_all(force=True)
    assert problems and all(v == [] for v in problems.values())
    names = {"util": ["fill_random16", "l2_flush", "clock_spin", "scatter_u64"],
             "tma": ["tma_load_latency", "tma_stream"],
             "epilogue": [f"epi_e{en}_{s}_{m}" for en in epilogue.ENS for s in ("coop", "pp")
                          for m in ("plain", "phases")] + ["tma_store_latency", "named_barrier_loop"],
             "sync": ["pointer_chase", "mbarrier_pingpong_local", "mbarrier_pingpong_local_poll",
                      "mbarrier_pingpong_remote", "mbarrier_pingpong_remote_poll",
                      "mbarrier_pingpong_remote_relaxed", "mbarrier_pingpong_remote_cta"],
             "cluster": ["cluster_probe"],
             "power": ["power_none", "power_tc", "power_smem", "power_fma"],
             "wgmma_f16": [wgmma.kernel_name(*v[:1], "f16", *v[1:]) for v in wgmma.variants("f16")],
             "wgmma_bf16": [wgmma.kernel_name(*v[:1], "bf16", *v[1:]) for v in wgmma.variants("bf16")],
             "l2share": ["tma_stream_grouped"],
             "mainloop_f16": [mainloop_cuda.kernel_name(n) for n in mainloop_cuda.TILE_NS]}
    for mod, kernels in names.items():
        blob = (tmp_path / f"{mod}.cubin").read_bytes()
        for k in kernels:
            assert k.encode() in blob, (mod, k)
    # build_all raises on a serialised wgmma or a spill; check that its detector knows ptxas's warning
    assert build.ptxas_problems("ptxas warning : Potential Performance Loss: wgmma.mma_async instructions "
                                "are serialized") != []


# ------------------------------------------------------------------------------------------- results
def test_result_metadata(doc):
    m = doc["meta"]
    assert m["device"]["name"] == "NVIDIA H200" and m["device"]["sm_count"] == 132
    assert re.match(r"\d{3}\.\d+", m["nvidia_smi_before"]["driver_version"])
    assert m["versions"]["cutlass"] == "4.8.1" and "cuda_13" in m["versions"]["nvcc"]
    assert m["command"].startswith("python -m validation.microbench.run")
    assert re.match(r"\d{4}-\d\d-\d\dT", m["date_utc"])
    clk = m["effective_sm_clock"]
    assert 1000 < clk["min_mhz"] <= clk["median_mhz_over_launches"] <= clk["max_mhz"] < 2100
    assert all(s["rc"] == 0 for s in m["family_status"].values())
    assert set(doc["results"]) == {"clock", "cluster", "sync", "wgmma", "epilogue", "tma"}


def test_every_quantity_is_named_with_a_unit(doc):
    q = doc["quantities"]
    assert len(q) > 200
    for k, v in q.items():
        assert re.fullmatch(r"[a-z0-9_.]+", k, re.I), k
        assert isinstance(v["value"], (int, float)) and math.isfinite(v["value"]), k
        assert v["unit"] and v["what"] and v["family"] in doc["results"], k


@pytest.mark.parametrize("family", ["wgmma", "epilogue", "tma", "sync", "cluster"])
def test_quantities_rederive_from_raw_results(doc, family):
    res = doc["results"][family]
    mod = {"wgmma": wgmma, "epilogue": epilogue, "tma": tma, "sync": sync, "cluster": cluster}[family]
    again = mod.quantities(res["runs"] if family == "wgmma" else res)
    stored = {k: v for k, v in doc["quantities"].items() if v["family"] == family}
    assert stored.keys() <= again.keys()
    for k, v in stored.items():
        assert again[k]["value"] == pytest.approx(v["value"], abs=1e-3), k


def test_epilogue_stores_were_checked_element_by_element(doc):
    mism = doc["results"]["epilogue"]["mismatches"]
    assert mism and all(v == 0 for v in mism.values())


def test_cluster_placement_domains_explain_every_occupancy(doc):
    """The SM groups the probe launches reveal reproduce cuOccupancyMaxActiveClusters at every size:
    a cluster fits in one group, floor(group size / cluster size) per group."""
    c = doc["results"]["cluster"]
    assert sum(c["gpc_sizes"]) == 132 and c["sms_seen"] == 132
    occ = [o for o in c["occupancy"] if o["smem"] == cluster.TWIN_SMEM]
    assert len(occ) == len(cluster.SIZES)
    for o in occ:
        assert cluster.clusters_per_gpc(c["gpcs"], o["cluster"]) == o["max_active_clusters"], o
    assert all(launch["all_resident"] for launch in c["launches"])


def test_h200_constants_cite_their_measurement(doc):
    q = doc["quantities"]
    h = ArchSpec.h200()
    cited = [c for c in h.constants() if "h200_microbench_v2.json" in c.source]
    assert {c.name for c in cited} >= {"l2_latency_cycles", "hbm_latency_cycles", "tma_issue_overhead_cycles",
                                       "mbarrier_arrive_latency_cycles", "remote_arrive_latency_cycles",
                                       "l2_bytes_per_s", "mma_latency_cycles", "max_cluster_size"}
    for c in cited:   # measured here; the L2 rate also chosen among the measured ones on the scored rows
        assert c.kind == ("chosen" if c.name == "l2_bytes_per_s" else "measured-here"), c.name
        keys = re.findall(r"[a-z0-9_]+(?:\.[A-Za-z0-9_]+){2,}", c.source)
        keys = [k for k in keys if k in q]
        assert keys, f"{c.name}: its source names no quantity of the JSON"
    direct = {"l2_latency_cycles": "load_latency.l2.f4MiB.1sm", "hbm_latency_cycles": "load_latency.hbm.f1024MiB.1sm",
              "mbarrier_arrive_latency_cycles": "mbarrier.local.try_wait.one_way_cycles.1sm",
              "remote_arrive_latency_cycles": "mbarrier.remote.relaxed.try_wait.c2_peer1.half_round_trip_cycles",
              "l2_bytes_per_s": "l2_to_sm.f16MiB.132sm.bytes_per_s", "mma_latency_cycles": "wgmma.ss.f16.n128.latency_cycles"}
    for name, key in direct.items():   # as measured, rounded to at most half a cycle or 0.1%
        v = q[key]["value"]
        assert h.value(name) == pytest.approx(v, abs=0.5 if "cycles" in name else 1e-3 * v), name
    assert h.tma_issue_overhead_cycles.value == pytest.approx(
        q["tma_load.latency.l2.p8192.1KiB.1sm"]["value"] - q["load_latency.l2.f4MiB.1sm"]["value"], abs=1)


def test_markdown_report(doc):
    md = markdown(doc)
    assert md.startswith("# H200 microbenchmarks (v2)")
    assert "| SS f16 m64n64k16 |" in md and "`named_barrier.t256.cycles`" in md
    assert "NVIDIA H200" in md and "580." in md
