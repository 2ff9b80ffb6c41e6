"""The SM90 hardware kernel compiles for sm_90a on a CPU (marker ``dsl``: skipped without
nvidia-cutlass-dsl and torch) and its PTX holds the Hopper instructions the model assumes."""

from __future__ import annotations

import re
from collections import Counter

import pytest

pytestmark = pytest.mark.dsl

cutlass = pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
pytest.importorskip("torch", reason="torch is not installed")

from hw_kernels import records as R  # noqa: E402
from hw_kernels.host import KernelConfig, compile_sm90  # noqa: E402
from hw_kernels.sm90_gemm import Sm90TmaWsGemm, mainloop_arrival_counts  # noqa: E402


@pytest.fixture(autouse=True)
def _artifacts_in_tmp(monkeypatch, tmp_path):
    # compile_sm90 names sm_90a itself when there is no GPU; kept PTX/cubin files land in tmp_path.
    monkeypatch.chdir(tmp_path)


def _ptx(cfg: KernelConfig, dtype: str = "fp16") -> str:
    c = compile_sm90(cfg, dtype, device="cpu", keep=True)
    assert c.ptx, "the compiler kept no PTX"
    return c.ptx


@pytest.mark.parametrize("cfg,dtype", [
    (KernelConfig(), "fp16"),
    (KernelConfig(cluster_m=2, swizzle=4), "bf16"),
    (KernelConfig(cluster_m=1, cluster_n=2, tile_n=128, raster="m"), "fp16"),
    (KernelConfig(schedule="pingpong", tile_n=128, swizzle=4), "bf16"),
])
def test_compiles_with_hopper_instructions(cfg, dtype):
    ptx = _ptx(cfg, dtype)
    for needle in ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait", "setmaxnreg",
                   "stmatrix", "cp.async.bulk.commit_group"):
        assert needle in ptx, needle
    assert ".target sm_90a" in ptx
    # instrumentation off: no clock reads, no record stores
    assert "%clock" not in ptx and "globaltimer" not in ptx


def test_multicast_only_with_a_cluster():
    assert "multicast::cluster" in _ptx(KernelConfig(cluster_m=2))
    assert "multicast::cluster" not in _ptx(KernelConfig(cluster_m=1))


@pytest.mark.parametrize("level", [R.LEVEL_TILE, R.LEVEL_KBLOCK, R.LEVEL_EPILOGUE])
def test_instrumented_levels_read_both_clocks(level):
    ptx = _ptx(KernelConfig(instrument=level))
    assert "%clock" in ptx and "%globaltimer" in ptx
    assert "st.global.v4" in ptx  # records are two 16-byte stores


def test_arrival_counts_match_the_model():
    # cluster 2x1, two consumer warpgroups: 1 producer arrival; 8 warps x (2 + 1 - 1) CTAs; 256 threads
    assert mainloop_arrival_counts(2, 1, 2) == (1, 16, 256)
    assert mainloop_arrival_counts(1, 1, 2) == (1, 8, 256)
    # ping-pong: one warpgroup reads a stage; one warpgroup syncs per epilogue subtile
    assert mainloop_arrival_counts(2, 1, 1) == (1, 8, 128)


def test_pingpong_has_the_math_order_barrier():
    ptx = _ptx(KernelConfig(schedule="pingpong", tile_n=128))
    # two warpgroup-private epilogue barriers (ids 1 and 2 are chosen at run time) and mbarrier
    # arrivals for the math order, besides the mainloop's
    assert ptx.count("wgmma.mma_async") == 16  # 2 M-repeats x 4 k16 steps, K-block 0 and the loop
    assert "mbarrier.arrive" in ptx


def test_config_rules_name_the_value():
    with pytest.raises(ValueError, match="schedule='persistent'"):
        Sm90TmaWsGemm(schedule="persistent")
    with pytest.raises(ValueError, match="tile_n=256: must be one of"):
        Sm90TmaWsGemm(schedule="pingpong", tile_n=256)
    with pytest.raises(ValueError, match="tile_n=80"):
        Sm90TmaWsGemm(tile_n=80)
    assert Sm90TmaWsGemm.can_implement(1000, 1032, 520) == []
    assert any("k=100" in p for p in Sm90TmaWsGemm.can_implement(128, 128, 100))


