"""Many configs simulated on every core (or on Ray), one result row per config, in input order.

    rows = run_sweep(configs, arch)                   # all cores, progress bar on stderr
    rows = run_sweep(configs, arch, out="sweep.csv")  # rows written as they finish (flushed)
    rows = run_sweep(configs, arch, backend="ray")    # the same on a Ray cluster (pip install -e '.[ray]')

Each config runs in a worker process (``multiprocessing``; one simulation per task, the largest
first so that the last ones to finish are short) and comes back as a :class:`Row`: the config's
fields (resolved: derived stage counts filled in), the predicted time, TFLOP/s, the bottleneck
(:mod:`simulator.engine.bottleneck`), HBM bytes, the engine that ran, and an error message when the
config cannot run (``can_implement``, the event budget, a deadlock): such a config becomes a row
with its error, never a crash of the sweep.

Results are returned in input order whatever order they finish in. A file gets each row as soon as
it finishes (flushed, with its ``index``), so that no finished row waits on disk for a slower one
before it; when the sweep ends (done, Ctrl-C, SIGTERM in ``wsim sweep``, or any exception) the file is
closed properly and left in input order (rewritten sorted through a temporary file if rows finished
out of order). A sweep stopped half way leaves every finished row on disk; one killed outright
(SIGKILL) leaves them in the order they finished, each with its index. Formats, by file suffix:
``.csv``, ``.json`` (an object: ``"constants"``, then ``"rows"``, an array), ``.jsonl`` (one object
per line).

Every result file says which arch and constants produced it (:func:`simulator.machine.provenance.
arch_provenance`: the arch, its clock, every override, every fitted and estimated constant, and the
whole table with sources): in ``.json`` as its ``"constants"`` object; a ``.csv`` or ``.jsonl`` file
keeps one row per line and gets a sidecar, ``NAME.constants.json`` beside ``NAME.csv``
(:func:`constants_path`), written when the rows file is opened.

Ray (``backend="ray"``): the same task function as a Ray remote function; results are collected as
Ray reports them and written in input order like the local ones. ``ray_address`` (or $RAY_ADDRESS)
names an existing cluster; without one ``ray.init()`` starts a local one. Nothing here distributes
work by itself beyond ``multiprocessing`` and Ray.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import queue
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from simulator.errors import ConfigError, SimulationLimitError
from simulator.machine.provenance import arch_provenance

BACKENDS = ("process", "serial", "ray")
FORMATS = (".csv", ".json", ".jsonl")

#: Result columns of a row, after the config's fields (and before any extra columns).
RESULT_COLUMNS = ("status", "time_us", "tflops", "peak_fraction", "bottleneck", "bottleneck_detail",
                  "hbm_bytes", "hbm_read_bytes", "hbm_write_bytes", "l2_hit_rate", "tensor_core_busy",
                  "clock_ghz", "power_w", "engine", "engine_note", "error", "events", "wall_s")
#: Columns of a result file that are not config fields: a config list may hold them (a sweep's own
#: output, re-run) and :func:`load_config_list` skips them.
RESULT_FILE_COLUMNS = ("index", "arch", *RESULT_COLUMNS)


@dataclass
class Row:
    """One config's result (``status`` "ok") or why it has none (``status`` "error" and ``error``)."""

    index: int
    config: dict                        # field -> value (resolved where the config could be resolved)
    arch: str
    status: str = "ok"
    time_us: float | None = None
    tflops: float | None = None
    peak_fraction: float | None = None
    bottleneck: str = ""
    bottleneck_detail: str = ""
    hbm_bytes: int | None = None
    hbm_read_bytes: int | None = None
    hbm_write_bytes: int | None = None
    l2_hit_rate: float | None = None
    tensor_core_busy: float | None = None
    clock_ghz: float | None = None       # the SM clock the row ran at (predicted, or as given)
    power_w: float | None = None         # the predicted power (with clock="predicted")
    engine: str = ""
    engine_note: str = ""
    error: str = ""
    events: int | None = None
    wall_s: float | None = None
    extra: dict = field(default_factory=dict)   # columns a caller adds (the tuner's stage, bound, ...)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        """Flat mapping: index, arch, the config fields, the result columns, the extra columns."""
        d: dict[str, Any] = {"index": self.index, "arch": self.arch}
        d.update(self.config)
        for c in RESULT_COLUMNS:
            d[c] = getattr(self, c)
        d.update(self.extra)
        return d


