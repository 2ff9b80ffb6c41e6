"""The SM90 twin's stream-K work table (pure Python, no DSL): the model's units, each K-block of every tile
once, one fixup flag and one workspace slice per (CTA tile, consumer warpgroup), names round-trip."""

from __future__ import annotations

import pytest

from hw_kernels.host import KernelConfig
from hw_kernels.schedule import SEGMENT_WORDS, stream_k_schedule
from simulator.kernels.scheduler import TileRaster
from simulator.kernels.space import sm90_config_from_hw
from simulator.kernels.stream_k import for_config
from simulator.machine.arch import get_arch

H200 = get_arch("h200")
CASES = [  # (m, n, k, tile_n, cluster, decomposition, splits)
    (512, 512, 32768, 128, (1, 1), "heuristic", 1), (256, 1024, 65536, 256, (2, 1), "stream_k", 1),
    (128, 4096, 65536, 128, (1, 2), "heuristic", 1), (1536, 1536, 12288, 256, (2, 1), "stream_k", 1),
    (12000, 800, 3000, 128, (2, 2), "stream_k", 1), (5000, 5000, 5000, 256, (2, 1), "heuristic", 1),
    (512, 512, 8192, 64, (1, 1), "split_k", 4), (1000, 1032, 520, 64, (2, 1), "split_k", 3),
]


def _segments(sk):
    for p, row in enumerate(sk.table):
        for i in range(row[0]):
            yield p, row[1 + i * SEGMENT_WORDS: 1 + (i + 1) * SEGMENT_WORDS]


@pytest.mark.parametrize("m,n,k,tile_n,cl,dec,splits", CASES)
def test_work_table_is_the_models_decomposition(m, n, k, tile_n, cl, dec, splits):
    sk = stream_k_schedule(m, n, k, 128, tile_n, 64, cl[0], cl[1], "heuristic", 1, dec, splits)
    cfg = KernelConfig(tile_n=tile_n, cluster_m=cl[0], cluster_n=cl[1], decomposition=dec, splits=splits)
    model = sm90_config_from_hw({f: getattr(cfg, f) for f in ("tile_m", "tile_n", "tile_k", "cluster_m", "cluster_n",
                                                             "schedule", "raster", "swizzle", "epilogue_tile_n",
                                                             "decomposition", "splits")}, m, n, k).resolved(H200)
    d = for_config(model, H200)
    raster = TileRaster(model, "static")
    assert sk.clusters == d.grid_clusters <= 132 // (cl[0] * cl[1])
    seen: dict = {}
    for _, (cm, cn, k0, kn, tile, _slot, _place) in _segments(sk):
        w = raster.cluster_tile(tile)
        assert (w.m_idx, w.n_idx) == (cm, cn)
        for kb in range(k0, k0 + kn):
            seen[(tile, kb)] = seen.get((tile, kb), 0) + 1
    assert set(seen) == {(t, kb) for t in range(raster.num_clusters) for kb in range(d.k_tiles)}
    assert set(seen.values()) == {1}
    # the table's units are the model's, unit by unit: persistent cluster p runs units p, p + grid, ...
    want = [(p, (s.cluster_tile, s.k_start, s.k_count)) for p in range(d.grid_clusters)
            for u in range(p, len(d.units), d.grid_clusters) for s in d.units[u]]
    got = [(p, (seg[4], seg[2], seg[3])) for p, seg in _segments(sk)]
    assert got == want
    assert sk.flags == raster.num_clusters * cl[0] * cl[1] * 2 and sk.workspace_floats == sk.flags * 64 * tile_n


def test_names_round_trip():
    for cfg in (KernelConfig(decomposition="stream_k"), KernelConfig(decomposition="heuristic", cluster_m=1),
                KernelConfig(decomposition="split_k", splits=8, tile_n=64),
                KernelConfig(decomposition="stream_k", reduction="nondeterministic", raster="m", swizzle=4),
                KernelConfig(decomposition="heuristic", reduction="separate", cluster_m=2, cluster_n=2)):
        assert KernelConfig.from_name(cfg.name()) == cfg
    assert KernelConfig.from_name(KernelConfig().name()) == KernelConfig()
    a = KernelConfig(decomposition="split_k", splits=4)
    assert a.compile_key() == KernelConfig(decomposition="heuristic", raster="m").compile_key()
    assert a.compile_key() != KernelConfig().compile_key()


@pytest.mark.parametrize("m,n,k,tile_n,cl,dec,splits", CASES)
def test_separate_reduction_slots(m, n, k, tile_n, cl, dec, splits):
    """Separate reduction: every split of a tile has its own place (0 .. splits - 1 in K order) and its own
    workspace slot; the final split's place is the number of the others; the workspace holds a slot per
    non-final split of the most-split tile. The other modes' tables are the same but for the sizes."""
    sep = stream_k_schedule(m, n, k, 128, tile_n, 64, cl[0], cl[1], "heuristic", 1, dec, splits, "separate")
    det = stream_k_schedule(m, n, k, 128, tile_n, 64, cl[0], cl[1], "heuristic", 1, dec, splits)
    assert [s[:5] for _, s in _segments(sep)] == [s[:5] for _, s in _segments(det)]
    by_tile: dict = {}
    for _, (_cm, _cn, k0, kn, tile, slot, place) in _segments(sep):
        by_tile.setdefault(tile, []).append((k0, kn, slot, place))
    most = max(len(v) for v in by_tile.values())
    assert sep.slots == max(1, most - 1) and det.slots == 1
    assert sep.workspace_floats == sep.flags * sep.slots * 64 * tile_n
    for tile, segs in by_tile.items():
        segs.sort()
        assert [p for _, _, _, p in segs] == list(range(len(segs)))
        assert [s for _, _, s, _ in segs] == [tile * sep.slots + p for p in range(len(segs))]
        assert segs[-1][0] + segs[-1][1] == sep.k_tiles          # the last place is the final split
        assert all(s - tile * sep.slots < sep.slots for _, _, s, _ in segs[:-1])   # stored slots fit


def test_separate_reduction_rules():
    from hw_kernels.rules import config_problems
    args = (128, 128, 64, 1, 1, "cooperative", "heuristic", 1, 32, 4, 0, "heuristic", 1)
    assert config_problems(*args, "separate") == []
    assert any("reduction='serial'" in p for p in config_problems(*args, "serial"))
