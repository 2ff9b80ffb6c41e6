"""wsim tune: the bound really bounds, pruning cannot change the top rows, the table is ranked, the
same-tile-order shortcut is exact, the CLI and the Python API."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import simulator
from simulator.engine import simulate
from simulator.engine.tune import _schedule_key, lower_bound_ns, tune
from simulator.errors import ConfigError
from simulator.kernels.scheduler import raster_for
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.kernels.space import hw_space
from simulator.machine.arch import get_arch

B200 = get_arch("b200")
H200 = get_arch("h200")
REPO = Path(__file__).resolve().parent.parent

BOUND_CASES = [
    Sm100GemmConfig(m=512, n=512, k=512),
    Sm100GemmConfig(m=1024, n=2048, k=256, use_2sm=False, mma_tile_m=64, mma_tile_n=64, cluster_m=1),
    Sm100GemmConfig(m=2048, n=1024, k=2048, tile_scheduler="static", cluster_n=2, mma_tile_n=192),
    Sm100GemmConfig(m=300, n=5000, k=128, use_2sm=False, mma_tile_m=128, cluster_m=1, swizzle=8),
    Sm100GemmConfig(m=4096, n=4096, k=1024),
    Sm90GemmConfig(m=2048, n=1024, k=2048),
    Sm90GemmConfig(m=1024, n=3000, k=512, schedule="pingpong", tile_n=64, cluster_m=1),
    Sm90GemmConfig(m=4096, n=512, k=4096, tile_n=128, cluster_m=1, cluster_n=2),
    Sm90GemmConfig(m=384, n=384, k=8192, schedule="pingpong", tile_m=64, tile_n=128),
    # the stream-K scheduler: stream-K, split-K, the heuristic (which picks stream-K here), both kernels
    Sm90GemmConfig(m=512, n=512, k=32768, tile_n=128, cluster_m=1, decomposition="heuristic"),
    Sm90GemmConfig(m=512, n=512, k=8192, tile_n=128, cluster_m=1, decomposition="split_k", splits=4),
    Sm90GemmConfig(m=1536, n=1536, k=12288, tile_n=256, cluster_m=2, decomposition="stream_k"),
    Sm90GemmConfig(m=128, n=4096, k=16384, tile_n=128, cluster_m=1, cluster_n=2, decomposition="heuristic",
                   reduction="nondeterministic"),
    Sm100GemmConfig(m=512, n=512, k=32768, decomposition="heuristic"),
    Sm100GemmConfig(m=1024, n=1024, k=8192, use_2sm=False, mma_tile_m=128, mma_tile_n=128, cluster_m=1,
                    decomposition="split_k", splits=3),
    Sm100GemmConfig(m=2304, n=2304, k=2304, decomposition="stream_k"),
]


@pytest.mark.parametrize("cfg", BOUND_CASES, ids=lambda c: f"{type(c).__name__[:4]}-{c.m}x{c.n}x{c.k}")
def test_lower_bound_never_exceeds_the_simulated_time(cfg):
    res = simulate(cfg)
    bound = lower_bound_ns(res.config, res.arch)
    assert 0 < bound <= res.time_ns


def test_same_tile_order_gives_the_same_result():
    # The heuristic raster resolves to one of m/n: spelled either way, the same tiles in the same order,
    # so the tuner simulates only one of them; here both are simulated and must agree exactly.
    a = Sm100GemmConfig(m=1024, n=2048, k=512, raster="heuristic").resolved(B200)
    b = replace(a, raster=raster_for(a))
    assert _schedule_key(a) == _schedule_key(b)
    ra, rb = simulate(a, B200), simulate(b, B200)
    assert (ra.time_ns, ra.hbm_bytes, ra.l2_hit_rate, ra.tiles_done) == (rb.time_ns, rb.hbm_bytes, rb.l2_hit_rate,
                                                                          rb.tiles_done)
    other = replace(a, raster="n" if raster_for(a) == "m" else "m")
    assert _schedule_key(other) != _schedule_key(a)


def test_stream_k_schedule_key_sees_the_work_units():
    # The SM100 stream-K scheduler runs split-K tiles AlongM without swizzle whatever is asked: raster and
    # swizzle spellings give the same units; on SM90 they change the units' tiles.
    a = Sm100GemmConfig(m=1024, n=2048, k=4096, decomposition="split_k", splits=2, raster="n").resolved(B200)
    b = replace(a, raster="m", swizzle=4)
    assert _schedule_key(a, B200) == _schedule_key(b, B200)
    c = Sm90GemmConfig(m=1024, n=2048, k=4096, decomposition="split_k", splits=2, raster="n").resolved(H200)
    assert _schedule_key(c, H200) != _schedule_key(replace(c, raster="m"), H200)


def _check_ranked(res):
    ok = [r for r in res.rows if r.ok]
    assert ok and res.rows[: len(ok)] == ok                   # simulated rows first
    times = [r.time_us for r in ok]
    assert times == sorted(times)
    assert [r.extra["rank"] for r in res.rows] == list(range(1, len(res.rows) + 1))
    kth = times[max(res.top, res.beam) - 1] if len(times) >= max(res.top, res.beam) else None
    for r in res.rows:
        if r.status == "pruned":
            assert kth is not None and r.extra["bound_us"] >= kth - 1e-9


def test_pruning_cannot_change_the_top_rows():
    kw = dict(arch="h200", space="hw", search="exhaustive", top=5, workers=2, progress=False)
    full = tune(768, 640, 512, prune=False, **kw)
    pruned = tune(768, 640, 512, prune=True, **kw)
    assert len(full.rows) == len(hw_space()) and all(r.ok for r in full.rows)
    _check_ranked(full)
    _check_ranked(pruned)
    assert sum(r.status == "pruned" for r in pruned.rows) > 0
    top = [(r.time_us, tuple(sorted(r.config.items()))) for r in full.rows[:5]]
    assert [(r.time_us, tuple(sorted(r.config.items()))) for r in pruned.rows[:5]] == top


def test_staged_search_small_problem():
    res = tune(512, 1024, 256, top=4, workers=2, progress=False)
    assert res.search == "staged" and len(res.stages) == 6      # MMA tile, cluster, decomposition, raster, ...
    _check_ranked(res)
    best = res.best
    assert best is not None and best.extra["rank"] == 1 and best.bottleneck
    # the best row is reproducible: simulating its config gives its time
    again = simulate(res.config_of(best), B200)
    assert again.time_ns / 1e3 == pytest.approx(best.time_us)
    # every later stage starts from the best configs so far: stage 2's candidates keep a stage-1 MMA tile
    s1 = {(r.config["use_2sm"], r.config["mma_tile_m"], r.config["mma_tile_n"]) for r in res.rows
          if r.extra["stage"] == 1}
    s2 = {(r.config["use_2sm"], r.config["mma_tile_m"], r.config["mma_tile_n"]) for r in res.rows
          if r.extra["stage"] == 2}
    assert s2 and s2 <= s1 and len(s2) <= res.beam
    text = res.table()
    assert "rank" in text and "best:" in text and "stage 1 (MMA tile" in text


def test_result_files(tmp_path):
    res = tune(256, 256, 256, dtype="fp16", space="gemm-model", workers=1, progress=False)
    assert res.search == "exhaustive" and len(res.rows) == 16
    p = tmp_path / "t.csv"
    res.write(str(p))
    got = list(csv.DictReader(p.open()))
    assert [int(r["rank"]) for r in got] == list(range(1, 17))
    assert {r["tile_scheduler"] for r in got} == {"static"} and {r["m"] for r in got} == {"256"}
    assert res.to_csv().splitlines()[0] == p.read_text().splitlines()[0]
    data = json.loads(res.to_json())
    assert data["space"] == "gemm-model" and len(data["rows"]) == 16
    # which constants made the ranking: the table's header, the CSV's sidecar, the JSON's "constants"
    fitted = [c for c in get_arch("b200").constants() if c.kind == "fitted"]
    assert fitted and all(f"{c.name} = {c.value:g} {c.unit}" in " ".join(res.table().split()) for c in fitted)
    assert "arch       B200 (SM100), clock 1.965 GHz" in res.table()
    side = json.loads((tmp_path / "t.constants.json").read_text())
    assert side["rows_file"] == "t.csv" and {c["name"] for c in side["constants"]["fitted"]} == {c.name for c in fitted}
    assert data["constants"] == side["constants"]
    res.write(str(tmp_path / "t.json"))
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["constants"] == side["constants"] and [r["rank"] for r in doc["rows"]] == list(range(1, 17))


def test_public_api_and_errors():
    assert simulator.tune is tune
    with pytest.raises(ConfigError, match="m=0"):
        tune(0, 1, 1)
    with pytest.raises(ConfigError, match="top=0"):
        tune(128, 128, 128, top=0)
    with pytest.raises(ConfigError, match="no candidate of space full can run this problem: k=7"):
        tune(128, 128, 7, progress=False)


def _wsim(*args):
    return subprocess.run([sys.executable, "-m", "wsim", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=600)


def test_cli_tune(tmp_path):
    out = tmp_path / "t.json"
    p = _wsim("tune", "--m", "256", "--n", "512", "--k", "256", "--dtype", "fp16", "--space", "gemm-model",
              "--top", "3", "--out", str(out), "--no-progress", "--workers", "2")
    assert p.returncode == 0, p.stderr
    assert "best:" in p.stdout and "search     exhaustive" in p.stdout
    doc = json.loads(out.read_text())
    assert len(doc["rows"]) == 16 and doc["rows"][0]["rank"] == 1 and doc["constants"]["arch"] == "B200"
    assert "[fitted]   " in p.stdout and "[estimate] " in p.stdout and "overrides  none" in p.stdout


@pytest.mark.parametrize("args, message", [
    (["--m", "0", "--n", "1", "--k", "1"], "--m='0': must be a positive integer"),
    (["--m", "x", "--n", "1", "--k", "1"], "--m='x': must be a positive integer"),
    (["--m", "64", "--n", "64", "--k", "64", "--space", "hw"], "space=hw: the hardware twin is an SM90 kernel"),
    (["--m", "64", "--n", "64", "--k", "64", "--space", "all"], "--space='all': unknown"),
    (["--m", "64", "--n", "64", "--k", "64", "--dtype", "int4"], "dtype='int4': unknown data type"),
    (["--m", "64", "--n", "64", "--k", "64", "--out", "t.xlsx"], "--out 't.xlsx': unknown format '.xlsx'"),
    (["--m", "64", "--n", "64", "--k", "60", "--no-progress"], "no candidate of space full can run this problem"),
])
def test_cli_tune_bad_input_is_one_line_exit_2(args, message):
    p = _wsim("tune", *args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], p.stderr