def test_span_level_reads_the_clocks_only_at_role_start_and_end():
    """LEVEL_SPAN: each role's header and footer (clock64 + globaltimer at start and end), nothing
    inside the loops: as many clock reads as LEVEL_OFF has none, far fewer than LEVEL_TILE."""
    span = _ptx(KernelConfig(instrument=R.LEVEL_SPAN))
    tile = _ptx(KernelConfig(instrument=R.LEVEL_TILE))
    assert "%globaltimer" in span and "%clock64" in span
    assert "st.global.v4" not in span  # no data record (those are two 16-byte stores)
    assert not re.search(r"%clock(?!64)", span)  # no 32-bit (in-loop) clock reads
    assert re.search(r"%clock(?!64)", tile)
    assert span.count("%globaltimer") < tile.count("%globaltimer")
    assert span.count("%clock") < tile.count("%clock")


# ---------------------------------------------------------------------------- stream-K / split-K
@pytest.mark.parametrize("cfg", [
    KernelConfig(tile_n=128, cluster_m=1, decomposition="stream_k"),
    KernelConfig(tile_n=256, cluster_m=2, decomposition="heuristic"),
    KernelConfig(tile_n=64, cluster_m=1, cluster_n=2, decomposition="split_k", splits=4, instrument=R.LEVEL_TILE),
])
def test_stream_k_kernels_have_the_fixup(cfg):
    ptx = _ptx(cfg)
    # the flag: thread 0 spins on acquire loads, the arriving group's thread 0 fences and adds its K-blocks
    assert "ld.acquire.gpu.global.b32" in ptx
    assert "fence.acq_rel.gpu" in ptx
    assert re.search(r"red\.relaxed\.gpu(\.global)?\.add\.s32", ptx)
    # the workspace is read around L1 (another SM wrote it), the deterministic reduction needs no atomics
    assert "ld.global.cg.b32" in ptx
    assert "atom.global.add.f32" not in ptx
    # the fixup's named barriers (ids 3, 4: one per consumer warpgroup), the mainloop as before
    assert "bar.sync" in ptx or "barrier.sync" in ptx
    for needle in ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait"):
        assert needle in ptx


@pytest.mark.parametrize("reduction", ["deterministic", "nondeterministic"])
def test_fixup_vec_moves_16_bytes_per_thread(reduction):
    one = Counter(re.findall(r"\b((?:ld|st)\.global[a-z0-9.]*\.[bf]32)", _ptx(KernelConfig(
        tile_n=128, cluster_m=1, decomposition="stream_k", reduction=reduction))))
    vec = Counter(re.findall(r"\b((?:ld|st)\.global[a-z0-9.]*\.[bf]32)", _ptx(KernelConfig(
        tile_n=128, cluster_m=1, decomposition="stream_k", reduction=reduction, fixup_vec=4))))
    # 64 accumulators per thread (64 x 128 per warpgroup): the final read, and in the deterministic kernel the
    # middle splits' read-add-write, as 16 chunks of 4 instead of 64 words; the first split's store likewise.
    reads = 2 if reduction == "deterministic" else 1
    assert vec["ld.global.cg.v4.b32"] == 16 * reads and "ld.global.cg.v4.b32" not in one
    assert one["ld.global.cg.b32"] - vec.get("ld.global.cg.b32", 0) == 64 * reads
    assert vec["st.global.v4.b32"] == 16 * reads
    if reduction == "nondeterministic":
        assert len(re.findall(r"(atom|red)\.global\.add\.f32", _ptx(KernelConfig(
            tile_n=128, cluster_m=1, decomposition="stream_k", reduction=reduction, fixup_vec=4)))) == 64


def test_nondeterministic_reduction_adds_atomically():
    ptx = _ptx(KernelConfig(tile_n=128, cluster_m=1, decomposition="stream_k", reduction="nondeterministic"))
    assert re.search(r"(atom|red)\.global\.add\.f32", ptx)


def test_data_parallel_kernel_has_no_fixup():
    ptx = _ptx(KernelConfig(tile_n=128, cluster_m=1))
    assert "fence.acq_rel.gpu" not in ptx and "ld.acquire" not in ptx


