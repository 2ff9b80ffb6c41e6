"""Tile schedulers: which output tiles each persistent cluster computes, and in what order.

Pure logic (no SimPy): the kernel model wraps these in processes and adds the latencies.

The unit handed out is a *cluster tile*: the block of MMA tiles one cluster covers,
``(cluster_m / atom_thr_m) x cluster_n`` MMA tiles (CUTLASS's schedulers hand out CTA coordinates
whose cluster part is shared by all CTAs of a cluster; see :func:`cta_tile_coord`).

Two schedulers, following CUTLASS:

* **CLC** (``PersistentTileSchedulerSm100``, include/cutlass/gemm/kernel/sm100_tile_scheduler.hpp): the
  grid is the whole (non-persistent) problem grid; a cluster's first tile is its own ``blockIdx``, and
  each later tile is the ``blockIdx`` of a not-yet-launched cluster it cancels with
  ``clusterlaunchcontrol.try_cancel``. ``swizzle_and_rasterize`` maps that ``blockIdx`` to a tile.
  :class:`ClcHardware` models the launch/cancel order; :class:`TileRaster` the mapping.
* **static persistent** (``PersistentTileSchedulerSm90`` / ``StaticPersistentTileScheduler100``,
  sm90_tile_scheduler.hpp + static_tile_scheduler.hpp, params in tile_scheduler_params.h): a grid of
  resident clusters; cluster i takes linear cluster ids i, i + G, i + 2G, ...

Tiles beyond the problem edge: CUTLASS does *not* mark them invalid. Cluster rounding (both
schedulers) and swizzle rounding (static scheduler) create work tiles whose MMA tiles lie wholly or
partly outside M x N; the kernel runs them (TMA zero-fills out-of-bounds loads and clips stores).
:func:`mma_tile_in_problem` tells the model which MMA tiles those are. A work tile is invalid only
when the linear id runs past the padded grid (static) or when no cluster is left to cancel (CLC).

Resident clusters for SM100: one CTA per SM and every cluster within one GPC, so the GPC layout
(:func:`gpc_cluster_capacity`) decides how many fit -- e.g. 34 clusters of 4 CTAs on a B200 (136 of
148 SMs) with its TPCs spread 10/9 over 8 GPCs (``ArchSpec.gpc_count``: a layout chosen on gemm-model's
scored B200 rows, whose 2x2-cluster times show 34 clusters of 4). For SM90 the hardware co-schedules
:func:`sm90_cluster_capacity` clusters (the H200's measured placement domains,
:data:`H200_PLACEMENT_DOMAINS`); the static grid is what the launcher asks for
(:func:`sm90_static_grid`): the CuTe DSL twin launches ``min(work, max active clusters)``, CUTLASS
C++ its host heuristic ``get_max_cta_occupancy`` (18 SMs per GPC, tile_scheduler_params.h), which
can ask for more clusters than fit at once (cluster sizes 3, 6, 9 on an H200): those wait for a
resident cluster to exit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from simulator.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from simulator.kernels.sm90_config import Sm90GemmConfig
    from simulator.kernels.sm100_config import Sm100GemmConfig
    from simulator.machine.arch import ArchSpec

    GemmConfig = Sm100GemmConfig | Sm90GemmConfig

#: largest gridDim.y (tile_scheduler_params.h PersistentTileSchedulerSm100Params::initialize_swizzle)
GRID_Y_LIMIT = (1 << 16) - 1
#: GH100: "maximum SMs per GPC = 18" (tile_scheduler_params.h get_grid_shape)
SM90_MAX_SM_PER_GPC = 18
#: The H200's cluster placement domains (SMs that can hold one cluster), measured: every SM a cluster
#: of each size landed on, over probe launches of cluster sizes 1-16 (connected components of SMs
#: sharing a cluster), validation/results/h200_microbench_v2.json ``results.cluster.gpcs`` (sizes in
#: that order; ``gpc_sizes``, ``cluster.gpcs_inferred`` = 12). ``sum(d // size)`` reproduces every
#: measured ``cluster.c{size}.max_active_clusters.twin_smem`` (132/66/39/30/17/15/9/7/7 for sizes
#: 1/2/3/4/6/8/9/12/16) and the DSL's ``HardwareInfo.get_max_active_clusters`` (132/66/30/15/7).
H200_PLACEMENT_DOMAINS = (8, 16, 16, 16, 16, 16, 18, 18, 2, 2, 2, 2)
#: Who sizes the SM90 static persistent grid: "dsl" (the hardware twin: CuTe DSL
#: ``min(work, HardwareInfo.get_max_active_clusters)``) or "cutlass" (CUTLASS C++ host heuristic).
SM90_GRID_LAUNCHERS = ("dsl", "cutlass")


@dataclass(frozen=True, slots=True)
class WorkTileInfo:
    """A cluster tile: ``m_idx``/``n_idx`` count clusters along M/N (not CTAs, not MMA tiles).

    With the stream-K scheduler (:class:`StreamKTileScheduler`) a work tile is one segment of a work
    unit: K tiles ``[k_start, k_start + k_count)`` of the tile (``k_count`` 0: all of them, a
    data-parallel tile), ``unit``/``seg`` the unit and the segment's place in it, ``tile_id`` the
    tile's index in the decomposition, and ``linear`` the unit."""

    m_idx: int
    n_idx: int
    l_idx: int
    is_valid: bool
    linear: int = -1  # the scheduler's linear cluster id this tile came from (-1: none)
    k_start: int = 0
    k_count: int = 0
    unit: int = -1
    seg: int = 0
    tile_id: int = -1

    @classmethod
    def invalid(cls) -> WorkTileInfo:
        return INVALID


