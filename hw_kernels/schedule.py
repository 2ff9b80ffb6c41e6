"""The tile orders of the hardware kernels, in plain Python (SM90: static persistent; SM100: CLC).

The kernel computes the same integers on the GPU from four numbers the host passes per launch
(:class:`StaticSchedule`); the SM90 model's ``simulator.kernels.scheduler.TileRaster(kind="static")`` follows
the same rule (CUTLASS C++ ``PersistentTileSchedulerSm90``, tile_scheduler_params.h), and
tests/test_hw_records.py checks that the two agree.

* CTA tiles are counted and rounded up to the cluster shape: ``ctas_m = round_up(ceil(M / tile_m),
  cluster_m)``, ``ctas_n`` likewise.
* ``swizzle`` is CUTLASS's *max* swizzle size (1, 2, 4, 8); the one used is
  ``s = 2**log_swizzle_size(ctas_m, ctas_n, swizzle)`` (8 if min(ctas) >= 6, 4 if >= 3, 2 if >= 2).
* The cluster grid is padded to multiples of ``s`` clusters along both modes:
  ``clusters_m = round_up(ctas_m, s * cluster_m) / cluster_m`` (``clusters_n`` likewise). Padded
  work units are real work: their TMA loads read zeros past the edge and their stores are clipped.
* ``raster``: "m" (AlongM: consecutive ids walk down M), "n", or "heuristic" (AlongM if the padded
  CTA count along N exceeds the one along M, else AlongN).
* Linear cluster id ``c`` -> ``offset = c % s``, ``extra = c // s``, ``major = extra % n_major``,
  ``minor = (extra // n_major) * s + offset`` (``n_major`` = clusters along the raster's major mode);
  AlongM: ``(cm, cn) = (major, minor)``, AlongN: ``(minor, major)``.
* Persistent cluster ``p`` of ``P = min(clusters_m * clusters_n, max active clusters)`` takes
  ``c = p, p + P, ...``; the CTA ``(x, y)`` of a cluster (rank ``x + y * cluster_m``) computes tile
  ``(cm * cluster_m + x, cn * cluster_n + y)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.errors import ConfigError
from simulator.kernels.scheduler import log_swizzle_size as _log_swizzle_size


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    return ceil_div(a, b) * b


# CUTLASS get_log_swizzle_size: the same rule the simulator's scheduler uses.
log_swizzle_size = _log_swizzle_size


@dataclass(frozen=True)
class StaticSchedule:
    """What the kernel needs per launch: the raster actually used, log2 of the swizzle, the cluster grid."""

    raster: str          # "m" or "n" (resolved)
    log_swizzle: int
    clusters_m: int      # padded
    clusters_n: int      # padded
    cluster_m: int
    cluster_n: int

    @property
    def swizzle(self) -> int:
        return 1 << self.log_swizzle

    @property
    def clusters(self) -> int:
        return self.clusters_m * self.clusters_n

    @property
    def n_major(self) -> int:
        return self.clusters_m if self.raster == "m" else self.clusters_n

    def cluster_coord(self, c: int) -> tuple[int, int]:
        """(cluster index along M, along N) of linear cluster id ``c``."""
        s = self.swizzle
        offset, extra = c % s, c // s
        major = extra % self.n_major
        minor = (extra // self.n_major) * s + offset
        return (major, minor) if self.raster == "m" else (minor, major)

    def kernel_args(self) -> tuple[int, int, int, int]:
        """(log_swizzle, n_major, clusters, raster_is_n) as the kernel takes them."""
        return self.log_swizzle, self.n_major, self.clusters, int(self.raster == "n")


def static_schedule(m: int, n: int, tile_m: int, tile_n: int, cluster_m: int = 1, cluster_n: int = 1,
                    raster: str = "heuristic", swizzle: int = 1) -> StaticSchedule:
    if raster not in ("m", "n", "heuristic"):
        raise ValueError(f"raster={raster!r}: must be 'm', 'n' or 'heuristic'")
    if swizzle not in (1, 2, 4, 8):
        raise ValueError(f"swizzle={swizzle}: the max swizzle size must be 1, 2, 4 or 8")
    ctas_m = round_up(ceil_div(m, tile_m), cluster_m)
    ctas_n = round_up(ceil_div(n, tile_n), cluster_n)
    log_s = log_swizzle_size(ctas_m, ctas_n, swizzle)
    s = 1 << log_s
    pbm, pbn = round_up(ctas_m, s * cluster_m), round_up(ctas_n, s * cluster_n)
    if raster == "heuristic":
        raster = "m" if pbn > pbm else "n"
    return StaticSchedule(raster, log_s, pbm // cluster_m, pbn // cluster_n, cluster_m, cluster_n)


def tile_order(m: int, n: int, tile_m: int, tile_n: int, cluster_m: int = 1, cluster_n: int = 1,
               raster: str = "heuristic", swizzle: int = 1,
               num_clusters: int | None = None) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """The tiles each CTA computes, in order: ``{(persistent_cluster, cta_rank): [(tile_m, tile_n), ...]}``.

    ``num_clusters`` is the number of persistent clusters launched (default: one per cluster tile).
    Tiles past the problem edge (cluster or swizzle padding) are listed: the kernel runs them.
    """
    sch = static_schedule(m, n, tile_m, tile_n, cluster_m, cluster_n, raster, swizzle)
    total = sch.clusters
    p_count = total if num_clusters is None else min(total, num_clusters)
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for p in range(p_count):
        _cta_tiles(out, p, [sch.cluster_coord(c) for c in range(p, total, p_count)], cluster_m, cluster_n)
    return out


def _cta_tiles(out: dict, p: int, coords, cluster_m: int, cluster_n: int) -> None:
    """``out[(p, rank)]``: the CTA tiles of persistent cluster ``p``'s cluster tiles ``coords``, for each CTA."""
    for y in range(cluster_n):
        for x in range(cluster_m):
            out[(p, x + y * cluster_m)] = [(cm * cluster_m + x, cn * cluster_n + y) for cm, cn in coords]


