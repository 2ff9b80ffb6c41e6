"""Tile schedulers: coverage (every output tile once), pinned raster/swizzle orders, CLC exhaustion."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.kernels.scheduler import (
    INVALID,
    ClcHardware,
    ClcTileScheduler,
    StaticPersistentScheduler,
    TileRaster,
    WorkTileInfo,
    cta_tile_coord,
    mma_tile_in_problem,
    mma_tiles_of,
    raster_for,
    sm90_cluster_capacity,
    sm90_max_cta_occupancy,
    sm90_static_grid,
    static_grid_clusters,
    tile_sequence,
)
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec

B200 = ArchSpec.b200()
H200 = ArchSpec.h200()


def _coverage(cfg, arch):
    """Counter of in-problem MMA tiles computed, and the number of out-of-problem ones."""
    seen: Counter = Counter()
    outside = 0
    for seq in tile_sequence(cfg, arch):
        for w in seq:
            assert w.is_valid
            for t in mma_tiles_of(w, cfg):
                if mma_tile_in_problem(t[0], t[1], cfg):
                    seen[t] += 1
                else:
                    outside += 1
    return seen, outside


def _assert_exactly_once(cfg, arch):
    seen, outside = _coverage(cfg, arch)
    expected = {(m, n, b) for m in range(cfg.tiles_m) for n in range(cfg.tiles_n) for b in range(cfg.l)}
    assert set(seen) == expected
    assert all(v == 1 for v in seen.values()), [t for t, v in seen.items() if v != 1][:5]
    return outside


SM100_SHAPES = [(1000, 700, 3), (4096, 4096, 1), (130, 2000, 2), (8192, 384, 1), (256, 256, 1)]
SM100_KERNELS = [
    dict(use_2sm=True, mma_tile_m=256, mma_tile_n=256, cluster_m=2, cluster_n=1),
    dict(use_2sm=True, mma_tile_m=256, mma_tile_n=128, cluster_m=4, cluster_n=2),
    dict(use_2sm=False, mma_tile_m=128, mma_tile_n=128, cluster_m=1, cluster_n=1),
    dict(use_2sm=False, mma_tile_m=128, mma_tile_n=64, cluster_m=2, cluster_n=4),
]


@pytest.mark.parametrize("shape", SM100_SHAPES)
@pytest.mark.parametrize("kern", SM100_KERNELS)
@pytest.mark.parametrize("sched", ["clc", "static"])
@pytest.mark.parametrize("raster,swizzle", [("heuristic", 1), ("m", 2), ("n", 4), ("m", 8)])
def test_sm100_every_tile_exactly_once(shape, kern, sched, raster, swizzle):
    m, n, batches = shape
    cfg = Sm100GemmConfig(m=m, n=n, k=64, l=batches, tile_scheduler=sched, raster=raster, swizzle=swizzle, **kern)
    _assert_exactly_once(cfg, B200)


@pytest.mark.parametrize("shape", [(1000, 700, 2), (8192, 8192, 1), (640, 2048, 1), (128, 128, 1)])
@pytest.mark.parametrize("cluster", [(1, 1), (2, 1), (1, 2), (2, 2), (4, 1)])
@pytest.mark.parametrize("raster,swizzle", [("heuristic", 1), ("m", 2), ("n", 4), ("heuristic", 8)])
def test_sm90_every_tile_exactly_once(shape, cluster, raster, swizzle):
    m, n, batches = shape
    cfg = Sm90GemmConfig(m=m, n=n, k=64, l=batches, cluster_m=cluster[0], cluster_n=cluster[1], raster=raster,
                         swizzle=swizzle)
    _assert_exactly_once(cfg, H200)


@settings(max_examples=60, deadline=None)
@given(tm=st.integers(1, 13), tn=st.integers(1, 13), batches=st.integers(1, 2),
       cm=st.sampled_from([1, 2, 4]), cn=st.sampled_from([1, 2, 4]), two_sm=st.booleans(),
       sched=st.sampled_from(["clc", "static"]), raster=st.sampled_from(["m", "n", "heuristic"]),
       swizzle=st.sampled_from([1, 2, 4, 8]))
def test_sm100_exactly_once_property(tm, tn, batches, cm, cn, two_sm, sched, raster, swizzle):
    if two_sm and cm % 2:
        cm *= 2
    tile_m = 256 if two_sm else 128
    cfg = Sm100GemmConfig(m=tm * tile_m - 3, n=tn * 64, k=64, l=batches, use_2sm=two_sm, mma_tile_m=tile_m,
                          mma_tile_n=64, cluster_m=cm, cluster_n=cn, tile_scheduler=sched, raster=raster,
                          swizzle=swizzle)
    _assert_exactly_once(cfg, B200)


def test_padding_creates_out_of_problem_work_not_invalid_tiles():
    # tiles_m = 5, tiles_n = 8, swizzle 4: log_swizzle = 2 (min dim 5 >= 3) -> M padded to 8 CTA rows;
    # CUTLASS hands those 3 x 8 padded tiles out as valid work (TMA zero-fill / clipped stores).
    cfg = Sm90GemmConfig(m=5 * 128, n=8 * 256, k=64, cluster_m=1, cluster_n=1, swizzle=4, raster="m")
    assert _assert_exactly_once(cfg, H200) == 3 * 8
    # cluster rounding: tiles_m = 3 with cluster_m = 2 -> one padded CTA row of 8
    cfg = Sm100GemmConfig(m=3 * 128, n=8 * 128, k=64, use_2sm=False, mma_tile_m=128, mma_tile_n=128,
                          cluster_m=2, cluster_n=1)
    assert _assert_exactly_once(cfg, B200) == 8


# ------------------------------------------------------------------------------ pinned orders
def _order(cfg, kind):
    r = TileRaster(cfg, kind)
    return [(w.m_idx, w.n_idx) for w in (r.cluster_tile(i) for i in range(r.num_clusters))]


ALONG_M_4x3 = [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1), (2, 1), (3, 1), (0, 2), (1, 2), (2, 2), (3, 2)]
ALONG_N_4x3 = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2), (3, 0), (3, 1), (3, 2)]


@pytest.mark.parametrize("kind", ["clc", "static"])
def test_raster_m_vs_n_tiny_4x3(kind):
    # 4 x 3 MMA tiles, 1-SM 128x128, cluster 1x1
    base = dict(m=512, n=384, k=64, use_2sm=False, mma_tile_m=128, mma_tile_n=128, cluster_m=1, cluster_n=1,
                tile_scheduler=kind)
    assert _order(Sm100GemmConfig(raster="m", **base), kind) == ALONG_M_4x3
    assert _order(Sm100GemmConfig(raster="n", **base), kind) == ALONG_N_4x3
    # heuristic: tiles_n (3) > tiles_m (4)? no -> AlongN
    assert raster_for(Sm100GemmConfig(**base)) == "n"
    assert _order(Sm90GemmConfig(m=512, n=384, tile_n=128, cluster_m=1, raster="m"), "static") == ALONG_M_4x3
    assert _order(Sm90GemmConfig(m=512, n=384, tile_n=128, cluster_m=1, raster="n"), "static") == ALONG_N_4x3


# swizzle 2 over 4x4 cluster tiles, AlongM: 2x2 blocks walk down M, then the next pair of N columns
# (CUTLASS sm100 swizzle_and_rasterize, and sm90 get_work_idx_m_and_n with log_swizzle 1: same order;
# the code has no serpentine although the sm100 comment draws one)
SWIZZLE2_4x4 = [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1),
                (0, 2), (0, 3), (1, 2), (1, 3), (2, 2), (2, 3), (3, 2), (3, 3)]


@pytest.mark.parametrize("kind", ["clc", "static"])
def test_swizzle2_tiny(kind):
    cfg = Sm100GemmConfig(m=512, n=512, k=64, use_2sm=False, mma_tile_m=128, mma_tile_n=128, cluster_m=1,
                          cluster_n=1, tile_scheduler=kind, raster="m", swizzle=2)
    assert _order(cfg, kind) == SWIZZLE2_4x4
    cfg90 = Sm90GemmConfig(m=512, n=512, tile_n=128, cluster_m=1, raster="m", swizzle=2)
    assert _order(cfg90, "static") == SWIZZLE2_4x4


def test_clc_swizzle_leaves_residual_clusters_in_place():
    # 5 x 4 cluster tiles, swizzle 2, AlongM: the 5th M row is residual (5 // 2 * 2 = 4)
    cfg = Sm100GemmConfig(m=640, n=512, k=64, use_2sm=False, mma_tile_m=128, mma_tile_n=128, cluster_m=1,
                          cluster_n=1, raster="m", swizzle=2)
    order = _order(cfg, "clc")
    assert order[4] == (4, 0) and order[9] == (4, 1)  # launch ids 4 and 9 are (x=4, y=0/1): residual
    assert order[:4] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_heuristic_raster():
    # tiles_n > tiles_m -> AlongM
    assert raster_for(Sm100GemmConfig(m=256, n=8192)) == "m"
    assert raster_for(Sm100GemmConfig(m=8192, n=256)) == "n"
    assert raster_for(Sm100GemmConfig(m=8192, n=8192)) == "n"  # equal -> AlongN
    assert raster_for(Sm90GemmConfig(m=128, n=8192)) == "m"


def test_clc_raster_falls_back_to_m_when_grid_y_would_overflow():
    # AlongN swaps grid y to problem_tiles_m x cluster_n clusters; > 65535 -> AlongM
    cfg = Sm100GemmConfig(m=65536 * 128, n=128, k=64, use_2sm=False, mma_tile_m=128, mma_tile_n=128,
                          cluster_m=1, cluster_n=1)
    assert raster_for(cfg) == "m"


# -------------------------------------------------------------------------------- coordinates
def test_cta_tile_coord_2sm_pairs_share_a_tile():
    cfg = Sm100GemmConfig(cluster_m=4, cluster_n=2)  # 2-SM: cluster covers 2 x 2 MMA tiles
    w = WorkTileInfo(1, 3, 0, True)
    coords = [cta_tile_coord(w, r, cfg) for r in range(8)]
    # rank = x + 4 y; CTA M index 4 + x -> MMA tile (4 + x) // 2; N index 6 + y
    assert coords == [(2, 6, 0), (2, 6, 0), (3, 6, 0), (3, 6, 0), (2, 7, 0), (2, 7, 0), (3, 7, 0), (3, 7, 0)]
    assert mma_tiles_of(w, cfg) == [(2, 6, 0), (3, 6, 0), (2, 7, 0), (3, 7, 0)]
    with pytest.raises(ValueError):
        cta_tile_coord(INVALID, 0, cfg)
    with pytest.raises(ValueError):
        cta_tile_coord(w, 8, cfg)


def test_cta_tile_coord_1sm():
    cfg = Sm100GemmConfig(use_2sm=False, mma_tile_m=128, cluster_m=2, cluster_n=2)
    w = WorkTileInfo(3, 1, 2, True)
    assert [cta_tile_coord(w, r, cfg) for r in range(4)] == [(6, 2, 2), (7, 2, 2), (6, 3, 2), (7, 3, 2)]


# ---------------------------------------------------------------------------------------- CLC
def test_clc_returns_none_exactly_when_exhausted():
    hw = ClcHardware(10, 4)
    assert list(hw.initial_clusters) == [0, 1, 2, 3]
    got = [hw.try_cancel() for _ in range(8)]
    assert got == [4, 5, 6, 7, 8, 9, None, None]
    assert hw.queries == 8 and hw.cancelled == 6 and hw.remaining == 0


def test_clc_grid_smaller_than_machine():
    hw = ClcHardware(3, 74)
    assert hw.launched == 3 and hw.try_cancel() is None


def test_clc_scheduler_and_determinism():
    cfg = Sm100GemmConfig(m=4096, n=4096, swizzle=2)
    s = ClcTileScheduler(cfg, B200)
    assert s.resident_clusters == 74  # 148 SMs / 2
    assert s.initial_work(74) == INVALID
    total = 16 * 16
    n_fetch = 0
    while s.fetch_next().is_valid:
        n_fetch += 1
    assert n_fetch == total - 74
    assert tile_sequence(cfg, B200) == tile_sequence(cfg, B200)
    assert WorkTileInfo.invalid() is INVALID
    assert TileRaster.from_config(cfg).work(None) == INVALID
    assert TileRaster.from_config(cfg).work(5).linear == 5


def test_static_scheduler_strides_by_grid():
    cfg = Sm90GemmConfig(m=8192, n=8192, cluster_m=2)
    s = StaticPersistentScheduler(cfg, H200)
    assert s.resident_clusters == 66
    w0 = s.initial_work(0)
    assert w0.linear == 0
    assert s.next_work(0).linear == 66 and s.next_work(0).linear == 132
    assert list(s.linear_ids(65))[:3] == [65, 131, 197]
    assert s.initial_work(66) == INVALID


def test_static_grid_sizes():
    # H200, cluster 4: CUTLASS C++'s GPC heuristic (18 SMs/GPC): 7 x 16 + (132 % 18 = 6 -> 4) = 116 CTAs ->
    # 29 clusters; the twin's grid is what fits over the measured placement domains: 2+4x5+4+4 = 30.
    assert sm90_max_cta_occupancy(4, 132) == 116
    assert sm90_static_grid(Sm90GemmConfig(cluster_m=4), H200, 10_000, "cutlass") == (29, 29)
    assert static_grid_clusters(Sm90GemmConfig(cluster_m=4), H200, 10_000) == 30
    # Cluster sizes 3, 6, 9: the heuristic asks for more clusters than the hardware co-schedules.
    assert sm90_static_grid(Sm90GemmConfig(cluster_m=3), H200, 10_000, "cutlass") == (44, 39)
    assert sm90_static_grid(Sm90GemmConfig(cluster_m=3, cluster_n=2), H200, 10_000, "cutlass") == (22, 17)
    assert [sm90_cluster_capacity(s, H200) for s in (1, 2, 3, 4, 6, 8, 9, 12, 16)] == [132, 66, 39, 30, 17, 15, 9, 7, 7]
    assert static_grid_clusters(Sm90GemmConfig(cluster_m=2), H200, 10_000) == 66
    assert static_grid_clusters(Sm90GemmConfig(cluster_m=1), H200, 10_000) == 132
    assert static_grid_clusters(Sm90GemmConfig(cluster_m=1), H200, 7) == 7
    # B200: clusters placed per GPC (74 TPCs spread 10/9 over 8 GPCs: 20 or 18 SMs), like
    # cudaOccupancyMaxActiveClusters: 8-CTA clusters fit 2 per GPC -> 16, 4-CTA: 5+5+6x4 = 34, 2-CTA: 74.
    assert static_grid_clusters(Sm100GemmConfig(cluster_m=4, cluster_n=2), B200, 10_000) == 16
    assert static_grid_clusters(Sm100GemmConfig(cluster_m=2, cluster_n=2), B200, 10_000) == 34
    assert static_grid_clusters(Sm100GemmConfig(cluster_m=2, cluster_n=1), B200, 10_000) == 74


def test_tile_sequence_balanced_round_robin():
    cfg = Sm100GemmConfig(m=8192, n=8192)  # 32 x 32 = 1024 cluster tiles over 74 clusters
    seqs = tile_sequence(cfg, B200)
    lens = sorted(len(s) for s in seqs)
    assert sum(lens) == 1024 and lens[-1] - lens[0] <= 1


def test_all_linear_ids_distinct_tiles():
    for kind, cfg in itertools.product(["clc", "static"], [Sm100GemmConfig(m=3000, n=5000, swizzle=8, l=2)]):
        r = TileRaster(cfg, kind)
        tiles = [r.cluster_tile(i) for i in range(r.num_clusters)]
        assert len({(t.m_idx, t.n_idx, t.l_idx) for t in tiles}) == len(tiles)
        assert r.cluster_tile(r.num_clusters) == INVALID and r.cluster_tile(-1) == INVALID
