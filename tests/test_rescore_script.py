"""scripts/rescore.sh: one command per model-dependent result file, none forgotten."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "validation" / "results"
SCRIPT = ROOT / "scripts" / "rescore.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _listed() -> dict[str, str]:
    out = subprocess.run(["bash", str(SCRIPT), "--list"], capture_output=True, text=True, check=True).stdout
    return dict(line.split(": ", 1) for line in out.splitlines())


def test_every_committed_accuracy_report_and_simulated_check_has_its_step():
    cmds = " ".join(_listed().values())
    outs = set(re.findall(r"--out (\S+)", cmds))
    for acc in RESULTS.rglob("accuracy.json"):
        assert str(acc.parent.relative_to(ROOT)) in outs, f"{acc}: no step writes it"
    simulated = ["streamk_check.md", "ragged_n_check.md", "small_m_check.md", "tune_check.md", "tune_check_b200.md",
                 "h200_fixup_traces.md", "h100_fixup_traces.md", "fixup_contention.md", "h200_mainloop_replay.md",
                 "check_catalogue.md", "small_m_rates.md"]
    for name in simulated:
        assert (RESULTS / name).exists(), name
        header = (RESULTS / name).read_text()[:2000]
        cmd = re.search(r"by `((?:python|wsim)[^`]*)`", header) or re.search(r"`(python[^`]*)`", header)
        assert cmd, f"{name}: names no command"
        words = cmd.group(1).replace("wsim ", "-m wsim ").replace("python ", "").split()
        assert any(all(w in listed.split() for w in words if not w.isdigit()) for listed in _listed().values()), \
            f"{name}: `{cmd.group(1)}` is not a step"


def test_an_unknown_step_is_refused_by_name():
    r = subprocess.run(["bash", str(SCRIPT), "nope"], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown step 'nope'" in r.stderr and "streamk_nd" in r.stderr