def config_dict(cfg) -> dict:
    return {f.name: getattr(cfg, f.name) for f in fields(cfg)}


def _error_row(index: int, cfg, arch, message: str, wall: float = 0.0) -> Row:
    return Row(index=index, config=config_dict(cfg), arch=getattr(arch, "name", str(arch)), status="error",
               error=message, wall_s=wall)


def simulate_row(index: int, cfg, arch, sim_kwargs: dict | None = None) -> Row:
    """Simulate one config and summarise it as a Row (the task every backend runs).

    ``ConfigError`` and ``SimulationLimitError`` (and a deadlock or protocol violation) give an error
    row. Any other exception is a bug of the simulator; it too becomes an error row (prefixed
    "internal error") so that one bad config does not lose a long sweep, and the CLI reports it.
    """
    from simulator.engine.bottleneck import classify
    from simulator.engine.run import simulate

    t0 = time.perf_counter()
    try:
        res = simulate(cfg, arch, **(sim_kwargs or {}))
    except (ConfigError, SimulationLimitError) as e:
        return _error_row(index, cfg, arch, str(e), time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001 - reported in the row, see the docstring
        return _error_row(index, cfg, arch, f"internal error: {type(e).__name__}: {e}", time.perf_counter() - t0)
    wall = time.perf_counter() - t0
    row = Row(index=index, config=config_dict(res.config), arch=arch.name, time_us=res.time_ns / 1e3,
              tflops=res.tflops, peak_fraction=res.peak_fraction, hbm_bytes=res.hbm_bytes,
              hbm_read_bytes=res.hbm_read_bytes, hbm_write_bytes=res.hbm_write_bytes, l2_hit_rate=res.l2_hit_rate,
              tensor_core_busy=res.tensor_core_utilization, clock_ghz=res.arch.clock_ghz.value,
              power_w=res.clock_prediction["power_w"] if res.clock_prediction else None,
              engine=res.engine, engine_note=res.engine_note,
              events=res.events, wall_s=wall)
    if res.deadlock is not None:
        row.status = "error"
        row.error = (f"deadlock at cycle {res.deadlock.time_cycle:,.0f}: roles "
                     f"{', '.join(res.deadlock.roles)} blocked on {', '.join(res.deadlock.pipelines)}")
        return row
    if res.violation_count:
        row.status = "error"
        row.error = f"{res.violation_count} protocol violation(s), e.g. {res.violations[0] if res.violations else ''}"
        return row
    b = classify(res)
    row.bottleneck, row.bottleneck_detail = b.name, b.detail
    return row


def _task_cost(cfg) -> float:
    """A size estimate used to start the largest simulations first (0 when it cannot be computed)."""
    try:
        return float(cfg.tiles_m * cfg.tiles_n * cfg.l * cfg.k_tiles)
    except Exception:  # noqa: BLE001 - an invalid config is cheap: it fails at once
        return 0.0


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


# ------------------------------------------------------------------------------------- progress
class Progress:
    """A one-line progress bar on stderr (a line per 10% when stderr is not a terminal)."""

    def __init__(self, total: int, label: str = "sweep", stream=None, enabled: bool = True) -> None:
        self.total = max(0, total)
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and self.total > 0
        self.done = 0
        self.errors = 0
        self.t0 = time.perf_counter()
        self._last = 0.0
        self._last_decile = -1
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def set_total(self, total: int) -> None:
        self.total = max(self.total, total)
        self.enabled = self.enabled or total > 0

    def update(self, n: int = 1, error: bool = False, note: str = "") -> None:
        self.done += n
        self.errors += int(error)
        if not self.enabled:
            return
        now = time.perf_counter()
        if self._tty:
            if now - self._last < 0.1 and self.done < self.total:
                return
            self._last = now
            self.stream.write("\r" + self._line(now, note))
            self.stream.flush()
        else:
            decile = int(10 * self.done / max(1, self.total))
            if decile != self._last_decile or self.done == self.total:
                self._last_decile = decile
                self.stream.write(self._line(now, note) + "\n")
                self.stream.flush()

    def _line(self, now: float, note: str) -> str:
        frac = self.done / max(1, self.total)
        width = 24
        bar = "#" * int(width * frac) + "." * (width - int(width * frac))
        el = now - self.t0
        eta = el / frac - el if frac > 0 else math.nan
        eta_s = f", ~{eta:.0f} s left" if frac < 1 and eta == eta else ""
        err = f", {self.errors} error(s)" if self.errors else ""
        extra = f"  {note}" if note else ""
        return f"{self.label} [{bar}] {self.done}/{self.total} configs, {el:.1f} s{eta_s}{err}{extra}"

    def close(self) -> None:
        if self.enabled and self._tty:
            self.stream.write("\n")
            self.stream.flush()


# --------------------------------------------------------------------------------------- writing
def out_format(path: str) -> str:
    """The format (one of :data:`FORMATS`) a result file ``path`` is written in, from its suffix."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in FORMATS:
        raise ConfigError(f"--out {path}: unknown format {suffix or '(no suffix)'!r}; valid: {', '.join(FORMATS)}")
    return suffix


def constants_path(path: str) -> str:
    """The sidecar that says which constants produced the rows of a ``.csv``/``.jsonl`` file
    (``s.csv`` -> ``s.constants.json``)."""
    return os.path.splitext(path)[0] + ".constants.json"


class RowWriter:
    """Writes rows to ``path`` as they finish, each flushed at once with its index (see the module
    docstring); ``close()`` leaves them in index order and ends the file.

    ``columns`` fixes the CSV header (``columns_for``). A row is on disk as soon as it is added,
    whatever rows before it are still running; when rows were added out of index order, ``close()``
    rewrites the file sorted by index (a temporary file renamed over it, so the file on disk is
    always whole). ``write_all`` writes rows in the order given (a ranked table). ``constants``
    (:func:`~simulator.machine.provenance.arch_provenance` of the arch the rows were simulated on)
    goes into a ``.json`` file, or into the sidecar of a ``.csv``/``.jsonl`` file, written once the
    rows file is open (a path that cannot be written leaves no sidecar behind).
    """

    def __init__(self, path: str, columns: Sequence[str], constants: dict | None = None) -> None:
        from simulator.engine.out_path import check_output_file

        check_output_file(path, "out", FORMATS, "result rows")
        self.format = out_format(path)
        self.path = path
        self.columns = list(columns)
        self.constants = constants
        self.rows: list[Row] = []          # every row written, in the order written
        self.sorted = True                 # rows were added in index order
        self.closed = False
        self._fh: io.TextIOBase = open(path, "w", newline="")  # noqa: SIM115 - closed in close()
        self.constants_file = None
        if constants is not None and self.format != ".json":
            self.constants_file = constants_path(path)
            try:
                with open(self.constants_file, "w") as fh:
                    json.dump({"constants": constants, "rows_file": os.path.basename(path)}, fh, indent=1,
                              default=str)
                    fh.write("\n")
            except OSError:
                self._fh.close()
                os.remove(path)
                raise
        self._csv = self._begin(self._fh)

    def _begin(self, fh) -> Any:
        """The file's header (CSV columns, or the JSON object's opening); returns the CSV writer."""
        out = None
        if self.format == ".csv":
            out = csv.DictWriter(fh, fieldnames=self.columns, extrasaction="ignore")
            out.writeheader()
        elif self.format == ".json":
            fh.write('{"constants": ' + json.dumps(self.constants, default=str) + ',\n"rows": [')
        fh.flush()
        return out

    def _emit(self, fh, writer, row: Row, first: bool) -> None:
        d = row.to_dict()
        if writer is not None:
            writer.writerow({k: ("" if v is None else v) for k, v in d.items()})
        elif self.format == ".json":
            fh.write(("\n" if first else ",\n") + json.dumps(d, default=str))
        else:
            fh.write(json.dumps(d, default=str) + "\n")

    def _end(self, fh) -> None:
        if self.format == ".json":
            fh.write("\n]}\n")
        fh.flush()

    @property
    def written(self) -> int:
        return len(self.rows)

    def add(self, row: Row) -> None:
        """Write ``row`` now (and flush it), whatever index it has."""
        if self.rows and row.index < self.rows[-1].index:
            self.sorted = False
        self._emit(self._fh, self._csv, row, not self.rows)
        self.rows.append(row)
        self._fh.flush()

    def write_all(self, rows: Iterable[Row]) -> None:
        """Write ``rows`` in the order given (no index reordering at close), e.g. a ranked table."""
        for r in rows:
            self._emit(self._fh, self._csv, r, not self.rows)
            self.rows.append(r)
        self._fh.flush()
        self.sorted = True

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._end(self._fh)
        self._fh.close()
        if self.sorted:
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w", newline="") as fh:
            writer = self._begin(fh)
            for i, r in enumerate(sorted(self.rows, key=lambda r: r.index)):
                self._emit(fh, writer, r, i == 0)
            self._end(fh)
        os.replace(tmp, self.path)


def columns_for(configs: Iterable[Any], extra: Sequence[str] = ()) -> list[str]:
    """CSV columns: index, arch, the union of the configs' fields (in class order), results, extras."""
    cols = ["index", "arch"]
    seen_types = []
    for cfg in configs:
        if type(cfg) in seen_types:
            continue
        seen_types.append(type(cfg))
        for f in fields(cfg):
            if f.name not in cols:
                cols.append(f.name)
    return cols + list(RESULT_COLUMNS) + [c for c in extra if c not in cols]


