"""Candidate spaces of wsim tune: what each named space holds and how it maps to the real kernels."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from simulator.errors import ConfigError
from simulator.kernels import space as S
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import get_arch

B200 = get_arch("b200")
H200 = get_arch("h200")


def test_gemm_model_space_is_the_16_dsl_configs_on_the_padded_problem():
    sp = S.make_space("gemm-model", 100, 257, 4096, 1001, "fp16")
    cands = sp.all_candidates(B200)
    assert len(cands) == 16
    assert {(c.mma_tile_m, c.mma_tile_n, c.cluster_m, c.cluster_n) for c in cands} == {
        (mm, mn, cm, cn) for mm in (128, 256) for mn in (64, 128, 192, 256) for cm, cn in ((2, 1), (2, 2))}
    for c in cands:
        assert (c.m, c.n, c.k) == (264, 4096, 1008)          # pad_mnk: 16-byte rows
        assert c.use_2sm and c.tile_scheduler == "static" and (c.raster, c.swizzle) == ("m", 1)
        assert c.accumulator_stages == 2 and c.dtype_ab == c.dtype_d == "fp16" and not c.read_c
    big = S.gemm_model_config(4096, 4096, 4096, 256, 256, 2, 1)
    # _compute_stages by hand: A+B per CTA 128x64 + 128x64 fp16 = 32 KiB; D subtile 128x32 fp16 = 8 KiB.
    # (232448 - 1024 - 2 x 8192) // 32768 = 6; left 232448 - 6 x 32768 - 17408 = 18432 -> 2 more stores.
    assert (big.mainloop_stages, big.epilogue_store_stages) == (6, 4)


def test_gemm_model_space_matches_the_b200_loader_when_present():
    b200 = pytest.importorskip("validation.b200_data")
    for mm in (128, 256):
        for mn in (64, 192):
            row = b200.B200Row(0, 4096, 7168, 257, mm, mn, 2, 2, 1.0)
            assert S.gemm_model_config(4096, 7168, 257, mm, mn, 2, 2).resolved() == row.config().resolved()


def test_gemm_model_space_rules():
    with pytest.raises(ConfigError, match="B200"):
        S.make_space("gemm-model", 90, 1024, 1024, 1024, "fp16")
    with pytest.raises(ConfigError, match="fp16"):
        S.make_space("gemm-model", 100, 1024, 1024, 1024, "bf16")
    with pytest.raises(ConfigError, match="space='nope': unknown"):
        S.make_space("nope", 100, 1024, 1024, 1024)


def _twin_stages(tile_m, tile_n, epi_n, store_stages, bits=16):
    """hw_kernels/sm90_gemm.py: (SMEM capacity - epilogue buffers - 1 KiB) // (A + B per stage)."""
    return ((228 - 1) * 1024 - tile_m * epi_n * bits // 8 * store_stages - 1024) // ((tile_m + tile_n) * 64 * bits // 8)


def test_hw_space_is_the_campaign_list():
    from simulator.kernels.space import hw_space

    listed = hw_space()
    sp = S.make_space("hw", 90, 4096, 4096, 4096, "fp16")
    cands = sp.all_candidates(H200)
    assert len(cands) == len(listed)
    as_fields = [S.hw_kernel_fields(c) for c in cands]
    defaults = {"decomposition": "data_parallel", "splits": 1}
    for d in listed:
        want = {**defaults, **d}
        match = [f for f in as_fields if all({**defaults, **f}[key] == v for key, v in want.items())]
        assert len(match) == 1, d
    for c, f in zip(cands, as_fields, strict=True):
        assert c.epi_tile == (c.tile_m, f["epilogue_tile_n"])   # the twin's subtile spans tile_m rows
        # the model derives the mainloop stages the twin computes for itself
        r = c.resolved(H200)
        assert r.mainloop_stages == _twin_stages(c.tile_m, c.cta_tile_n, f["epilogue_tile_n"], f["epilogue_store_stages"])
    # stage 1 varies tile/schedule/cluster/decomposition/reduction at the list's first raster and swizzle
    first = sp.stage_candidates(0, [sp.base], H200)
    assert len(first) == len({(d["schedule"], d["tile_n"], d["cluster_m"], d["cluster_n"],
                                d.get("decomposition", "data_parallel"), d.get("splits", 1),
                                d.get("reduction", "deterministic")) for d in listed})
    assert {c.reduction for c in first if c.decomposition != "data_parallel"} == set(S.HW_REDUCTIONS)
    assert {(c.raster, c.swizzle) for c in first} == {(listed[0]["raster"], listed[0]["swizzle"])}


def test_hw_space_imports_without_simpy_numpy_or_the_dsl():
    """The GPU campaign imports the candidate list on a machine without SimPy: importing
    simulator.kernels.space loads the configs and nothing heavy."""
    code = ("import sys, simulator.kernels.space as s; assert len(s.hw_space()) == 96 + 2 * 5 * 64; "
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('simulator', 'hw_kernels', 'simpy', 'numpy', 'matplotlib', 'torch', 'cutlass'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parent.parent, check=True).stdout.split()
    assert not [m for m in out if m.split(".")[0] in ("simpy", "numpy", "matplotlib", "torch", "cutlass")], out
    assert set(out) <= {"simulator", "simulator._native", "simulator.errors", "simulator.kernels",
                        "simulator.kernels.gemm_config", "simulator.kernels.sm100_config",
                        "simulator.kernels.sm90_config", "simulator.kernels.space"}, out


def test_hw_fields_round_trip_and_match_the_validation_mapping():
    compare = pytest.importorskip("validation.compare")
    fields_ = {"tile_m": 128, "tile_n": 192, "tile_k": 64, "cluster_m": 1, "cluster_n": 2, "schedule": "cooperative",
               "mainloop_stages": None, "raster": "n", "swizzle": 4, "epilogue_tile_n": 64,
               "epilogue_store_stages": 2}
    cfg = S.sm90_config_from_hw(fields_, 3000, 5000, 1000, "bf16")
    assert S.hw_kernel_fields(cfg) == fields_
    meta = {"config": fields_, "problem": {"m": 3000, "n": 5000, "k": 1000}, "dtype": "bf16"}
    assert compare.sim_config_from_measured(meta) == cfg


def test_hw_space_has_the_stream_k_decompositions_on_cooperative_tiles_only():
    listed = S.hw_space()
    assert listed[:96] == [d for d in listed if "decomposition" not in d]        # the earlier campaigns' 96 first
    sk = listed[96:]
    assert {d["schedule"] for d in sk} == {"cooperative"}
    assert {(d["decomposition"], d["splits"]) for d in sk} == set(S.HW_DECOMPOSITIONS[1:])
    # each stream-K candidate with either reduction, the deterministic ones (the streamk campaign's) first
    assert [d["reduction"] for d in sk] == ["deterministic"] * 320 + ["nondeterministic"] * 320
    assert [{**d, "reduction": "deterministic"} for d in sk[320:]] == sk[:320]
    cfg = S.sm90_config_from_hw(sk[0], 512, 512, 32768)
    assert S.hw_kernel_fields(cfg)["decomposition"] == sk[0]["decomposition"]


def test_hw_space_rules():
    with pytest.raises(ConfigError, match="h200"):
        S.make_space("hw", 100, 1024, 1024, 1024, "fp16")
    with pytest.raises(ConfigError, match="fp16 or bf16"):
        S.make_space("hw", 90, 1024, 1024, 1024, "fp8e4m3")
    with pytest.raises(ConfigError, match="tile_m=128 rows"):
        S.hw_kernel_fields(Sm90GemmConfig(schedule="pingpong", tile_n=128))   # default subtile 64 rows
    with pytest.raises(ConfigError, match="SM90"):
        S.hw_kernel_fields(Sm100GemmConfig())


def test_full_spaces_stage_candidates_are_implementable():
    sp = S.make_space("full", 100, 4096, 4096, 4096)
    first = sp.stage_candidates(0, [sp.base], B200)
    assert {c.use_2sm for c in first} == {False, True}
    assert {c.mma_tile_n for c in first} == set(S.SM100_MMA_TILE_N)
    seed = next(c for c in first if c.use_2sm and c.mma_tile_m == 256 and c.mma_tile_n == 256)
    second = sp.stage_candidates(1, [seed], B200)
    assert all(c.cluster_m % 2 == 0 for c in second)           # 2-SM needs CTA pairs along M
    assert {c.tile_scheduler for c in second} == {"clc", "static"}
    assert all((c.mma_tile_m, c.mma_tile_n) == (256, 256) for c in second)
    for c in first + second:
        c.can_implement(B200)
    sp90 = S.make_space("full", 90, 4096, 4096, 4096)
    first90 = sp90.stage_candidates(0, [sp90.base], H200)
    assert {c.schedule for c in first90} == {"cooperative", "pingpong"}
    # a 256x256 cooperative tile needs 256 accumulator registers per thread: can_implement drops it
    assert not any(c.tile_m == 256 and c.cta_tile_n == 256 for c in first90)
    assert sp.combinations() > S.EXHAUSTIVE_LIMIT
    with pytest.raises(ConfigError, match="too many"):
        sp.all_candidates(B200)


def test_dtype_rules():
    sp = S.make_space("full", 100, 1024, 1024, 1024, "fp8e4m3")
    assert (sp.base.dtype_ab, sp.base.dtype_d) == ("fp8e4m3", "bf16")
    with pytest.raises(ConfigError, match="dtype='int3': unknown data type"):
        S.make_space("full", 100, 1024, 1024, 1024, "int3")


@pytest.mark.parametrize("m", [16, 100, 128])
def test_hw_space_adds_the_64_row_tiles_for_small_m(m):
    """M <= 128: the 64-row ping-pong and one-warpgroup cooperative candidates join the campaign list, each the
    kernel the twin runs (its own stage count, a 64-row epilogue subtile; the cooperative ones with every
    stream-K decomposition and reduction); larger M: the campaign list only."""
    small = S.hw_small_m_space()
    assert {(d["tile_m"], d["schedule"]) for d in small} == {(64, "pingpong"), (64, "cooperative")}
    assert {d["tile_n"] for d in small} == set(S.HW_SMALL_M_TILE_N)
    assert {d.get("decomposition", "data_parallel") for d in small if d["schedule"] == "pingpong"} == {"data_parallel"}
    coop = [d for d in small if d["schedule"] == "cooperative"]
    assert len(coop) == len(S.HW_SMALL_M_TILE_N) * len(S.HW_CLUSTERS) * len(S.HW_RASTERS) * len(S.HW_SWIZZLES) * (
        1 + (len(S.HW_DECOMPOSITIONS) - 1) * len(S.HW_REDUCTIONS))
    cands = S.make_space("hw", 90, m, 28672, 4096, "fp16").all_candidates(H200)
    assert len(cands) == len(S.hw_space()) + len(small)
    rows64 = [c for c in cands if c.tile_m == 64]
    assert len(rows64) == len(small)
    for c in rows64:
        f = S.hw_kernel_fields(c)
        assert c.epi_tile == (64, f["epilogue_tile_n"])
        assert c.resolved(H200).mainloop_stages == _twin_stages(64, c.cta_tile_n, 32, 4)
    assert len(S.make_space("hw", 90, 129, 28672, 4096, "fp16").all_candidates(H200)) == len(S.hw_space())


def test_ragged_n_widths_only_where_they_pad_n_no_more_than_the_best_wide_tile():
    from simulator.kernels.space import HW_RAGGED_TILE_N, hw_space, hw_space_sm90, ragged_tile_n
    assert ragged_tile_n(800) == (96, 160, 224)       # 128 pads 96 columns; 96 pads 64, 160 none, 224 96
    assert ragged_tile_n(1440) == (96, 160) and ragged_tile_n(672) == (96, 224)
    assert ragged_tile_n(4096) == ragged_tile_n(1536) == ragged_tile_n(1000) == ()
    with pytest.raises(ConfigError, match="n=0"):
        ragged_tile_n(0)
    base = hw_space()
    assert len(base) == 736                           # the campaign's lists are unchanged
    more = hw_space(ragged_n=(160,))
    assert more[:736] == base and {c["tile_n"] for c in more[736:]} == {160}
    # 4 clusters x 2 rasters x 2 swizzles x (data-parallel + 5 stream-K decompositions x 2 reductions)
    assert len(more) - 736 == 16 * 11 and all(c["schedule"] == "cooperative" for c in more[736:])
    with pytest.raises(ConfigError, match=r"ragged_n=\[80\]"):
        hw_space(ragged_n=(80,))
    sp = hw_space_sm90(12000, 800, 3000)
    tiles = {u["tile_n"] for u in sp.stages[0][0].values(sp.base)}
    assert set(HW_RAGGED_TILE_N) <= tiles and "ragged-N tiles (96, 160, 224)" in sp.note
    assert {u["tile_n"] for u in hw_space_sm90(4096, 4096, 4096).stages[0][0].values(None)} == {64, 128, 192, 256}
