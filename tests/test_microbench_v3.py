"""The v3 microbenchmarks of issue 17 (zero fill, shared L2 lines, the twin's mainloop replayed) on the
CPU: the committed result files (metadata, quantities re-derived from their raw results by the
committed code, the report), the experiment plans, and the H200 constants derived from them."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from simulator.machine.arch import ArchSpec
from validation.microbench import (
    bstream_pitch,
    l2share,
    l2share_lockstep,
    mainloop,
    mainloop_cuda,
    zero_fill_scaling,
)
from validation.microbench.report import gpu_short_name, markdown

RESULTS = Path(__file__).resolve().parent.parent / "validation" / "results"
FAMILIES = {"h200_microbench_v3": {"clock", "l2share", "mainloop", "mainloop_cluster"},
            "h200_microbench_v3b": {"clock", "l2share_lockstep", "mainloop_scaling", "mainloop_cluster"},
            "h200_microbench_v3c": {"clock", "mainloop_pace"},
            "h100_microbench_v3d": {"clock", "mainloop_hbm", "bstream_pitch"},
            "h100_microbench_v3e": {"clock", "zero_fill_scaling", "mainloop_zero_fill"},
            "h100_microbench_v3e_run2": {"clock", "zero_fill_scaling", "mainloop_zero_fill"},
            "h100_microbench_v3f": {"clock", "mainloop_operand"},
            "h100_microbench_v3g": {"clock", "zero_fill_fraction"},
            "h100_microbench_v3g_run2": {"clock", "zero_fill_fraction"},
            "h100_microbench_v3h": {"clock", "mainloop_pitch"}}
#: The chip each file was measured on (the H100 files: sessions lent an H100 only).
DEVICE = {k: "NVIDIA H100 80GB HBM3" for k in FAMILIES if k.startswith("h100_")}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def doc(request):
    d = json.loads((RESULTS / f"{request.param}.json").read_text())
    d["_name"] = request.param
    return d


@pytest.fixture(scope="module")
def q3():
    q = json.loads((RESULTS / "h200_microbench_v3.json").read_text())["quantities"]
    q.update(json.loads((RESULTS / "h200_microbench_v3b.json").read_text())["quantities"])
    return q


def test_result_metadata(doc):
    m = doc["meta"]
    assert m["device"]["name"] == DEVICE.get(doc["_name"], "NVIDIA H200") and m["device"]["sm_count"] == 132
    assert m["suite"] == doc["_name"].split("_")[2]
    assert m["command"] == f"python -m validation.microbench.run --out OUT --suite {m['suite']}"
    assert all(s["rc"] == 0 for s in m["family_status"].values())
    assert set(doc["results"]) == FAMILIES[doc["_name"]]
    for k, v in doc["quantities"].items():
        assert re.fullmatch(r"[a-z0-9_.]+", k, re.I), k
        assert math.isfinite(v["value"]) and v["unit"] and v["what"], k


def test_quantities_rederive_from_raw_results(doc):
    mods = {"l2share": l2share, "l2share_lockstep": l2share_lockstep, "mainloop": mainloop,
            "mainloop_cluster": mainloop, "mainloop_scaling": mainloop, "mainloop_pace": mainloop,
            "mainloop_hbm": mainloop, "bstream_pitch": bstream_pitch, "mainloop_zero_fill": mainloop,
            "mainloop_operand": mainloop, "zero_fill_fraction": zero_fill_scaling,
            "zero_fill_scaling": zero_fill_scaling}
    for fam, mod in mods.items():
        if fam not in doc["results"]:
            continue
        again = mod.quantities(doc["results"][fam])
        stored = {k: v for k, v in doc["quantities"].items() if v["family"] == fam}
        assert stored and stored.keys() == again.keys(), fam
        for k, v in stored.items():
            assert again[k]["value"] == pytest.approx(v["value"], abs=1e-3), k


def test_markdown_report(doc):
    md = markdown(doc)
    chip = gpu_short_name(doc["meta"]["device"]["name"])
    assert doc["_name"].startswith(chip.lower() + "_")
    assert md.startswith(f"# {chip} microbenchmarks ({doc['meta']['suite']}): ")
    if any(f.startswith("mainloop") for f in doc["results"]):
        assert "## Mainloop replays" in md
    else:
        assert "## Zero fill against the SMs filling at once" in md


def test_experiment_plans():
    ex = mainloop.experiments()
    assert len(ex) == len(set(ex)) and {e[4] for e in ex} == {"c1x1", "c1x2", "c2x1"}
    assert all(e[3] in mainloop_cuda.TILE_NS and e[5] in mainloop.MODES for e in ex)
    assert {e[8] for e in mainloop.scaling_experiments()} == {1, 8, 33, 66, 112, 132}
    # persistent grids: 448 tiles of 128x64 over 132 CTAs; 66 clusters of 2 for 1x2 (224 cluster tiles)
    assert mainloop._grid(64, 28672, 64, "c1x1", 132) == (448, 1, 132, 1)
    assert mainloop._grid(64, 28672, 64, "c1x2", 132) == (224, 1, 132, 2)
    assert mainloop._grid(64, 28672, 64, "c2x1", 132) == (448, 1, 132, 2)
    assert mainloop._grid(64, 28672, 256, "c1x1", 132) == (112, 1, 112, 1)


def test_hbm_plan_is_one_tile_row_problems_on_part_of_the_chip():
    """v3d: each replay's grid is below the SM count (B streams on part of the chip) and one tile row
    holds M, so every CTA has its own B stripe; the A and B buffers of ``measure`` hold every problem."""
    ex = mainloop.hbm_experiments()
    assert len(ex) == len(set(ex)) and all(e[3] in mainloop_cuda.TILE_NS and e[5] in mainloop.MODES for e in ex)
    for m, n, k, bn, cluster, *_ in ex:
        grid = mainloop._grid(m, n, bn, cluster, 132)[2]
        assert grid < 132 and (m <= 128 or grid == -(-m // 128) * -(-n // bn))
        assert m * k <= 4096 * 4096 and n * k <= max(8192 * 28672, 4096 * 65536)
    assert mainloop._grid(32, 8192, 128, "c1x1", 132)[2] == 64
    assert max(bstream_pitch.CTAS) < 132 and set(bstream_pitch.PITCH_K) >= {4096, 8192, 65536}


def test_zero_fill_plan_pairs_every_grid_with_and_without_fill():
    ex = mainloop.zero_fill_experiments()
    assert {(e[8], e[6]) for e in ex} == {(g, f) for g in (8, 16, 32, 48, 64) for f in (False, True)}
    assert all(e[8] <= mainloop._grid(e[0], e[1], e[3], e[4], 132)[2] for e in ex)
    assert zero_fill_scaling.CTAS[0] == 1 and zero_fill_scaling.CTAS[-1] == 132


def test_generated_mainloop_source_has_every_tile_and_the_twins_remote_arrive():
    src = mainloop_cuda.cuda_source()
    for n in mainloop_cuda.TILE_NS:
        assert f"void __launch_bounds__(384, 1) {mainloop_cuda.kernel_name(n)}(" in src
        assert f"mma_ss_f16_n{n}(" in src
    assert "#define REMOTE_ARRIVE mbar_arrive_remote_cta" in src


def test_zero_fill_is_free_on_one_sm_and_costly_on_all(q3):
    for h in (16, 32, 64, 96):
        one = q3[f"tma_oob.h{h}.box128.1sm.cycles_per_box"]["value"]
        full = q3["tma_oob.h128.box128.1sm.cycles_per_box"]["value"]
        assert one == pytest.approx(full, rel=0.02)                  # one SM: as fast as a full box
        assert q3[f"tma_oob.h{h}.box128.132sm.cycles_per_box"]["value"] > q3[f"tma_oob.h{h}.box_r.132sm.cycles_per_box"]["value"]
    assert q3["tma_oob.h64.box128_all_oob.132sm.cycles_per_box"]["value"] > 2 * q3["tma_oob.h128.box128.132sm.cycles_per_box"]["value"]


def test_lockstep_readers_share_their_l2_reads(q3):
    distinct = q3["l2_share.g1.lockstep.bytes_per_clk_per_sm"]["value"]
    for g in (2, 4, 12, 33, 66, 132):
        assert q3[f"l2_share.g{g}.lockstep.bytes_per_clk_per_sm"]["value"] > 1.9 * distinct, g
        assert q3[f"l2_share.g{g}.spread.bytes_per_clk_per_sm"]["value"] == pytest.approx(distinct, rel=0.1), g


def test_h200_zero_fill_cost_is_derived_from_the_replays(q3):
    """tma_zero_fill_l2_cost: the mean of what three replays give: the KiB per SM (cluster) and K-block
    that l2_bytes_per_s carries in the measured K-block time, beyond the bytes read, per zero-filled KiB."""
    h = ArchSpec.h200()
    l2 = h.l2_bytes_per_s.value
    v3 = json.loads((RESULTS / "h200_microbench_v3.json").read_text())["results"]
    v3b = json.loads((RESULTS / "h200_microbench_v3b.json").read_text())["results"]

    def run(res, **kw):
        return next(r for r in res["runs"] if all(r[k] == v for k, v in kw.items()))

    def cost(kblock, r, units, read_kib, zero_kib):
        return (kblock * l2 / (r["clock_mhz"] * 1e6) / units / 1024 - read_kib) / zero_kib

    a = run(v3b["mainloop_scaling"], m=64, tile_n=64, grid=132, a_full=False)
    b = run(v3["mainloop"], m=16, tile_n=64, a_full=False, mode="wgmma", stages=8)
    c = run(v3b["mainloop_cluster"], m=64, tile_n=64, cluster="c2x1", mode="wgmma")
    vals = [cost(a["tile_end_cycles_median"][0] / 64, a, 132, 16, 8),     # 8 KiB A + 8 KiB B read, 8 zeros
            cost(b["cycles_median"] / (3 * 64), b, 132, 10, 14),          # its 3-tile CTAs: 2 + 8 read, 14 zeros
            cost(c["tile_end_cycles_median"][0] / 64, c, 66, 16, 24)]     # per cluster: 16 read, 8 + 16 zeros
    assert vals == pytest.approx([2.23, 2.14, 2.00], abs=0.01)
    assert h.tma_zero_fill_l2_cost.value == pytest.approx(sum(vals) / 3, abs=0.005)
    assert "h200_microbench_v3b.json" in h.tma_zero_fill_l2_cost.source
    keys = re.findall(r"(?:v3b? )(mainloop\.[a-z0-9_]+(?:\.[a-z0-9_]+)+)", h.tma_zero_fill_l2_cost.source)
    assert len(keys) >= 3
    for k in keys:                      # every replay the source names is in the result files
        assert any(q.startswith(k.rstrip(".")) for q in q3), k


def test_pace_plan_covers_every_tile_on_one_sm_and_every_cluster_on_all():
    ex = mainloop.pace_experiments()
    assert len(ex) == len(set(ex))
    one = {(e[3], e[5]) for e in ex if len(e) > 8 and e[8] == 1}
    assert one == {(n, m) for n in (64, 128, 192, 256) for m in ("wgmma", "tma")}
    assert {(e[3], e[4]) for e in ex if len(e) <= 8} == {(n, c) for n in (128, 192, 256) for c in mainloop.CLUSTERS}


def test_v3c_the_sms_pace_per_tile_n_and_the_l2_pace_of_a_gemm_pattern():
    """One SM runs a K-block at the math rate (4 N cycles) for N >= 128 and 1.5x it for N = 64; on 132
    SMs the loads alone of a 1x1 GEMM land faster than the unique-line L2 rate (l2_bytes_per_s: CTAs of
    a wave share lines), while multicast clusters' issued bytes land at about that rate."""
    runs = json.loads((RESULTS / "h200_microbench_v3c.json").read_text())["results"]["mainloop_pace"]["runs"]
    l2 = ArchSpec.h200().l2_bytes_per_s.value

    def run(**kw):
        return next(r for r in runs if all(r[k] == v for k, v in kw.items()))

    for n in (128, 192, 256):
        assert run(tile_n=n, grid=1, mode="wgmma")["kblock_cycles"] == pytest.approx(4 * n, rel=0.02)
    assert run(tile_n=64, grid=1, mode="wgmma")["kblock_cycles"] == pytest.approx(1.5 * 4 * 64, rel=0.02)

    def rate(r, kib):                   # B/s of ``kib`` KiB per CTA and K-block over all CTAs
        return r["grid"] * kib * 1024 / (r["kblock_cycles"] / (r["clock_mhz"] * 1e6))

    for n in (128, 192, 256):
        a, b = 16, 2 * n // 16          # KiB of the A and B slices of one K-block (fp16, K-block 64)
        assert rate(run(tile_n=n, cluster="c1x1", mode="tma", grid=132), a + b) > 1.08 * l2, n
        assert rate(run(tile_n=n, cluster="c1x2", mode="tma", grid=132), a / 2 + b) == pytest.approx(l2, rel=0.12)
        assert rate(run(tile_n=n, cluster="c2x1", mode="tma", grid=132), a + b / 2) == pytest.approx(l2, rel=0.12)


