"""What limits a simulated GEMM, in one word: :func:`classify` a :class:`~simulator.engine.run.SimResult`.

Six scores, each a fraction measured on the result (``scores`` of the returned :class:`Bottleneck`):

* ``launch``: launch overhead / predicted time.
* ``tensor_core``: tensor-core busy time / kernel time (``SimResult.tensor_core_utilization``,
  averaged over the tensor cores: one per SM, or per SM pair with 2-SM MMA).
* ``hbm``: HBM bytes (read + write) at the arch's HBM bandwidth / kernel time: the fraction of the
  kernel the HBM channel must have been busy.
* ``l2``: L2 -> SM bytes at the arch's L2 bandwidth / kernel time. The bytes are estimated from the
  config (:func:`l2_load_bytes`: every MMA tile of the problem loads its A and B slices for every
  K-block, shared by the CTAs a multicast reaches), since every TMA load passes the L2 channel of the
  model whether it hits or misses.
* ``wave_efficiency``: cluster work units / (waves x resident clusters), waves rounded up: 1.0 when
  every wave fills the GPU; 0.5 when the last of two waves is empty but for one unit.
* ``epilogue``: the fraction of the kernel the MMA issuer is held up by the epilogue. SM100: the MMA
  warp's wait on ``accumulator.empty`` (no free TMEM accumulator: the epilogue has not drained one).
  SM90: the consumer warpgroups' waits on ``epilogue.*`` barriers (store buffers, named barrier),
  averaged over the two consumers (their epilogue work itself is not a wait and is not counted).

The word, from the first rule that holds (thresholds are the named constants below):

1. ``launch``            launch >= LAUNCH_BOUND_FRACTION
2. ``wave quantisation`` tensor_core / wave_efficiency >= TENSOR_CORE_BOUND (the tensor cores are busy
                         while there is work) and wave_efficiency <= 1 - WAVE_LOSS_BOUND (the last
                         wave leaves many of them idle)
3. ``tensor core``       tensor_core / wave_efficiency >= TENSOR_CORE_BOUND (busy while there is work;
                         a last wave that is only a little short does not change the word)
4. ``HBM``               hbm >= MEMORY_BOUND
5. ``L2``                l2 >= MEMORY_BOUND
6. ``epilogue``          epilogue >= EPILOGUE_BOUND and at least two waves (with one tile per MMA
                         there is no next tile for the epilogue to hold up: its wait is the tail)
7. ``latency``           none of these: no unit is near its limit, the pipelines wait on load and
                         barrier latencies (typical of small K or too few stages)
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.kernels.scheduler import max_resident_clusters, static_grid_clusters

#: Launch overhead at least this fraction of the predicted time -> "launch".
LAUNCH_BOUND_FRACTION = 0.5
#: Tensor cores busy at least this fraction of the time the waves give them work -> "tensor core"
#: (CUTLASS's best GEMMs keep them above 0.9; 0.8 leaves room for pipeline fill and drain).
TENSOR_CORE_BOUND = 0.8
#: HBM (or L2) bytes need at least this fraction of the kernel at full bandwidth -> "HBM" ("L2").
#: Streaming kernels reach 0.8-0.9 of the datasheet bandwidth, so 0.7 is "at the wall".
MEMORY_BOUND = 0.7
#: The last wave wastes at least this fraction of the resident units' time -> "wave quantisation".
WAVE_LOSS_BOUND = 0.2
#: The MMA issuer waits on the epilogue at least this fraction of the kernel -> "epilogue".
EPILOGUE_BOUND = 0.15

WORDS = ("launch", "tensor core", "HBM", "L2", "wave quantisation", "epilogue", "latency")


@dataclass(frozen=True)
class Bottleneck:
    name: str                   # one of WORDS
    detail: str                 # the number behind the word, e.g. "tensor cores 97% busy"
    scores: dict                # the six scores (see the module docstring)


def l2_load_bytes(cfg) -> int:
    """Bytes TMA loads through L2 for resolved ``cfg`` (estimate, see the module docstring).

    Per MMA tile and K-block: A (mma_tile_m x tile_k) shared by the ``cluster_n`` tiles of a cluster
    row (multicast), B (mma_tile_n x tile_k) shared by the cluster's MMA tiles along M.
    """
    tk = cfg.tile_k if cfg.arch_name == "sm100" else cfg.cta_tile_k
    b = cfg.bits_ab / 8
    a_bytes = cfg.mma_tile_m * tk * b / cfg.cluster_n
    b_bytes = cfg.mma_tile_n * tk * b / cfg.cluster_mma_tiles_m
    return int(cfg.tiles_m * cfg.tiles_n * cfg.l * cfg.k_tiles * (a_bytes + b_bytes))


def resident_clusters(cfg, arch) -> int:
    """Clusters that run at once: the CLC grid's resident clusters, or the static persistent grid."""
    units = cfg.num_clusters_grid
    if getattr(cfg, "tile_scheduler", "static") == "clc":
        return max(1, min(units, max_resident_clusters(cfg, arch)))
    return static_grid_clusters(cfg, arch, units)


