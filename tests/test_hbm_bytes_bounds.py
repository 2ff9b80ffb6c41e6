"""Bytes conserved at the problem's edges, on both kernels: TMA clips a store (and a load of C) at the
tensor's bounds, so a ragged or skinny problem writes exactly D (never more than D in whole 128-B
lines) and reads exactly C once (issue 15: the SM100 model stored every partial subtile whole, e.g.
8,388,608 B for an 8x16384 bf16 D of 262,144 B)."""

from __future__ import annotations

import itertools

import pytest

from simulator import Sm90GemmConfig as C90
from simulator import Sm100GemmConfig as C100
from simulator import simulate, tune

#: HBM lines are 128 B; the bound a write may not exceed is D with each row rounded up to whole lines.
LINE_BYTES = 128

KERNELS = [
    ("sm100-2sm", C100, {}),
    ("sm100-1sm-128x64", C100, dict(use_2sm=False, cluster_m=1, mma_tile_m=128, mma_tile_n=64)),
    ("sm100-2sm-c2x2", C100, dict(cluster_m=2, cluster_n=2, mma_tile_n=192)),
    ("sm90-cooperative", C90, {}),
    ("sm90-pingpong", C90, dict(schedule="pingpong", tile_n=64)),
]


def d_bytes(cfg) -> int:
    return cfg.m * cfg.n * cfg.l * cfg.bits_d // 8


def d_lines_bytes(cfg) -> int:
    row = cfg.n * cfg.bits_d // 8
    return cfg.m * cfg.l * -(-row // LINE_BYTES) * LINE_BYTES


@pytest.mark.parametrize("name,cls,kw", KERNELS, ids=[k[0] for k in KERNELS])
def test_ragged_shapes_write_d_once_and_read_c_once(name, cls, kw):
    for m, n in itertools.product((1, 8, 200, 777), (8, 136, 1544)):
        r0 = simulate(cls(m=m, n=n, k=128, **kw))
        rc = simulate(cls(m=m, n=n, k=128, read_c=True, **kw))
        cfg = rc.config
        assert r0.hbm_write_bytes == d_bytes(cfg) <= d_lines_bytes(cfg), (m, n)
        assert rc.hbm_write_bytes == d_bytes(cfg), (m, n)
        # small problems fit in L2: A and B are read once either way, so the difference is C's bytes
        c_bytes = cfg.m * cfg.n * cfg.l * cfg.bits_c // 8
        assert rc.hbm_read_bytes - r0.hbm_read_bytes == c_bytes, (m, n)


@pytest.mark.parametrize("m,n,k,kw", [
    (1, 256, 256, {}), (8, 16384, 4096, {}), (8, 16384, 4096, {"read_c": True}), (256, 8, 256, {}),
    (777, 1536, 4104, {}),
])
def test_the_audited_shapes_write_no_more_than_d(m, n, k, kw):
    """The command lines of issue 15's list (``wsim simulate --m 8 --n 16384 --k 4096`` ...)."""
    r = simulate(C100(m=m, n=n, k=k, **kw))
    assert r.hbm_write_bytes == d_bytes(r.config) <= d_lines_bytes(r.config)
    if kw.get("read_c"):
        assert r.hbm_read_bytes == r.compulsory_bytes - d_bytes(r.config)   # A, B and C read once each


def test_every_tune_row_writes_no_more_than_d():
    """``wsim tune --m 256 --n 256 --k 256``: every candidate (tiles up to 256x256, 2x2 clusters,
    partial tiles and clusters past the problem's edge) writes D's 131,072 B, no more."""
    res = tune(256, 256, 256, progress=False, workers=1)
    rows = res.simulated
    assert len(rows) > 20
    assert {r.hbm_write_bytes for r in rows} == {256 * 256 * 2}


def test_full_tiles_store_whole_subtiles():
    """A problem made of whole tiles (the default 8192^3 run) writes D once, as before."""
    r = simulate(C100())
    assert r.hbm_write_bytes == d_bytes(r.config)