# ------------------------------------------------------------------------------------- executors
def _ignore_sigint() -> None:
    """Pool initializer: the parent handles Ctrl-C (and SIGTERM) and stops the workers; a worker
    ends on SIGTERM without running a handler it may have inherited from the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def check_batch_options(*, workers: Any = None, backend: Any = "process", progress: Any = True) -> None:
    """``workers`` (None: every CPU), ``backend`` and ``progress`` as ``run_sweep`` and ``tune`` take them."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ConfigError(f"backend={backend!r}: unknown; valid: {', '.join(BACKENDS)}")
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
        raise ConfigError(f"workers={workers!r}: must be a positive integer")
    if not isinstance(progress, bool):
        raise ConfigError(f"progress={progress!r}: expected True or False, got {type(progress).__name__}")


def check_configs(configs: Any) -> list:
    """``run_sweep``'s config list: a sequence of Sm100GemmConfig / Sm90GemmConfig objects."""
    from simulator.kernels.sm90_config import Sm90GemmConfig
    from simulator.kernels.sm100_config import Sm100GemmConfig

    if isinstance(configs, (str, bytes, dict)) or not isinstance(configs, Iterable):
        raise ConfigError(f"configs={configs!r}: expected a list of Sm100GemmConfig / Sm90GemmConfig, got "
                          f"{type(configs).__name__}")
    out = list(configs)
    for i, c in enumerate(out):
        if not isinstance(c, (Sm100GemmConfig, Sm90GemmConfig)):
            hint = " (build one from a dict: Sm100GemmConfig(**d))" if isinstance(c, dict) else ""
            raise ConfigError(f"configs[{i}]={c!r}: expected a Sm100GemmConfig or Sm90GemmConfig, got "
                              f"{type(c).__name__}{hint}")
    return out


