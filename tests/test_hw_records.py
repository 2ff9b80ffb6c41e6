"""The hardware kernel's record layout, tile order and trace conversion, on synthetic buffers (no GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from hw_kernels import records as R
from hw_kernels.schedule import static_schedule, tile_order
from validation.hw_trace import decode, effective_clock_ghz, summarize, to_trace


def test_w0_roundtrip():
    w = R.pack_w0(R.C_KBLOCK, 3, 1234)
    assert R.unpack_w0(w) == (R.C_KBLOCK, 3, 1234)


@pytest.mark.parametrize("shape", [(1000, 1032), (8192, 8192), (4096, 1024), (300, 5000), (128, 256)])
@pytest.mark.parametrize("cluster", [(1, 1), (2, 1), (1, 2), (2, 2)])
@pytest.mark.parametrize("raster,swizzle", [("heuristic", 1), ("m", 4), ("n", 2), ("heuristic", 8)])
def test_tile_order_covers_every_tile_once(shape, cluster, raster, swizzle):
    m, n = shape
    sch = static_schedule(m, n, 128, 256, *cluster, raster, swizzle)
    order = tile_order(m, n, 128, 256, *cluster, raster, swizzle, num_clusters=7)
    tiles = [t for ts in order.values() for t in ts]
    assert len(tiles) == len(set(tiles)) == sch.clusters * cluster[0] * cluster[1]
    inside = {(a, b) for a in range(-(-m // 128)) for b in range(-(-n // 256))}
    assert inside <= set(tiles)  # every real tile once; the rest is cluster/swizzle padding


def test_swizzle_walks_strips_along_major():
    # 8 x 8 cluster tiles, swizzle 2, raster along M: (m0,n0) (m0,n1) (m1,n0) (m1,n1) ...
    sch = static_schedule(8 * 128, 8 * 256, 128, 256, raster="m", swizzle=2)
    assert sch.swizzle == 2
    assert [sch.cluster_coord(c) for c in range(6)] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]


@pytest.mark.parametrize("shape", [(1000, 1032), (8192, 8192), (4096, 1024), (300, 5000)])
@pytest.mark.parametrize("cluster", [(1, 1), (2, 1), (1, 2)])
@pytest.mark.parametrize("raster,swizzle", [("heuristic", 1), ("m", 4), ("n", 2), ("heuristic", 8)])
def test_tile_order_matches_the_sm90_model(shape, cluster, raster, swizzle):
    """The kernel's static scheduler and simulator.kernels.scheduler.TileRaster(kind="static") agree."""
    from simulator.kernels import scheduler as sched
    from simulator.kernels.sm90_config import Sm90GemmConfig

    m, n = shape
    try:
        cfg = Sm90GemmConfig(m=m, n=n, k=512, tile_m=128, tile_n=256, cluster_m=cluster[0],
                                    cluster_n=cluster[1], raster=raster, swizzle=swizzle)
        tr = sched.TileRaster(cfg, kind="static")
    except Exception as e:  # the model's config rules may reject a combination the kernel runs
        pytest.skip(f"model rejects this config: {e}")
    mine = static_schedule(m, n, 128, 256, *cluster, raster, swizzle)
    assert tr.num_clusters == mine.clusters
    for c in range(mine.clusters):
        w = tr.cluster_tile(c)
        assert (w.m_idx, w.n_idx) == mine.cluster_coord(c), c


