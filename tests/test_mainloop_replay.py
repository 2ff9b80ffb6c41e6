"""benchmarks/mainloop_replay.py: the SM90 model replays the committed mainloop microbenchmarks."""

from __future__ import annotations

import pytest

from benchmarks import mainloop_replay as R


def _run(**kw) -> dict:
    return next(r for r in R.runs(min_grid=1) if all(r[k] == v for k, v in kw.items()))


def test_every_wgmma_run_of_the_committed_suites_is_replayed_as_the_gemm_it_computes():
    rs = R.runs()
    assert rs and all(r["mode"] == "wgmma" for r in rs) and min(r["grid"] for r in rs) == 1
    assert {(r["suite"], r["family"]) for r in rs} == set(R.SOURCES)
    full = _run(m=64, n=28672, tile_n=128, a_full=True)
    cfg = R.config(full)
    assert (cfg.m, cfg.n, cfg.k, cfg.tile_m, cfg.tile_n, cfg.mainloop_stages) == (128, 28672, 4096, 128, 128, 6)
    multicast = R.config(_run(m=64, n=28672, tile_n=128, cluster="c1x2"))
    assert (multicast.m, multicast.cluster_m, multicast.cluster_n) == (64, 1, 2)
    one_sm = R.config(_run(m=4096, n=4096, tile_n=64, grid=1, suite="v3c"))      # 2048 tiles on one SM
    assert (one_sm.m, one_sm.n, one_sm.k) == (128, R.MAX_TILES * 64, 4096)


def test_one_sm_s_pace_is_the_busiest_cta_s_cycles_per_k_block():
    """N = 256 on one SM: the tensor core sets the pace; the model replays 16 tiles of the 112."""
    r = _run(m=64, n=28672, tile_n=256, grid=1)
    assert R.replay(r) == pytest.approx(r["kblock_cycles"], rel=0.05)


def test_a_compute_bound_mainloop_keeps_the_measured_pace():
    """N = 256 on 33 CTAs (4 tiles each, A zero-filled past M = 64): the tensor core sets the pace."""
    r = _run(m=64, n=28672, tile_n=256, grid=33)
    assert R.replay(r) == pytest.approx(r["kblock_cycles"], rel=0.05)


def test_the_summary_splits_zero_filled_runs_from_in_bounds_ones():
    rs = [{"suite": "v3", "family": "mainloop", "problem": "64x8x8", "tile_n": 64, "cluster": "c1x1", "a": a,
           "zero_fill": z, "grid": 132, "tiles_per_cta": 4, "stages": 8, "clock_mhz": 1700.0, "measured": 10.0,
           "model": m, "ratio": m / 10.0} for a, z, m in (("64 rows", True, 8.0), ("128 rows", False, 11.0), ("64 rows", True, 9.0))]
    text = R.markdown(rs, "cmd")
    assert "Written by `cmd`." in text
    assert "| A zero-filled past M | 2 | 0.850 | 0.800 | 0.900 |" in text
    assert "| A in bounds | 1 | 1.100 | 1.100 | 1.100 |" in text
    assert "| every SM (grid >= 112) | 3 | 0.900 | 0.800 | 1.100 |" in text and "| one SM |" not in text
    assert "| all | 3 | 0.900 | 0.800 | 1.100 |" in text
