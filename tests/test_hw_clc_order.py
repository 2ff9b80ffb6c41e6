"""The SM100 twin's CLC tile order (hw_kernels/schedule.py ClcSchedule: the kernel's integer
arithmetic, step by step) equals the SM100 model's (simulator.kernels.scheduler.TileRaster, kind
"clc": the seed's raster heuristic, swizzle and transposed grid). Pure Python, no DSL."""

from __future__ import annotations

import pytest

from hw_kernels.schedule import GRID_Y_LIMIT, clc_schedule
from simulator.errors import ConfigError
from simulator.kernels import scheduler as sched
from simulator.kernels.sm100_config import Sm100GemmConfig

SHAPES = [(8192, 8192), (8192, 2048), (1024, 16384), (3000, 5000), (300, 260), (128, 128), (20000, 640)]
TILES = [((256, 256), True), ((128, 128), False), ((256, 128), True), ((128, 64), False)]
CLUSTERS = [(1, 1), (2, 1), (1, 2), (2, 2), (4, 1)]


def _pairs():
    for shape in SHAPES:
        for (tm, tn), two in TILES:
            for cl in CLUSTERS:
                if two and cl[0] % 2:
                    continue
                for raster in ("heuristic", "m", "n"):
                    for swizzle in (1, 2, 4, 8):
                        yield shape, (tm, tn), two, cl, raster, swizzle


def _model(shape, tile, two, cl, raster, swizzle):
    cfg = Sm100GemmConfig(m=shape[0], n=shape[1], k=512, mma_tile_m=tile[0], mma_tile_n=tile[1], use_2sm=two,
                          cluster_m=cl[0], cluster_n=cl[1], raster=raster, swizzle=swizzle)
    return cfg, sched.TileRaster(cfg, kind="clc")


@pytest.mark.parametrize("shape,tile,two,cl,raster,swizzle", list(_pairs()))
def test_clc_order_equals_the_model(shape, tile, two, cl, raster, swizzle):
    cfg, tr = _model(shape, tile, two, cl, raster, swizzle)
    mine = clc_schedule(shape[0], shape[1], tile[0], tile[1], 2 if two else 1, cl[0], cl[1], raster, swizzle)
    # the same raster, the same (transposed) grid, the same number of launch slots
    assert mine.raster == tr.raster
    assert (mine.grid_x, mine.grid_y) == (tr.grid_x, tr.grid_y)
    assert mine.clusters == tr.num_clusters
    gx, gy, _ = mine.grid()
    assert gx % cl[0] == 0 and gy % cl[1] == 0 and gy <= GRID_Y_LIMIT
    seen = set()
    for linear in range(tr.num_clusters):
        # launch slot of the cluster's CTA 0 (x fastest), as try_cancel / blockIdx report it
        x, y = linear % tr.grid_x, linear // tr.grid_x
        work = tr.cluster_tile(linear)
        for rank in range(cl[0] * cl[1]):
            cx, cy = rank % cl[0], rank // cl[0]
            m_cta, n_cta = mine.cta_tile(x * cl[0], y * cl[1], cx, cy)
            # the kernel's _mma_tile_coord: the two CTAs of a 2-SM pair share one MMA tile
            assert (m_cta // cfg.atom_thr_m, n_cta, 0) == sched.cta_tile_coord(work, rank, cfg), (linear, rank)
            seen.add((m_cta, n_cta))
    # every CTA tile of the rounded-up problem exactly once
    assert len(seen) == tr.num_clusters * cl[0] * cl[1]


def test_default_8192_rasters_along_n_with_swizzle_and_transposed_grid():
    # the seed's default (2-SM 256x256, cluster 2x1) at 8192^3: 32 x 32 clusters, heuristic -> AlongN
    s = clc_schedule(8192, 8192, 256, 256, 2, 2, 1, "heuristic", 8)
    assert s.raster == "n" and s.swizzle == 8 and s.grid() == (64, 32, 1)
    # launch x counts N clusters (transposed grid); swizzle 8 turns the first launches into a strip of
    # 8 clusters along M that walks along N: slots 0..7 -> M clusters 0..7 of N column 0, then column 1
    first = [s.cta_tile(2 * x, 0, 0, 0) for x in range(10)]
    assert first == [(2 * i, 0) for i in range(8)] + [(0, 1), (2, 1)]
    # untransposed and unswizzled it would have been the first cluster row along M
    plain = clc_schedule(8192, 8192, 256, 256, 2, 2, 1, "m", 1)
    assert [plain.cta_tile(2 * x, 0, 0, 0) for x in range(3)] == [(0, 0), (2, 0), (4, 0)]
    assert plain.cta_tile(0, 1, 0, 0) == (0, 1)


@pytest.mark.parametrize("kwargs,match", [({"raster": "z"}, "raster='z'"), ({"swizzle": 3}, "swizzle=3")])
def test_clc_refuses_what_it_does_not_implement(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        clc_schedule(1024, 1024, 256, 256, 2, 2, 1, **kwargs)


def test_clc_refuses_a_grid_y_beyond_the_launch_limit():
    with pytest.raises(ConfigError, match="grid's y"):
        clc_schedule(128, 64 * 70000, 128, 64, 1, 1, 1, "m", 1)
