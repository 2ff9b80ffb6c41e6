"""SMs that start late (``simulate(late_start=...)``): static clusters keep their tiles and run them
late, CLC ones launch late as the grid's next cluster, or not at all; every tile still once."""

from __future__ import annotations

import numpy as np
import pytest

from simulator import LateStart, simulate
from simulator.errors import ConfigError
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec
from simulator.views.report import format_result

B200_16 = ArchSpec.b200().with_overrides({"sm_count": 16})
CFG = dict(m=2048, n=2048, k=512)        # 64 tiles of 256x256 on 8 clusters of 2 SMs: 8 tiles each
LATE = LateStart(sms=4, delay_ns=5_000)  # SMs 12-15: clusters 6 and 7


def _run(sched: str, late: LateStart | None, engine: str = "fast"):
    return simulate(Sm100GemmConfig(**CFG, tile_scheduler=sched), B200_16, late_start=late, trace=True,
                    engine=engine)


def _tiles_per_sm(res) -> dict[int, list]:
    c = res.trace.columns()
    sel = (c["kind"] == "tile") & (c["role"] == "MMA")
    out: dict[int, list] = {}
    for sm, m, n, s in zip(c["sm"][sel], c["tile_m"][sel], c["tile_n"][sel], c["start_cycle"][sel], strict=True):
        out.setdefault(int(sm), []).append((int(m), int(n), float(s)))
    return out


def _first_start(res, sms) -> float:
    c = res.trace.columns()
    return float(c["start_cycle"][np.isin(c["sm"], list(sms))].min())


def test_static_clusters_keep_their_tiles_and_run_them_late():
    base, late = _run("static", None), _run("static", LATE)
    assert late.ok and late.tile_check() == (base.tiles_expected, 0)
    delay = LATE.delay_ns * B200_16.clock_ghz.value
    assert _first_start(late, range(12, 16)) >= delay
    assert _first_start(late, range(12)) == _first_start(base, range(12))
    tiles = lambda r: {sm: [t[:2] for t in v] for sm, v in _tiles_per_sm(r).items()}   # noqa: E731
    assert tiles(late) == tiles(base)
    assert late.cycles >= base.cycles + 0.9 * delay     # the late clusters' share ends late
    assert late.meta["late_start"] == {"sms": 4, "delay_ns": 5_000, "clusters": 2, "sm_range": [12, 16],
                                       "launched": None}


def test_clc_balances_late_sms_and_beats_static():
    base, late, static = _run("clc", None), _run("clc", LATE), _run("static", LATE)
    assert late.ok and late.tile_check() == (base.tiles_expected, 0)
    delay = LATE.delay_ns * B200_16.clock_ghz.value
    assert _first_start(late, range(12, 16)) >= delay
    per_sm = {sm: len(v) for sm, v in _tiles_per_sm(late).items()}
    assert max(per_sm[s] for s in (12, 14)) < min(per_sm[s] for s in range(0, 12, 2))   # MMA leaders
    assert base.cycles < late.cycles < static.cycles
    assert late.meta["late_start"]["launched"] == 2


def test_clc_clusters_that_find_no_work_never_launch():
    res = _run("clc", LateStart(sms=4, delay_ns=1e6))      # 1 ms: long after the last tile
    assert res.ok and res.tile_check() == (res.tiles_expected, 0)
    assert res.meta["late_start"]["launched"] == 0
    assert not set(_tiles_per_sm(res)) & {12, 13, 14, 15}
    assert res.time_ns < 1e6
    mma = next(r for r in res.role_times if r.role == "MMA")
    assert mma.ctas == 6                                   # the leaders of the 6 on-time clusters


def test_both_engines_agree_with_late_sms():
    for sched in ("clc", "static"):
        assert _run(sched, LATE).fingerprint() == _run(sched, LATE, "reference").fingerprint()


def test_the_report_says_which_sms_were_late():
    text = format_result(_run("clc", LATE))
    assert "late SMs   the last 4 SM(s) free 5.00 us after launch (late_start): 2 cluster(s) on SMs 12-15" in text
    assert "CLC launched 2 of those clusters" in text


@pytest.mark.parametrize("late, cfg, message", [
    (LateStart(sms=16, delay_ns=1.0), Sm100GemmConfig(**CFG), "covers every cluster of this launch"),
    (LateStart(sms=1, delay_ns=1.0), Sm90GemmConfig(**CFG), "only the SM100 model"),
    ((4, 5000), Sm100GemmConfig(**CFG), "expected a LateStart"),
])
def test_late_start_errors_name_the_value(late, cfg, message):
    arch = B200_16 if isinstance(cfg, Sm100GemmConfig) else ArchSpec.h200()
    with pytest.raises(ConfigError, match=message):
        simulate(cfg, arch, late_start=late)


@pytest.mark.parametrize("kw, message", [
    (dict(sms=0, delay_ns=1.0), "sms=0"), (dict(sms=2.0, delay_ns=1.0), "sms=2.0"),
    (dict(sms=2, delay_ns=0), "delay_ns=0"), (dict(sms=2, delay_ns=float("inf")), "delay_ns=inf"),
    (dict(sms=2, delay_ns="5us"), "delay_ns='5us'"),
])
def test_late_start_rejects_bad_values(kw, message):
    with pytest.raises(ConfigError, match=message):
        LateStart(**kw)


def test_the_predicted_clock_keeps_the_late_sms():
    res = simulate(Sm100GemmConfig(**CFG), B200_16, late_start=LATE, clock="predicted")
    assert res.clock_prediction and res.meta["late_start"]["launched"] == 2
    with pytest.raises(ConfigError, match="only the SM100 model"):
        simulate(Sm90GemmConfig(**CFG), ArchSpec.h200(), late_start=LATE, clock="predicted")
