"""validation.small_m_rates: which rows it reads and the arithmetic of a K-block's pace."""

from __future__ import annotations

import pytest

from validation import small_m_rates as S


def test_reads_development_rows_only():
    assert not any("heldout" in s for s in S.SOURCES)
    rs = S.rows()
    assert rs, "the committed development accuracy files hold M <= 128 data-parallel rows"
    assert all(r["m"] <= 128 and r["classes"].get("decomposition", "data-parallel") == "data-parallel" for r in rs)
    assert len({r["key"] for r in rs}) == len(rs)


def test_label_parsing():
    assert S._parse("128x64x64_c1x2_rm_sw1_e32_trace-span") == (128, 64, "1x2")
    assert S._parse("128x128x64_pp_c2x1_rn_sw1_e32") == (128, 128, "2x1")


def test_pace_of_a_made_up_row():
    """32x8192x8192, 128x128 tiles: 64 CTAs of one tile, 128 K-blocks; 1 GHz, 1 us launch term, 129 us
    measured -> 1000 cycles a K-block, 32 KiB landed per K-block (A box 16 KiB, B 16 KiB)."""
    r = {"n": 8192, "k": 8192, "tile_n": 128, "measured_us": 129.0, "wsim_us": 65.0,
         "constants": {"launch_overhead_ns": 1000.0, "clock_ghz": 1.0}}
    p = S.pace(r)
    assert p["ctas"] == 64
    assert p["meas_kblock_cycles"] == pytest.approx(1000.0)
    assert p["sim_kblock_cycles"] == pytest.approx(500.0)
    assert p["meas_landed_b_per_clk"] == pytest.approx(32768 / 1000)
    assert p["meas_b_tb_s"] == pytest.approx(8192 * 8192 * 2 / 128e-6 / 1e12)