def _worker(task):
    index, cfg, arch, sim_kwargs = task
    return simulate_row(index, cfg, arch, sim_kwargs)


TaskSource = Callable[[], "tuple[int, Any] | None"]


def iter_rows(next_task: TaskSource, arch, *, workers: int | None = None, backend: str = "process",
              sim_kwargs: dict | None = None, ray_address: str | None = None) -> Iterator[Row]:
    """Run tasks pulled from ``next_task()`` (``(index, cfg)``, or None when there are no more) and
    yield their rows as they finish (any order).

    Tasks are pulled only when a worker is about to be free (at most ``workers + 1`` in flight), so a
    caller can decide what to run next from the rows it has seen (the tuner's pruning does).
    """
    check_batch_options(workers=workers, backend=backend)
    workers = default_workers() if workers is None else workers
    if backend == "ray":
        yield from _iter_ray(next_task, arch, sim_kwargs, ray_address, workers)
        return
    if backend == "serial" or workers == 1:
        while (task := next_task()) is not None:
            yield simulate_row(task[0], task[1], arch, sim_kwargs)
        return
    yield from _iter_pool(next_task, arch, sim_kwargs, workers)


def _iter_pool(next_task: TaskSource, arch, sim_kwargs, workers: int) -> Iterator[Row]:
    import multiprocessing as mp

    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    done: queue.Queue = queue.Queue()
    pool = ctx.Pool(workers, initializer=_ignore_sigint)
    in_flight = 0
    exhausted = False
    try:
        while True:
            while not exhausted and in_flight < workers + 1:
                task = next_task()
                if task is None:
                    exhausted = True
                    break
                idx, cfg = task
                pool.apply_async(_worker, ((idx, cfg, arch, sim_kwargs),), callback=done.put,
                                 error_callback=lambda e, _i=idx, _c=cfg: done.put(
                                     _error_row(_i, _c, arch, f"internal error: {type(e).__name__}: {e}")))
                in_flight += 1
            if in_flight == 0:
                break
            while True:
                try:
                    row = done.get(timeout=0.2)   # a timeout keeps the main thread responsive to Ctrl-C
                    break
                except queue.Empty:
                    continue
            in_flight -= 1
            yield row
        pool.close()
        pool.join()
    finally:
        pool.terminate()


