"""Which config should I run? A ranked table of simulated candidates for one GEMM problem.

    res = tune(4096, 4096, 4096)                     # B200, the full SM100 space, staged search
    res = tune(4096, 4096, 4096, arch="h200", space="hw")
    res.rows[0]                                      # the predicted best (a sweep Row, rank 1)
    res.to_csv("tune.csv"); print(res.table(10))

**Search.** The candidates come from a :class:`~simulator.kernels.space.Space` (full, hw or
gemm-model). ``search="exhaustive"`` simulates every candidate (refused above
``space.EXHAUSTIVE_LIMIT``). ``search="staged"`` (the default for spaces larger than
``AUTO_EXHAUSTIVE``) follows the space's stages: stage 1 tries every value of the first stage's axes
(e.g. every MMA tile) from the base config (the problem with every other field at its default);
each later stage takes the ``beam`` best configs found so far and tries every value of its own
axes from each of them (e.g. every cluster shape and scheduler, then every raster and swizzle, then
epilogue tiles and stage counts). The search is greedy per stage, so it can miss a config that is
only good in a combination no stage tries; ``beam`` widens it.

**Pruning by a bound** (both searches unless ``prune=False``; exact: it cannot change the ``top``
rows of the table). Before a candidate is simulated, :func:`lower_bound_ns` gives a time the
simulator cannot beat for it: launch overhead plus the larger of (a) its tensor-core time: the
MMA tiles of the problem spread over the tensor cores that can be resident, rounded up to whole
tiles per tensor core, times the K-blocks of a tile, times the model's own tensor-core cycles per
K-block (the larger of the FLOP time and the SMEM-operand time, from the kernel's Timing); (b) the
compulsory HBM bytes at the HBM bandwidth; (a) also waits for the first load (an L2 hit's latency
and the TMA overhead, the least any load takes) and ends with the last store's HBM latency (SM90: the
least a TMA store takes to be read and written). With the stream-K scheduler (a ``decomposition`` other
than data-parallel) the tensor-core term counts K-blocks per work unit instead of whole tiles: the
busiest resident cluster's K-blocks (SM90: its units i, i + grid, ... are fixed; SM100, whose CLC
hands units out as clusters ask: the larger of one unit's K-blocks and all K-blocks spread evenly over
the resident clusters); the fixup's own time is left out (a bound may be low, never high).
Candidates are simulated in order of their bound; a
candidate whose bound is not below the ``max(top, beam)``-th best time simulated so far is not
simulated (row status "pruned"). A candidate that differs from a simulated one only in raster or
swizzle and hands out the same tiles in the same order is not simulated again either (its row
copies the result, note "same tile order as #i"). ``tests/test_tune.py`` checks the bound against
simulated times.
"""

from __future__ import annotations

import csv
import json
import os
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from simulator.engine.run import DEFAULT_MAX_EVENTS, check_event_budget, check_run_options
from simulator.engine.sweep import (
    Progress,
    Row,
    RowWriter,
    check_batch_options,
    columns_for,
    config_dict,
    constants_path,
    iter_rows,
)
from simulator.errors import ConfigError, SimulationLimitError
from simulator.kernels import stream_k
from simulator.kernels.gemm_config import check_shape
from simulator.kernels.scheduler import (
    StreamKTileScheduler,
    TileRaster,
    max_resident_clusters,
    static_grid_clusters,
)
from simulator.kernels.space import Space, make_space
from simulator.machine.arch import ArchSpec, as_arch
from simulator.machine.provenance import arch_provenance, provenance_lines

SEARCHES = ("auto", "staged", "exhaustive")
#: ``search="auto"`` simulates every candidate of a space with at most this many combinations.
AUTO_EXHAUSTIVE = 32
#: Best configs each later stage of the staged search starts from.
DEFAULT_BEAM = 2
EXTRA_COLUMNS = ("rank", "stage", "bound_us", "note")


# ------------------------------------------------------------------------------------------ bound
def tensor_core_units(cfg, arch: ArchSpec) -> int:
    """Tensor cores (one per SM, one per SM pair with 2-SM MMA) of the clusters that can be resident."""
    per_cluster = cfg.cluster_size // cfg.atom_thr_m
    if cfg.arch_name == "sm90":
        resident = static_grid_clusters(cfg, arch, 1 << 40)
    else:
        resident = max_resident_clusters(cfg, arch)
    return max(1, resident * per_cluster)