def test_gpu_short_name():
    assert gpu_short_name("NVIDIA H100 80GB HBM3") == "H100"
    assert gpu_short_name("NVIDIA H200") == "H200"
    assert gpu_short_name("NVIDIA B200") == "B200"
    assert gpu_short_name(None) == "GPU"


def test_v3d_one_sms_hbm_stream_is_held_by_its_loads_in_flight():
    """H100, one SM, 16 KiB boxes: from L2 the stream reaches its plateau (the TMA rate) by 4 loads in
    flight; from HBM it still grows from 4 to 8 (the latency, not the TMA unit, holds it); the row
    pitch (8 to 128 KiB) changes a 64-SM B stream by under 5%; zero fill of A costs the 64-CTA
    32x8192x8192 mainloop a third of its K-block time (128-row A tensor against 32 rows)."""
    q = {k: v["value"] for k, v in json.loads((RESULTS / "h100_microbench_v3d.json").read_text())["quantities"].items()}
    l2 = [q[f"tma_depth.l2.rows128.st{s}.1sm.bytes_per_clk_per_sm"] for s in (1, 2, 4, 8)]
    hbm = [q[f"tma_depth.hbm.rows128.st{s}.1sm.bytes_per_clk_per_sm"] for s in (1, 2, 4, 8)]
    assert l2[0] < l2[1] < l2[2] and abs(l2[3] - l2[2]) < 0.05 * l2[2]
    assert hbm[0] < hbm[1] < hbm[2] < hbm[3] and hbm[3] > 1.5 * hbm[2]
    by_pitch = [q[f"b_stream.hbm.p{p}.rows128.st6.64sm.bytes_per_s"] for p in (8192, 16384, 131072)]
    assert max(by_pitch) < 1.05 * min(by_pitch)
    base = "mainloop.fp16_32x8192x8192.n128.c1x1.wgmma"
    assert q[f"{base}.kblock_cycles"] > 1.3 * q[f"{base}.a_full.kblock_cycles"]


