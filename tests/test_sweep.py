"""wsim sweep: rows in input order on every backend, error rows, incremental files, Ctrl-C, inputs."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulator.engine.sweep import (
    Row,
    RowWriter,
    columns_for,
    expand_grid,
    load_config_list,
    parse_value,
    run_sweep,
)
from simulator.errors import ConfigError
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import get_arch

B200 = get_arch("b200")
REPO = Path(__file__).resolve().parent.parent


def small_configs():
    # mixed sizes so that completion order differs from input order; one invalid config in the middle
    return [Sm100GemmConfig(m=1024, n=1024, k=1024, mma_tile_n=64),
            Sm100GemmConfig(m=256, n=256, k=256),
            Sm100GemmConfig(m=512, n=512, k=512, cluster_m=3),
            Sm100GemmConfig(m=2048, n=1024, k=512, tile_scheduler="static"),
            Sm100GemmConfig(m=512, n=768, k=256, use_2sm=False, mma_tile_m=128, cluster_m=1)]


def fingerprint(rows):
    return [(r.index, r.status, r.time_us, r.hbm_bytes, r.bottleneck, r.error) for r in rows]


def test_rows_in_input_order_same_on_every_backend():
    cfgs = small_configs()
    serial = run_sweep(cfgs, B200, backend="serial", progress=False)
    pooled = run_sweep(cfgs, B200, workers=2, progress=False)
    assert [r.index for r in pooled] == list(range(len(cfgs)))
    assert fingerprint(serial) == fingerprint(pooled)
    ok = [r for r in pooled if r.ok]
    assert len(ok) == 4 and all(r.time_us > 0 and r.tflops > 0 and r.hbm_bytes > 0 and r.bottleneck for r in ok)
    assert pooled[0].config["mma_tile_n"] == 64 and pooled[0].config["mainloop_stages"] is not None  # resolved


def test_can_implement_failure_and_event_budget_become_error_rows():
    rows = run_sweep(small_configs(), B200, workers=2, progress=False)
    bad = rows[2]
    assert bad.status == "error" and bad.time_us is None
    assert "cluster_m=3" in bad.error and "even" in bad.error
    assert bad.config["cluster_m"] == 3            # the config as given
    limited = run_sweep([Sm100GemmConfig(m=1024, n=1024, k=1024), Sm100GemmConfig(m=128, n=128, k=128)],
                        B200, backend="serial", progress=False, max_events=2000)
    assert limited[0].status == "error" and "max_events=2,000" in limited[0].error
    assert limited[1].ok


def test_writer_flushes_each_row_and_ends_in_input_order(tmp_path):
    cfgs = [Sm100GemmConfig(), Sm90GemmConfig()]
    path = tmp_path / "rows.csv"
    w = RowWriter(str(path), columns_for(cfgs))

    def row(i):
        return Row(index=i, config={"m": i}, arch="B200", time_us=float(i))

    def on_disk():
        return [r["index"] for r in csv.DictReader(path.open())]

    w.add(row(1))                                  # on disk at once, though row 0 is not done
    assert on_disk() == ["1"]
    w.add(row(3))
    w.add(row(0))
    assert on_disk() == ["1", "3", "0"]            # every finished row is on disk, with its index
    w.close()                                      # and the closed file is in input order
    assert on_disk() == ["0", "1", "3"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.csv"]   # no temporary file left
    header = path.read_text().splitlines()[0].split(",")
    assert header[:3] == ["index", "arch", "m"] and "tile_n" in header and "mma_tile_n" in header
    for suffix in (".json", ".jsonl"):
        p = tmp_path / f"rows{suffix}"
        w = RowWriter(str(p), columns_for(cfgs), constants={"arch": "B200"})
        w.add(row(1))
        w.add(row(0))
        w.close()
        if suffix == ".json":
            doc = json.loads(p.read_text())
            data = doc["rows"]
            assert doc["constants"] == {"arch": "B200"}
        else:
            data = [json.loads(line) for line in p.read_text().splitlines()]
            side = json.loads((tmp_path / "rows.constants.json").read_text())
            assert side == {"constants": {"arch": "B200"}, "rows_file": "rows.jsonl"}
        assert [d["index"] for d in data] == [0, 1]
    with pytest.raises(ConfigError, match="unknown format '.txt'"):
        RowWriter(str(tmp_path / "x.txt"), [])


def test_sweep_file_equals_returned_rows(tmp_path):
    path = tmp_path / "s.jsonl"
    rows = run_sweep(small_configs(), B200, workers=2, progress=False, out=str(path))
    on_disk = [json.loads(line) for line in path.read_text().splitlines()]
    assert [d["index"] for d in on_disk] == list(range(5))
    assert [d["time_us"] for d in on_disk] == [r.time_us for r in rows]


def test_inputs(tmp_path):
    toml = tmp_path / "l.toml"
    toml.write_text('[base]\nm = 1024\n[[config]]\nmma_tile_n = 128\n[[config]]\nmma_tile_n = 64\nswizzle = 8\n')
    assert load_config_list(str(toml), Sm100GemmConfig) == [
        {"m": 1024, "mma_tile_n": 128}, {"m": 1024, "mma_tile_n": 64, "swizzle": 8}]
    c = tmp_path / "l.csv"
    c.write_text("m,use_2sm,mma_tile_m,raster\n1024,false,128,\n2048,true,256,n\n")
    assert load_config_list(str(c), Sm100GemmConfig) == [
        {"m": 1024, "use_2sm": False, "mma_tile_m": 128}, {"m": 2048, "use_2sm": True, "mma_tile_m": 256, "raster": "n"}]
    c.write_text("m,mma_tile_n\n1024,wide\n")
    with pytest.raises(ConfigError, match=r"mma_tile_n='wide' \(.*l.csv:2\): expected an integer"):
        load_config_list(str(c), Sm100GemmConfig)
    with pytest.raises(ConfigError, match="tile_n='64' .*: not a field of Sm100GemmConfig"):
        parse_value(Sm100GemmConfig, "tile_n", "64", "--grid tile_n")
    assert parse_value(Sm90GemmConfig, "tile_n", "64", "--grid") == 64
    grid = expand_grid({"m": 1}, [("a", [1, 2]), ("b", ["x", "y"])])
    assert grid == [{"m": 1, "a": 1, "b": "x"}, {"m": 1, "a": 1, "b": "y"},
                    {"m": 1, "a": 2, "b": "x"}, {"m": 1, "a": 2, "b": "y"}]


def _wsim(*args, **kw):
    return subprocess.run([sys.executable, "-m", "wsim", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=300, **kw)


def test_cli_sweep_grid(tmp_path):
    out = tmp_path / "g.csv"
    p = _wsim("sweep", "--grid", "mma_tile_n=64,128", "--grid", "cluster_m=2,4", "--set", "m=1024", "--set", "n=512",
              "--set", "k=256", "--out", str(out), "--no-progress", "--workers", "2")
    assert p.returncode == 0, p.stderr
    got = list(csv.DictReader(out.open()))
    assert [(r["mma_tile_n"], r["cluster_m"]) for r in got] == [("64", "2"), ("64", "4"), ("128", "2"), ("128", "4")]
    assert all(r["status"] == "ok" and float(r["time_us"]) > 0 and r["m"] == "1024" for r in got)


def test_cli_sweep_says_which_constants_made_the_rows(tmp_path):
    out = tmp_path / "c.csv"
    common = ("--set", "m=256", "--set", "n=256", "--set", "k=256", "--backend", "serial", "--no-progress",
              "--arch-set", "clc_query_latency_cycles=800")
    p = _wsim("sweep", *common, "--out", str(out))
    assert p.returncode == 0, p.stderr
    b200 = get_arch("b200")
    estimates = [c for c in b200.constants() if c.kind == "estimate" and c.name != "clc_query_latency_cycles"]
    fitted = [c for c in b200.constants() if c.kind == "fitted"]
    chosen = [c for c in b200.constants() if c.kind == "chosen"]
    assert estimates and fitted and chosen
    head = p.stdout
    assert "arch       B200 (SM100), clock 1.965 GHz" in head
    assert "overrides  clc_query_latency_cycles = 800 cycles (--arch-set)" in head
    for c in estimates + fitted + chosen:
        assert f"{c.name} = {c.value:g} {c.unit}" in " ".join(head.split()), c.name
    assert "[chosen on scored rows] " + "; ".join(f"{c.name} = {c.value:g} {c.unit}" for c in chosen) in head
    side = json.loads((tmp_path / "c.constants.json").read_text())["constants"]
    assert side["arch"] == "B200" and side["clock_ghz"] == b200.clock_ghz.value
    assert [c["name"] for c in side["overrides"]] == ["clc_query_latency_cycles"]
    assert {c["name"] for c in side["estimates"]} == {c.name for c in estimates}
    assert {c["name"] for c in side["fitted"]} == {c.name for c in fitted}
    assert {c["name"] for c in side["chosen"]} == {c.name for c in chosen}
    assert len(side["constants"]) == len(b200.constants()) and all(c["source"] for c in side["constants"])
    p = _wsim("sweep", *common)                     # no --out: the table has the same header block
    assert p.returncode == 0, p.stderr
    assert "overrides  clc_query_latency_cycles = 800 cycles (--arch-set)" in p.stdout and "[fitted]" in p.stdout


def test_cli_sweep_reruns_its_own_result_files(tmp_path):
    """A sweep's (and a tune's) output is a valid --configs list: the result columns are skipped with a
    note, the configs run again and give the same times; another arch's rows are refused."""
    common = ("--backend", "serial", "--no-progress")
    first = tmp_path / "s.csv"
    p = _wsim("sweep", "--grid", "mma_tile_n=64,128", "--set", "m=512", "--set", "n=512", "--set", "k=256",
              *common, "--out", str(first))
    assert p.returncode == 0, p.stderr
    before = list(csv.DictReader(first.open()))
    for again in ("again.csv", "again.jsonl"):
        p = _wsim("sweep", "--configs", str(first), *common, "--out", str(tmp_path / again))
        assert p.returncode == 0, p.stderr
        assert "result columns index, arch, status, time_us, ... (20 in all) are not config fields and are " \
               "ignored" in p.stderr
        if again.endswith(".csv"):
            after = list(csv.DictReader((tmp_path / again).open()))
            assert [r["time_us"] for r in after] == [r["time_us"] for r in before]
            assert [r["mma_tile_n"] for r in after] == ["64", "128"]
    # the JSON-lines result re-runs too (typed values), and so does a JSON one
    p = _wsim("sweep", "--configs", str(tmp_path / "again.jsonl"), *common, "--out", str(tmp_path / "j.json"))
    assert p.returncode == 0, p.stderr
    p = _wsim("sweep", "--configs", str(tmp_path / "j.json"), *common, "--out", str(tmp_path / "k.csv"))
    assert p.returncode == 0, p.stderr
    assert [r["time_us"] for r in csv.DictReader((tmp_path / "k.csv").open())] == [r["time_us"] for r in before]
    # a tune result (rank, stage, bound_us, note columns as well)
    t = tmp_path / "t.csv"
    p = _wsim("tune", "--m", "256", "--n", "256", "--k", "256", "--dtype", "fp16", "--space", "gemm-model",
              *common, "--out", str(t))
    assert p.returncode == 0, p.stderr
    p = _wsim("sweep", "--configs", str(t), *common)
    assert p.returncode == 0, p.stderr
    assert "result columns index, arch, " in p.stderr
    assert p.stdout.count(" static r:m ") == 16
    # rows of another arch are refused, naming the arch
    p = _wsim("sweep", "--configs", str(first), "--arch", "h200", *common)
    assert p.returncode == 2
    assert "arch=B200: this row was simulated on B200; the sweep runs on H200 (give --arch b200)" in p.stderr


