"""The configurations the SM90 hardware twin implements and the hardware campaigns measure.

Pure Python (no DSL): the tuner (``wsim tune --space hw``) and the GPU campaign
(``validation/campaign.py``) both import this, so that what is ranked is what is measured.
Field names are those of :class:`hw_kernels.host.KernelConfig` (and of
``simulator.kernels.sm90_config.Sm90GemmConfig``).
"""

from __future__ import annotations

from itertools import product

#: (schedule, tile_n) pairs the twin implements with tile_m = 128 (ping-pong holds a whole 128 x tile_n
#: fp32 accumulator in one warpgroup's registers, so it stops at 128).
HW_TILES = (("cooperative", 64), ("cooperative", 128), ("cooperative", 192), ("cooperative", 256),
            ("pingpong", 64), ("pingpong", 128))
#: Cluster shapes (cluster_m, cluster_n), at most 4 CTAs.
HW_CLUSTERS = ((1, 1), (2, 1), (1, 2), (2, 2))
#: Raster orders and max swizzle sizes the tuning campaign compares (CUTLASS semantics).
HW_RASTERS = ("m", "n")
HW_SWIZZLES = (1, 4)


def hw_space() -> list[dict]:
    """Every candidate of ``--space hw``: KernelConfig field dicts, in a fixed order."""
    out = []
    for (schedule, tile_n), (cm, cn), raster, swizzle in product(HW_TILES, HW_CLUSTERS, HW_RASTERS, HW_SWIZZLES):
        out.append({"tile_m": 128, "tile_n": tile_n, "tile_k": 64, "cluster_m": cm, "cluster_n": cn,
                    "schedule": schedule, "raster": raster, "swizzle": swizzle, "epilogue_tile_n": 32,
                    "epilogue_store_stages": 4})
    return out
