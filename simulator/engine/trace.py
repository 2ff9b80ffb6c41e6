"""The one trace format shared by the simulator and the measured kernels.

A trace is a table of spans. Each row is one thing one warp role of one CTA did or waited for:

    sm, cta, cluster, role, kind, tile_m, tile_n, tile_l, k_block, stage, start_ns, end_ns,
    start_cycle, end_cycle, barrier

* ``role`` is the seed's warp-role name (``MMA``, ``Sched``, ``MainloopLoad``, ``EpilogueLoad``,
  ``Epilogue`` for SM100; ``MainloopLoad``, ``EpilogueLoad``, ``Consumer0``, ``Consumer1`` for SM90).
* ``kind`` is one of :data:`KINDS`. A ``wait`` span names the barrier it waited on in ``barrier``
  (``"<pipeline>.<full|empty>"`` for pipelines, the barrier's name otherwise).
* Integer fields that do not apply are ``-1``; cycles that are not known are ``nan``.
* Times are nanoseconds from the start of the kernel (the earliest record), cycles are SM cycles
  on the same origin.

Rows are appended with :meth:`Trace.add` (cheap: one tuple append) and turned into numpy columns
on demand. A trace carries ``meta``: where it came from (``source`` = ``"simulated"`` or
``"measured"``), the architecture, the config, the model constants used, the clock that converts
cycles to nanoseconds, and for measured traces the device, driver and DSL version.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: Every span kind the simulator and the instrumented kernels emit.
KINDS: tuple[str, ...] = (
    "tma_load",     # mainloop TMA load of one K-block: issue -> all bytes landed (full barrier phase done)
    "mma",          # one K-block of tensor-core work: issue -> completion
    "epi_load",     # TMA load of one C subtile: issue -> landed
    "epilogue",     # one epilogue subtile: accumulator -> registers -> convert -> SMEM -> TMA store issued
    "tma_store",    # TMA store of one D subtile: issue -> bytes written
    "clc_query",    # CLC try_cancel: issue -> 16 B response landed
    "wait",         # a role blocked on a barrier (``barrier`` names it)
    "tile",         # a role's whole span of work on one output tile
    "acc_handoff",  # instant: MMA committed an accumulator stage to the epilogue
    "prologue",     # a role's start-up (barrier init, TMEM allocation, descriptor prefetch)
    "fixup_store",  # stream-K / split-K: the first split's partial accumulators stored to the workspace + arrive
    "fixup_reduce",  # a middle split's partials added into the workspace (atomics) + arrive
    "fixup_load",   # the final split loads the workspace and adds it to its accumulators (then the epilogue)
)

COLUMNS: tuple[str, ...] = (
    "sm", "cta", "cluster", "role", "kind", "tile_m", "tile_n", "tile_l", "k_block", "stage",
    "start_ns", "end_ns", "start_cycle", "end_cycle", "barrier",
)
_INT_COLUMNS = ("sm", "cta", "cluster", "tile_m", "tile_n", "tile_l", "k_block", "stage")
_FLOAT_COLUMNS = ("start_ns", "end_ns", "start_cycle", "end_cycle")
_STR_COLUMNS = ("role", "kind", "barrier")


@dataclass(frozen=True, slots=True)
class Span:
    """One row of a trace, as a value (for tests and small traces; bulk data stays columnar)."""

    sm: int
    cta: int
    cluster: int
    role: str
    kind: str
    tile_m: int
    tile_n: int
    tile_l: int
    k_block: int
    stage: int
    start_ns: float
    end_ns: float
    start_cycle: float
    end_cycle: float
    barrier: str

    @property
    def duration_ns(self) -> float:
        return self.end_ns - self.start_ns


class TraceFormatError(ValueError):
    """A trace file or row that does not follow the shared format."""


class Trace:
    """A table of spans plus metadata.

    ``clock_ghz`` converts between cycles and nanoseconds. The simulator records in cycles and
    fills nanoseconds from it; measured traces carry both (``%globaltimer`` and ``clock64``).
    """

    def __init__(self, meta: dict[str, Any] | None = None, clock_ghz: float | None = None):
        self.meta: dict[str, Any] = dict(meta or {})
        if clock_ghz is not None:
            self.meta["clock_ghz"] = float(clock_ghz)
        self._rows: list[tuple] = []
        self._cols: dict[str, np.ndarray] | None = None
        self._rows_stale = False   # True when _cols holds data that _rows does not
        # Counter samples: (sm, name, time_cycle, time_ns, value); sm = -1 for device-wide counters
        # such as HBM bandwidth in use. A counter holds its value until its next sample.
        self._counters: list[tuple] = []

    # -- building ---------------------------------------------------------------------------
    def add(self, sm: int, cta: int, cluster: int, role: str, kind: str, start_cycle: float,
            end_cycle: float, *, tile: tuple[int, int, int] | None = None, k_block: int = -1,
            stage: int = -1, barrier: str = "") -> None:
        """Append a span measured in cycles (the simulator's unit); nanoseconds follow from the clock."""
        if self._rows_stale:
            self._materialize_rows()
        tm, tn, tl = tile if tile is not None else (-1, -1, -1)
        self._rows.append((sm, cta, cluster, role, kind, tm, tn, tl, k_block, stage,
                           None, None, float(start_cycle), float(end_cycle), barrier))
        self._cols = None

    def add_ns(self, sm: int, cta: int, cluster: int, role: str, kind: str, start_ns: float,
               end_ns: float, *, start_cycle: float = float("nan"), end_cycle: float = float("nan"),
               tile: tuple[int, int, int] | None = None, k_block: int = -1, stage: int = -1,
               barrier: str = "") -> None:
        """Append a span measured in nanoseconds (measured traces), cycles optional."""
        if self._rows_stale:
            self._materialize_rows()
        tm, tn, tl = tile if tile is not None else (-1, -1, -1)
        self._rows.append((sm, cta, cluster, role, kind, tm, tn, tl, k_block, stage,
                           float(start_ns), float(end_ns), float(start_cycle), float(end_cycle), barrier))
        self._cols = None

    def add_counter(self, sm: int, name: str, value: float, *, cycle: float | None = None,
                    ns: float | None = None) -> None:
        """Append a counter sample (e.g. ``"mainloop.stages_full"`` on one SM, ``"hbm_gbps"`` on sm -1)."""
        if cycle is None and ns is None:
            raise TraceFormatError(f"counter {name!r}: give cycle= or ns=")
        if ns is None:
            clk = self.clock_ghz
            if clk is None:
                raise TraceFormatError("counters recorded in cycles need meta['clock_ghz']")
            ns = cycle / clk
        self._counters.append((int(sm), name, float("nan") if cycle is None else float(cycle), float(ns),
                               float(value)))

    def counters(self) -> dict[str, np.ndarray]:
        """Counter samples as columns ``sm, name, cycle, ns, value`` (in insertion order)."""
        c = self._counters
        return {
            "sm": np.asarray([r[0] for r in c], dtype=np.int64),
            "name": np.asarray([r[1] for r in c], dtype=str) if c else np.asarray([], dtype=str),
            "cycle": np.asarray([r[2] for r in c], dtype=np.float64),
            "ns": np.asarray([r[3] for r in c], dtype=np.float64),
            "value": np.asarray([r[4] for r in c], dtype=np.float64),
        }

    def extend_rows(self, rows: Iterable[tuple]) -> None:
        if self._rows_stale:
            self._materialize_rows()
        for r in rows:
            if len(r) != len(COLUMNS):
                raise TraceFormatError(f"row has {len(r)} fields, the format has {len(COLUMNS)}: {r!r}")
            self._rows.append(tuple(r))
        self._cols = None

    # -- reading ----------------------------------------------------------------------------
    @property
    def clock_ghz(self) -> float | None:
        c = self.meta.get("clock_ghz")
        return None if c is None else float(c)

    def __len__(self) -> int:
        return len(self._rows) if self._cols is None else len(self._cols["sm"])

    def _materialize_rows(self) -> None:
        """Rows from columns (only needed before appending to a trace that was loaded as columns)."""
        if self._cols is not None and self._rows_stale:
            cols = self._cols
            self._rows = [tuple(r) for r in zip(*(cols[c].tolist() for c in COLUMNS), strict=True)]
            self._rows_stale = False

    def columns(self) -> dict[str, np.ndarray]:
        """The trace as numpy columns (cached until the next append)."""
        if self._cols is not None:
            return self._cols
        rows = self._rows
        cols: dict[str, np.ndarray] = {}
        if rows:
            fields = list(zip(*rows, strict=True))
        else:
            fields = [() for _ in COLUMNS]
        for name, values in zip(COLUMNS, fields, strict=True):
            if name in _INT_COLUMNS:
                cols[name] = np.asarray(values, dtype=np.int64)
            elif name in _STR_COLUMNS:
                cols[name] = np.asarray(values, dtype=object).astype(str) if values else np.asarray([], dtype=str)
            else:
                cols[name] = np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
        clk = self.clock_ghz
        ns_missing = np.isnan(cols["start_ns"])
        if ns_missing.any():
            if clk is None:
                raise TraceFormatError("spans recorded in cycles need meta['clock_ghz'] to give nanoseconds")
            cols["start_ns"][ns_missing] = cols["start_cycle"][ns_missing] / clk
            cols["end_ns"][ns_missing] = cols["end_cycle"][ns_missing] / clk
        self._cols = cols
        # The rows are rebuilt from the columns (with nanoseconds filled) only if someone appends.
        self._rows_stale = bool(rows)
        return cols

    def spans(self) -> Iterator[Span]:
        cols = self.columns()
        lists = [cols[c].tolist() for c in COLUMNS]
        for row in zip(*lists, strict=True):
            yield Span(*row)

    @classmethod
    def from_columns(cls, meta: dict[str, Any], columns: dict[str, np.ndarray],
                     counters: Iterable[tuple] = ()) -> Trace:
        """A trace over existing numpy columns (one array per name in :data:`COLUMNS`)."""
        out = cls(meta)
        out._cols = {c: columns[c] for c in COLUMNS}
        out._rows_stale = True
        out._counters = list(counters)
        return out

    def with_columns(self, **replaced: np.ndarray) -> Trace:
        """A new trace with some columns replaced (same metadata and counters)."""
        bad = [k for k in replaced if k not in COLUMNS]
        if bad:
            raise TraceFormatError(f"no column(s) {bad}; columns are {COLUMNS}")
        return Trace.from_columns(self.meta, {**self.columns(), **replaced}, self._counters)

    def select(self, mask: np.ndarray) -> Trace:
        """A new trace holding the rows where ``mask`` is true (same metadata)."""
        cols = self.columns()
        return Trace.from_columns(self.meta, {c: cols[c][mask] for c in COLUMNS}, self._counters)

    def where(self, **equal: Any) -> Trace:
        """Rows whose columns equal the given values, e.g. ``trace.where(role="MMA", kind="wait")``."""
        cols = self.columns()
        mask = np.ones(len(self), dtype=bool)
        for k, v in equal.items():
            if k not in cols:
                raise TraceFormatError(f"no column {k!r}; columns are {COLUMNS}")
            mask &= cols[k] == v
        return self.select(mask)

    @property
    def duration_ns(self) -> float:
        cols = self.columns()
        if len(self) == 0:
            return 0.0
        return float(cols["end_ns"].max() - cols["start_ns"].min())

    # -- files ------------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the columnar file (``.npz``: one array per column plus ``meta`` as JSON)."""
        path = Path(path)
        cols = self.columns()
        ctr = {f"counter_{k}": v for k, v in self.counters().items()}
        np.savez_compressed(path, meta=np.asarray(json.dumps(self.meta, default=_json_default)),
                            **{k: v for k, v in cols.items()}, **ctr)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Trace:
        """Read a ``.npz`` trace written by :meth:`save`; anything else (a missing, empty, truncated
        or binary file, a Perfetto JSON file, a file with missing or inconsistent columns) is a
        one-line :class:`TraceFormatError` naming the file and what is wrong."""
        path = Path(path)
        head = check_trace_file(path)
        if not head.startswith(b"PK"):
            raise TraceFormatError(f"{path}: not a trace file (a trace is the .npz archive that Trace.save or "
                                   f"`wsim simulate --trace FILE.npz` writes){_json_hint(head)}")
        try:
            with np.load(path, allow_pickle=False) as data:
                files = set(data.files)
                missing = [c for c in (*COLUMNS, "meta") if c not in files]
                if missing:
                    raise TraceFormatError(f"{path}: missing columns {missing}; a trace has {COLUMNS} and meta")
                raw = {k: data[k] for k in (*COLUMNS, "meta", *(f"counter_{c}" for c in _COUNTER_COLUMNS))
                       if k in files}
        except TraceFormatError:
            raise
        except Exception as e:  # noqa: BLE001 - untrusted bytes: numpy/zipfile raise many kinds (even TokenError)
            first = (str(e).splitlines() or [""])[0]
            raise TraceFormatError(f"{path}: not a readable trace file (truncated or corrupt .npz: "
                                   f"{type(e).__name__}: {first})") from None
        meta = _parse_meta(path, raw["meta"])
        cols = _check_columns(path, raw)
        counters = _check_counters(path, raw)
        return cls.from_columns(meta, cols, counters)


_COUNTER_COLUMNS = ("sm", "name", "cycle", "ns", "value")


def check_trace_file(path: Path) -> bytes:
    """The first bytes of ``path``, after checking that it is a non-empty readable file."""
    if path.is_dir():
        raise TraceFormatError(f"{path}: is a directory, not a trace file")
    if not path.exists():
        raise TraceFormatError(f"{path}: no such file")
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError as e:
        raise TraceFormatError(f"{path}: cannot be read ({e.strerror or e})") from None
    if not head:
        raise TraceFormatError(f"{path}: is empty (0 bytes), not a trace file")
    return head


def _json_hint(head: bytes) -> str:
    if head.lstrip()[:1] in (b"{", b"["):
        return ("; this looks like JSON, e.g. a Perfetto/Chrome trace for ui.perfetto.dev, which wsim writes "
                "but does not read back: plot the .npz trace instead (wsim simulate --trace run.npz)")
    if head[:2] == b"\x1f\x8b":
        return "; this is gzip data, e.g. a .json.gz Perfetto trace, which wsim writes but does not read back"
    return ""


def _parse_meta(path: Path, arr: np.ndarray) -> dict[str, Any]:
    if arr.ndim != 0 or arr.dtype.kind != "U":
        raise TraceFormatError(f"{path}: meta must be one JSON string, got an array of shape {arr.shape} "
                               f"({arr.dtype})")
    try:
        meta = json.loads(str(arr))
    except ValueError as e:
        raise TraceFormatError(f"{path}: meta is not valid JSON ({e})") from None
    if not isinstance(meta, dict):
        raise TraceFormatError(f"{path}: meta must be a JSON object, got {type(meta).__name__}")
    clk = meta.get("clock_ghz")
    if clk is not None and (isinstance(clk, bool) or not isinstance(clk, (int, float)) or not clk > 0
                            or not np.isfinite(clk)):
        raise TraceFormatError(f"{path}: meta clock_ghz={clk!r}: must be a positive number")
    return meta


def _check_columns(path: Path, raw: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    cols: dict[str, np.ndarray] = {}
    n = None
    for c in COLUMNS:
        a = raw[c]
        if a.ndim != 1:
            raise TraceFormatError(f"{path}: column {c!r} has shape {a.shape}; columns are one-dimensional")
        if n is None:
            n = len(a)
        elif len(a) != n:
            raise TraceFormatError(f"{path}: column {c!r} has {len(a)} rows, column 'sm' has {n}")
        kind = a.dtype.kind
        if c in _STR_COLUMNS:
            if len(a) and kind != "U":
                raise TraceFormatError(f"{path}: column {c!r} holds {a.dtype}; expected strings")
            a = a.astype(str)
        elif c in _INT_COLUMNS:
            if len(a) and kind not in "iu":
                raise TraceFormatError(f"{path}: column {c!r} holds {a.dtype}; expected integers")
            a = a.astype(np.int64)
        else:
            if len(a) and kind not in "fiu":
                raise TraceFormatError(f"{path}: column {c!r} holds {a.dtype}; expected numbers")
            a = a.astype(np.float64)
        cols[c] = a
    bad = sorted(set(np.unique(cols["kind"]).tolist()) - set(KINDS))
    if bad:
        raise TraceFormatError(f"{path}: unknown span kind {bad[0]!r}; kinds are {', '.join(KINDS)}")
    start, end = cols["start_ns"], cols["end_ns"]
    finite = np.isfinite(start) & np.isfinite(end)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        raise TraceFormatError(f"{path}: row {i}: start_ns/end_ns = {start[i]}/{end[i]}: span times must be finite")
    backwards = end < start
    if backwards.any():
        i = int(np.flatnonzero(backwards)[0])
        raise TraceFormatError(f"{path}: row {i}: ends at {end[i]} ns, before it starts ({start[i]} ns)")
    if n and cols["sm"].min() < 0:
        i = int(np.argmin(cols["sm"]))
        raise TraceFormatError(f"{path}: row {i}: sm={cols['sm'][i]}: SM numbers are >= 0")
    return cols


def _check_counters(path: Path, raw: dict[str, np.ndarray]) -> list[tuple]:
    present = [c for c in _COUNTER_COLUMNS if f"counter_{c}" in raw]
    if not present:
        return []
    if len(present) != len(_COUNTER_COLUMNS):
        missing = [c for c in _COUNTER_COLUMNS if c not in present]
        raise TraceFormatError(f"{path}: counter columns {['counter_' + c for c in missing]} are missing")
    arrs = {c: raw[f"counter_{c}"] for c in _COUNTER_COLUMNS}
    lengths = {c: (a.shape, a.dtype.kind) for c, a in arrs.items()}
    if any(a.ndim != 1 for a in arrs.values()) or len({a.shape for a in arrs.values()}) != 1:
        raise TraceFormatError(f"{path}: counter columns differ in shape: {lengths}")
    expect = {"sm": "iu", "name": "U", "cycle": "fiu", "ns": "fiu", "value": "fiu"}
    for c, a in arrs.items():
        if len(a) and a.dtype.kind not in expect[c]:
            raise TraceFormatError(f"{path}: counter column 'counter_{c}' holds {a.dtype}")
    lists = [arrs[c].tolist() for c in _COUNTER_COLUMNS]
    return [tuple(r) for r in zip(*lists, strict=True)]


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if hasattr(o, "__dataclass_fields__"):
        from dataclasses import asdict
        return asdict(o)
    if isinstance(o, tuple):
        return list(o)
    return str(o)
