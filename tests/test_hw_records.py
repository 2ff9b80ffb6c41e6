"""The hardware kernel's record layout, tile order and trace conversion, on synthetic buffers (no GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from hw_kernels import records as R
from hw_kernels.schedule import cluster_coord, tile_order
from validation.hw_trace import decode, effective_clock_ghz, summarize, to_trace


def test_w0_roundtrip():
    w = R.pack_w0(R.C_KBLOCK, 3, 1234)
    assert R.unpack_w0(w) == (R.C_KBLOCK, 3, 1234)


@pytest.mark.parametrize("n_major,n_minor,s", [(5, 7, 1), (5, 7, 2), (4, 8, 4), (3, 5, 4), (1, 3, 8)])
def test_cluster_coord_is_a_bijection(n_major, n_minor, s):
    seen = {cluster_coord(c, n_major, n_minor, s) for c in range(n_major * n_minor)}
    assert seen == {(a, b) for a in range(n_major) for b in range(n_minor)}


def test_swizzle_walks_bands_along_major():
    # swizzle 2, raster along M: (m0,n0) (m0,n1) (m1,n0) (m1,n1) ...
    assert [cluster_coord(c, 3, 4, 2) for c in range(6)] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]


def test_tile_order_covers_every_tile_once():
    order = tile_order(1000, 1032, 128, 256, cluster_m=2, cluster_n=1, swizzle=2, num_clusters=3)
    tiles = [t for ts in order.values() for t in ts]
    # 8 x 5 tiles; cluster rounding adds none here (8 is even)
    assert sorted(tiles) == sorted((m, n) for m in range(8) for n in range(5))


def _synthetic(cap=64, ctas=2, tiles=2, kblocks=3, subs=2, ghz=1.5):
    """A buffer as the kernel would write it at level 2 (simple, regular timing)."""
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
                        put(s, pos, [R.pack_w0(R.C_EPI, j, j), tw, clk0 + t, clk0 + t + 10, clk0 + t + 20,
                                     clk0 + t + 25, clk0 + t + 15, 0])
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
        "config": {"cluster_m": 1, "cluster_n": 1, "store_stages": 4, "tile_m": 128, "tile_n": 256},
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
