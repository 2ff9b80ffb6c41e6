"""The wsim command line: results, JSON, traces, TOML files and clear errors (exit 2, one line)."""

import json
import subprocess
import sys

import pytest

from simulator.engine.trace import Trace
from wsim.cli import main


def run(args, capsys):
    rc = main(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_simulate_small_text(capsys):
    rc, out, err = run(["simulate", "--m", "512", "--n", "512", "--k", "256"], capsys)
    assert rc == 0, err
    for needle in ("predicted time", "TFLOP/s", "of the tensor-core peak", "HBM traffic", "MainloopLoad",
                   "constants used", "clc_query_latency_cycles", "[estimate]"):
        assert needle in out


def test_simulate_json(capsys):
    rc, out, _ = run(["simulate", "--m", "512", "--n", "512", "--k", "256", "--json"], capsys)
    assert rc == 0
    d = json.loads(out)
    assert d["ok"] and d["tiles_done"] == d["tiles_expected"]
    assert d["config"]["m"] == 512 and d["arch"] == "B200"
    assert {"MMA", "MainloopLoad", "Epilogue", "Sched"} <= set(d["roles"])
    assert any(c["name"] == "hbm_bytes_per_s" and c["source"] for c in d["constants"])


def test_trace_file(tmp_path, capsys):
    path = tmp_path / "run.npz"
    rc, out, _ = run(["simulate", "--m", "512", "--n", "512", "--k", "128", "--trace", str(path),
                      "--trace-sms", "0-3"], capsys)
    assert rc == 0 and path.exists()
    tr = Trace.load(path)
    assert tr.meta["source"] == "simulated"
    assert set(tr.columns()["sm"].tolist()) <= {0, 1, 2, 3}


def test_toml_config(tmp_path, capsys):
    f = tmp_path / "cfg.toml"
    f.write_text('[config]\nm = 640\nn = 512\nk = 256\ntile_scheduler = "static"\n'
                 '[arch]\nclc_query_latency_cycles = 800\n')
    rc, out, _ = run(["simulate", "--config", str(f), "--json"], capsys)
    assert rc == 0
    d = json.loads(out)
    assert d["config"]["m"] == 640 and d["config"]["tile_scheduler"] == "static"
    clc = [c for c in d["constants"] if c["name"] == "clc_query_latency_cycles"][0]
    assert clc["value"] == 800 and clc["kind"] == "override"


def test_deadlock_exit_code_and_report(capsys):
    rc, out, _ = run(["simulate", "--m", "512", "--n", "512", "--k", "256",
                      "--producer-start-phase", "mainloop=0"], capsys)
    assert rc == 3
    assert "DEADLOCK" in out and "mainloop.empty" in out and "wait-for cycle" in out


@pytest.mark.parametrize("args,needle", [
    (["simulate", "--k", "500"], "k=500"),
    (["simulate", "--cluster-m", "32"], "cluster_m*cluster_n=32 > 16"),
    (["simulate", "--arrival-count", "foo.bar=3"], "'foo.bar'"),
    (["simulate", "--arch-set", "nope=3"], "'nope'"),
    (["simulate", "--tile-m", "128"], "--tile-m=128: not a field of Sm100GemmConfig"),
    (["simulate", "--arch", "a100"], "a100"),
    (["simulate", "--config", "/no/such.toml"], "/no/such.toml"),
    (["simulate", "--mma-tile-n", "250"], "mma_tile_n=250"),
])
def test_bad_input_is_one_clear_line(args, needle, capsys):
    rc, out, err = run(args, capsys)
    assert rc == 2
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_console_script_runs():
    p = subprocess.run([sys.executable, "-m", "wsim", "simulate", "--m", "256", "--n", "256", "--k", "128"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "predicted time" in p.stdout


def test_the_wsim_command_is_the_entry_package(capsys):
    """``wsim`` (the console script and ``python -m wsim``) is wsim.cli: the simulator's sub-commands
    beside validation's; simulator.views.cli, which never imports validation, has the simulator's."""
    from pathlib import Path

    from simulator.views import cli as simulator_cli
    from wsim import cli as wsim_cli
    text = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert 'wsim = "wsim.cli:main"' in text and '"wsim*"' in text
    assert set(simulator_cli.COMMANDS) == {"simulate", "plot", "sweep", "tune", "check"}
    assert set(wsim_cli.COMMANDS) == set(simulator_cli.COMMANDS) | {"validate", "accuracy"}
    p = subprocess.run([sys.executable, "-m", "wsim", "--help"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "{simulate,check,plot,sweep,tune,validate,accuracy}" in p.stdout


def test_validate_bad_file_is_one_line(tmp_path, capsys):
    f = tmp_path / "x.npz"
    f.write_text("not a trace")
    rc, _, err = run(["validate", str(f)], capsys)
    assert rc == 2 and "not a trace file" in err and len(err.strip().splitlines()) == 1


def test_argparse_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["simulate", "--m", "abc"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "invalid int value: 'abc'" in err and len(err.strip().splitlines()) == 1
