"""Which arch and which constants produced a set of predictions, for results that do not carry the
whole constants table (``wsim tune`` and ``wsim sweep``: their printed tables and result files).

* :func:`arch_provenance`: a JSON-ready mapping: the arch name, its SM version, the clock (GHz and how
  it was chosen), every overridden constant, every ``fitted``, ``chosen`` and ``estimate`` constant
  with its value and source, and the whole table (every constant: value, unit, kind, source);
* :func:`provenance_lines`: the same as a short text block (names, values, units; the sources are in
  the mapping and in ``wsim simulate``'s constants table).

A ``fitted`` constant was fitted to measured rows, a ``chosen`` one was chosen while looking at the
rows that score the model (``[chosen on scored rows]``), and an ``estimate`` is a number nobody has
published or measured: a reader of a ranking should see all three, and any override, beside it.
"""

from __future__ import annotations

from simulator.machine.arch import ArchSpec
from simulator.machine.clocks import clock_label
from simulator.machine.constants import Constant

#: Kinds of constant listed by name in the header block (the others are in the full table).
LISTED_KINDS = ("override", "fitted", "chosen", "estimate")
#: The mapping's key and the header block's label of each listed kind.
_KEYS = ("overrides", "fitted", "chosen", "estimates")
_LABELS = ("overrides", "[fitted]", "[chosen on scored rows]", "[estimate]")


def _entry(c: Constant) -> dict:
    return {"name": c.name, "value": c.value, "unit": c.unit, "kind": c.kind, "source": c.source}


def arch_provenance(arch: ArchSpec, clock: str | None = None) -> dict:
    """The arch and constants behind a set of predictions, as a JSON-ready mapping (see the module doc).
    ``clock`` "predicted": every row ran at its own predicted clock; the power model's constants are
    listed too (``power_model``, and its fitted and estimated ones among the others)."""
    consts = list(arch.constants())
    out: dict = {"arch": arch.name, "sm_version": arch.sm_version, "clock_ghz": arch.clock_ghz.value,
                 "clock": clock_label(arch)}
    if clock == "predicted":
        from simulator.machine.power import power_model_for
        model = power_model_for(arch.name)
        out["clock_ghz"] = None
        out["clock"] = (f"predicted per config by the {model.name} power model (limit {model.limit_w.value:g} W, "
                        f"at most {model.max_clock_ghz.value:g} GHz; each row's clock_ghz and power_w)")
        out["power_model"] = [_entry(c) for c in model.constants()]
        consts += list(model.constants())
    for kind, key in zip(LISTED_KINDS, _KEYS, strict=True):
        out[key] = [_entry(c) for c in consts if c.kind == kind]
    out["constants"] = [_entry(c) for c in arch.constants()]
    return out


def _origin(source: str) -> str:
    """Who overrode a constant, in a word or two (``--arch-set``, ``[arch] in f.toml``, ``sustained``)."""
    return source.split(" (was ")[0].split(";")[0].split(":")[0]


def _value(c: dict) -> str:
    return f"{c['name']} = {c['value']:g} {c['unit']}"


def provenance_lines(prov: dict, width: int = 110) -> list[str]:
    """:func:`arch_provenance`'s mapping as a header block: one labelled group per line, wrapped
    between constants (never inside one) at ``width`` characters."""
    lines = [f"arch       {prov['arch']} (SM{prov['sm_version']}), clock {prov['clock']}"]
    for key, label in zip(_KEYS, _LABELS, strict=True):
        items = [_value(c) + (f" ({_origin(c['source'])})" if key == "overrides" else "")
                 for c in prov[key]] or ["none"]
        line = f"{label:<11}"
        for i, item in enumerate(items):
            text = item + (";" if i + 1 < len(items) else "")
            if len(line) + 1 + len(text) > width and line.strip() not in ("", label):
                lines.append(line)
                line = " " * 11
            line += ("" if line.endswith(" ") else " ") + text
        lines.append(line)
    lines.append(" " * 11 + "(sources: \"constants\" in a .json output, NAME.constants.json beside a .csv/.jsonl, "
                 "wsim simulate)")
    return lines


__all__ = ["arch_provenance", "provenance_lines", "LISTED_KINDS"]