INVALID = WorkTileInfo(-1, -1, -1, False)


def log_swizzle_size(tiles_m: int, tiles_n: int, max_swizzle: int) -> int:
    """tile_scheduler_params.h ``get_log_swizzle_size`` (tiles counted in CTAs / MMA tiles)."""
    min_dim = min(tiles_m, tiles_n)
    if max_swizzle >= 8 and min_dim >= 6:
        return 3
    if max_swizzle >= 4 and min_dim >= 3:
        return 2
    if max_swizzle >= 2 and min_dim >= 2:
        return 1
    return 0


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _ceil_div(a, b) * b


def _cluster_shape(cfg: GemmConfig) -> tuple[int, int]:
    return cfg.cluster_m, cfg.cluster_n


def problem_ctas(cfg: GemmConfig) -> tuple[int, int, int]:
    """CTA grid of the problem, rounded up to the cluster shape.

    sm100_tile_scheduler.hpp get_tiled_cta_shape_mnl(problem, tile, atom_thr, cluster):
    ctas_m = round_up(tiles_m x atom_thr_m, cluster_m), ctas_n = round_up(tiles_n, cluster_n).
    (For SM90 atom_thr_m = 1: tile_scheduler_params.h get_tiled_cta_shape_mnl.)
    """
    cm, cn = _cluster_shape(cfg)
    return _round_up(cfg.tiles_m * cfg.atom_thr_m, cm), _round_up(cfg.tiles_n, cn), cfg.l


def _uses_clc(cfg: GemmConfig) -> bool:
    return cfg.arch_name == "sm100" and cfg.tile_scheduler == "clc"


def raster_for(cfg: GemmConfig) -> str:
    """The RasterOrder CUTLASS ends up with: "m" (AlongM) or "n" (AlongN).

    Heuristic (tile_scheduler_params.h get_rasterization_order): AlongM if tiles_n > tiles_m else AlongN,
    where the CLC scheduler counts *clusters* (PersistentTileSchedulerSm100Params: problem_tiles_m_ =
    problem_blocks.x / cluster_m) and falls back to AlongM when the transposed grid's y
    (problem_tiles_m x cluster_n) would exceed 65535; the static scheduler counts *CTAs* rounded up to
    cluster x swizzle (PersistentTileSchedulerSm90Params::initialize).
    """
    if cfg.raster not in ("m", "n", "heuristic"):
        raise ConfigError(f"raster={cfg.raster!r}: unknown; valid: m, n, heuristic")
    cm, cn = _cluster_shape(cfg)
    ctas_m, ctas_n, _ = problem_ctas(cfg)
    if _uses_clc(cfg):
        tm, tn = ctas_m // cm, ctas_n // cn
        if cfg.raster != "heuristic":
            return cfg.raster
        order = "m" if tn > tm else "n"
        if order == "n" and tm * cn > GRID_Y_LIMIT:
            order = "m"
        return order
    log_s = log_swizzle_size(ctas_m, ctas_n, cfg.swizzle)
    pbm = _round_up(ctas_m, (1 << log_s) * cm)
    pbn = _round_up(ctas_n, (1 << log_s) * cn)
    if cfg.raster != "heuristic":
        return cfg.raster
    return "m" if pbn > pbm else "n"


