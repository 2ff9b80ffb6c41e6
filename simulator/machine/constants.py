"""Named, sourced model constants.

Every number the model uses to turn work into time is a :class:`Constant`: it has a name, a unit,
a value and the source it came from, and is printed with every result that used it. Sources are
one of :data:`SOURCE_KINDS`; an ``estimate`` is a number nobody has published or measured yet and
is said to be one wherever it is printed; a ``fitted`` constant was fitted to measured rows, and its
source names the rows and its cross-validated error (``wsim accuracy``); a ``chosen`` constant was
chosen, or derived, while looking at the measured rows that score the model (not a fit, not
cross-validated), and its source names those rows. Printed, a kind reads as :attr:`Constant.label`
(``chosen``: "chosen on scored rows").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

SOURCE_KINDS = ("datasheet", "paper", "microbenchmark", "measured-here", "cutlass", "estimate", "fitted",
                "chosen", "override")
#: How a kind is printed, where the word alone would say less than it is (``[chosen on scored rows]``).
KIND_LABELS = {"chosen": "chosen on scored rows"}


@dataclass(frozen=True, slots=True)
class Constant:
    name: str
    value: float
    unit: str
    source: str
    kind: str = "datasheet"

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise ValueError(f"Constant {self.name}: source kind {self.kind!r} is not one of {SOURCE_KINDS}")

    @property
    def label(self) -> str:
        """The kind as printed: ``"chosen on scored rows"`` for ``chosen``, else the kind itself."""
        return KIND_LABELS.get(self.kind, self.kind)

    def overridden(self, value: float, origin: str = "user override") -> Constant:
        return replace(self, value=float(value), source=f"{origin} (was {self.value:g}: {self.source})",
                       kind="override")

    def row(self) -> tuple[str, str, str, str]:
        """(name, value with unit, kind as printed, source), for printing tables."""
        return (self.name, f"{self.value:g} {self.unit}", self.label, self.source)
