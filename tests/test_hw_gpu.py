"""The SM90 hardware kernel on a GPU (marker ``gpu``: skipped without a CUDA GPU and the DSL):
fresh random inputs, NaN-poisoned output, float32 reference, shapes that do not divide the tile."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch", reason="torch is not installed")
pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from hw_kernels import records as R  # noqa: E402
from hw_kernels.host import KernelConfig  # noqa: E402
from validation.collect import Session, check_one  # noqa: E402


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    return Session(tmp_path_factory.mktemp("hw"), "pytest tests/test_hw_gpu.py")


def _assert_correct(session, cfg, dtype, shape):
    """No output left NaN (every element written) and every element within the reference's tolerance."""
    r = check_one(session, cfg, dtype, *shape, seed=hash((cfg, dtype, shape)) % 10_000)
    assert r["nan"] == 0, r
    assert r["ok"], r


@pytest.mark.parametrize("shape", [(128, 256, 64), (1000, 1032, 520), (129, 264, 72), (64, 8, 8),
                                   (4096, 2048, 256)])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("cfg", [KernelConfig(), KernelConfig(cluster_m=1, swizzle=4),
                                 KernelConfig(cluster_m=2, instrument=R.LEVEL_EPILOGUE),
                                 KernelConfig(schedule="pingpong", tile_n=128, swizzle=4),
                                 KernelConfig(schedule="pingpong", tile_n=128, instrument=R.LEVEL_EPILOGUE)])
def test_matches_float32_reference(session, cfg, dtype, shape):
    _assert_correct(session, cfg, dtype, shape)


#: M <= 128 and ragged M (the 64-row ping-pong tile): M below one tile, one tile, a partial second tile,
#: two tiles, more than a 128-row tile; N and K multiples of 8, not of the tile.
SMALL_M_SHAPES = [(16, 4096, 512), (64, 1032, 520), (100, 264, 72), (128, 2048, 4104), (200, 1000, 256), (64, 8, 8)]
PINGPONG_64 = [KernelConfig(tile_m=64, tile_n=64, schedule="pingpong", cluster_m=1, raster="m"),
               KernelConfig(tile_m=64, tile_n=128, schedule="pingpong", cluster_m=2, raster="n", swizzle=4),
               KernelConfig(tile_m=64, tile_n=192, schedule="pingpong", cluster_m=1, cluster_n=2, raster="m"),
               KernelConfig(tile_m=64, tile_n=256, schedule="pingpong", cluster_m=1, swizzle=2),
               KernelConfig(tile_m=64, tile_n=128, schedule="pingpong", cluster_m=1, instrument=R.LEVEL_EPILOGUE),
               KernelConfig(tile_m=64, tile_n=256, schedule="pingpong", cluster_m=2, instrument=R.LEVEL_TILE),
               KernelConfig(tile_m=64, tile_n=64, schedule="pingpong", cluster_m=1, cluster_n=2,
                            instrument=R.LEVEL_SPAN)]


@pytest.mark.parametrize("shape", SMALL_M_SHAPES)
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("cfg", PINGPONG_64, ids=lambda c: c.name())
def test_64_row_pingpong_matches_float32_reference(session, cfg, dtype, shape):
    """Every output written and within 2 x cuBLAS's error; instrumented: every slice complete and (tile
    levels) each consumer warpgroup's tiles those of hw_kernels/schedule.py, alternating."""
    _assert_correct(session, cfg, dtype, shape)


#: The ragged-N widths (multiples of the 32-column epilogue subtile between the wide tiles): N a whole number of
#: them, N ragged for them, M and K ragged; both schedulers, clusters, instrumentation, the 64-row ping-pong.
RAGGED_N_SHAPES = [(1000, 800, 520), (129, 264, 72), (64, 8, 8), (4096, 2400, 256)]
RAGGED_N = [KernelConfig(tile_n=160, instrument=R.LEVEL_EPILOGUE),
            KernelConfig(tile_n=96, cluster_m=1, cluster_n=2, raster="n", swizzle=4),
            KernelConfig(tile_n=224, cluster_m=2, cluster_n=2, decomposition="stream_k", instrument=R.LEVEL_TILE),
            KernelConfig(tile_n=160, cluster_m=1, decomposition="heuristic", reduction="nondeterministic"),
            KernelConfig(tile_n=224, cluster_m=1, decomposition="split_k", splits=2),
            KernelConfig(tile_m=64, tile_n=160, schedule="pingpong", cluster_m=1, raster="m")]


@pytest.mark.parametrize("shape", RAGGED_N_SHAPES)
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("cfg", RAGGED_N, ids=lambda c: c.name())
def test_ragged_n_widths_match_float32_reference(session, cfg, dtype, shape):
    _assert_correct(session, cfg, dtype, shape)


#: The one-warpgroup cooperative kernel (tile_m = 64): data-parallel and every stream-K decomposition, both
#: reductions, clusters, instrumentation levels it accepts; M below one tile, ragged M, N and K, a long K.
COOP_64_SHAPES = [(32, 2048, 8192), (100, 264, 72), (200, 1000, 2056), (64, 8, 8)]
COOP_64 = [KernelConfig(tile_m=64, tile_n=128, cluster_m=1, raster="m"),
           KernelConfig(tile_m=64, tile_n=256, cluster_m=1, cluster_n=2, instrument=R.LEVEL_EPILOGUE),
           KernelConfig(tile_m=64, tile_n=128, cluster_m=1, decomposition="split_k", splits=4),
           KernelConfig(tile_m=64, tile_n=192, cluster_m=1, cluster_n=2, decomposition="stream_k",
                        instrument=R.LEVEL_TILE),
           KernelConfig(tile_m=64, tile_n=256, cluster_m=2, decomposition="heuristic", reduction="nondeterministic"),
           KernelConfig(tile_m=64, tile_n=64, cluster_m=1, raster="n", decomposition="split_k", splits=8,
                        reduction="nondeterministic", instrument=R.LEVEL_SPAN)]


@pytest.mark.parametrize("shape", COOP_64_SHAPES)
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("cfg", COOP_64, ids=lambda c: c.name())
def test_64_row_cooperative_matches_float32_reference(session, cfg, dtype, shape):
    _assert_correct(session, cfg, dtype, shape)
