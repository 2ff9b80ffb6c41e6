"""The wave-quantised roofline: the one-line baseline every accuracy number is reported beside.

For a GEMM config on an arch, at the arch's clock::

    time = max(waves x (FLOPs of one CTA tile) / (per-SM tensor peak),
               (A + B read once, C read once if used, D written once) / HBM bandwidth)

``waves`` = ceil(cluster work tiles / resident clusters), with the work tiles and the resident
clusters of the kernel's own scheduler (so the last, partial wave costs a whole tile time, and
tiles past the problem edge count as full tiles, as on the GPU). Nothing else: no latency, no
launch overhead, no L2, no epilogue. It is what a cycle-level model has to beat.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.kernels.scheduler import TileRaster, max_resident_clusters, static_grid_clusters


@dataclass(frozen=True)
class Roofline:
    time_ns: float
    compute_ns: float
    memory_ns: float
    waves: int
    resident_clusters: int

    @property
    def bound(self) -> str:
        return "compute" if self.compute_ns >= self.memory_ns else "memory"


def _resident_clusters(cfg, arch, work_units: int) -> int:
    if cfg.arch_name == "sm100" and cfg.tile_scheduler == "clc":
        return max(1, min(work_units, max_resident_clusters(cfg, arch)))
    return static_grid_clusters(cfg, arch, work_units)


def roofline(cfg, arch) -> Roofline:
    """The wave-quantised roofline of resolved ``cfg`` on ``arch`` (at ``arch.clock_ghz``)."""
    cfg = cfg.resolved(arch)
    raster = TileRaster.from_config(cfg)
    # Work units that hold at least one MMA tile inside the problem (static padding ids that are
    # wholly outside are skipped by nobody on hardware either, but cost no tile time).
    units = cfg.tiles_m * cfg.tiles_n * cfg.l
    per_unit = max(1, cfg.cluster_size // cfg.atom_thr_m) if cfg.arch_name == "sm100" else cfg.cluster_size
    cluster_units = -(-units // per_unit)
    resident = _resident_clusters(cfg, arch, max(1, min(cluster_units, raster.num_clusters)))
    waves = -(-cluster_units // resident)
    dtype_factor = arch.mma_fp8_factor.value if cfg.bits_ab == 8 else 1.0
    per_sm_flops_per_ns = arch.mma_flops_per_clk_per_sm.value * dtype_factor * arch.clock_ghz.value
    tile_flops = 2.0 * cfg.cta_tile_m * cfg.cta_tile_n * cfg.k     # one CTA's share of one MMA tile
    compute_ns = waves * tile_flops / per_sm_flops_per_ns
    memory_ns = cfg.compulsory_bytes / (arch.hbm_bytes_per_s.value * 1e-9)
    return Roofline(max(compute_ns, memory_ns), compute_ns, memory_ns, waves, resident)


__all__ = ["Roofline", "roofline"]