def _iter_ray(next_task: TaskSource, arch, sim_kwargs, address: str | None, workers: int) -> Iterator[Row]:
    try:
        import ray
    except ImportError:
        raise ConfigError("backend=ray: Ray is not installed (pip install -e '.[ray]')") from None
    if not ray.is_initialized():
        ray.init(address=address or os.environ.get("RAY_ADDRESS") or None, ignore_reinit_error=True,
                 log_to_driver=False)
    remote = ray.remote(simulate_row)
    # Keep every CPU Ray has busy (more than the local worker count when attached to a cluster).
    try:
        slots = max(workers, int(ray.cluster_resources().get("CPU", workers)))
    except Exception:  # noqa: BLE001
        slots = workers
    arch_ref = ray.put(arch)
    pending: dict = {}
    exhausted = False
    try:
        while True:
            while not exhausted and len(pending) < slots + 1:
                task = next_task()
                if task is None:
                    exhausted = True
                    break
                pending[remote.remote(task[0], task[1], arch_ref, sim_kwargs)] = task
            if not pending:
                break
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                idx, cfg = pending.pop(ref)
                try:
                    yield ray.get(ref)
                except Exception as e:  # noqa: BLE001 - a task that died (worker crash): an error row
                    yield _error_row(idx, cfg, arch, f"internal error: ray task failed: {type(e).__name__}: {e}")
    finally:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001
                pass


# ------------------------------------------------------------------------------------- the sweep
def run_sweep(configs: Sequence[Any], arch=None, *, workers: int | None = None, progress: bool = True,
              out: str | None = None, backend: str = "process", max_events: int | None | object = ...,
              engine: str | None = None, ray_address: str | None = None, label: str = "sweep",
              clock=None) -> list[Row]:
    """Simulate every config of ``configs`` on ``arch`` and return one Row per config, in input order.

    ``workers``: processes (default: the CPUs this process may use); ``progress``: a progress bar on
    stderr; ``out``: a .csv/.json/.jsonl file the rows are written to as they finish (input order);
    ``backend``: "process" (default), "serial" (this process) or "ray"; ``max_events`` and ``engine``
    are passed to ``simulate`` (left out: its defaults), and so is ``clock`` ("predicted": each config at the
    clock the power model predicts for it; None: the arch's clock as given). ``arch`` None: the first config's default
    arch. ``out`` also records the arch's constants (a ``.json`` file's ``"constants"``, else the
    sidecar :func:`constants_path`).
    On KeyboardInterrupt the finished rows are written and the interrupt propagates.
    """
    from simulator.engine.run import check_run_options, default_arch_for
    from simulator.machine.arch import as_arch

    configs = check_configs(configs)
    check_batch_options(workers=workers, backend=backend, progress=progress)
    check_run_options(engine=engine, max_events=max_events)
    if arch is None:
        arch = default_arch_for(configs[0]) if configs else None
    else:
        arch = as_arch(arch)
    sim_kwargs: dict[str, Any] = {}
    if max_events is not ...:
        sim_kwargs["max_events"] = max_events
    if engine is not None:
        sim_kwargs["engine"] = engine
    if clock is not None:
        from simulator.machine.clocks import parse_clock, with_clock
        if parse_clock(clock) == "predicted":
            sim_kwargs["clock"] = "predicted"
        elif arch is not None:
            arch = with_clock(arch, clock)
    order = sorted(range(len(configs)), key=lambda i: (-_task_cost(configs[i]), i))
    it = iter(order)

    def next_task():
        i = next(it, None)
        return None if i is None else (i, configs[i])

    writer = None
    if out:
        writer = RowWriter(out, columns_for(configs), constants=arch_provenance(arch, sim_kwargs.get("clock"))
                           if arch is not None else None)
    bar = Progress(len(configs), label=label, enabled=progress)
    rows: list[Row | None] = [None] * len(configs)
    try:
        for row in iter_rows(next_task, arch, workers=workers, backend=backend, sim_kwargs=sim_kwargs,
                             ray_address=ray_address):
            rows[row.index] = row
            if writer is not None:
                writer.add(row)
            bar.update(error=not row.ok)
    finally:
        bar.close()
        if writer is not None:
            writer.close()
    return [r for r in rows if r is not None]


