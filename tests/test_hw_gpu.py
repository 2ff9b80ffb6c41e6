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


@pytest.mark.parametrize("shape", [(128, 256, 64), (1000, 1032, 520), (129, 264, 72), (64, 8, 8),
                                   (4096, 2048, 256)])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("cfg", [KernelConfig(), KernelConfig(cluster_m=1, swizzle=4),
                                 KernelConfig(cluster_m=2, instrument=R.LEVEL_EPILOGUE),
                                 KernelConfig(schedule="pingpong", tile_n=128, swizzle=4),
                                 KernelConfig(schedule="pingpong", tile_n=128, instrument=R.LEVEL_EPILOGUE)])
def test_matches_float32_reference(session, cfg, dtype, shape):
    r = check_one(session, cfg, dtype, *shape, seed=hash((cfg, dtype, shape)) % 10_000)
    assert r["nan"] == 0, r
    assert r["ok"], r