def test_v3e_zero_fill_cost_grows_with_the_sms_filling_at_once():
    """H100: a 128-row box of a 32-row tensor costs nothing extra on up to 8 SMs and grows with every
    further SM filling at once (16, 32, 64, 96: strictly slower), while in-bounds boxes keep their pace
    to 96 SMs; the endpoints are the H200's (v3 / v3b: one SM, and 132 in lockstep) within 5%. In the
    mainloop replay the fill costs nothing on 8-16 CTAs and a quarter of the K-block on 64."""
    q = {k: v["value"] for k, v in json.loads((RESULTS / "h100_microbench_v3e.json").read_text())["quantities"].items()}
    h200 = json.loads((RESULTS / "h200_microbench_v3b.json").read_text())["quantities"]
    h200.update(json.loads((RESULTS / "h200_microbench_v3.json").read_text())["quantities"])
    zf = {n: q[f"tma_oob_scaling.h32.box128.lockstep.{n}sm.cycles_per_box"] for n in zero_fill_scaling.CTAS}
    full = {n: q[f"tma_oob_scaling.h128.box128.lockstep.{n}sm.cycles_per_box"] for n in zero_fill_scaling.CTAS}
    assert zf[8] == pytest.approx(zf[1], rel=0.03)
    assert zf[8] < zf[16] < zf[32] < zf[64] < zf[96] and zf[96] > 4 * zf[1]
    assert all(full[n] == pytest.approx(full[1], rel=0.03) for n in (8, 16, 32, 64, 96))
    assert zf[1] == pytest.approx(h200["tma_oob.h32.box128.1sm.cycles_per_box"]["value"], rel=0.05)
    lockstep_h200 = [h200[f"tma_oob_shared.h{h}.box128.lockstep.132sm.cycles_per_box"]["value"] for h in (16, 64)]
    assert min(lockstep_h200) * 0.95 < zf[132] < max(lockstep_h200) * 1.05
    base = "mainloop.fp16_32x8192x8192.n128.c1x1.wgmma"
    for g, lo, hi in ((8, 1.0, 1.02), (16, 1.0, 1.02), (64, 1.25, 1.5)):
        ratio = q[f"{base}.grid{g}.kblock_cycles"] / q[f"{base}.a_full.grid{g}.kblock_cycles"]
        assert lo - 0.01 < ratio < hi, (g, ratio)