def kblock_tensor_cycles(cfg, arch: ArchSpec) -> float:
    """Tensor-core cycles of one K-block of one MMA tile, from the kernel model's own Timing."""
    if cfg.arch_name == "sm90":
        from simulator.kernels.sm90_tma_ws import Sm90Timing

        t = Sm90Timing.derive(cfg, arch)
        return t.kblock_wg_cycles * (cfg.num_consumer_warpgroups if cfg.schedule == "cooperative" else 1)
    from simulator.kernels.sm100_tma_ws import Sm100Timing

    return Sm100Timing.derive(cfg, arch).kblock_mma_cycles


def busiest_kblocks(cfg, arch: ArchSpec) -> int | None:
    """K-blocks the busiest tensor core computes at least, with the stream-K scheduler (None without)."""
    d = stream_k.for_config(cfg, arch)
    if d is None:
        return None
    per_unit = [sum(s.k_count for s in u) for u in d.units]
    if not per_unit:
        return 0
    if cfg.arch_name == "sm90":
        grid = max(1, d.grid_clusters)
        return max(sum(per_unit[c::grid]) for c in range(min(grid, len(per_unit))))
    resident = max(1, min(d.grid_units, max_resident_clusters(cfg, arch)))
    return max(max(per_unit), -(-sum(per_unit) // resident))


def lower_bound_ns(cfg, arch: ArchSpec) -> float:
    """A time the simulator cannot beat for resolved ``cfg`` (see the module docstring)."""
    kblocks = busiest_kblocks(cfg, arch)
    if kblocks is None:
        tiles = cfg.tiles_m * cfg.tiles_n * cfg.l
        kblocks = -(-tiles // tensor_core_units(cfg, arch)) * cfg.k_tiles
    tc_cycles = kblocks * kblock_tensor_cycles(cfg, arch)
    # No MMA before its first K-block has landed (at best an L2 hit), and the kernel ends after the
    # last tile's store has been written (SM100: reached HBM; SM90: read out of SMEM and written).
    if cfg.arch_name == "sm90":
        from simulator.kernels.sm90_tma_ws import TMA_STORE_FIXED, TMA_STORE_WRITE_AFTER_READ

        store = TMA_STORE_FIXED.value + TMA_STORE_WRITE_AFTER_READ.value
    else:
        store = arch.hbm_latency_cycles.value
    latency = (min(arch.l2_latency_cycles.value, arch.hbm_latency_cycles.value) + arch.tma_issue_overhead_cycles.value
               + store)
    hbm_cycles = cfg.compulsory_bytes / arch.hbm_bytes_per_clk
    return arch.launch_overhead_ns.value + (max(tc_cycles + latency, hbm_cycles)) / arch.clock_ghz.value


def _schedule_key(cfg, arch: ArchSpec | None = None) -> tuple:
    """Everything that can matter to a simulation except raster and swizzle, plus the tile order
    they produce (linear cluster id -> cluster tile; with the stream-K scheduler, each work unit's
    tiles and K ranges, which raster and swizzle also decide: ``arch`` needed)."""
    if getattr(cfg, "decomposition", "data_parallel") != "data_parallel":
        if arch is None:
            raise ValueError("_schedule_key of a stream-K config needs the arch")
        sk = StreamKTileScheduler(cfg, stream_k.for_config(cfg, arch))
        units = []
        for u in range(len(sk.units)):
            w = sk.unit_work(u)
            segs = []
            while w is not None and w.is_valid:
                segs.append((w.m_idx, w.n_idx, w.l_idx, w.k_start, w.k_count))
                w = sk.continue_work(w)
            units.append(tuple(segs))
        return (replace(cfg, raster="-", swizzle=0), "stream-k", tuple(units))
    r = TileRaster(cfg)
    order = tuple((w.m_idx, w.n_idx, w.l_idx) for w in (r.cluster_tile(i) for i in range(r.num_clusters)))
    return (replace(cfg, raster="-", swizzle=0), r.kind, order)


# ----------------------------------------------------------------------------------------- result
def _decomposition_tag(cfg: dict) -> str:
    """`` sk`` (stream-K), `` heur`` (CUTLASS's heuristic), `` splitK4``; "" for the kernel's own scheduler."""
    dec = cfg.get("decomposition", "data_parallel")
    if dec in (None, "", "data_parallel"):
        return ""
    tag = {"stream_k": "sk", "heuristic": "heur"}.get(dec, f"splitK{cfg.get('splits', 1)}")
    return f" {tag}" + ("/nd" if cfg.get("reduction") == "nondeterministic" else "")


def describe_config(cfg: dict, arch_name: str = "") -> str:
    """A compact one-line description of a (resolved) config dict, for tables."""
    g = cfg.get
    if "mma_tile_m" in cfg:
        mode = "2SM" if g("use_2sm") else "1SM"
        return (f"{mode} {g('mma_tile_m')}x{g('mma_tile_n')} c{g('cluster_m')}x{g('cluster_n')} {g('tile_scheduler')} "
                f"r:{g('raster')} sw{g('swizzle')} epi {g('epilogue_tile_m')}x{g('epilogue_tile_n')} "
                f"st {g('mainloop_stages')}/{g('accumulator_stages')}/{g('epilogue_store_stages')}"
                + _decomposition_tag(cfg))
    sched = "coop" if g("schedule") == "cooperative" else "pp"
    return (f"{sched} {g('tile_m')}x{g('tile_n')} c{g('cluster_m')}x{g('cluster_n')} r:{g('raster')} "
            f"sw{g('swizzle')} epi {g('epilogue_tile_m')}x{g('epilogue_tile_n')} "
            f"st {g('mainloop_stages')}/{g('epilogue_store_stages')}" + _decomposition_tag(cfg))


@dataclass
class StageInfo:
    number: int
    name: str
    seeds: int
    candidates: int
    simulated: int = 0
    pruned: int = 0
    duplicates: int = 0
    errors: int = 0
    wall_s: float = 0.0


@dataclass
class TuneResult:
    """The ranked table (``rows``: simulated rows by predicted time, then pruned rows by bound, then
    errors) and how it was found."""

    m: int
    n: int
    k: int
    dtype: str
    arch: str
    space: str
    search: str
    beam: int
    top: int
    rows: list[Row]
    stages: list[StageInfo]
    combinations: int
    space_note: str
    workers: int
    wall_s: float
    configs: dict = field(default_factory=dict)   # row index -> the candidate config object
    interrupted: bool = False                     # Ctrl-C stopped the search (rows: what had finished)
    constants: dict = field(default_factory=dict)  # the arch and constants behind every prediction

    @property
    def best(self) -> Row | None:
        return self.rows[0] if self.rows and self.rows[0].ok else None

    @property
    def simulated(self) -> list[Row]:
        return [r for r in self.rows if r.ok]

    def config_of(self, row: Row):
        """The candidate config object (Sm100GemmConfig / Sm90GemmConfig) of ``row``."""
        return self.configs[row.index]

    def summary(self) -> str:
        counts = [f"stage {s.number} ({s.name}): {s.candidates} candidates from {s.seeds} seed(s), "
                  f"{s.simulated} simulated, {s.pruned} pruned by bound, {s.duplicates} same tile order, "
                  f"{s.errors} error(s), {s.wall_s:.1f} s" for s in self.stages]
        sim = sum(s.simulated for s in self.stages)
        head = (f"search     {self.search}" + (f" (beam {self.beam})" if self.search == "staged" else "")
                + f"; space {self.space}: about {self.combinations:,} combinations"
                + (f" ({self.space_note})" if self.space_note else "") + "\n"
                + f"           {sim} simulated on {self.workers} worker(s) in {self.wall_s:.1f} s; "
                + f"pruned rows have a lower bound >= the {max(self.top, self.beam)}th best time")
        return head + "\n" + "\n".join("           " + c for c in counts)

    def table(self, top: int | None = None) -> str:
        top = self.top if top is None else top
        lines = [f"wsim tune: M={self.m} N={self.n} K={self.k} {self.dtype} on {self.arch}",
                 *(provenance_lines(self.constants) if self.constants else []), self.summary(), "",
                 f"{'rank':>4} {'time us':>10} {'TFLOP/s':>8} {'peak':>5} {'GHz':>6}  {'bottleneck':<17} {'stage':>5}  config"]
        shown = 0
        same = 0
        for r in self.rows:
            if not r.ok or shown >= top:
                break
            if r.extra.get("note", "").startswith("same tile order"):
                same += 1
                continue
            shown += 1
            clk = f"{r.clock_ghz:.3f}" if r.clock_ghz else "-"
            lines.append(f"{r.extra.get('rank', ''):>4} {r.time_us:>10.2f} {r.tflops:>8.1f} {r.peak_fraction:>5.0%} {clk:>6}  "
                         f"{r.bottleneck:<17} {r.extra.get('stage', ''):>5}  {describe_config(r.config)}")
        if same:
            lines.append(f"   ({same} config(s) differing only in raster/swizzle spelling, with the same tile order as "
                         "a row shown, left out here; they are in the written table)")
        if self.best is None:
            lines.append("   (no candidate could be simulated)")
        else:
            b = self.best
            at = f" at {b.clock_ghz:.3f} GHz" + (f", {b.power_w:.0f} W" if b.power_w else "") if b.clock_ghz else ""
            lines += ["", f"best: {describe_config(b.config)}: {b.time_us:.2f} us{at}, {b.tflops:.1f} TFLOP/s "
                      f"({b.bottleneck}: {b.bottleneck_detail})"]
        return "\n".join(lines)

    def to_dicts(self) -> list[dict]:
        return [r.to_dict() for r in self.rows]

    def write(self, path: str) -> None:
        """The whole ranked table as .csv, .json or .jsonl, with the constants that produced it (a
        .json file's "constants"; else the sidecar ``sweep.constants_path(path)``)."""
        w = RowWriter(path, columns_for(list(self.configs.values())[:1] or [], EXTRA_COLUMNS),
                      constants=self.constants or None)
        try:
            w.write_all(self.rows)
        finally:
            w.close()

    def to_csv(self, path: str | None = None) -> str:
        """The whole table as CSV text (also written to ``path`` if given, with the constants in the
        sidecar ``sweep.constants_path(path)``)."""
        import io

        buf = io.StringIO()
        cols = columns_for(list(self.configs.values())[:1] or [], EXTRA_COLUMNS)
        wr = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
        wr.writeheader()
        for r in self.rows:
            wr.writerow({k: ("" if v is None else v) for k, v in r.to_dict().items()})
        text = buf.getvalue()
        if path is not None:
            from simulator.engine.out_path import check_output_file

            check_output_file(path, "path", (".csv",), "CSV tables")
            with open(path, "w", newline="") as fh:
                fh.write(text)
            if self.constants:
                with open(constants_path(path), "w") as fh:
                    json.dump({"constants": self.constants, "rows_file": os.path.basename(path)}, fh, indent=1,
                              default=str)
        return text

    def to_json(self) -> str:
        return json.dumps({"problem": {"m": self.m, "n": self.n, "k": self.k, "dtype": self.dtype},
                           "arch": self.arch, "constants": self.constants, "space": self.space, "search": self.search, "beam": self.beam,
                           "stages": [s.__dict__ for s in self.stages], "wall_s": self.wall_s,
                           "rows": self.to_dicts()}, indent=1, default=str)


# ------------------------------------------------------------------------------------------ search
class _Search:
    def __init__(self, space: Space, arch: ArchSpec, *, top: int, beam: int, prune: bool, workers: int,
                 backend: str, progress: bool, sim_kwargs: dict, ray_address: str | None) -> None:
        self.space, self.arch = space, arch
        self.top, self.beam, self.prune = top, beam, prune
        self.workers, self.backend, self.progress = workers, backend, progress
        self.sim_kwargs, self.ray_address = sim_kwargs, ray_address
        self.max_events = sim_kwargs.get("max_events", DEFAULT_MAX_EVENTS)
        self.rows: dict[int, Row] = {}
        self.configs: dict[int, Any] = {}
        self.seen: set = set()
        self.keys: dict[tuple, int] = {}          # schedule key -> index of the simulated config
        self.shapes: set = set()                  # schedule keys' config part, to skip the key when unique
        self.stages: list[StageInfo] = []

    def threshold(self) -> float | None:
        times = sorted(r.time_us for r in self.rows.values() if r.ok and r.time_us is not None)
        k = max(self.top, self.beam)
        return times[k - 1] if len(times) >= k else None

    def best_configs(self, n: int) -> list:
        ok = sorted((r for r in self.rows.values() if r.ok), key=lambda r: (r.time_us, r.index))
        out = []
        for r in ok:
            c = self.configs[r.index]
            if c not in out:
                out.append(c)
            if len(out) == n:
                break
        return out

    def run_stage(self, number: int, name: str, candidates: list, seeds: int) -> None:
        info = StageInfo(number, name, seeds, 0)
        t0 = time.perf_counter()
        bounded = []
        for c in candidates:
            r = c.resolved(self.arch)
            if r in self.seen:      # the same kernel as one already tried (e.g. a default spelled out)
                continue
            self.seen.add(r)
            bounded.append((lower_bound_ns(r, self.arch), len(bounded), c, r))
        info.candidates = len(bounded)
        bounded.sort(key=lambda t: (t[0], t[1]))
        pending = deque(bounded)
        dups: list[tuple[int, int]] = []
        bar = Progress(len(bounded), label=f"stage {number} ({name})", enabled=self.progress)

        def new_index(cfg) -> int:
            i = len(self.configs)
            self.configs[i] = cfg
            return i

        def next_task():
            while pending:
                bound, _, c, r = pending.popleft()
                i = new_index(c)
                extra = {"stage": number, "bound_us": bound / 1e3}
                try:    # a run its event budget refuses is an error row now, before its tile order is built
                    check_event_budget(r, self.max_events)
                except SimulationLimitError as e:
                    self.rows[i] = Row(index=i, config=config_dict(r), arch=self.arch.name, status="error",
                                       error=str(e), extra=extra)
                    info.simulated += 1
                    info.errors += 1
                    bar.update(error=True)
                    continue
                thr = self.threshold()
                if self.prune and thr is not None and bound / 1e3 >= thr:
                    self.rows[i] = Row(index=i, config=config_dict(r), arch=self.arch.name, status="pruned",
                                       extra={**extra, "note": f"bound {bound / 1e3:.2f} us >= "
                                              f"{max(self.top, self.beam)}th best {thr:.2f} us"})
                    info.pruned += 1
                    bar.update()
                    continue
                shape = replace(r, raster="-", swizzle=0)
                key = None
                if shape in self.shapes:
                    key = _schedule_key(r, self.arch)
                    if key in self.keys:
                        self.rows[i] = Row(index=i, config=config_dict(r), arch=self.arch.name, status="dup",
                                           extra=extra)
                        dups.append((i, self.keys[key]))
                        info.duplicates += 1
                        bar.update()
                        continue
                self.shapes.add(shape)
                self.keys[key if key is not None else _schedule_key(r, self.arch)] = i
                self.rows[i] = Row(index=i, config=config_dict(r), arch=self.arch.name, status="running",
                                   extra=extra)
                return i, c
            return None

        try:
            for row in iter_rows(next_task, self.arch, workers=self.workers, backend=self.backend,
                                 sim_kwargs=self.sim_kwargs, ray_address=self.ray_address):
                row.extra = self.rows[row.index].extra
                self.rows[row.index] = row
                info.simulated += 1
                info.errors += int(not row.ok)
                bar.update(error=not row.ok)
        finally:
            bar.close()
            for i, j in dups:
                src = self.rows[j]
                if src.status == "running":
                    continue
                d = replace(src, index=i, config=self.rows[i].config,
                            extra={**self.rows[i].extra, "note": f"same tile order as #{j}; not simulated again"})
                self.rows[i] = d
            info.wall_s = time.perf_counter() - t0
            self.stages.append(info)

    def ranked(self) -> list[Row]:
        rows = [r for r in self.rows.values() if r.status not in ("running", "dup")]
        ok = sorted((r for r in rows if r.ok), key=lambda r: (r.time_us, r.index))
        pruned = sorted((r for r in rows if r.status == "pruned"), key=lambda r: (r.extra["bound_us"], r.index))
        bad = sorted((r for r in rows if r.status == "error"), key=lambda r: r.index)
        out = ok + pruned + bad
        for rank, r in enumerate(out, start=1):
            r.extra = {"rank": rank, **r.extra}
            r.extra.setdefault("note", "")
        return out


def tune(m: int, n: int, k: int, *, dtype: str = "bf16", dtype_d: str | None = None, arch: str | ArchSpec = "b200",
         space: str | Space = "full", top: int = 10, search: str = "auto", beam: int = DEFAULT_BEAM,
         prune: bool | None = None, workers: int | None = None, progress: bool = True, backend: str = "process",
         max_events: int | None | object = ..., engine: str | None = None,
         ray_address: str | None = None, on_interrupt: str = "raise", clock=None) -> TuneResult:
    """Rank the candidate configs of ``space`` for an M x N x K GEMM on ``arch`` (see the module doc).

    Returns a :class:`TuneResult` whose ``rows`` are the whole ranked table (the first ``top`` are
    exact with pruning on; pruned candidates follow with their bound). ``prune`` None: on for the
    staged search, off for the exhaustive one (which then predicts every candidate, e.g. to rank
    them all against measurements). ``space`` may be a name or a :class:`Space`. On Ctrl-C:
    ``on_interrupt="raise"`` re-raises KeyboardInterrupt, ``"return"`` returns what had finished
    with ``interrupted=True``. ``clock``: "predicted" ranks every candidate at the clock the power
    model predicts for it (what ``wsim tune`` does on the H200), a clock choice or GHz sets one clock
    for all (:func:`simulator.machine.clocks.with_clock`), None keeps the arch's.
    """
    from simulator.engine.sweep import default_workers

    check_shape(m, n, k, 1)
    a = as_arch(arch)
    for name, v in (("top", top), ("beam", beam)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConfigError(f"{name}={v!r}: must be a positive integer")
    if prune is not None and not isinstance(prune, bool):
        raise ConfigError(f"prune={prune!r}: expected True, False or None (on for the staged search)")
    check_batch_options(workers=workers, backend=backend, progress=progress)
    check_run_options(engine=engine, max_events=max_events)
    if search not in SEARCHES:
        raise ConfigError(f"search={search!r}: unknown; valid: {', '.join(SEARCHES)}")
    sp = space if isinstance(space, Space) else make_space(space, a.sm_version, m, n, k, dtype, dtype_d)
    combos = sp.combinations()
    if search == "auto":
        search = "exhaustive" if combos <= AUTO_EXHAUSTIVE else "staged"
    if prune is None:
        prune = search == "staged"
    if on_interrupt not in ("raise", "return"):
        raise ConfigError(f"on_interrupt={on_interrupt!r}: unknown; valid: raise, return")
    sim_kwargs: dict[str, Any] = {}
    if max_events is not ...:
        sim_kwargs["max_events"] = max_events
    if engine is not None:
        sim_kwargs["engine"] = engine
    if clock is not None:
        from simulator.machine.clocks import parse_clock, with_clock
        if parse_clock(clock) == "predicted":
            sim_kwargs["clock"] = "predicted"
        else:
            a = with_clock(a, clock)
    w = default_workers() if workers is None else workers
    s = _Search(sp, a, top=top, beam=beam, prune=prune, workers=w, backend=backend, progress=progress,
                sim_kwargs=sim_kwargs, ray_address=ray_address)
    t0 = time.perf_counter()
    interrupted = False
    try:
        if search == "exhaustive":
            cands = sp.all_candidates(a)
            if not cands:
                _no_candidate(sp, a)
            s.run_stage(1, "all candidates", cands, 1)
        else:
            first = sp.stage_candidates(0, [sp.base], a)
            if not first:
                _no_candidate(sp, a)
            s.run_stage(1, sp.stage_names[0], first, 1)
            for i in range(1, len(sp.stages)):
                seeds = s.best_configs(beam)
                if not seeds:
                    break
                s.run_stage(i + 1, sp.stage_names[i], sp.stage_candidates(i, seeds, a), len(seeds))
    except KeyboardInterrupt:
        if on_interrupt == "raise":
            raise
        interrupted = True
    return TuneResult(m=m, n=n, k=k, dtype=sp.base.dtype_ab, arch=a.name, space=sp.name, search=search,
                      beam=beam, top=top, rows=s.ranked(), stages=s.stages, combinations=combos,
                      space_note=sp.note, workers=w, wall_s=time.perf_counter() - t0, configs=s.configs,
                      interrupted=interrupted, constants=arch_provenance(a, sim_kwargs.get("clock")))


def _no_candidate(sp: Space, arch: ArchSpec) -> None:
    reason = sp.accepts(sp.base, arch) or "no candidate passes can_implement"
    raise ConfigError(f"no candidate of space {sp.name} can run this problem: {reason}")


__all__ = ["tune", "TuneResult", "lower_bound_ns", "describe_config", "SEARCHES", "AUTO_EXHAUSTIVE", "DEFAULT_BEAM"]