def test_stream_k_config_rules():
    with pytest.raises(ValueError, match="ping-pong does not support stream-K"):
        Sm90TmaWsGemm(schedule="pingpong", tile_n=128, decomposition="stream_k")
    with pytest.raises(ValueError, match="splits=2 with decomposition='stream_k'"):
        Sm90TmaWsGemm(decomposition="stream_k", splits=2)
    with pytest.raises(ValueError, match="instrument=2 with decomposition"):
        Sm90TmaWsGemm(decomposition="split_k", splits=2, instrument=R.LEVEL_KBLOCK)


# ---------------------------------------------------------------------------- 64-row ping-pong (M <= 128)
def _mbarrier_init_counts(ptx: str) -> Counter:
    """How many mbarriers the PTX initialises with each arrival count (the DSL moves the counts into
    registers first: ``mov.b32 %rN, count;`` then ``mbarrier.init.shared.b64 [addr], %rN;``)."""
    regs = dict(re.findall(r"mov\.b32\s+(%r\d+),\s*(\d+);", ptx))
    args = re.findall(r"mbarrier\.init\.shared(?:::cta)?\.b64\s+\[[^\]]+\],\s*([^;\s]+);", ptx)
    return Counter(int(regs.get(a, a)) for a in args)


@pytest.mark.parametrize("tile_n,cluster,dtype", [(64, (1, 1), "fp16"), (128, (2, 1), "bf16"), (192, (1, 2), "fp16"),
                                                  (256, (1, 1), "fp16")])
def test_64_row_pingpong_issues_one_m64_wgmma_per_k16_step(tile_n, cluster, dtype):
    from hw_kernels.rules import mainloop_stages_that_fit
    from hw_kernels.static_counts import sm90_twin_counts
    from simulator.kernels.space import sm90_config_from_hw
    cm, cn = cluster
    cfg = KernelConfig(tile_m=64, tile_n=tile_n, schedule="pingpong", cluster_m=cm, cluster_n=cn)
    c = compile_sm90(cfg, dtype, device="cpu", keep=True)
    ptx = c.ptx
    assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)", ptx)) == {f"m64n{tile_n}k16"}
    assert ptx.count("wgmma.mma_async") == 8  # 1 M-repeat x 4 k16 steps, K-block 0 and the loop (128 rows: 16)
    # the stage count the kernel derives is the SM90 model's for the same config
    model = sm90_config_from_hw(cfg.asdict(), 64, 4096, 4096, dtype).resolved()
    assert c.stages == model.mainloop_stages == mainloop_stages_that_fit(64, tile_n, 64, 32, 4, 16, 16,
                                                                                    model.smem_capacity())
    assert model.epi_tile == (64, 32)
    # mbarriers: full (1) and empty (4 warps x multicast peers) per stage, 4 math-order (128 threads)
    want = sm90_twin_counts(cm, cn, "pingpong")
    assert want["empty"] == 4 * (cm + cn - 1)
    assert _mbarrier_init_counts(ptx) == Counter({want["full"]: c.stages}) + Counter({want["empty"]: c.stages}) \
        + Counter({want["order"]: 4})
    # the epilogue's named barrier: the 128 threads of the tile's warpgroup
    assert re.search(r"bar\.sync\s+%r\d+,\s*128;", ptx)
    assert ("multicast::cluster" in ptx) == (cm * cn > 1)
    for needle in ("cp.async.bulk.tensor", "stmatrix", "setmaxnreg", "cp.async.bulk.commit_group"):
        assert needle in ptx, needle


def test_64_row_pingpong_writes_records_when_instrumented():
    ptx = _ptx(KernelConfig(tile_m=64, tile_n=128, schedule="pingpong", cluster_m=1, instrument=R.LEVEL_EPILOGUE))
    assert "%clock" in ptx and "%globaltimer" in ptx and "st.global.v4" in ptx
    assert ptx.count("wgmma.mma_async") == 8


def test_64_row_tile_rules():
    Sm90TmaWsGemm(tile_m=64, tile_n=256, schedule="pingpong")
    assert Sm90TmaWsGemm(tile_m=64, tile_n=128).consumer_wgs == 1          # the one-warpgroup cooperative kernel
    with pytest.raises(ValueError, match="tile_m=96: must be one of \\(64, 128\\) for cooperative"):
        Sm90TmaWsGemm(tile_m=96, tile_n=128)
    with pytest.raises(ValueError, match="tile_n=256: must be one of \\(64, 128\\) for pingpong with tile_m=128"):
        Sm90TmaWsGemm(tile_m=128, tile_n=256, schedule="pingpong")