# --------------------------------------------------------------------------- SM100: CLC tile order
#: Largest gridDim.y of a launch (the transposed CLC grid falls back to AlongM beyond it).
GRID_Y_LIMIT = (1 << 16) - 1


@dataclass(frozen=True)
class ClcSchedule:
    """The SM100 kernel's tile order under cluster launch control (CLC), computed on the host.

    The grid holds every cluster of the problem (CUTLASS ``PersistentTileSchedulerSm100``): ``grid_x``
    clusters along x (launch order, fastest), ``grid_y`` along y. AlongN (``raster == "n"``) launches
    the transposed grid (x counts N clusters). A cluster's work tile is the launch slot of its CTA 0
    (its own, or the one of the cluster it cancelled with ``try_cancel``), swizzled in strips of
    ``swizzle`` clusters over the largest swizzle-divisible sub-grid (residual clusters keep their
    slot), then transposed back for AlongN: :meth:`cta_tile` is the kernel's integer arithmetic.
    """

    raster: str          # "m" or "n" (resolved)
    log_swizzle: int     # the swizzle size is 1 << log_swizzle (1: no swizzle)
    grid_x: int          # clusters along the launch grid's x
    grid_y: int          # clusters along its y
    cluster_m: int
    cluster_n: int
    l: int = 1  # noqa: E741 (CUTLASS's name for the batch mode)

    @property
    def swizzle(self) -> int:
        return 1 << self.log_swizzle

    @property
    def clusters(self) -> int:
        return self.grid_x * self.grid_y * self.l

    def grid(self) -> tuple[int, int, int]:
        """The launch grid in CTAs (each dimension a multiple of the cluster's)."""
        return self.grid_x * self.cluster_m, self.grid_y * self.cluster_n, self.l

    def kernel_args(self) -> tuple[int, int, int, int, int, int]:
        """(raster_is_n, log_swizzle, major clusters / swizzle, first residual minor cluster, grid_x,
        grid_y) as the kernel takes them."""
        major_div_s = self.grid_x >> self.log_swizzle
        first_res_minor = (self.grid_y >> self.log_swizzle) << self.log_swizzle
        return (int(self.raster == "n"), self.log_swizzle, major_div_s, first_res_minor, self.grid_x,
                self.grid_y)

    def cta_tile(self, first_cta_x: int, first_cta_y: int, cta_x: int, cta_y: int) -> tuple[int, int]:
        """The CTA tile (m, n) of the CTA at ``(cta_x, cta_y)`` in the cluster whose CTA 0 sits at
        launch slot ``(first_cta_x, first_cta_y)``: the kernel's ``_swizzle_and_rasterize``, step by
        step with the same integers (``kernel_args``)."""
        raster_n, log_s, major_div_s, first_res_minor, _, _ = self.kernel_args()
        major = first_cta_x // self.cluster_m
        minor = first_cta_y // self.cluster_n
        first_res_major = major_div_s << log_s
        if major < first_res_major and minor < first_res_minor:
            mask = (1 << log_s) - 1
            major, minor = ((major >> log_s) + major_div_s * (minor & mask),
                            (major & mask) + ((minor >> log_s) << log_s))
        cm, cn = (minor, major) if raster_n else (major, minor)
        return cm * self.cluster_m + cta_x, cn * self.cluster_n + cta_y


