"""Stream-K, split-K and data-parallel decomposition: CUTLASS's work units, their tiles and K ranges.

Read beside CUTLASS (github.com/NVIDIA/cutlass, commit 7107b0553; paths in that repository):

  params = include/cutlass/gemm/kernel/tile_scheduler_params.h, ``PersistentTileSchedulerSm90StreamKParams``
           (``stream_k_heuristic``, ``select_decomposition_mode``, ``get_num_sk_tiles``,
           ``get_num_sk_units``, ``calculate_groups``, ``set_params_basic``, ``set_params_stream_k``,
           ``adjust_split_count``, ``get_workspace_component_sizes``) and
           ``PersistentTileSchedulerSm100StreamKParams`` (``initialize``, ``get_grid_shape``);
  sched  = include/cutlass/gemm/kernel/sm90_tile_scheduler_stream_k.hpp
           (``assign_work``, ``get_current_work_iter_start_possible_update_work_tile_k_remaining``,
           ``update_output_tile_id_and_work_tile_k``, ``continue_current_work_for_linear_idx``,
           ``fixup_helper``, ``compute_epilogue``, ``requires_fixup``);
  sm100  = include/cutlass/gemm/kernel/sm100_tile_scheduler_stream_k.hpp (``convert_work``,
           ``to_linear_idx``, ``ForceDataParallel``).

Everything is computed as CUTLASS computes it, on CTA-level linear indices; :class:`Decomposition`
then lists the *cluster units* (the CTAs of a cluster share a unit's K range: the scheduler divides the
linearized units into clusters, sched ``get_current_work_iter_start...``) with the segments each unit
computes, in its order (a stream-K unit walks its tiles backwards, ``update_output_tile_id...``), and
the peers of every split tile in K order (the order of the fixup).

Modes (``DecompositionMode``): ``heuristic`` (CUTLASS's choice: split-K when ``splits > 1``, else
stream-K for a wave tail, split-K when the stream-K units divide evenly over the stream-K tiles,
data-parallel otherwise), ``data_parallel``, ``split_k`` (``splits`` per tile, adjusted), ``stream_k``
(forced, still data-parallel without a wave tail). ``reduction`` (``ReductionMode``): ``deterministic``
(peers add their partials in K order, each waiting for the previous) or ``nondeterministic`` (peers
add atomically once the first partial is stored). Separate reduction is never used: CUTLASS's
``should_perform_separate_reduction`` returns false ("Separate reduction is temporarily disabled,
pending fixes", params), so :attr:`StreamKParams.separate_reduction_units` is always 0.

Pure Python (no SimPy): the hardware twin's host side computes its work units with this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from simulator.errors import ConfigError
from simulator.kernels.gemm_config import DECOMPOSITIONS, REDUCTIONS

#: params: ``min_iters_per_sk_unit_ = 8u``: the fewest K tiles a stream-K unit computes of one tile.
MIN_ITERS_PER_SK_UNIT = 8
#: params: ``max_sk_groups_ = 8u``.
MAX_SK_GROUPS = 8
#: params ``round_up_to_l2_alignment``: ``L2CacheLineSizeBytes = 128u``.
L2_ALIGNMENT_BYTES = 128
#: sched ``BarrierType = NamedBarrierManager<1>::T``; cutlass/barrier.h ``GenericBarrier::T = int``.
BARRIER_BITS = 32
#: tile_scheduler_params.h get_grid_shape: "GH100: ... maximum SMs per GPC = 18".
SM90_MAX_SM_PER_GPC = 18


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _ceil_div(a, b) * b


# ------------------------------------------------------------------------------------ grid shape
def log_swizzle_size(ctas_m: int, ctas_n: int, max_swizzle: int) -> int:
    """params ``PersistentTileSchedulerSm90Params::get_log_swizzle_size``."""
    d = min(ctas_m, ctas_n)
    if max_swizzle >= 8 and d >= 6:
        return 3
    if max_swizzle >= 4 and d >= 3:
        return 2
    if max_swizzle >= 2 and d >= 2:
        return 1
    return 0


def rasterization_order(blocks_m: int, blocks_n: int, option: str) -> str:
    """params ``get_rasterization_order``: Heuristic -> AlongM ("m") if tiles_n > tiles_m else AlongN ("n")."""
    if option == "heuristic":
        return "m" if blocks_n > blocks_m else "n"
    return "n" if option == "n" else "m"


def max_cta_occupancy(max_sm_per_gpc: int, cluster_size: int, sm_count: int) -> int:
    """params ``get_max_cta_occupancy`` (the comment's example: 20, 8, 148 -> 148)."""
    min_num_gpc = 1 if sm_count < max_sm_per_gpc else sm_count // max_sm_per_gpc
    per_gpc = max_sm_per_gpc - (max_sm_per_gpc % cluster_size)
    ctas = min_num_gpc * per_gpc
    residual = 0 if sm_count < max_sm_per_gpc else sm_count % max_sm_per_gpc
    ctas += residual - (residual % cluster_size)
    return min(sm_count, ctas)


def grid_ctas(blocks: tuple[int, int, int], cluster: tuple[int, int], sm_count: int, max_active_clusters: int,
              max_swizzle: int, raster_option: str, bypass_occupancy: bool) -> int:
    """CTAs of one wave: ``grid.x * grid.y`` of params ``PersistentTileSchedulerSm90Params::get_grid_shape``
    with ``truncate_by_problem_size = false`` (the stream-K params' ``get_grid_shape``)."""
    cm, cn = cluster
    s = log_swizzle_size(blocks[0], blocks[1], max_swizzle)
    bm = _round_up(blocks[0], (1 << s) * cm)
    bn = _round_up(blocks[1], (1 << s) * cn)
    raster = rasterization_order(bm, bn, raster_option)
    size = cm * cn
    if size == 1:
        return sm_count
    if max_active_clusters != 0 and max_active_clusters * size <= sm_count:
        return max_active_clusters * size
    cta_per_device = sm_count if bypass_occupancy else max_cta_occupancy(SM90_MAX_SM_PER_GPC, size, sm_count)
    if raster == "n":          # launch_grid = (cluster_m, cta_per_device / cluster_m)
        return cm * (cta_per_device // cm)
    return (cta_per_device // cn) * cn   # launch_grid = (cta_per_device / cluster_n, cluster_n)


# ------------------------------------------------------------------------------------ heuristic
def num_sk_tiles(output_tiles: int, ctas_per_wave: int, cluster_size: int, k_tiles: int, mode: str) -> int:
    """params ``get_num_sk_tiles``."""
    full_waves = output_tiles // ctas_per_wave
    total_waves = _ceil_div(output_tiles, ctas_per_wave)
    if mode in ("data_parallel", "split_k"):
        return 0
    dp_waves = full_waves - 1 if full_waves > 1 else 0
    sk_tiles = output_tiles - dp_waves * ctas_per_wave
    if full_waves == total_waves or k_tiles <= MIN_ITERS_PER_SK_UNIT:
        return 0
    if mode == "heuristic":
        # "prefer data-parallel decomposition if we have more than one wave and the tail wave is more
        # than half full"
        tail = output_tiles - full_waves * ctas_per_wave
        if 2 * tail >= ctas_per_wave:
            return 0
    return (sk_tiles // cluster_size) * cluster_size


def num_sk_units(cluster_size: int, ctas_per_sk_wave: int, sk_tiles: int, k_tiles: int) -> int:
    """params ``get_num_sk_units``: a wave of units, fewer if each would get < 8 K tiles (in whole clusters)."""
    min_sized = (k_tiles * sk_tiles) // MIN_ITERS_PER_SK_UNIT
    min_sized = (min_sized // cluster_size) * cluster_size
    return min(ctas_per_sk_wave, min_sized)


def adjust_split_count(splits: int, sm_count: int, k_tiles: int, ktile_start_alignment_count: int = 1) -> int:
    """params ``adjust_split_count``: no more splits than SMs or K tiles."""
    splits = min(splits, sm_count)
    splits = min(splits, k_tiles)
    if ktile_start_alignment_count > 1 and splits > 1 and k_tiles // splits == 1:
        splits = k_tiles // ktile_start_alignment_count
    return splits


def calculate_groups(raster: str, blocks_m: int, blocks_n: int, cluster: tuple[int, int], sk_cluster_tiles: int,
                     sk_units: int, k_tiles: int) -> int:
    """params ``calculate_groups`` (separate reduction off): the most groups <= 8 (and <= the clusters
    along the raster's minor... major dimension) that divide the stream-K clusters and tiles with >= 8 K
    tiles per unit, else a fallback that divides only the clusters, else 1."""
    cm, cn = cluster
    size = cm * cn
    max_groups_problem = blocks_m // cm if raster == "m" else blocks_n // cn
    groups = min(max_groups_problem, MAX_SK_GROUPS)
    fallback = 0
    sk_cluster_units = sk_units // size

    def too_small(g: int) -> bool:
        total_k = (sk_cluster_tiles // g) * size * k_tiles
        return total_k // (sk_units // g) < MIN_ITERS_PER_SK_UNIT

    def ideal(g: int) -> bool:
        return sk_cluster_units % g == 0 and sk_cluster_tiles % g == 0 and not too_small(g)

    def valid(g: int) -> bool:
        return sk_cluster_units % g == 0 and not too_small(g)

    while groups > 1 and not ideal(groups):
        if fallback == 0 and valid(groups):
            fallback = groups
        groups -= 1
    if groups == 1 and fallback > 0:
        groups = fallback
    return max(1, groups)


# -------------------------------------------------------------------------------------- params
@dataclass(frozen=True)
class StreamKParams:
    """``PersistentTileSchedulerSm90StreamKParams`` after ``initialize`` (CTA-level counts)."""

    requested: str                 # the DecompositionMode asked for
    mode: str                      # what stream_k_heuristic resolved it to: data_parallel, split_k, stream_k
    reduction: str
    k_tiles: int                   # divmod_tiles_per_output_tile_: K tiles per output tile
    cluster_m: int
    cluster_n: int
    blocks_m: int                  # CTA tiles along M, N, L, rounded to the cluster x swizzle
    blocks_n: int
    blocks_l: int
    raster: str
    log_swizzle: int
    ctas_per_wave: int
    sk_tiles: int = 0
    sk_units: int = 0
    dp_units: int = 0
    groups: int = 1
    big_groups: int = 0
    k_tiles_per_sk_unit: int = 0   # divmod_k_tiles_per_sk_unit_ (split-K: K tiles per split)
    big_units: int = 0             # split-K: splits with one more K tile; stream-K: big clusters (group 1)
    splits: int = 1
    units_per_problem: int = 0
    separate_reduction_units: int = 0   # params should_perform_separate_reduction: always false
    notes: tuple[str, ...] = ()

    @property
    def cluster_size(self) -> int:
        return self.cluster_m * self.cluster_n

    @property
    def output_tiles(self) -> int:
        return self.blocks_m * self.blocks_n * self.blocks_l

    @property
    def clusters_per_batch(self) -> int:
        return self.blocks_m * self.blocks_n // self.cluster_size

    @property
    def total_units(self) -> int:
        """Valid CTA-level linear ids: ``units_per_problem_ * splits_ + separate_reduction_units_``."""
        return self.units_per_problem * self.splits + self.separate_reduction_units

    @property
    def requires_separate_reduction(self) -> bool:
        return self.separate_reduction_units > 0

    # -- the work of one CTA linear id (sched assign_work) ------------------------------------
    def _cluster_minor_major(self) -> tuple[int, int]:
        # divmod_cluster_shape_minor_/major_: AlongN -> (cluster_m, cluster_n), AlongM -> (cluster_n, cluster_m)
        return (self.cluster_m, self.cluster_n) if self.raster == "n" else (self.cluster_n, self.cluster_m)

    def _iter_start(self, linear_idx: int) -> tuple[int, int]:
        """sched ``get_current_work_iter_start_possible_update_work_tile_k_remaining`` for a new unit:
        (unit_iter_start, k_tile_remaining)."""
        size = self.cluster_size
        k = self.k_tiles
        cl = linear_idx // size
        cl, group_idx = divmod(cl, self.groups)        # divmod_sk_groups_(cluster_linear_work_idx, group_idx, .)
        sk_cluster_tiles = self.sk_tiles // size
        sk_cluster_tiles_in_group = sk_cluster_tiles // self.groups
        if group_idx < self.big_groups:
            sk_cluster_tiles_in_group += 1
        sk_units_per_group = max(1, self.sk_units // self.groups) if self.splits == 1 else 1
        k_tiles_in_group = sk_cluster_tiles_in_group * size * k
        k_per_unit_in_group = k_tiles_in_group // sk_units_per_group
        big_units_in_group = (k_tiles_in_group - k_per_unit_in_group * sk_units_per_group) // size
        clusters_mnl = (self.sk_units // size if self.splits == 1 else self.output_tiles // size) or 1
        split, cl = divmod(cl, clusters_mnl)           # divmod_clusters_mnl_(split, cluster_linear_work_idx, .)
        is_split_k = self.splits > 1
        lhs = split if is_split_k else cl
        rhs = self.big_units if is_split_k else big_units_in_group
        mult = k if is_split_k else k_per_unit_in_group
        per_split = self.k_tiles_per_sk_unit if is_split_k else k_per_unit_in_group
        start = mult * cl + per_split * split
        count = per_split
        if lhs < rhs:
            start += lhs
            count += 1
        else:
            start += rhs
        if not is_split_k:
            st = start % k
            if st < MIN_ITERS_PER_SK_UNIT:
                start -= st
                count += st
            elif st > k - MIN_ITERS_PER_SK_UNIT:
                adj = k - st
                start += adj
                count -= adj
            end = (start + count) % k
            if end < MIN_ITERS_PER_SK_UNIT:
                count -= end
            elif end > k - MIN_ITERS_PER_SK_UNIT:
                count += k - end
        return start, count

    def _segment(self, linear_idx: int, unit_iter_start: int, remaining: int) -> tuple[int, int, int]:
        """sched ``update_output_tile_id_and_work_tile_k``: (output tile id in cluster units of this
        group's linearization, K_idx, k_tile_count) of the tile holding the unit's last remaining K tile."""
        size = self.cluster_size
        group_idx = (linear_idx // size) % self.groups
        end = unit_iter_start + remaining - 1
        tile_in_group = end // self.k_tiles
        tile_start = tile_in_group * self.k_tiles
        cluster_tile = tile_in_group * self.groups + group_idx
        lo = max(tile_start, unit_iter_start)
        hi = min(tile_start + self.k_tiles, end + 1)
        return cluster_tile, lo - tile_start, hi - lo

    def unit_segments(self, linear_idx: int) -> list[tuple[int, int, int]]:
        """The work of CTA linear id ``linear_idx``, in the order it is computed: (cluster tile index
        in the scheduler's linearization -- the cluster id of ``TileRaster(cfg, "static")`` --, K_idx,
        k_tile_count) per segment; [] past the last unit (sched ``get_current_work_for_linear_idx``,
        ``assign_work``, then ``continue_current_work_for_linear_idx`` until no K tile remains)."""
        if linear_idx < 0 or linear_idx >= self.total_units:
            return []
        size = self.cluster_size
        k = self.k_tiles
        if self.splits == 1 and linear_idx >= self.sk_units:
            # Data-parallel work: output_tile_id = linear_idx - sk_units_ + sk_tiles_ (CTA level).
            return [((linear_idx - self.sk_units + self.sk_tiles) // size, 0, k)]
        start, remaining = self._iter_start(linear_idx)
        out = []
        while remaining > 0:
            tile, k_idx, count = self._segment(linear_idx, start, remaining)
            if count <= 0:
                break
            out.append((tile, k_idx, count))
            remaining -= count
        return out


def stream_k_params(*, blocks: tuple[int, int, int], k_tiles: int, cluster: tuple[int, int], sm_count: int,
                    max_active_clusters: int, splits: int, max_swizzle: int, raster_option: str,
                    decomposition: str, reduction: str, bypass_occupancy: bool,
                    ktile_start_alignment_count: int = 1) -> StreamKParams:
    """params ``initialize`` -> ``stream_k_heuristic`` (``select_decomposition_mode`` + ``set_params``).

    ``blocks``: CTA tiles along M, N, L rounded up to the cluster (``get_tiled_cta_shape_mnl``);
    ``sm_count``, ``max_active_clusters``: the ``KernelHardwareInfo`` fields; ``bypass_occupancy``: the
    SM100 params pass ``bypass_sm90_occupancy_calculation = true``.
    """
    if decomposition not in DECOMPOSITIONS:
        raise ConfigError(f"decomposition={decomposition!r}: unknown; valid: {', '.join(DECOMPOSITIONS)}")
    if reduction not in REDUCTIONS:
        raise ConfigError(f"reduction={reduction!r}: unknown; valid: {', '.join(REDUCTIONS)}")
    cm, cn = cluster
    size = cm * cn
    s = log_swizzle_size(blocks[0], blocks[1], max_swizzle)
    bm = _round_up(blocks[0], (1 << s) * cm)
    bn = _round_up(blocks[1], (1 << s) * cn)
    bl = blocks[2]
    raster = rasterization_order(bm, bn, raster_option)
    base = {"requested": decomposition, "reduction": reduction, "k_tiles": k_tiles, "cluster_m": cm, "cluster_n": cn,
            "blocks_m": bm, "blocks_n": bn, "blocks_l": bl, "raster": raster, "log_swizzle": s}
    ctas = grid_ctas(blocks, cluster, sm_count, max_active_clusters, max_swizzle, raster_option, bypass_occupancy)
    base["ctas_per_wave"] = ctas
    output_tiles = bm * bn * bl

    def basic(sk_splits: int, mode: str, notes: tuple[str, ...] = ()) -> StreamKParams:
        # params set_params_basic
        return StreamKParams(**base, mode=mode if sk_splits > 1 else "data_parallel", splits=sk_splits,
                             units_per_problem=output_tiles, big_units=k_tiles % sk_splits,
                             k_tiles_per_sk_unit=k_tiles // sk_splits, notes=notes)

    if decomposition == "split_k" or (decomposition == "heuristic" and splits > 1):
        adapted = adjust_split_count(splits, sm_count, k_tiles, ktile_start_alignment_count)
        note = () if adapted == splits else (f"splits={splits} adjusted to {adapted} (adjust_split_count: at most "
                                             f"sm_count={sm_count} and K tiles={k_tiles})",)
        return basic(adapted, "split_k", note)
    ctas_full = (ctas // size) * size
    sk_tiles = num_sk_tiles(output_tiles, ctas, size, k_tiles, decomposition)
    dp_tiles = output_tiles - sk_tiles
    sk_units = num_sk_units(size, ctas_full, sk_tiles, k_tiles)
    if decomposition == "data_parallel" or (decomposition == "heuristic" and sk_tiles == 0) or sk_units == 0:
        why = () if decomposition == "data_parallel" else (
            f"{decomposition} resolved to data-parallel: {output_tiles} tiles on {ctas} CTAs per wave"
            + (", no wave tail" if output_tiles % ctas == 0 else "")
            + (f", {k_tiles} K tiles <= {MIN_ITERS_PER_SK_UNIT}" if k_tiles <= MIN_ITERS_PER_SK_UNIT else "")
            + (", the tail wave at least half full" if decomposition == "heuristic" and sk_tiles == 0
               and output_tiles % ctas and k_tiles > MIN_ITERS_PER_SK_UNIT and output_tiles > ctas else "")
            + " (get_num_sk_tiles)",)
        return basic(1, "data_parallel", why)
    sk_cluster_tiles = sk_tiles // size
    groups = calculate_groups(raster, bm, bn, cluster, sk_cluster_tiles, sk_units, k_tiles)
    sk_units_per_group = sk_units // groups
    sk_tiles_per_group = (sk_cluster_tiles // groups) * size
    sk_big_groups = sk_cluster_tiles % groups
    k_tiles_per_group = k_tiles * sk_tiles_per_group
    k_tiles_per_sk_unit = k_tiles_per_group // sk_units_per_group
    if decomposition == "heuristic" and sk_tiles < sk_units and sk_units % sk_tiles == 0:
        # "the problem can leverage a basic split-K decomposition for the stream-K tiles"
        return basic(sk_units // sk_tiles, "split_k",
                     (f"heuristic: {sk_units} stream-K units over {sk_tiles} tiles -> split-K x{sk_units // sk_tiles}",))
    # params set_params_stream_k
    big_units = (k_tiles_per_group % sk_units) // size
    return StreamKParams(**base, mode="stream_k", sk_tiles=sk_tiles, sk_units=sk_units, dp_units=dp_tiles,
                         groups=groups, big_groups=sk_big_groups, k_tiles_per_sk_unit=k_tiles_per_sk_unit,
                         big_units=big_units, splits=1, units_per_problem=dp_tiles + sk_units)


def workspace_bytes(p: StreamKParams, tile_m: int, tile_n: int, fixup_barriers: int, accumulator_bits: int = 32
                    ) -> tuple[int, int]:
    """(barrier workspace, reduction workspace) bytes: params ``get_workspace_component_sizes`` (the
    split-K variant needs them for every output tile; stream-K for its stream-K tiles)."""
    if p.mode == "data_parallel":
        return 0, 0
    tiles = p.output_tiles if p.mode == "split_k" else p.sk_tiles

    def align(nbytes: int) -> int:
        return _round_up(nbytes, L2_ALIGNMENT_BYTES)
    barrier = align(_ceil_div(tiles * fixup_barriers * BARRIER_BITS, 8))
    reduction = align(_ceil_div(accumulator_bits * tile_m * tile_n * tiles, 8))
    return barrier, reduction


# -------------------------------------------------------------------------------- cluster units
@dataclass(frozen=True, slots=True)
class Segment:
    """One (possibly partial) cluster tile of a unit: ``cluster_tile`` is the cluster id of
    ``TileRaster(cfg, "static")`` (batch included), K tiles ``[k_start, k_start + k_count)``."""

    cluster_tile: int
    k_start: int
    k_count: int


@dataclass(frozen=True)
class Decomposition:
    """The cluster units of one launch and the peers of every split tile.

    ``raster_kind`` and ``raster_overrides`` say how a segment's ``cluster_tile`` maps to a tile:
    ``TileRaster(replace(cfg, **raster_overrides), raster_kind).cluster_tile(cluster_tile)`` (the SM90
    stream-K scheduler's linearization, "static"; on SM100 data-parallel and split-K units come from
    the CLC grid, which the SM100 stream-K params initialise AlongM without swizzle).
    ``grid_units``: cluster units the hardware hands out (SM100: the CLC grid; SM90: the persistent
    grid's clusters, ``grid_clusters``, each taking units i, i + grid, ...)."""

    params: StreamKParams
    units: tuple[tuple[Segment, ...], ...]          # cluster unit -> its segments, in processing order
    peers: dict[int, tuple[tuple[int, int, int], ...]] = field(default_factory=dict)
    # split cluster tile -> ((unit, k_start, k_count), ...) in K order (the last one finishes the tile)
    raster_kind: str = "static"
    raster_overrides: tuple[tuple[str, object], ...] = ()
    grid_clusters: int = 0
    grid_units: int = 0

    @property
    def mode(self) -> str:
        return self.params.mode

    @property
    def k_tiles(self) -> int:
        return self.params.k_tiles

    def is_final(self, seg: Segment) -> bool:
        """sched ``is_final_split``: K_idx + k_tile_count == K tiles per output tile."""
        return seg.k_start + seg.k_count == self.params.k_tiles

    def requires_fixup(self, seg: Segment) -> bool:
        """sched ``requires_fixup``: a tile whose unit does not compute all of its K tiles."""
        return seg.k_count != self.params.k_tiles

    def summary(self) -> str:
        p = self.params
        split = sum(1 for v in self.peers.values() if len(v) > 1)
        counts = [sum(s.k_count for s in u) for u in self.units]
        if p.mode == "split_k":
            head = f"split-K x{p.splits}"
        elif p.mode == "stream_k":
            head = (f"stream-K: {p.sk_units // p.cluster_size} stream-K + {p.dp_units // p.cluster_size} "
                    f"data-parallel cluster units over {p.sk_tiles // p.cluster_size} stream-K cluster tiles, "
                    f"{p.groups} group(s)")
        else:
            head = "data-parallel"
        return (f"{head} (asked: {p.requested}, {p.reduction}); {len(self.units)} cluster units, "
                f"{split} split cluster tile(s), K tiles per unit {min(counts, default=0)}-{max(counts, default=0)}")


def _peers(units: list[tuple[Segment, ...]]) -> dict[int, tuple[tuple[int, int, int], ...]]:
    peers: dict[int, list[tuple[int, int, int]]] = {}
    for u, segs in enumerate(units):
        for s in segs:
            peers.setdefault(s.cluster_tile, []).append((u, s.k_start, s.k_count))
    return {t: tuple(sorted(v, key=lambda x: x[1])) for t, v in peers.items()}


def decompose(p: StreamKParams) -> Decomposition:
    """Every cluster unit of ``p`` (from its first CTA's linear id), and the peers of each tile, as the
    SM90 stream-K scheduler hands them out (cluster i of the persistent grid: units i, i + grid, ...)."""
    size = p.cluster_size
    n_units = _ceil_div(p.total_units, size)
    units = [tuple(Segment(t, a, c) for t, a, c in p.unit_segments(u * size)) for u in range(n_units)]
    grid = max(1, p.ctas_per_wave // size)
    return Decomposition(p, tuple(units), _peers(units), grid_clusters=grid, grid_units=n_units)


def decompose_sm100(p: StreamKParams, clusters_per_batch: int) -> Decomposition:
    """The SM100 stream-K scheduler's units in CLC launch order.

    Stream-K work (``sk_units_ > 0``): the grid is ``(sk_units / cluster_n, cluster_n, waves)`` (sm100
    params ``get_grid_shape``), cluster ``q`` in launch order is linear id ``q x cluster size``
    (sm100 ``to_linear_idx``), the unit as on SM90. Otherwise (data-parallel, split-K) the grid is the
    problem's clusters times ``splits`` along z, and ``convert_work`` takes the tile from the CLC
    response (AlongM, no swizzle: the params override both) and the split from z: split-K units
    ``z = l x splits + split`` with ``split < big_units_`` one K tile longer (big units first)."""
    size = p.cluster_size
    if p.sk_units > 0:
        waves = _ceil_div(p.units_per_problem, p.sk_units)
        grid_units = waves * (p.sk_units // size)
        n_units = _ceil_div(p.total_units, size)
        units = [tuple(Segment(t, a, c) for t, a, c in p.unit_segments(u * size)) for u in range(n_units)]
        return Decomposition(p, tuple(units), _peers(units), grid_clusters=grid_units, grid_units=grid_units)
    units = []
    k = p.k_tiles
    for z in range(p.blocks_l * p.splits):
        l_idx, split = divmod(z, p.splits)
        count = p.k_tiles_per_sk_unit
        start = split * count
        if split < p.big_units:
            start += split
            count += 1
        else:
            start += p.big_units
        if p.splits == 1:
            start, count = 0, k
        for rem in range(clusters_per_batch):
            units.append((Segment(l_idx * clusters_per_batch + rem, start, count),))
    return Decomposition(p, tuple(units), _peers(units), raster_kind="clc",
                         raster_overrides=(("raster", "m"), ("swizzle", 1)), grid_clusters=len(units),
                         grid_units=len(units))


def for_config(cfg, arch, launcher: str = "dsl") -> Decomposition | None:
    """The decomposition of a resolved kernel config on ``arch``; None for ``decomposition =
    "data_parallel"`` (the kernel's own tile scheduler, CUTLASS's default: no stream-K scheduler).

    SM90: the ``KernelHardwareInfo`` the params see has ``max_active_clusters`` = the clusters the
    H200 co-schedules (what the twin's launcher asks the DSL for; ``launcher="cutlass"``: 0, CUTLASS
    C++'s occupancy heuristic). SM100: ``max_active_clusters`` = the clusters that fit per GPC (what
    CUTLASS's examples pass from ``cudaOccupancyMaxActiveClusters``), occupancy bypassed, tile N = 192
    forced data-parallel (sm100 ``ForceDataParallel``: "Shapediv failures currently occur with tile
    shape N of 192"). ``scheduler_sm_count`` (None: the arch's) is ``KernelHardwareInfo::sm_count``.
    """
    from simulator.kernels.scheduler import max_resident_clusters, problem_ctas, sm90_cluster_capacity

    if cfg.decomposition == "data_parallel":
        return None
    sms = int(arch.sm_count.value)
    sm_count = min(sms, cfg.scheduler_sm_count) if cfg.scheduler_sm_count is not None else sms
    blocks = problem_ctas(cfg)
    size = cfg.cluster_m * cfg.cluster_n
    if cfg.arch_name == "sm90":
        active = sm90_cluster_capacity(size, arch) if launcher == "dsl" else 0
        p = stream_k_params(blocks=blocks, k_tiles=cfg.k_tiles, cluster=(cfg.cluster_m, cfg.cluster_n),
                            sm_count=sm_count, max_active_clusters=active, splits=cfg.splits,
                            max_swizzle=cfg.swizzle, raster_option=cfg.raster, decomposition=cfg.decomposition,
                            reduction=cfg.reduction, bypass_occupancy=False)
        return decompose(p)
    mode = cfg.decomposition
    notes: tuple[str, ...] = ()
    if cfg.mma_tile_n == 192:
        mode = "data_parallel"
        notes = ("mma_tile_n=192: forced data-parallel (sm100_tile_scheduler_stream_k.hpp ForceDataParallel)",)
    p = stream_k_params(blocks=blocks, k_tiles=cfg.k_tiles, cluster=(cfg.cluster_m, cfg.cluster_n),
                        sm_count=sm_count, max_active_clusters=max_resident_clusters(cfg, arch), splits=cfg.splits,
                        max_swizzle=cfg.swizzle, raster_option=cfg.raster, decomposition=mode,
                        reduction=cfg.reduction, bypass_occupancy=True)
    if notes:
        p = replace(p, requested=cfg.decomposition, notes=notes + p.notes)
    return decompose_sm100(p, (blocks[0] // cfg.cluster_m) * (blocks[1] // cfg.cluster_n))


__all__ = [
    "DECOMPOSITIONS", "REDUCTIONS", "MIN_ITERS_PER_SK_UNIT", "MAX_SK_GROUPS", "StreamKParams", "Segment",
    "Decomposition", "stream_k_params", "decompose", "decompose_sm100", "for_config", "workspace_bytes", "grid_ctas", "num_sk_tiles",
    "num_sk_units", "adjust_split_count", "calculate_groups", "max_cta_occupancy",
]