def test_cli_max_events_reads_as_wsim_simulate_does(tmp_path):
    """0 = no limit (as ``wsim simulate --max-events 0``), a budget too small is an error row."""
    out = tmp_path / "e.csv"
    common = ("--set", "m=256", "--set", "n=256", "--set", "k=256", "--backend", "serial", "--no-progress")
    p = _wsim("sweep", *common, "--max-events", "0", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert [r["status"] for r in csv.DictReader(out.open())] == ["ok"]
    p = _wsim("sweep", *common, "--max-events", "10", "--out", str(out))
    assert p.returncode == 0, p.stderr
    (row,) = csv.DictReader(out.open())
    assert row["status"] == "error" and "max_events=10" in row["error"]


def test_cli_says_when_the_core_runs_as_pure_python():
    env = dict(os.environ, WSIM_PURE_PYTHON="1")
    p = _wsim("sweep", "--set", "m=256", "--set", "n=256", "--set", "k=256", "--backend", "serial", "--no-progress",
              env=env)
    assert p.returncode == 0, p.stderr
    assert "pure-Python core (WSIM_PURE_PYTHON=1): same results, several times slower" in p.stderr


@pytest.mark.parametrize("args, message", [
    (["--grid", "mma_tile_n=64,x"], "mma_tile_n='x' (--grid mma_tile_n): expected an integer"),
    (["--grid", "tile_n=64"], "tile_n='64' (--grid tile_n): not a field of Sm100GemmConfig"),
    (["--grid", "mma_tile_n=64,,128"], "empty value"),
    (["--set", "m"], "--set 'm': expected FIELD=VALUE"),
    (["--max-events", "-1", "--set", "m=128"], "--max-events='-1': must be a whole number of events (0 = no limit)"),
    (["--max-events", "lots", "--set", "m=128"], "--max-events='lots': must be a whole number"),
    (["--workers", "0"], "--workers='0': must be a positive integer"),
    (["--backend", "mpi"], "--backend='mpi': unknown; valid: process, serial, ray"),
    (["--out", "x.txt", "--set", "m=128"], "unknown format '.txt'"),
    (["--arch", "a100"], "a100"),
    (["--arch-set", "clock_ghz=fast", "--set", "m=128"], "--arch-set clock_ghz='fast': expected a number"),
])
def test_cli_sweep_bad_input_is_one_line_exit_2(args, message):
    p = _wsim("sweep", *args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], p.stderr


def test_ctrl_c_keeps_finished_rows(tmp_path):
    """SIGINT to a running sweep: exit 130, the rows finished so far on disk, in order, file complete."""
    out = tmp_path / "int.csv"
    grid = ",".join(str(v) for v in range(64, 257, 16))          # 13 tile widths x 4 shapes = 52 configs
    p = subprocess.Popen([sys.executable, "-m", "wsim", "sweep", "--grid", f"mma_tile_n={grid}",
                          "--grid", "m=2048,3072,4096,6144", "--set", "n=4096", "--set", "k=2048", "--workers", "2",
                          "--out", str(out), "--no-progress"], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    while time.time() < deadline:
        if out.exists() and out.read_text().count("\n") >= 2:      # header + at least one row
            break
        if p.poll() is not None:
            break
        time.sleep(0.2)
    assert p.poll() is None, "the sweep finished before it could be interrupted"
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "interrupted" in err
    rows = list(csv.DictReader(out.open()))
    assert 1 <= len(rows) < 52
    idx = [int(r["index"]) for r in rows]
    assert idx == sorted(idx) and len(set(idx)) == len(idx)
    assert all(r["status"] == "ok" and float(r["time_us"]) > 0 for r in rows)
    assert out.read_text().endswith("\n")
    assert not os.path.exists(str(out) + ".tmp")


def test_sigterm_keeps_finished_rows_written_as_they_finished(tmp_path):
    """SIGTERM is handled as Ctrl-C (exit 143, every finished row written, the file in input order),
    and rows reach the file as they finish: the small configs are on disk while the costly first one
    (started first) is still running."""
    out = tmp_path / "sigt.csv"
    lst = tmp_path / "list.csv"
    lst.write_text("m,n,k\n8192,8192,32768\n" + "256,256,256\n" * 12)
    p = subprocess.Popen([sys.executable, "-m", "wsim", "sweep", "--configs", str(lst), "--workers", "2",
                          "--out", str(out), "--no-progress"], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    seen: list[int] = []
    while time.time() < deadline and p.poll() is None:
        if out.exists():
            seen = [int(r["index"]) for r in csv.DictReader(io.StringIO(out.read_text())) if r.get("wall_s")]
            if len(seen) >= 3:
                break
        time.sleep(0.05)
    assert p.poll() is None, "the sweep finished before it could be stopped"
    assert len(seen) >= 3 and 0 not in seen, seen      # on disk, though row 0 has not finished
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 143, err
    assert "terminated" in err and str(out) in err
    rows = list(csv.DictReader(out.open()))
    idx = [int(r["index"]) for r in rows]
    assert set(seen) <= set(idx) and idx == sorted(idx) and 0 not in idx
    assert all(r["status"] == "ok" for r in rows)
    assert out.read_text().endswith("\n") and not os.path.exists(str(out) + ".tmp")


def test_ray_backend_same_rows():
    ray = pytest.importorskip("ray")
    # Ray removed local_mode (2.x): a one-node local Ray instance started here stands in for it.
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        cfgs = small_configs()[:3]
        got = run_sweep(cfgs, B200, backend="ray", progress=False)
        want = run_sweep(cfgs, B200, backend="serial", progress=False)
        assert fingerprint(got) == fingerprint(want)
    finally:
        ray.shutdown()
