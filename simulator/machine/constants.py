"""Named, sourced model constants.

Every number the model uses to turn work into time is a :class:`Constant`: it has a name, a unit,
a value and the source it came from, and is printed with every result that used it. Sources are
one of :data:`SOURCE_KINDS`; an ``estimate`` is a number nobody has published or measured yet and
is said to be one wherever it is printed; a ``fitted`` constant was fitted to measured rows, and its
source names the rows and its cross-validated error (``wsim accuracy``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

SOURCE_KINDS = ("datasheet", "paper", "microbenchmark", "measured-here", "cutlass", "estimate", "fitted",
                "override")


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

    def overridden(self, value: float, origin: str = "user override") -> Constant:
        return replace(self, value=float(value), source=f"{origin} (was {self.value:g}: {self.source})",
                       kind="override")

    def row(self) -> tuple[str, str, str, str]:
        """(name, value with unit, kind, source), for printing tables."""
        return (self.name, f"{self.value:g} {self.unit}", self.kind, self.source)
