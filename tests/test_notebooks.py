"""The notebook runs as a user runs it: the real notebooks/quickstart.ipynb executed by a Jupyter
kernel (nbclient), unchanged, on a CPU; each cell that draws a figure shows it as an image."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "quickstart.ipynb"


def _figure_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code" and any(name in c.source for name in
                                                                 ("plot_overview(", "plot_compare(", "plot_timeline("))]


def test_quickstart_notebook_executes_and_shows_its_figures(monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="the test extras install nbformat")
    nbclient = pytest.importorskip("nbclient", reason="the test extras install nbclient")
    pytest.importorskip("ipykernel", reason="the test extras install ipykernel")
    # A user's kernel has no MPLBACKEND: the inline backend must be the one that draws.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()       # raises CellExecutionError (with the cell and its traceback) if a cell fails

    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
    figure_cells = _figure_cells(nb)
    assert len(figure_cells) == 2, [c.source for c in figure_cells]
    for cell in figure_cells:
        images = [o for o in cell.outputs if "image/png" in o.get("data", {})]
        assert len(images) == 1, (cell.source, [o.get("data", {}).keys() for o in cell.outputs])
        assert images[0]["data"]["image/png"].startswith("iVBOR")   # base64 of the PNG signature
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "predicted time" in text                       # the simulation's report
    assert "DEADLOCK" in text or "arrived for phase" in text   # the what-if's finding
    assert "best:" in text                                # simulator.tune's ranked table
    assert "tile order:" in text                          # the comparison with the H200 run