# ------------------------------------------------------------------------------------ input lists
def _field_types(cls) -> dict[str, str]:
    import typing

    hints = typing.get_type_hints(cls)
    out = {}
    for f in fields(cls):
        t = str(hints[f.name])
        out[f.name] = "bool" if "bool" in t else ("int" if "int" in t else "str")
    return out


def parse_value(cls, name: str, text: str, origin: str, *, empty_ok: bool = True) -> Any:
    """A config field's value from text (CSV cells, --grid/--set values), strictly typed. None (the
    field's default) for an empty cell where ``empty_ok`` (a CSV cell; an error for --grid/--set), or
    for ``none`` where the field's default is None (derived by the kernel's rule, e.g. a stage count);
    ``none`` of a field with a value by default (``m``) is an error."""
    types = _field_types(cls)
    if name not in types:
        raise ConfigError(f"{name}={text!r} ({origin}): not a field of {cls.__name__}; valid: {', '.join(types)}")
    t = text.strip()
    if t == "":
        if empty_ok:
            return None
        raise ConfigError(f"{name}={text!r} ({origin}): empty value; give a value (leave the field out for "
                          "its default)")
    if t.lower() == "none":
        default = next(f.default for f in fields(cls) if f.name == name)
        if default is None:
            return None
        raise ConfigError(f"{name}={text!r} ({origin}): {name} has no 'none' value (its default is {default!r}); "
                          "give a value, or leave the field out for the default")
    kind = types[name]
    if kind == "bool":
        if t.lower() in ("1", "true", "yes", "on"):
            return True
        if t.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name}={text!r} ({origin}): expected true or false")
    if kind == "int":
        try:
            return int(t)
        except ValueError:
            raise ConfigError(f"{name}={text!r} ({origin}): expected an integer") from None
    return t


def expand_grid(base: dict, grid: Sequence[tuple[str, list]]) -> list[dict]:
    """Cartesian product of ``grid`` ((field, values) pairs; first varies slowest) over ``base``."""
    out = [dict(base)]
    for name, values in grid:
        out = [{**d, name: v} for d in out for v in values]
    return out


