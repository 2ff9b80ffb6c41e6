"""docs/plots.md as written: every `wsim plot` command of its command block and its Python example
run on a small simulated trace (the docs' own 8192^3 trace is replaced by a 4096x4096x1024 one)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from simulator.engine import simulate
from simulator.kernels.sm100_config import Sm100GemmConfig
from wsim.cli import main

DOC = Path(__file__).resolve().parent.parent / "docs" / "plots.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("docs")
    for name, stages in (("run.npz", None), ("a.npz", None), ("b.npz", 3), ("run3.npz", 3)):
        cfg = Sm100GemmConfig(m=4096, n=4096, k=1024, mainloop_stages=stages)
        simulate(cfg, trace=True, trace_sms=range(4)).trace.save(d / name)
    return d


def _commands() -> list[str]:
    lines = [ln.split("#")[0].strip() for ln in _blocks("sh")[0].splitlines()]
    return [ln for ln in lines if ln.startswith("wsim plot")]


def test_the_doc_has_commands():
    cmds = _commands()
    assert len(cmds) >= 7 and any("--what occupancy" in c for c in cmds)


@pytest.mark.parametrize("command", _commands())
def test_doc_command_runs(command, workdir, monkeypatch, capsys):
    monkeypatch.chdir(workdir)
    argv = shlex.split(command)[1:]
    if "--m" in argv:        # the doc's "simulate first" example: keep the simulation small
        argv[argv.index("--k") + 1] = "512"
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 0, err


def test_doc_python_example_runs(workdir, monkeypatch, capsys):
    monkeypatch.chdir(workdir)
    code = _blocks("python")[0]
    exec(compile(code, str(DOC), "exec"), {})  # noqa: S102 - our own documentation
    for name in ("tl.png", "occ.png", "stalls.png", "cmp.png", "overview.png", "run.json"):
        assert (workdir / name).stat().st_size > 0, name
    assert "MainloopLoad" in capsys.readouterr().out