class TileRaster:
    """Linear cluster index -> cluster tile (m, n, l), as CUTLASS's scheduler maps it.

    ``kind="clc"``: the linear index is the cluster's launch id in the (possibly transposed) problem
    grid, x fastest (launch order assumed to be blockIdx order); the tile is
    ``swizzle_and_rasterize(blockIdx of the cluster's CTA 0)`` (sm100_tile_scheduler.hpp): swizzle of
    size ``swizzle`` over the largest swizzle-divisible sub-grid of clusters (residual clusters keep
    their place; no serpentine, unlike the comment there), then a transpose for AlongN. Every id maps
    to a distinct tile; there is no padding.

    ``kind="static"``: the linear index is the static persistent scheduler's cluster id
    (PersistentTileSchedulerSm90 get_work_idx_m_and_n): the grid of clusters is padded to a multiple of
    2^log_swizzle along both modes (log_swizzle from get_log_swizzle_size), ids run along the raster's
    major mode in strips of 2^log_swizzle along the minor mode.
    """

    def __init__(self, cfg: GemmConfig, kind: str | None = None) -> None:
        self.cfg = cfg
        self.kind = kind if kind is not None else ("clc" if _uses_clc(cfg) else "static")
        if self.kind not in ("clc", "static"):
            raise ConfigError(f"tile_scheduler={self.kind!r}: unknown; valid: clc, static")
        if cfg.swizzle not in (1, 2, 4, 8):
            raise ConfigError(f"swizzle={cfg.swizzle}: max swizzle size must be one of (1, 2, 4, 8)")
        self.cluster_m, self.cluster_n = _cluster_shape(cfg)
        ctas_m, ctas_n, self.l = problem_ctas(cfg)
        self.raster = _raster_for_kind(cfg, self.kind)
        if self.kind == "clc":
            self.swizzle = cfg.swizzle if cfg.swizzle > 1 else 0  # divmod_swizzle_size_ (0 = off)
            self.clusters_m = ctas_m // self.cluster_m
            self.clusters_n = ctas_n // self.cluster_n
            if self.raster == "m":
                self.grid_x, self.grid_y = self.clusters_m, self.clusters_n
            else:  # possibly_transpose_grid: AlongN swaps the cluster counts of x and y
                self.grid_x, self.grid_y = self.clusters_n, self.clusters_m
        else:
            self.log_swizzle = log_swizzle_size(ctas_m, ctas_n, cfg.swizzle)
            s = 1 << self.log_swizzle
            self.swizzle = s
            pbm = _round_up(ctas_m, s * self.cluster_m)
            pbn = _round_up(ctas_n, s * self.cluster_n)
            self.clusters_m = pbm // self.cluster_m
            self.clusters_n = pbn // self.cluster_n
            self.blk_major = self.clusters_n if self.raster == "n" else self.clusters_m

    @classmethod
    def from_config(cls, cfg: GemmConfig, kind: str | None = None) -> TileRaster:
        return cls(cfg, kind)

    def work(self, linear: int | None) -> WorkTileInfo:
        """Alias of :meth:`cluster_tile` (None -> INVALID)."""
        return INVALID if linear is None else self.cluster_tile(linear)

    @property
    def clusters_per_batch(self) -> int:
        return self.clusters_m * self.clusters_n

    @property
    def num_clusters(self) -> int:
        """All cluster work units, including padding (the CLC grid, or the static id range)."""
        return self.clusters_per_batch * self.l

    def cluster_tile(self, linear: int) -> WorkTileInfo:
        if linear < 0 or linear >= self.num_clusters:
            return INVALID
        l_idx, rem = divmod(linear, self.clusters_per_batch)
        if self.kind == "clc":
            x, y = rem % self.grid_x, rem // self.grid_x
            m, n = self._swizzle_and_rasterize(x, y)
        else:
            m, n = self._static_m_and_n(rem)
        return WorkTileInfo(m, n, l_idx, True, linear)

    def _swizzle_and_rasterize(self, major: int, minor: int) -> tuple[int, int]:
        s = self.swizzle
        if s > 0:
            major_div_s = self.grid_x // s
            first_res_major = major_div_s * s
            first_res_minor = (self.grid_y // s) * s
            if major < first_res_major and minor < first_res_minor:
                minor_div, minor_mod = divmod(minor, s)
                maj_div, maj_mod = divmod(major, s)
                major, minor = maj_div + major_div_s * minor_mod, maj_mod + minor_div * s
        if self.raster == "n":  # possibly_transpose_work_tile, at cluster granularity
            return minor, major
        return major, minor

    def _static_m_and_n(self, cluster_id: int) -> tuple[int, int]:
        offset = cluster_id & (self.swizzle - 1)
        extra = cluster_id >> self.log_swizzle
        minor_div_s, major = divmod(extra, self.blk_major)
        minor = minor_div_s * self.swizzle + offset
        if self.raster == "n":
            return minor, major
        return major, minor


def _raster_for_kind(cfg: GemmConfig, kind: str) -> str:
    """raster_for, as if cfg used scheduler ``kind`` (SM100 configs can run either)."""
    if cfg.arch_name == "sm100" and cfg.tile_scheduler != kind:
        return raster_for(replace(cfg, tile_scheduler=kind))
    return raster_for(cfg)


# ----------------------------------------------------------------------------------- coordinates
def cta_tile_coord(work: WorkTileInfo, cta_rank_in_cluster: int, cfg: GemmConfig) -> tuple[int, int, int]:
    """The MMA tile (m_tile, n_tile, l) that CTA ``cta_rank_in_cluster`` works on for ``work``.

    CUDA ranks CTAs in a cluster x-fastest: rank = x + y * cluster_m. CUTLASS's CTA coordinate is
    (work.m_idx * cluster_m + x, work.n_idx * cluster_n + y) (sm100_tile_scheduler.hpp
    swizzle_and_rasterize adds block_id_in_cluster; work_tile_to_cta_coord returns it), and the
    mainloop divides M by size(AtomThrID) (sm100_mma_warpspecialized.hpp load: ``get<0>(cta_coord_mnkl)
    / size(AtomThrID)``): both CTAs of a 2-SM pair share one MMA tile (the even one is the MMA leader;
    the caller decides which half of M a CTA owns: ``x % atom_thr_m``).
    """
    if not work.is_valid:
        raise ValueError("cta_tile_coord of an invalid work tile")
    cm, cn = _cluster_shape(cfg)
    if not 0 <= cta_rank_in_cluster < cm * cn:
        raise ValueError(f"cta_rank_in_cluster={cta_rank_in_cluster} outside a {cm}x{cn} cluster")
    x, y = cta_rank_in_cluster % cm, cta_rank_in_cluster // cm
    m_cta = work.m_idx * cm + x
    n_cta = work.n_idx * cn + y
    return m_cta // cfg.atom_thr_m, n_cta, work.l_idx


def mma_tiles_of(work: WorkTileInfo, cfg: GemmConfig) -> list[tuple[int, int, int]]:
    """The distinct MMA tiles a cluster computes for ``work`` (one per CTA, or per CTA pair)."""
    seen: list[tuple[int, int, int]] = []
    for r in range(cfg.cluster_m * cfg.cluster_n):
        t = cta_tile_coord(work, r, cfg)
        if t not in seen:
            seen.append(t)
    return seen


def mma_tile_in_problem(m_tile: int, n_tile: int, cfg: GemmConfig) -> bool:
    """False for MMA tiles wholly outside M x N (created by cluster or swizzle rounding)."""
    return 0 <= m_tile < cfg.tiles_m and 0 <= n_tile < cfg.tiles_n


# -------------------------------------------------------------------------------- grid sizes
def gpc_sm_counts(sm_count: int, gpc_count: int) -> list[int]:
    """SMs per GPC: the TPCs (2 SMs each) spread over the GPCs as evenly as possible."""
    gpcs = max(1, gpc_count)
    tpcs, odd = divmod(sm_count, 2)
    base, extra = divmod(tpcs, gpcs)
    out = [2 * (base + (1 if g < extra else 0)) for g in range(gpcs)]
    out[-1] += odd
    return out


def gpc_cluster_capacity(cluster_size: int, sm_count: int, gpc_count: int) -> int:
    """Clusters of ``cluster_size`` CTAs (one per SM) that fit at once when a cluster must lie within
    one GPC (CUDA guide, thread block clusters): the sum over GPCs of SMs // cluster_size -- what
    ``cudaOccupancyMaxActiveClusters`` reports for a kernel that needs a whole SM per CTA."""
    if cluster_size <= 1:
        return sm_count
    return sum(s // cluster_size for s in gpc_sm_counts(sm_count, gpc_count))


def max_resident_clusters(cfg: GemmConfig, arch: ArchSpec) -> int:
    """Clusters that fit at once (one CTA per SM), placed per GPC (:func:`gpc_cluster_capacity`)."""
    size = cfg.cluster_m * cfg.cluster_n
    return max(1, gpc_cluster_capacity(size, int(arch.sm_count.value), int(arch.gpc_count.value)))


def sm90_max_cta_occupancy(cluster_size: int, sm_count: int, max_sm_per_gpc: int = SM90_MAX_SM_PER_GPC) -> int:
    """tile_scheduler_params.h get_max_cta_occupancy: CTAs a static persistent grid uses on GH100-like GPCs."""
    min_num_gpc = 1 if sm_count < max_sm_per_gpc else sm_count // max_sm_per_gpc
    per_gpc = max_sm_per_gpc - (max_sm_per_gpc % cluster_size)
    ctas = min_num_gpc * per_gpc
    residual = 0 if sm_count < max_sm_per_gpc else sm_count % max_sm_per_gpc
    ctas += residual - (residual % cluster_size)
    return min(sm_count, ctas)


def sm90_placement_domains(arch: ArchSpec) -> tuple[int, ...]:
    """SMs per cluster placement domain: the H200's measured domains when the arch has its 132 SMs,
    else the TPCs spread as evenly as possible over ``gpc_count`` GPCs (:func:`gpc_sm_counts`)."""
    sms = int(arch.sm_count.value)
    if sum(H200_PLACEMENT_DOMAINS) == sms:
        return H200_PLACEMENT_DOMAINS
    return tuple(gpc_sm_counts(sms, int(arch.gpc_count.value)))


def sm90_cluster_capacity(cluster_size: int, arch: ArchSpec) -> int:
    """Clusters of ``cluster_size`` CTAs (one per SM) the hardware runs at once: the sum over placement
    domains of SMs // cluster_size (``cudaOccupancyMaxActiveClusters``)."""
    return max(1, sum(d // max(1, cluster_size) for d in sm90_placement_domains(arch)))


def sm90_static_grid(cfg: GemmConfig, arch: ArchSpec, total_clusters: int,
                     launcher: str = "dsl") -> tuple[int, int]:
    """(clusters in the static persistent grid, clusters the hardware runs at once) for SM90.

    ``launcher="dsl"`` (the hardware twin): ``min(work, max active clusters)``, all resident.
    ``"cutlass"``: CUTLASS C++ ``get_grid_shape`` (cluster size 1 -> sm_count, else
    get_max_cta_occupancy // size), which for cluster sizes that do not tile the domains (3, 6, 9 on
    an H200) exceeds what fits: the extra clusters wait for a resident one to exit.
    """
    if launcher not in SM90_GRID_LAUNCHERS:
        raise ConfigError(f"launcher={launcher!r}: unknown; valid: {', '.join(SM90_GRID_LAUNCHERS)}")
    size = cfg.cluster_m * cfg.cluster_n
    sms = int(arch.sm_count.value)
    capacity = sm90_cluster_capacity(size, arch)
    if launcher == "dsl":
        grid = capacity
    else:
        grid = sms if size <= 1 else max(1, sm90_max_cta_occupancy(size, sms) // size)
    grid = max(1, min(grid, total_clusters))
    return grid, min(grid, capacity)


def static_grid_clusters(cfg: GemmConfig, arch: ArchSpec, total_clusters: int) -> int:
    """Clusters of the static persistent grid (truncated by the problem, like CUTLASS).

    SM90: the hardware twin's grid, ``min(work, max active clusters)`` over the measured placement
    domains (:func:`sm90_static_grid`; CUTLASS C++'s heuristic is ``launcher="cutlass"`` there).
    SM100: the clusters that fit per GPC (:func:`max_resident_clusters`).
    """
    if arch.sm_version == 90:
        return sm90_static_grid(cfg, arch, total_clusters)[0]
    # SM100: the grid is cudaOccupancyMaxActiveClusters clusters (CuTe DSL
    # StaticPersistentTileScheduler.get_grid_shape; CUTLASS's max_active_clusters), placed per GPC.
    resident = max_resident_clusters(cfg, arch)
    return max(1, min(resident, total_clusters))


# ------------------------------------------------------------------------------------ schedulers
class ClcHardware:
    """Cluster launch control: the grid holds every cluster of the problem.

    At launch the hardware places ``min(grid_clusters, max_resident_clusters)`` clusters, ids
    ``0..R-1`` in launch order. ``try_cancel()`` cancels the launch of the next not-yet-launched
    cluster and returns its id, or None when all have launched (the response is then "not cancelled",
    and the kernel's WorkTileInfo is invalid). Deterministic: ids are handed out in launch order.
    """

    def __init__(self, grid_clusters: int, max_resident: int) -> None:
        if grid_clusters < 0 or max_resident < 1:
            raise ValueError(f"grid_clusters={grid_clusters}, max_resident={max_resident}: need >= 0 and >= 1")
        self.grid_clusters = grid_clusters
        self.launched = min(grid_clusters, max_resident)
        self._next = self.launched
        self.queries = 0
        self.cancelled = 0

    @property
    def initial_clusters(self) -> range:
        return range(self.launched)

    @property
    def remaining(self) -> int:
        return self.grid_clusters - self._next

    def launch_pending(self) -> int | None:
        """SMs that became free after the launch take the next cluster not yet launched (or
        cancelled), or nothing when none is left (:mod:`simulator.kernels.launch`)."""
        if self._next >= self.grid_clusters:
            return None
        cid = self._next
        self._next += 1
        return cid

    def try_cancel(self) -> int | None:
        self.queries += 1
        if self._next >= self.grid_clusters:
            return None
        cid = self._next
        self._next += 1
        self.cancelled += 1
        return cid


class ClcTileScheduler:
    """CLC scheduler of one launch: ``initial_work(i)`` for resident cluster i, ``fetch_next()`` per query."""

    def __init__(self, cfg: GemmConfig, arch: ArchSpec, max_resident: int | None = None) -> None:
        self.raster = TileRaster(cfg, "clc")
        resident = max_resident if max_resident is not None else max_resident_clusters(cfg, arch)
        self.hw = ClcHardware(self.raster.num_clusters, resident)

    @property
    def resident_clusters(self) -> int:
        return self.hw.launched

    def initial_work(self, i: int) -> WorkTileInfo:
        return self.raster.cluster_tile(i) if i < self.hw.launched else INVALID

    def fetch_next(self) -> WorkTileInfo:
        cid = self.hw.try_cancel()
        return INVALID if cid is None else self.raster.cluster_tile(cid)


class StaticPersistentScheduler:
    """Static persistent scheduler: resident cluster i processes ids i, i + G, i + 2G, ... (G = grid)."""

    def __init__(self, cfg: GemmConfig, arch: ArchSpec | None = None, grid_clusters: int | None = None) -> None:
        self.raster = TileRaster(cfg, "static")
        total = self.raster.num_clusters
        if grid_clusters is None:
            if arch is None:
                raise ValueError("StaticPersistentScheduler needs arch or grid_clusters")
            grid_clusters = static_grid_clusters(cfg, arch, total)
        self.grid = max(1, min(grid_clusters, total)) if total > 0 else 0
        self._cursor: dict[int, int] = {}

    @property
    def resident_clusters(self) -> int:
        return self.grid

    def linear_ids(self, i: int) -> range:
        return range(i, self.raster.num_clusters, self.grid) if self.grid else range(0)

    def initial_work(self, i: int) -> WorkTileInfo:
        if i >= self.grid:
            return INVALID
        self._cursor[i] = i
        return self.raster.cluster_tile(i)

    def next_work(self, i: int) -> WorkTileInfo:
        """Advance resident cluster i by the grid size (advance_to_next_work) and return its tile."""
        cur = self._cursor.get(i, i) + self.grid
        self._cursor[i] = cur
        return self.raster.cluster_tile(cur)


class StreamKTileScheduler:
    """The work of a stream-K / split-K decomposition (:mod:`simulator.kernels.stream_k`) as work tiles:
    ``unit_work(u)`` is unit ``u``'s first segment (INVALID past the last unit), ``continue_work(w)`` the
    next segment of ``w``'s unit or None (sched ``continue_current_work``: a unit spanning several
    tiles keeps its WorkTileInfo, no new CLC response is consumed)."""

    def __init__(self, cfg: GemmConfig, decomposition) -> None:
        self.d = decomposition
        over = dict(decomposition.raster_overrides)
        self.raster = TileRaster(replace(cfg, **over) if over else cfg, decomposition.raster_kind)
        self.units = decomposition.units
        self.k_tiles = decomposition.k_tiles

    def _work(self, u: int, i: int) -> WorkTileInfo:
        seg = self.units[u][i]
        w = self.raster.cluster_tile(seg.cluster_tile)
        if not w.is_valid:
            return INVALID
        count = seg.k_count if seg.k_count != self.k_tiles else 0
        return replace(w, linear=u, k_start=seg.k_start, k_count=count, unit=u, seg=i, tile_id=seg.cluster_tile)

    def unit_work(self, u: int) -> WorkTileInfo:
        if u < 0 or u >= len(self.units) or not self.units[u]:
            return INVALID
        return self._work(u, 0)

    def continue_work(self, work: WorkTileInfo) -> WorkTileInfo | None:
        if work.unit < 0 or work.seg + 1 >= len(self.units[work.unit]):
            return None
        return self._work(work.unit, work.seg + 1)


def make_scheduler(cfg: GemmConfig, arch: ArchSpec) -> ClcTileScheduler | StaticPersistentScheduler:
    return ClcTileScheduler(cfg, arch) if _uses_clc(cfg) else StaticPersistentScheduler(cfg, arch)


def tile_sequence(cfg: GemmConfig, arch: ArchSpec) -> list[list[WorkTileInfo]]:
    """Per resident cluster, the valid work tiles it processes.

    Static: exact. CLC: the order depends on timing; here the resident clusters query in round-robin
    (each finishes a tile, then queries), the order of equal-speed clusters.
    """
    sched = make_scheduler(cfg, arch)
    n = sched.resident_clusters
    seqs: list[list[WorkTileInfo]] = [[] for _ in range(n)]
    if isinstance(sched, StaticPersistentScheduler):
        for i in range(n):
            w = sched.initial_work(i)
            while w.is_valid:
                seqs[i].append(w)
                w = sched.next_work(i)
        return seqs
    active = []
    for i in range(n):
        w = sched.initial_work(i)
        if w.is_valid:
            seqs[i].append(w)
            active.append(i)
    while active:
        still = []
        for i in active:
            w = sched.fetch_next()
            if w.is_valid:
                seqs[i].append(w)
                still.append(i)
        active = still
    return seqs


__all__ = [
    "WorkTileInfo", "INVALID", "TileRaster", "ClcHardware", "ClcTileScheduler", "StaticPersistentScheduler",
    "StreamKTileScheduler",
    "make_scheduler", "tile_sequence", "cta_tile_coord", "mma_tiles_of", "mma_tile_in_problem", "raster_for",
    "problem_ctas", "max_resident_clusters", "static_grid_clusters", "sm90_max_cta_occupancy",
    "gpc_sm_counts", "gpc_cluster_capacity", "sm90_placement_domains", "sm90_cluster_capacity",
    "sm90_static_grid", "H200_PLACEMENT_DOMAINS", "SM90_GRID_LAUNCHERS",
]