def clc_schedule(m: int, n: int, mma_tile_m: int, mma_tile_n: int, atom_thr_m: int = 1, cluster_m: int = 1,
                 cluster_n: int = 1, raster: str = "heuristic", swizzle: int = 1,
                 l: int = 1) -> ClcSchedule:  # noqa: E741
    """The CLC order of a problem (CUTLASS ``PersistentTileSchedulerSm100Params``).

    CTA tiles: ``ctas_m = round_up(ceil(M / mma_tile_m) * atom_thr_m, cluster_m)``, ``ctas_n =
    round_up(ceil(N / mma_tile_n), cluster_n)``; heuristic raster: AlongM if there are more clusters
    along N than along M, else AlongN, unless AlongN's transposed grid would need gridDim.y >
    65535; ``swizzle`` (1, 2, 4, 8) is used as given (no shrinking to the problem, unlike SM90).
    """
    if raster not in ("m", "n", "heuristic"):
        raise ConfigError(f"raster={raster!r}: must be 'm', 'n' or 'heuristic'")
    if swizzle not in (1, 2, 4, 8):
        raise ConfigError(f"swizzle={swizzle}: the max swizzle size must be 1, 2, 4 or 8")
    ctas_m = round_up(ceil_div(m, mma_tile_m) * atom_thr_m, cluster_m)
    ctas_n = round_up(ceil_div(n, mma_tile_n), cluster_n)
    cl_m, cl_n = ctas_m // cluster_m, ctas_n // cluster_n
    if raster == "heuristic":
        raster = "m" if cl_n > cl_m else "n"
        if raster == "n" and cl_m * cluster_n > GRID_Y_LIMIT:
            raster = "m"
    gx, gy = (cl_m, cl_n) if raster == "m" else (cl_n, cl_m)
    if gy * cluster_n > GRID_Y_LIMIT:
        raise ConfigError(f"raster={raster!r}: the launch grid's y would be {gy * cluster_n} CTAs, more than "
                          f"{GRID_Y_LIMIT} (problem {m}x{n}: use the other raster)")
    return ClcSchedule(raster, swizzle.bit_length() - 1, gx, gy, cluster_m, cluster_n, l)


# ------------------------------------------------------------------ SM90: stream-K / split-K work table
#: int32 words per segment of the stream-K work table: cluster tile along M, along N, first K tile,
#: K tiles, tile id (the decomposition's cluster tile index: names the fixup flags and workspace slices),
#: the segment's workspace slot of the separate reduction (tile id x slots + place) and its place among the
#: tile's segments in K order (0 first; the final segment's place is the number of the others).
SEGMENT_WORDS = 7


@dataclass(frozen=True)
class StreamKSchedule:
    """The SM90 twin's stream-K / split-K work, computed on the host by the model's decomposition
    (``simulator.kernels.stream_k``, CUTLASS's PersistentTileSchedulerSm90StreamK) and handed to the
    kernel as a table: row ``p`` (persistent cluster ``p``) = ``[segments, (cm, cn, k0, kn, tile) x
    segments, padding]``, the segments of units ``p, p + clusters, ...`` in the order the units compute
    them. ``flags``: fixup flags (one per CTA tile and consumer warpgroup), ``workspace_floats``: the
    partial-accumulator workspace (64 x tile_n floats per flag, ``slots`` times: the separate reduction
    keeps every non-final split's partials apart, one slot per split, so ``slots`` is a tile's most
    segments less one; the turnstile and atomic reductions share one slot per flag)."""

    table: tuple[tuple[int, ...], ...]
    clusters: int
    row_words: int
    flags: int
    workspace_floats: int
    k_tiles: int
    max_segments: int
    summary: str
    slots: int = 1

    def flat(self) -> list[int]:
        return [w for row in self.table for w in row]