@pytest.mark.parametrize("tile_n,cluster,decomposition", [(96, (1, 2), "data_parallel"), (160, (2, 1), "heuristic"),
                                                          (224, (2, 2), "stream_k")])
def test_ragged_n_widths_compile_to_one_wgmma_of_that_n_with_the_models_stages(tile_n, cluster, decomposition):
    from hw_kernels.rules import mainloop_stages_that_fit
    from simulator.kernels.space import sm90_config_from_hw
    cfg = KernelConfig(tile_n=tile_n, cluster_m=cluster[0], cluster_n=cluster[1], decomposition=decomposition)
    c = compile_sm90(cfg, "fp16", device="cpu", keep=True)
    assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)", c.ptx)) == {f"m64n{tile_n}k16"}
    model = sm90_config_from_hw(cfg.asdict(), 12000, 800, 3000, "fp16").resolved()
    assert c.stages == model.mainloop_stages == mainloop_stages_that_fit(128, tile_n, 64, 32, 4, 16, 16,
                                                                         model.smem_capacity())
    assert ("multicast::cluster" in c.ptx) == (cluster != (1, 1))


@pytest.mark.parametrize("tile_n,cluster,decomposition", [(128, (1, 1), "data_parallel"), (256, (1, 2), "split_k"),
                                                          (64, (2, 1), "stream_k")])
def test_64_row_cooperative_has_one_math_warpgroup(tile_n, cluster, decomposition):
    """One consumer warpgroup of 128 threads: one m64 wgmma per k16 step, empty arrivals of 4 warps per
    multicast peer, the epilogue's (and the fixup's) named barriers of 128 threads, the model's stages."""
    from hw_kernels.rules import mainloop_stages_that_fit
    from hw_kernels.static_counts import sm90_twin_counts
    from simulator.kernels.space import sm90_config_from_hw
    cm, cn = cluster
    cfg = KernelConfig(tile_m=64, tile_n=tile_n, cluster_m=cm, cluster_n=cn, decomposition=decomposition,
                       splits=2 if decomposition == "split_k" else 1)
    c = compile_sm90(cfg, "fp16", device="cpu", keep=True)
    ptx = c.ptx
    assert set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)", ptx)) == {f"m64n{tile_n}k16"}
    model = sm90_config_from_hw(cfg.asdict(), 32, 8192, 8192, "fp16").resolved()
    assert model.num_consumer_warpgroups == 1
    assert c.stages == model.mainloop_stages == mainloop_stages_that_fit(64, tile_n, 64, 32, 4, 16, 16,
                                                                         model.smem_capacity())
    want = sm90_twin_counts(cm, cn, "cooperative", 1)
    assert want["empty"] == 4 * (cm + cn - 1) and want["epilogue"] == 128
    assert _mbarrier_init_counts(ptx) == Counter({want["full"]: c.stages}) + Counter({want["empty"]: c.stages})
    # the epilogue's named barrier (bar 1): the warpgroup's 128 threads (256 in the two-warpgroup kernel)
    assert re.search(r"bar\.sync\s+1,\s*128;", ptx) and not re.search(r"bar\.sync\s+1,\s*256;", ptx)
    assert ("fence.acq_rel.gpu" in ptx) == (decomposition != "data_parallel")


def test_separate_reduction_stores_and_sums_without_atomics():
    ptx = _ptx(KernelConfig(tile_n=128, cluster_m=1, decomposition="stream_k", reduction="separate"))
    counts = Counter(re.findall(r"\b((?:ld|st)\.global[a-z0-9.]*\.[bf]32)", ptx))
    # a non-final split stores its 64 accumulators per thread once (no read-add-write); the final split
    # reads a slot of 64 per other split inside a run-time loop (its body once in the PTX)
    assert counts["st.global.b32"] >= 64 and counts["ld.global.cg.b32"] == 64
    assert not re.search(r"(atom|red)\.global\.add\.f32", ptx)
    # the final split waits until the flag holds its first K tile; each other split fences and adds its K tiles
    assert "ld.acquire.gpu.global.b32" in ptx and "fence.acq_rel.gpu" in ptx
    assert re.search(r"red\.relaxed\.gpu(\.global)?\.add\.s32", ptx)