def test_operand_plan_runs_every_mode_on_one_sm():
    ex = mainloop.operand_experiments()
    assert len(ex) == len(set(ex)) and all(e[5] in mainloop.MODES for e in ex)
    one = {(e[3], e[5]) for e in ex if len(e) > 8 and e[8] == 1}
    assert one == {(n, m) for n in (64, 128, 192, 256) for m in ("wgmma", "wgmma_notma", "wg0", "wg0_notma", "tma")}
    src = mainloop_cuda.cuda_source()
    assert "mode == 3 || mode == 5" in src and "(mode == 4 || mode == 5) && wg == 0" in src


def test_v3f_the_n64_pace_is_the_consumer_loop_not_tma():
    """One SM: a K-block of N = 64 takes about 1.5x its math with TMA traffic during the math and without
    it (the operands stay resident), and one warpgroup alone has a floor of about 350 cycles per K-block
    at N = 64 and 128 (its math: 128 and 256), reaching its math only from N = 192 on."""
    runs = json.loads((RESULTS / "h100_microbench_v3f.json").read_text())["results"]["mainloop_operand"]["runs"]

    def kb(n, mode, grid=1):
        return next(r for r in runs if r["tile_n"] == n and r["mode"] == mode and r["grid"] == grid)["kblock_cycles"]

    assert kb(64, "wgmma") / (4 * 64) > 1.4 and kb(64, "wgmma_notma") / (4 * 64) > 1.4
    assert kb(64, "wgmma_notma") == pytest.approx(kb(64, "wgmma"), rel=0.05)
    for n in (128, 192, 256):
        assert kb(n, "wgmma_notma") == pytest.approx(4 * n, rel=0.02)
    assert 330 < kb(64, "wg0_notma") < 370 and 330 < kb(128, "wg0_notma") < 380
    assert kb(256, "wg0_notma") == pytest.approx(2 * 256, rel=0.03)