def stream_k_tile_order(sk: StreamKSchedule, cluster_m: int,
                        cluster_n: int) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """:func:`tile_order` of a stream-K work table: per CTA one tile for each segment of its cluster's row (a
    unit's K range of one cluster tile), in the order the cluster computes them."""
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for p, row in enumerate(sk.table):
        segs = [row[1 + i * SEGMENT_WORDS:1 + (i + 1) * SEGMENT_WORDS] for i in range(row[0])]
        _cta_tiles(out, p, [(s[0], s[1]) for s in segs], cluster_m, cluster_n)
    return out


def stream_k_schedule(m: int, n: int, k: int, tile_m: int, tile_n: int, tile_k: int, cluster_m: int,
                      cluster_n: int, raster: str, swizzle: int, decomposition: str, splits: int = 1,
                      reduction: str = "deterministic") -> StreamKSchedule:
    """The work table of the twin for one problem (the model's units on the H200 with the DSL's
    launcher: the persistent grid is the clusters the H200 co-schedules)."""
    from simulator.kernels.scheduler import StreamKTileScheduler
    from simulator.kernels.sm90_config import Sm90GemmConfig
    from simulator.kernels.stream_k import for_config
    from simulator.machine.arch import get_arch

    arch = get_arch("h200")
    cfg = Sm90GemmConfig(m=m, n=n, k=k, dtype_ab="fp16", dtype_c="fp16", dtype_d="fp16", tile_m=tile_m,
                         tile_n=tile_n, tile_k=tile_k, cluster_m=cluster_m, cluster_n=cluster_n,
                         schedule="cooperative", raster=raster, swizzle=swizzle, decomposition=decomposition,
                         splits=splits, reduction="deterministic" if reduction == "separate" else reduction,
                         epilogue_tile_m=tile_m, mainloop_stages=2)
    cfg.check_given()
    d = for_config(cfg, arch, "dsl")
    if d is None:
        raise ConfigError(f"decomposition={decomposition!r}: the data-parallel kernel has no work table")
    sk = StreamKTileScheduler(cfg, d)
    grid = d.grid_clusters
    rows = []
    for p in range(grid):
        segs: list[list[int]] = []
        u = p
        while u < len(d.units):
            w = sk.unit_work(u)
            if not w.is_valid:
                break           # CUTLASS: an invalid work tile ends the persistent CTA's loop
            while w is not None:
                segs.append([w.m_idx, w.n_idx, w.k_start, w.k_count or d.k_tiles, w.tile_id])
                w = sk.continue_work(w)
            u += grid
        rows.append(segs)
    # Each segment's place among its tile's segments in K order (the separate reduction's arrivals: the
    # final segment waits for that many) and its workspace slot.
    starts: dict[int, list[int]] = {}
    for segs in rows:
        for s in segs:
            starts.setdefault(s[4], []).append(s[2])
    place = {(t, k0): i for t, v in starts.items() for i, k0 in enumerate(sorted(v))}
    slots = max(1, max((len(v) for v in starts.values()), default=1) - 1) if reduction == "separate" else 1
    rows = [[w for s in segs for w in (*s, s[4] * slots + place[s[4], s[2]], place[s[4], s[2]])] for segs in rows]
    max_segs = max((len(r) // SEGMENT_WORDS for r in rows), default=0)
    width = 1 + SEGMENT_WORDS * max_segs
    table = tuple(tuple([len(r) // SEGMENT_WORDS] + r + [0] * (width - 1 - len(r))) for r in rows)
    tiles = sk.raster.num_clusters * cluster_m * cluster_n
    wgs = cfg.num_consumer_warpgroups   # one flag and one 64 x tile_n workspace slice per (tile, warpgroup)
    flags = tiles * wgs
    return StreamKSchedule(table, grid, width, flags, flags * slots * (tile_m // wgs) * tile_n, d.k_tiles, max_segs,
                           d.summary(), slots)
