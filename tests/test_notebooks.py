"""The notebooks are thin: their code cells run as a script on a CPU."""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_is_a_notebook():
    assert NOTEBOOKS


def test_quickstart_cells_run():
    nb = json.loads(NOTEBOOKS[0].read_text())
    src = "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    # Shrink the problems so the test stays quick; the cells are otherwise run as written.
    src = src.replace("m=4096, n=4096, k=4096", "m=1024, n=1024, k=512")
    namespace: dict = {}
    exec(compile(src, str(NOTEBOOKS[0]), "exec"), namespace)  # noqa: S102 - running our own notebook
    assert namespace["res"].ok
    assert namespace["bad"].violation_count > 0
