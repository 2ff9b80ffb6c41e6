"""Candidate spaces for ``wsim tune``: which kernel configs are tried for a problem, in search stages.

A :class:`Space` is a base config (the problem, data types and every field at its default) and a
list of *stages*, each a list of :class:`Axis`. An axis gives, for a config, the values one group of
fields may take (a value is a dict of field updates, so that fields that only make sense together,
like ``use_2sm`` and ``mma_tile_m``, move together). The full space is the product of every axis of
every stage, kept where ``can_implement`` accepts it (and, for a space tied to a kernel that exists,
where that kernel implements it). The staged search (:mod:`simulator.engine.tune`) tries stage 1's
axes from the base config, then each later stage's axes from the best configs found so far.

Named spaces (:func:`make_space`):

* ``full`` on SM100 (B200): MMA tile (1-SM 64/128 or 2-SM 128/256 rows x ``SM100_MMA_TILE_N``), cluster
  shapes with both sides in ``CLUSTER_DIMS``, CLC or static scheduler, raster x max swizzle, epilogue
  subtile width x store stages, accumulator stages. Mainloop stages are derived (CUTLASS's
  StageCountAutoCarveout: the most that fit beside the epilogue), so the epilogue choices move them.
* ``full`` on SM90 (H200): tile (``SM90_TILES``: schedule, tile_m, tile_n), clusters, raster x swizzle,
  epilogue subtile width x store stages, with derived mainloop stages.
* both ``full`` spaces try the stream-K scheduler's decompositions (:data:`HW_DECOMPOSITIONS`: data-parallel,
  CUTLASS's heuristic, stream-K, split-K by 2/4/8) in a stage after the cluster shape.
* ``hw`` (SM90): exactly the configs the hardware twin implements and the campaign measures,
  :func:`hw_space` (``HW_TILES`` x ``HW_CLUSTERS`` x ``HW_RASTERS`` x ``HW_SWIZZLES``: one list for
  the tuner and the GPU campaign, ``validation/campaign.py``), mapped to Sm90GemmConfig by
  :func:`sm90_config_from_hw` (the twin's epilogue subtile is tile_m x epilogue_tile_n);
  :func:`hw_kernel_fields` maps back to ``hw_kernels.host.KernelConfig`` fields; the cooperative tiles also
  with every stream-K decomposition of :data:`HW_DECOMPOSITIONS` (stage 1 varies them with the tile); for
  M <= 128 also the twin's 64-row ping-pong tiles (:func:`hw_small_m_space`, the campaign's ``small_m`` phase);
  where N is ragged, the cooperative widths of :func:`ragged_tile_n` (the campaign's ``ragged_n`` phase).
* ``gemm-model`` (SM100): the 16 configs timed in hbarclay/gemm-model's B200 data (CuTe DSL
  ``dense_gemm_persistent.py``): 2-CTA MMA 128/256 x 64/128/192/256, clusters 2x1/2x2, static
  scheduler, M-fastest tile order, no swizzle, 2 accumulator stages, fp16 in and out, the DSL's
  mainloop/store stage counts, on the problem padded to 16-byte rows as that benchmark launched it.

Pure Python with no SimPy, numpy or DSL (only the two config modules and the errors): the GPU
campaign imports this module on a machine that has none of them (``tests/test_tune_space.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from itertools import product
from typing import Any

from simulator.errors import ConfigError
from simulator.kernels.gemm_config import RASTERS, SWIZZLES, canonical_dtype, dtype_bits
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig

# ----------------------------------------------------------------------------------------- axes
#: SM100 (use_2sm, mma_tile_m): the tcgen05.mma M extents (1-SM 64/128; 2-SM 128/256).
SM100_MMA_M = ((False, 64), (False, 128), (True, 128), (True, 256))
#: SM100 MMA tile N: multiples of 32 up to the 256 columns of one instruction (the 8/16-column steps
#: the hardware also accepts are left out: they change tile counts, not the kind of kernel).
SM100_MMA_TILE_N = (32, 64, 96, 128, 160, 192, 224, 256)
#: Cluster sides (cluster_m, cluster_n each); CUTLASS allows up to 16 CTAs, but clusters beyond 4
#: along a side only add multicast reach (L2 reads, not HBM) and fragment the SM grid.
CLUSTER_DIMS = (1, 2, 4)
SM100_SCHEDULERS = ("clc", "static")
#: Epilogue subtile widths tried (the epilogue tile's N; M stays CUTLASS's default); None = default.
EPILOGUE_TILE_N = (None, 16, 32, 64, 128)
#: Epilogue store stages tried (None = CUTLASS's StagesD = min(subtiles, 2)).
EPILOGUE_STORE_STAGES = (None, 4)
#: Accumulator stages tried on SM100 (None = as many as TMEM holds, at most 4).
SM100_ACC_STAGES = (None, 1, 2)
#: SM90 (schedule, tile_m, tile_n).
SM90_TILES = tuple(("cooperative", tm, tn) for tm in (128, 256) for tn in (64, 128, 192, 256)) + tuple(
    ("pingpong", tm, tn) for tm in (64, 128) for tn in (64, 128, 192, 256))

#: Above this many candidates an exhaustive search is refused (use the staged search).
EXHAUSTIVE_LIMIT = 5000

SPACES = ("full", "hw", "gemm-model")


@dataclass(frozen=True)
class Axis:
    """One group of fields and the values it takes: ``values(cfg)`` -> list of field-update dicts."""

    name: str
    values: Callable[[Any], list[dict]]

    def updates(self, cfg) -> list[dict]:
        return self.values(cfg)


def _fixed(name: str, options: list[dict]) -> Axis:
    return Axis(name, lambda cfg, _o=tuple(options): list(_o))


@dataclass(frozen=True)
class Space:
    """A base config, the search stages (lists of axes), and an optional membership rule."""

    name: str
    base: Any
    stages: tuple[tuple[Axis, ...], ...]
    stage_names: tuple[str, ...]
    member: Callable[[Any], bool] | None = None
    note: str = ""

    def _expand(self, cfgs: list, axes: tuple[Axis, ...]) -> list:
        out = []
        for cfg in cfgs:
            partial = [cfg]
            for axis in axes:
                partial = [replace(c, **u) for c in partial for u in axis.updates(c)]
            out.extend(partial)
        return out

    def accepts(self, cfg, arch) -> str | None:
        """None if ``cfg`` is a candidate, else why not (the can_implement message, or membership)."""
        if self.member is not None and not self.member(cfg):
            return f"not in space {self.name}"
        try:
            cfg.can_implement(arch)
        except ConfigError as e:
            return str(e)
        return None

    def stage_candidates(self, stage: int, seeds: list, arch) -> list:
        """The configs stage ``stage`` tries from ``seeds`` (deduplicated, in order, implementable)."""
        seen: set = set()
        out = []
        for cfg in self._expand(list(seeds), self.stages[stage]):
            if cfg in seen:
                continue
            seen.add(cfg)
            if self.accepts(cfg, arch) is None:
                out.append(cfg)
        return out

    def combinations(self) -> int:
        """Size of the product of the axes at the base config (before can_implement; an estimate
        where one axis's values depend on another's)."""
        n = 1
        for axes in self.stages:
            for axis in axes:
                n *= max(1, len(axis.updates(self.base)))
        return n

    def all_candidates(self, arch, limit: int = EXHAUSTIVE_LIMIT) -> list:
        """Every candidate (product of all stages' axes, implementable, in space); refused above ``limit``."""
        if self.combinations() > limit:
            raise ConfigError(f"space {self.name}: about {self.combinations():,} combinations > {limit:,}: too many "
                              "for an exhaustive search; use the staged search")
        cfgs = [self.base]
        for axes in self.stages:
            cfgs = self._expand(cfgs, axes)
        seen: set = set()
        out = []
        for cfg in cfgs:
            if cfg not in seen:
                seen.add(cfg)
                if self.accepts(cfg, arch) is None:
                    out.append(cfg)
        return out


# ------------------------------------------------------------------------------------- problem
def _dtypes(dtype: str, dtype_d: str | None) -> dict:
    ab = canonical_dtype(dtype, "dtype")
    if dtype_d is None:
        d = ab if dtype_bits(ab) == 16 else "bf16"
    else:
        d = canonical_dtype(dtype_d, "dtype_d")
    return {"dtype_ab": ab, "dtype_c": d, "dtype_d": d}


def _epilogue_n(cfg) -> list[dict]:
    cta_n = cfg.cta_tile_n
    return [{"epilogue_tile_n": v} for v in EPILOGUE_TILE_N if v is None or (v <= cta_n and cta_n % v == 0)]


def _decompositions() -> Axis:
    """The stream-K scheduler's decompositions (:data:`HW_DECOMPOSITIONS`; can_implement drops those a
    kernel cannot take, e.g. ping-pong or the SM100 static scheduler with stream-K)."""
    return _fixed("decomposition", [{"decomposition": d, "splits": s} for d, s in HW_DECOMPOSITIONS])


def sm100_full_space(m: int, n: int, k: int, dtype: str = "bf16", dtype_d: str | None = None, l: int = 1) -> Space:  # noqa: E741
    base = Sm100GemmConfig(m=m, n=n, k=k, l=l, **_dtypes(dtype, dtype_d))
    tiles = [{"use_2sm": two, "mma_tile_m": tm, "mma_tile_n": tn, "cluster_m": 2 if two else 1, "cluster_n": 1}
             for two, tm in SM100_MMA_M for tn in SM100_MMA_TILE_N]
    clusters = [{"cluster_m": cm, "cluster_n": cn} for cm in CLUSTER_DIMS for cn in CLUSTER_DIMS]
    stages = (
        (_fixed("mma tile", tiles),),
        (_fixed("cluster", clusters), _fixed("scheduler", [{"tile_scheduler": s} for s in SM100_SCHEDULERS])),
        (_decompositions(),),
        (_fixed("raster", [{"raster": r} for r in RASTERS]), _fixed("swizzle", [{"swizzle": s} for s in SWIZZLES])),
        (Axis("epilogue tile", _epilogue_n),
         _fixed("store stages", [{"epilogue_store_stages": s} for s in EPILOGUE_STORE_STAGES])),
        (_fixed("accumulator stages", [{"accumulator_stages": s} for s in SM100_ACC_STAGES]),),
    )
    return Space("full", base, stages, ("MMA tile (1-SM/2-SM)", "cluster x scheduler", "decomposition",
                                        "raster x swizzle", "epilogue tile x store stages", "accumulator stages"))


def sm90_full_space(m: int, n: int, k: int, dtype: str = "bf16", dtype_d: str | None = None, l: int = 1) -> Space:  # noqa: E741
    base = Sm90GemmConfig(m=m, n=n, k=k, l=l, **_dtypes(dtype, dtype_d))
    tiles = [{"schedule": s, "tile_m": tm, "tile_n": tn, "cluster_m": 2, "cluster_n": 1} for s, tm, tn in SM90_TILES]
    clusters = [{"cluster_m": cm, "cluster_n": cn} for cm in CLUSTER_DIMS for cn in CLUSTER_DIMS]
    stages = (
        (_fixed("tile x schedule", tiles),),
        (_fixed("cluster", clusters),),
        (_decompositions(),),
        (_fixed("raster", [{"raster": r} for r in RASTERS]), _fixed("swizzle", [{"swizzle": s} for s in SWIZZLES])),
        (Axis("epilogue tile", _epilogue_n),
         _fixed("store stages", [{"epilogue_store_stages": s} for s in EPILOGUE_STORE_STAGES])),
    )
    return Space("full", base, stages, ("tile x schedule", "cluster", "decomposition", "raster x swizzle",
                                        "epilogue tile x store stages"))


# ---------------------------------------------------------------------------------- hardware twin
#: (schedule, tile_n) pairs the twin implements with tile_m = 128 (ping-pong holds a whole 128 x tile_n
#: fp32 accumulator in one warpgroup's registers, so it stops at 128).
HW_TILES = (("cooperative", 64), ("cooperative", 128), ("cooperative", 192), ("cooperative", 256),
            ("pingpong", 64), ("pingpong", 128))
#: tile_n of the twin's 64-row ping-pong tiles (one 64 x tile_n fp32 accumulator per warpgroup fits every wgmma N
#: of the cooperative kernel), offered to problems with M <= ``HW_SMALL_M_MAX_M`` only.
HW_SMALL_M_TILE_N = (64, 128, 192, 256)
#: The largest M for which ``--space hw`` adds the 64-row tiles: above it a 128-row tile is never more than
#: half empty in its last M tile alone, and the campaign lists stay those the H200 measured.
HW_SMALL_M_MAX_M = 128
#: tile_n of the twin's cooperative tiles for ragged N (multiples of the 32-column epilogue subtile between
#: the wide tiles), offered to a problem only where they pad N no more than the best wide tile
#: (``HW_WIDE_TILE_N``): N = 800 runs 5 full 160-column tiles, or 4 of 224 (96 columns padded, as by 128),
#: where a 256-column tile computes 1024 columns. (The first rule, "less than", left 224 out at N = 800;
#: the ragged_n campaign's development rows found 128x224 the fastest there, and "no more than" was set then.)
HW_RAGGED_TILE_N = (96, 160, 224)
HW_WIDE_TILE_N = (128, 192, 256)
#: Cluster shapes (cluster_m, cluster_n) of the twin's candidates, at most 4 CTAs.
HW_CLUSTERS = ((1, 1), (2, 1), (1, 2), (2, 2))
#: Raster orders and max swizzle sizes the tuning campaign compares (CUTLASS semantics).
HW_RASTERS = ("m", "n")
HW_SWIZZLES = (1, 4)
#: The stream-K scheduler's decompositions the twin runs (cooperative only, as CUTLASS), as (decomposition,
#: splits): the static scheduler, CUTLASS's heuristic, forced stream-K, split-K by 2, 4 and 8.
HW_DECOMPOSITIONS = (("data_parallel", 1), ("heuristic", 1), ("stream_k", 1), ("split_k", 2), ("split_k", 4),
                     ("split_k", 8))
#: Their reductions: deterministic (CUTLASS's default: middle splits add in K order, each waiting its turn)
#: and nondeterministic (middle splits add with atomics as soon as the first split has stored).
HW_REDUCTIONS = ("deterministic", "nondeterministic")


def ragged_tile_n(n: int) -> tuple[int, ...]:
    """The ``HW_RAGGED_TILE_N`` widths that leave no more padded columns of N than the best ``HW_WIDE_TILE_N``
    (none where a wide tile divides N)."""
    if n < 1:
        raise ConfigError(f"n={n}: must be >= 1")
    pad = min(-n % t for t in HW_WIDE_TILE_N)
    return tuple(t for t in HW_RAGGED_TILE_N if -n % t <= pad) if pad else ()


def hw_space(decompositions: tuple[tuple[str, int], ...] = HW_DECOMPOSITIONS,
             reductions: tuple[str, ...] = HW_REDUCTIONS, ragged_n: tuple[int, ...] = ()) -> list[dict]:
    """Every candidate of ``--space hw``: KernelConfig field dicts (``hw_kernels.host.KernelConfig(**d)``),
    in a fixed order: the data-parallel ones first (the 96 of the earlier campaigns, in their order: what
    the H200 campaign's ``space`` and ``wide`` phases measure, ``decompositions=HW_DECOMPOSITIONS[:1]``),
    then the cooperative tiles with each stream-K decomposition of ``decompositions``, one reduction of
    ``reductions`` after the other (the deterministic ones: the ``streamk`` phase; the nondeterministic
    ones: ``streamk_nd``). ``ragged_n``: cooperative tile widths (:func:`ragged_tile_n`) appended after all
    of those, each with every decomposition and reduction, as the ``HW_TILES`` cooperative tiles."""
    if ("data_parallel", 1) not in decompositions:
        raise ConfigError("hw_space: the data-parallel candidates come first; keep ('data_parallel', 1)")
    bad = [t for t in ragged_n if t not in HW_RAGGED_TILE_N]
    if bad:
        raise ConfigError(f"hw_space: ragged_n={bad}: each must be one of HW_RAGGED_TILE_N {HW_RAGGED_TILE_N}")
    return _hw_tiles(HW_TILES, decompositions, reductions) + _hw_tiles(tuple(("cooperative", t) for t in ragged_n), decompositions, reductions)


def _hw_tiles(tiles, decompositions, reductions) -> list[dict]:
    """``tiles`` x ``HW_CLUSTERS`` x ``HW_RASTERS`` x ``HW_SWIZZLES``: data-parallel, then (cooperative only)
    each stream-K decomposition, one reduction after the other."""
    out = []
    for (schedule, tile_n), (cm, cn), raster, swizzle in product(tiles, HW_CLUSTERS, HW_RASTERS, HW_SWIZZLES):
        out.append({"tile_m": 128, "tile_n": tile_n, "tile_k": 64, "cluster_m": cm, "cluster_n": cn,
                    "schedule": schedule, "raster": raster, "swizzle": swizzle, "epilogue_tile_n": 32,
                    "epilogue_store_stages": 4})
    for reduction, (dec, splits), (schedule, tile_n), (cm, cn), raster, swizzle in product(
            reductions, [d for d in decompositions if d != ("data_parallel", 1)], tiles, HW_CLUSTERS, HW_RASTERS,
            HW_SWIZZLES):
        if schedule != "cooperative":
            continue
        out.append({"tile_m": 128, "tile_n": tile_n, "tile_k": 64, "cluster_m": cm, "cluster_n": cn,
                    "schedule": schedule, "raster": raster, "swizzle": swizzle, "epilogue_tile_n": 32,
                    "epilogue_store_stages": 4, "decomposition": dec, "splits": splits, "reduction": reduction})
    return out


def hw_small_m_space() -> list[dict]:
    """The twin's 64-row candidates, which ``--space hw`` adds for M <= ``HW_SMALL_M_MAX_M``: the ping-pong tiles
    (data-parallel; ``HW_SMALL_M_TILE_N`` x ``HW_CLUSTERS`` x ``HW_RASTERS`` x ``HW_SWIZZLES``), then the
    one-warpgroup cooperative tiles of the same widths, data-parallel and with each stream-K decomposition and
    reduction (the campaign's ``coop64`` phase)."""
    pp = [{"tile_m": 64, "tile_n": tile_n, "tile_k": 64, "cluster_m": cm, "cluster_n": cn, "schedule": "pingpong",
           "raster": raster, "swizzle": swizzle, "epilogue_tile_n": 32, "epilogue_store_stages": 4}
          for tile_n, (cm, cn), raster, swizzle in product(HW_SMALL_M_TILE_N, HW_CLUSTERS, HW_RASTERS, HW_SWIZZLES)]
    coop = _hw_tiles(tuple(("cooperative", t) for t in HW_SMALL_M_TILE_N), HW_DECOMPOSITIONS, HW_REDUCTIONS)
    return pp + [dict(d, tile_m=64) for d in coop]


#: Fields of hw_kernels.host.KernelConfig that describe the kernel (not its instrumentation).
HW_FIELDS = ("tile_m", "tile_n", "tile_k", "cluster_m", "cluster_n", "schedule", "mainloop_stages", "raster",
             "swizzle", "epilogue_tile_n", "epilogue_store_stages", "decomposition", "splits", "reduction")
#: Fields of the twin's candidates that stage 1 of the hw search varies (the rest: later stages).
HW_STAGE1_FIELDS = ("schedule", "tile_m", "tile_n", "tile_k", "cluster_m", "cluster_n", "decomposition", "splits",
                    "reduction")


def unknown_hw_fields(fields_: dict) -> list[str]:
    """The names in ``fields_`` (a hardware KernelConfig's fields) that the SM90 model has no field for;
    the instrumentation switches do not change the kernel and are not counted."""
    return sorted(set(fields_) - set(HW_FIELDS) - {"instrument", "instrument_roles"})


def sm90_config_from_hw(fields_: dict, m: int, n: int, k: int, dtype: str = "fp16", l: int = 1) -> Sm90GemmConfig:  # noqa: E741
    """The Sm90GemmConfig of the hardware twin run with KernelConfig fields ``fields_`` on (m, n, k).

    The twin's epilogue subtile is tile_m x epilogue_tile_n in both schedules, D is in the input
    type, no C source; ``mainloop_stages`` None means the twin's own count (as many as fit), which the
    model derives the same way (tests/test_tune_space.py checks it for every hw candidate).
    """
    unknown = unknown_hw_fields(fields_)
    if unknown:
        raise ConfigError(f"hardware config fields {unknown}: unknown; valid: {', '.join(HW_FIELDS)}")
    d = canonical_dtype(dtype, "dtype")
    tile_m = int(fields_.get("tile_m", 128))
    kw = {f: fields_[f] for f in HW_FIELDS if f in fields_ and f != "epilogue_tile_n"}
    return Sm90GemmConfig(m=m, n=n, k=k, l=l, dtype_ab=d, dtype_c=d, dtype_d=d, **kw,
                          epilogue_tile_m=tile_m, epilogue_tile_n=int(fields_.get("epilogue_tile_n", 32)))


def hw_kernel_fields(cfg: Sm90GemmConfig) -> dict:
    """``hw_kernels.host.KernelConfig(**hw_kernel_fields(cfg))`` builds the twin that runs ``cfg``.

    Raises ConfigError where the twin cannot express ``cfg`` (its epilogue subtile spans tile_m rows).
    """
    if not isinstance(cfg, Sm90GemmConfig):
        raise ConfigError(f"config of type {type(cfg).__name__}: the hardware twin is an SM90 kernel")
    em, en = cfg.epi_tile
    if em != cfg.tile_m:
        raise ConfigError(f"epilogue_tile_m={em}: the hardware twin's epilogue subtile is tile_m={cfg.tile_m} rows")
    out = {"tile_m": cfg.tile_m, "tile_n": cfg.cta_tile_n, "tile_k": cfg.cta_tile_k, "cluster_m": cfg.cluster_m,
           "cluster_n": cfg.cluster_n, "schedule": cfg.schedule, "mainloop_stages": cfg.mainloop_stages,
           "raster": cfg.raster, "swizzle": cfg.swizzle, "epilogue_tile_n": en,
           "epilogue_store_stages": cfg.store_stages}
    if cfg.decomposition != "data_parallel":
        if cfg.scheduler_sm_count is not None:
            raise ConfigError(f"scheduler_sm_count={cfg.scheduler_sm_count}: the hardware twin's stream-K units use "
                              "every SM the H200 co-schedules")
        out.update(decomposition=cfg.decomposition, splits=cfg.splits, reduction=cfg.reduction)
    return out


#: What a missing stream-K field of a twin config means (the static scheduler).
_HW_DEFAULTS = {"decomposition": "data_parallel", "splits": 1, "reduction": "deterministic"}


def _hw_key(fields_: dict) -> tuple:
    return tuple((f, fields_.get(f, _HW_DEFAULTS.get(f))) for f in HW_FIELDS if f != "mainloop_stages")


def hw_space_sm90(m: int, n: int, k: int, dtype: str = "fp16", l: int = 1) -> Space:  # noqa: E741
    """``--space hw``: the hardware twin's candidates (:func:`hw_space`, and for M <= ``HW_SMALL_M_MAX_M``
    :func:`hw_small_m_space`) as a staged Space.

    Stage 1: every (schedule, tile, cluster) the list has, at the list's first raster/swizzle/epilogue
    values; stage 2: the other fields' combinations the list has, from the best of stage 1.
    """
    ragged = ragged_tile_n(n)
    cands = hw_space(ragged_n=ragged) + (hw_small_m_space() if m <= HW_SMALL_M_MAX_M else [])
    if not cands:
        raise ConfigError("simulator.kernels.space.hw_space() is empty")
    first = cands[0]
    later = [f for f in HW_FIELDS if f not in HW_STAGE1_FIELDS and any(f in c for c in cands)]
    s1 = []
    s2 = []
    for c in cands:
        a = {f: c[f] for f in HW_STAGE1_FIELDS if f in c}
        b = {f: c[f] for f in later if f in c}
        if a not in s1:
            s1.append(a)
        if b not in s2:
            s2.append(b)
    keys = {_hw_key(c) for c in cands}
    base = sm90_config_from_hw(first, m, n, k, dtype, l)

    def to_cfg_updates(u: dict) -> dict:
        out = {f: v for f, v in u.items() if f != "epilogue_tile_n"}
        if "epilogue_tile_n" in u:
            out["epilogue_tile_n"] = u["epilogue_tile_n"]
        if "tile_m" in u:
            out["epilogue_tile_m"] = u["tile_m"]
        return out

    stages = ((_fixed("tile x schedule x cluster", [to_cfg_updates(a) for a in s1]),),
              (_fixed(" x ".join(later), [to_cfg_updates(b) for b in s2]),))

    def member(cfg) -> bool:
        try:
            return _hw_key(hw_kernel_fields(cfg)) in keys
        except ConfigError:
            return False

    return Space("hw", base, stages, ("tile x schedule x cluster", " x ".join(later)), member=member,
                 note=f"the {len(cands)} configs of simulator.kernels.space.hw_space() (what the H200 campaign "
                      "measures)" + (f" with ragged-N tiles {ragged}" if ragged else "")
                      + (" and hw_small_m_space() (M <= 128)" if m <= HW_SMALL_M_MAX_M else ""))


# ------------------------------------------------------------------------------ gemm-model (B200)
#: CuTe DSL dense_gemm_persistent.py (the kernel hbarclay/gemm-model timed): MMA tiles and clusters
#: of benchmark_gemm.py's fp16 runs.
GEMM_MODEL_MMA_M = (128, 256)
GEMM_MODEL_MMA_N = (64, 128, 192, 256)
GEMM_MODEL_CLUSTERS = ((2, 1), (2, 2))
#: _compute_stages of dense_gemm_persistent.py: SMEM capacity of sm_100 in the DSL, bytes kept for
#: barriers and helpers, accumulator stages, initial epilogue (C) store stages.
DSL_SMEM_CAPACITY = (228 - 1) * 1024
DSL_MBAR_HELPER_BYTES = 1024
DSL_ACC_STAGES = 2
DSL_INITIAL_C_STAGES = 2


def pad16(x: int, elem_bytes: int = 2) -> int:
    """benchmark_gemm.py pad_mnk: extents rounded up to 16 bytes of elements before the launch."""
    a = 16 // elem_bytes
    return -(-x // a) * a


def dsl_stage_counts(cfg: Sm100GemmConfig) -> tuple[int, int]:
    """(mainloop stages, epilogue store stages) as dense_gemm_persistent.py's _compute_stages sets
    them: A/B stages from the SMEM left after 1 KiB and two epilogue subtiles, then every byte left
    over becomes another store stage."""
    r = cfg.resolved()
    ab = r.ab_stage_bytes_per_cta
    c_stage = r.epi_d_subtile_bytes
    c_bytes = DSL_INITIAL_C_STAGES * c_stage
    ab_stages = (DSL_SMEM_CAPACITY - (DSL_MBAR_HELPER_BYTES + c_bytes)) // ab
    c_stages = DSL_INITIAL_C_STAGES + (DSL_SMEM_CAPACITY - ab * ab_stages - (DSL_MBAR_HELPER_BYTES + c_bytes)) // c_stage
    return ab_stages, c_stages


def gemm_model_config(m: int, n: int, k: int, mma_m: int, mma_n: int, cluster_m: int, cluster_n: int) -> Sm100GemmConfig:
    """The Sm100GemmConfig of one gemm-model B200 run (problem padded as the benchmark launched it)."""
    base = Sm100GemmConfig(m=pad16(m), n=pad16(n), k=pad16(k), l=1, dtype_ab="fp16", dtype_acc="f32",
                           dtype_c="fp16", dtype_d="fp16", mma_tile_m=mma_m, mma_tile_n=mma_n, use_2sm=True,
                           cluster_m=cluster_m, cluster_n=cluster_n, read_c=False,
                           accumulator_stages=DSL_ACC_STAGES, tile_scheduler="static", raster="m", swizzle=1)
    ml, st = dsl_stage_counts(base)
    return replace(base, mainloop_stages=ml, epilogue_store_stages=st)


def gemm_model_space(m: int, n: int, k: int) -> Space:
    """``--space gemm-model``: the 16 B200 configs of hbarclay/gemm-model (one stage: all of them)."""
    cfgs = [gemm_model_config(m, n, k, mm, mn, cm, cn) for mm in GEMM_MODEL_MMA_M for mn in GEMM_MODEL_MMA_N
            for cm, cn in GEMM_MODEL_CLUSTERS]
    names = {f.name for f in fields(Sm100GemmConfig)}
    updates = [{f: getattr(c, f) for f in names} for c in cfgs]
    return Space("gemm-model", cfgs[0], ((_fixed("MMA tile x cluster", updates),),), ("MMA tile x cluster",),
                 note="the 16 CuTe-DSL dense_gemm_persistent.py configs timed in hbarclay/gemm-model (fp16)")


# ------------------------------------------------------------------------------------- entry point
def make_space(space: str, arch_sm: int, m: int, n: int, k: int, dtype: str = "bf16",
               dtype_d: str | None = None) -> Space:
    """The named space for a problem on an SM100 (``arch_sm=100``) or SM90 (90) arch."""
    if space not in SPACES:
        raise ConfigError(f"space={space!r}: unknown; valid: {', '.join(SPACES)}")
    if space == "full":
        return (sm100_full_space if arch_sm == 100 else sm90_full_space)(m, n, k, dtype, dtype_d)
    if space == "hw":
        if arch_sm != 90:
            raise ConfigError("space=hw: the hardware twin is an SM90 kernel; use --arch h200")
        if dtype_bits(canonical_dtype(dtype)) != 16 or dtype_d not in (None, canonical_dtype(dtype)):
            raise ConfigError(f"dtype={dtype!r}: the hardware twin computes fp16 or bf16 in, D in the input type")
        return hw_space_sm90(m, n, k, dtype)
    if arch_sm != 100:
        raise ConfigError("space=gemm-model: hbarclay/gemm-model's data is from a B200; use --arch b200")
    if canonical_dtype(dtype) != "fp16" or dtype_d not in (None, "fp16"):
        raise ConfigError(f"dtype={dtype!r}: the gemm-model space is its fp16 runs (fp16 in and out)")
    return gemm_model_space(m, n, k)