def waves(cfg, arch) -> int:
    """Rounds of work units the resident clusters go through (work units / resident, rounded up)."""
    return -(-cfg.num_clusters_grid // resident_clusters(cfg, arch))


def wave_efficiency(cfg, arch) -> float:
    """Work units / (waves x resident clusters), waves rounded up (1.0: every wave full)."""
    return cfg.num_clusters_grid / (waves(cfg, arch) * resident_clusters(cfg, arch))


def _epilogue_wait(result) -> float:
    if result.config.arch_name == "sm100":
        return sum(r.wait_fraction.get("accumulator.empty", 0.0) for r in result.role_times if r.role == "MMA")
    consumers = [r for r in result.role_times if r.role.startswith("Consumer")]
    if not consumers:
        return 0.0
    waits = [sum(v for k, v in r.wait_fraction.items() if k.startswith("epilogue")) for r in consumers]
    return sum(waits) / len(waits)


def scores(result) -> dict:
    """The six scores of :func:`classify` (fractions; see the module docstring)."""
    arch, cfg = result.arch, result.config
    total_ns = max(result.time_ns, 1e-9)
    kernel_s = max(result.time_ns - result.launch_overhead_ns, 1e-9) * 1e-9
    return {
        "launch": result.launch_overhead_ns / total_ns,
        "tensor_core": result.tensor_core_utilization,
        "hbm": result.hbm_bytes / arch.hbm_bytes_per_s.value / kernel_s,
        "l2": l2_load_bytes(cfg) / arch.l2_bytes_per_s.value / kernel_s,
        "wave_efficiency": wave_efficiency(cfg, arch),
        "epilogue": _epilogue_wait(result),
    }


def classify(result) -> Bottleneck:
    """The bottleneck of a finished (not deadlocked) run, by the rules of the module docstring."""
    s = scores(result)
    tc, wave = s["tensor_core"], s["wave_efficiency"]
    if s["launch"] >= LAUNCH_BOUND_FRACTION:
        return Bottleneck("launch", f"launch overhead {s['launch']:.0%} of the time", s)
    if tc / wave >= TENSOR_CORE_BOUND:
        if wave <= 1.0 - WAVE_LOSS_BOUND:
            return Bottleneck("wave quantisation", f"waves {wave:.0%} full, tensor cores {tc:.0%} busy", s)
        return Bottleneck("tensor core", f"tensor cores {tc:.0%} busy (waves {wave:.0%} full)", s)
    if s["hbm"] >= MEMORY_BOUND:
        return Bottleneck("HBM", f"HBM {s['hbm']:.0%} of its bandwidth", s)
    if s["l2"] >= MEMORY_BOUND:
        return Bottleneck("L2", f"L2 {s['l2']:.0%} of its bandwidth", s)
    if s["epilogue"] >= EPILOGUE_BOUND and waves(result.config, result.arch) >= 2:
        return Bottleneck("epilogue", f"MMA waits {s['epilogue']:.0%} on the epilogue", s)
    return Bottleneck("latency", f"tensor cores {tc:.0%}, HBM {s['hbm']:.0%}, waves {wave:.0%}", s)
