"""The notebooks run as a user runs them: each notebooks/*.ipynb executed unchanged by a Jupyter kernel
(nbclient) on a CPU, in a scratch folder; stored without outputs; every figure shown inline as one PNG;
each within its time budget."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
#: Each notebook: the figures it draws, and text its outputs must contain (what each step answers).
NOTEBOOKS = {
    "1_simulate_schedules": (1, ["predicted time", "predicted power", "bottleneck", "tensor core", "best:",
                                 "DEADLOCK at cycle", "PROTOCOL VIOLATIONS"]),
    "2_pipeline_timelines": (4, ["1 stage:", "with 32 late", "format problems: none"]),
    "3_validate_on_gpu": (7, ["all rows", "roofline, own intercept", "short rounds:", "fast limit:", "tile order:",
                          "[dry run]"]),
    "4_check_a_protocol_change": (1, ["seed protocol: no effect", "RACE+DEADLOCK", "the committed outcome: True"]),
}
#: Wall-clock budget of one notebook on a 2-core machine (seconds).
BUDGET_S = 180


def test_every_notebook_is_tested_and_stored_without_outputs():
    nbformat = pytest.importorskip("nbformat", reason="the test extras install nbformat")
    assert sorted(p.stem for p in NOTEBOOKS_DIR.glob("*.ipynb")) == sorted(NOTEBOOKS)
    for name in NOTEBOOKS:
        nb = nbformat.read(NOTEBOOKS_DIR / f"{name}.ipynb", as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, (name, cell.source[:60])


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_notebook_runs_and_shows_its_figures(name, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="the test extras install nbformat")
    nbclient = pytest.importorskip("nbclient", reason="the test extras install nbclient")
    pytest.importorskip("ipykernel", reason="the test extras install ipykernel")
    # A user's kernel has no MPLBACKEND: the inline backend must be the one that draws.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    figures, texts = NOTEBOOKS[name]
    nb = nbformat.read(NOTEBOOKS_DIR / f"{name}.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=BUDGET_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    t0 = time.perf_counter()
    client.execute()       # raises CellExecutionError (with the cell and its traceback) if a cell fails
    wall = time.perf_counter() - t0
    print(f"{name}: {wall:.1f} s")

    images = []
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
        shown = [o for o in cell.outputs if o.output_type in ("display_data", "execute_result")
                 and any(k.startswith("image/") for k in o.get("data", {}))]
        assert len(shown) <= 1, (cell.source, len(shown))          # a figure is drawn once
        for o in shown:
            assert "image/png" in o["data"], (cell.source, list(o["data"]))
            assert o["data"]["image/png"].startswith("iVBOR")       # base64 of the PNG signature
        images += shown
    assert len(images) == figures
    text = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                   for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    for t in texts:
        assert t in text, t
    assert wall < BUDGET_S