def _synthetic(cap=64, ctas=2, tiles=2, kblocks=3, subs=2, ghz=1.5, pingpong=False):
    """A buffer as the kernel would write it at level 3 (simple, regular timing). ``pingpong``: the
    consumers take alternate tiles (Consumer0 the even ones)."""
    buf = np.zeros(ctas * R.ROLES_PER_CTA * cap * R.RECORD_WORDS, dtype=np.int64)

    def put(s, i, words):
        off = (s * cap + i) * R.RECORD_WORDS
        buf[off:off + R.RECORD_WORDS] = words

    for cta in range(ctas):
        for slot in range(R.ROLES_PER_CTA):
            s = cta * R.ROLES_PER_CTA + slot
            clk0 = (1 << 32) - 500 + cta * 7  # wraps during the run: exercises unwrapping
            gt0 = 10_000_000 + cta * 64
            pos = R.FIRST_DATA_RECORD
            t = 100
            for tile in range(tiles):
                if pingpong and slot > 0 and tile % 2 != slot - 1:
                    continue
                tw = cta | (tile << 16)
                t_tile = t
                for k in range(kblocks):
                    st = (tile * kblocks + k) % 4
                    if slot == 0:
                        put(s, pos, [R.pack_w0(R.P_KBLOCK, st, k), tw, clk0 + t, clk0 + t + 10,
                                     clk0 + t + 20, 0, 0, 0])
                    else:
                        put(s, pos, [R.pack_w0(R.C_KBLOCK, st, k), tw, clk0 + t + 5, clk0 + t + 60,
                                     clk0 + t + 70, clk0 + t + 90, clk0 + t + 95, clk0 + t + 95])
                    pos += 1
                    t += 100
                if slot == 0:
                    put(s, pos, [R.P_TILE, tw, clk0 + t_tile, clk0 + t, gt0 + 1, gt0 + 2, kblocks, 0])
                    pos += 1
                else:
                    for j in range(subs):
                        put(s, pos, [R.pack_w0(R.C_EPI, j, j), tw, clk0 + t + 10, clk0 + t + 10, clk0 + t + 20,
                                     clk0 + t + 25, clk0 + t + 15, clk0 + t + 15])
                        pos += 1
                        t += 30
                    put(s, pos, [R.C_TILE, tw, clk0 + t_tile, clk0 + t - subs * 30, clk0 + t, gt0, gt0,
                                 kblocks])
                    pos += 1
            clk1 = clk0 + t + 50
            gt1 = gt0 + int((t + 50) / ghz)
            put(s, 0, [R.HEADER, 3 + cta, clk0 & 0xFFFFFFFF, clk0 >> 32, gt0 & 0xFFFFFFFF, gt0 >> 32, 0, cta])
            put(s, 1, [R.FOOTER, pos, clk1 & 0xFFFFFFFF, clk1 >> 32, gt1 & 0xFFFFFFFF, gt1 >> 32, tiles, 0])
    buf = buf & 0xFFFFFFFF
    return buf.astype(np.uint32).view(np.int32), {
        "capacity": cap, "ctas": ctas,
        "config": {"cluster_m": 1, "cluster_n": 1, "epilogue_store_stages": 4, "tile_m": 128, "tile_n": 256},
    }


def test_decode_and_clock():
    buf, meta = _synthetic()
    sl = decode(buf, meta["capacity"], meta["ctas"])
    assert len(sl) == 6
    clk = effective_clock_ghz(sl)
    assert clk["median_ghz"] == pytest.approx(1.5, rel=0.05)


def test_to_trace_spans_and_summary(tmp_path):
    buf, meta = _synthetic()
    tr = to_trace(buf, meta)
    c = tr.columns()
    kinds = set(c["kind"].tolist())
    assert {"wait", "mma", "tile", "acc_handoff", "epilogue", "tma_load", "prologue"} <= kinds
    assert set(c["role"].tolist()) == {"MainloopLoad", "Consumer0", "Consumer1"}
    assert (c["end_ns"] >= c["start_ns"]).all()
    assert c["start_ns"].min() >= 0
    # unwrapping: every cycle stamp is small (the run is a few thousand cycles)
    assert np.nanmax(c["end_cycle"]) < 10_000
    # mma of K-block 0 ends where K-block 1's wait_group returned
    mma0 = tr.where(role="Consumer0", kind="mma", cta=0, k_block=0).columns()
    assert mma0["end_cycle"][0] - mma0["start_cycle"][0] == pytest.approx(90 + 100 - 60)
    s = summarize(tr)
    assert s["roles"]["Consumer0"]["tile_ns"]["count"] == 4
    tr.meta["summary"] = s
    p = tr.save(tmp_path / "t.npz")
    assert len(type(tr).load(p)) == len(tr)


def test_pingpong_tma_loads_match_by_tile_and_kblock():
    buf, meta = _synthetic(tiles=4, pingpong=True)
    tr = to_trace(buf, meta)
    loads = tr.where(kind="tma_load", cta=0).columns()
    # every producer K-block found the consumer that read it (4 tiles x 3 K-blocks), none paired
    # with another tile's record
    assert len(loads["start_ns"]) == 12
    assert set(loads["tile_n"].tolist()) == {0, 1, 2, 3}



def test_kernel_names_parse_back_to_their_configs():
    from hw_kernels.host import KernelConfig

    for cfg in (KernelConfig(), KernelConfig(tile_n=64, schedule="pingpong", swizzle=4, mainloop_stages=5,
                                             epilogue_store_stages=2, raster="m")):
        assert KernelConfig.from_name(cfg.name()) == cfg
    assert KernelConfig.from_name("cublas") is None
    assert KernelConfig.from_name(KernelConfig(instrument=1).name()) is None
