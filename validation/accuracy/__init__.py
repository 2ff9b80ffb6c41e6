"""``wsim accuracy``: every committed measurement re-simulated on the CPU and scored, beside full-strength
baselines on the same rows (see the README's "How accurate is it?").

Modules: :mod:`.datasets` (the measured rows), :mod:`.cache` (cache keys that cannot go stale),
:mod:`.simulate` (the process pool), :mod:`.fitting` (constants made on the rows, per fold),
:mod:`.baselines` and :mod:`.nvmh` (what wsim is compared with), :mod:`.scoring`, :mod:`.evaluate`
(one data set end to end), :mod:`.report` and :mod:`.command` (the CLI).

    wsim accuracy --quick                     # a stratified subset, all cores
    wsim accuracy --out validation/results    # every row; writes accuracy.md, .json, .png
"""

from .command import add_accuracy_parser, main, run_accuracy
from .datasets import DATASETS, DataSet, Row, quick_subset
from .evaluate import DataSetResult, evaluate_dataset
from .scoring import Score, spearman

__all__ = ["add_accuracy_parser", "run_accuracy", "main", "DATASETS", "DataSet", "Row", "quick_subset",
           "DataSetResult", "evaluate_dataset", "Score", "spearman"]