def load_config_list(path: str, cls, *, ignore_columns: Sequence[str] = RESULT_FILE_COLUMNS,
                     arch_name: str | None = None, note: Callable[[str], None] | None = None) -> list[dict]:
    """Config field dicts from a TOML file (``[[config]]`` tables, optional ``[base]`` applied to each),
    a CSV file (a header of field names, one config per row; an empty cell = the default) or a
    ``.json``/``.jsonl`` result file of a sweep or tune.

    A result file can be simulated again: its columns in ``ignore_columns`` that are not fields of
    ``cls`` (index, arch, status, time_us, ... of :data:`RESULT_FILE_COLUMNS`) are skipped, and
    ``note`` (if given) is told which, once. With ``arch_name``, a row whose ``arch`` column names
    another arch is an error (its fields belong to that arch's kernel)."""
    from simulator.kernels.config_io import load_toml

    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".toml":
        data = load_toml(path)
        unknown = set(data) - {"base", "config"}
        if unknown:
            raise ConfigError(f"{path}: unknown table(s) {sorted(unknown)}; allowed: [base], [[config]]")
        base = dict(data.get("base", {}))
        items = data.get("config", [])
        if not isinstance(items, list):
            raise ConfigError(f"{path}: [config] must be an array of tables ([[config]])")
        return [{**base, **dict(c)} for c in items] if items else ([base] if base else [])
    if suffix not in (".csv", ".json", ".jsonl"):
        raise ConfigError(f"{path}: unknown config list format {suffix or '(no suffix)'!r}; valid: .toml, .csv, "
                          ".json, .jsonl")
    names = set(_field_types(cls))
    skip = {c for c in ignore_columns if c not in names}
    skipped: list[str] = []
    out = []
    for where, rec, textual in _records(path, suffix):
        d = {}
        for k, v in rec.items():
            key = k.strip()
            if key in skip:
                if key not in skipped:
                    skipped.append(key)
                if key == "arch" and arch_name is not None and v and str(v).strip().lower() != arch_name.lower():
                    raise ConfigError(f"{where}: arch={str(v).strip()}: this row was simulated on {str(v).strip()}; "
                                      f"the sweep runs on {arch_name} (give --arch {str(v).strip().lower()})")
                continue
            if textual:
                val = parse_value(cls, key, v or "", where)
            elif key not in names:
                raise ConfigError(f"{key}={v!r} ({where}): not a field of {cls.__name__}; valid: {', '.join(names)}")
            else:
                val = v
            if val is not None:
                d[key] = val
        out.append(d)
    if skipped and note is not None:
        listed = ", ".join(skipped[:4]) + (f", ... ({len(skipped)} in all)" if len(skipped) > 4 else "")
        note(f"{path}: result columns {listed} are not config fields and are ignored (a sweep or tune result "
             "file: its configs are simulated again)")
    return out


def _csv_records(path: str) -> Iterator[tuple[str, dict, bool]]:
    """The rows of a CSV config list as {column: cell}: a header of distinct names, every row with
    one cell per column (a short row, e.g. a file cut inside its last row, is an error, not
    defaults); a UTF-8 byte order mark (Excel's CSV) is skipped."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.reader(fh))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a CSV file (not UTF-8 text)") from None
    except csv.Error as e:
        raise ConfigError(f"{path}: not a valid CSV file ({e})") from None
    if not rows:
        return
    header = [h.strip() for h in rows[0]]
    for i, h in enumerate(header):
        if h in header[:i]:
            raise ConfigError(f"{path}:1: column {h!r} appears twice in the header (columns {header.index(h) + 1} "
                              f"and {i + 1}); give each field once")
    for lineno, cells in enumerate(rows[1:], start=2):
        if not cells:
            continue                                   # a blank line
        if len(cells) > len(header):
            raise ConfigError(f"{path}:{lineno}: more cells than header columns ({len(cells)} for {len(header)})")
        if len(cells) < len(header):
            raise ConfigError(f"{path}:{lineno}: {len(cells)} of {len(header)} cells (the row ends after "
                              f"{header[len(cells) - 1]!r}; a file cut short?): every row needs a cell per column, "
                              "empty for the default")
        yield f"{path}:{lineno}", dict(zip(header, cells, strict=True)), True


def _records(path: str, suffix: str) -> Iterator[tuple[str, dict, bool]]:
    """(where, record, values are text) per row of a CSV or JSON/JSON-lines config list."""
    if suffix == ".csv":
        yield from _csv_records(path)
        return
    try:
        with open(path, encoding="utf-8-sig") as fh:
            if suffix == ".jsonl":
                recs = [(f"{path}:{i}", json.loads(line)) for i, line in enumerate(fh, start=1) if line.strip()]
            else:
                doc = json.load(fh)
                rows = doc.get("rows") if isinstance(doc, dict) else doc
                if not isinstance(rows, list):
                    raise ConfigError(f"{path}: expected a list of configs, or an object with \"rows\"")
                recs = [(f"{path} row {i}", r) for i, r in enumerate(rows, start=1)]
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON ({e})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a JSON file (not UTF-8 text)") from None
    except RecursionError:
        raise ConfigError(f"{path}: not a config list (JSON nested too deeply to read)") from None
    for where, r in recs:
        if not isinstance(r, dict):
            raise ConfigError(f"{where}: expected an object of config fields")
        yield where, r, False


__all__ = ["Row", "run_sweep", "iter_rows", "simulate_row", "RowWriter", "Progress", "columns_for",
           "constants_path", "load_config_list", "expand_grid", "parse_value", "default_workers", "BACKENDS",
           "RESULT_COLUMNS", "RESULT_FILE_COLUMNS"]
