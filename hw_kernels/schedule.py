"""The static persistent tile order of the hardware kernel, in plain Python (the kernel computes the
same integers on the GPU; the SM90 model and the trace converter use this mirror).

Work is handed out per *cluster*: the output tiles are grouped into cluster tiles of
``cluster_m x cluster_n`` CTA tiles. Persistent cluster ``p`` (of ``P`` launched) takes linear
cluster ids ``p, p + P, p + 2P, ...``. A linear id ``c`` becomes a cluster coordinate (CUTLASS's
SM90 raster + swizzle rule):

* ``raster="along_m"``: the *major* dimension is M (consecutive ids walk down M), minor is N;
  ``"along_n"`` swaps them.
* ``swizzle = s``: ids come in groups of ``s`` along the minor dimension: ``offset = c % s``,
  ``major = (c // s) % n_major``, ``minor = (c // s // n_major) * s + offset``. So the walk goes
  down the major dimension in bands ``s`` clusters wide, which keeps ``s`` B (or A) panels hot in L2.
* When ``n_minor`` is not a multiple of ``s``, the last band is narrower (``r = n_minor % s``) and
  uses the same rule with ``s = r``; no id maps outside the problem (CUTLASS C++ pads instead).

The CTA at ``(cta_m, cta_n)`` inside its cluster computes tile ``(major/minor -> cluster_m_idx *
cluster_m + cta_m, cluster_n_idx * cluster_n + cta_n)``. A CTA whose tile lies past the problem edge
(only when the tile count is not a multiple of the cluster shape) still runs its loads, which TMA fills
with zeros, and its stores, which TMA clips: it must, since its peers multicast into it.
"""

from __future__ import annotations


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def cluster_coord(c: int, n_major: int, n_minor: int, swizzle: int) -> tuple[int, int]:
    """(major, minor) cluster coordinate of linear cluster id ``c``."""
    s = max(1, int(swizzle))
    full_bands = n_minor // s
    band_ids = s * n_major
    if c < full_bands * band_ids:
        offset = c % s
        extra = c // s
        return extra % n_major, (extra // n_major) * s + offset
    r = n_minor - full_bands * s
    c2 = c - full_bands * band_ids
    return c2 // r, full_bands * s + c2 % r


def tile_order(m: int, n: int, tile_m: int, tile_n: int, cluster_m: int = 1, cluster_n: int = 1,
               raster: str = "along_m", swizzle: int = 1,
               num_clusters: int | None = None) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """The tiles each CTA computes, in order: ``{(persistent_cluster, cta_rank): [(tile_m, tile_n), ...]}``.

    ``cta_rank`` is the CTA's rank in its cluster (``cta_m + cta_n * cluster_m``). ``num_clusters``
    is the number of persistent clusters launched (default: one per cluster tile).
    """
    if raster not in ("along_m", "along_n"):
        raise ValueError(f"raster={raster!r}: must be 'along_m' or 'along_n'")
    tiles_m, tiles_n = ceil_div(m, tile_m), ceil_div(n, tile_n)
    ncm, ncn = ceil_div(tiles_m, cluster_m), ceil_div(tiles_n, cluster_n)
    total = ncm * ncn
    n_major, n_minor = (ncm, ncn) if raster == "along_m" else (ncn, ncm)
    p_count = total if num_clusters is None else min(total, num_clusters)
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for p in range(p_count):
        ids = range(p, total, p_count)
        for cn in range(cluster_n):
            for cm in range(cluster_m):
                rank = cm + cn * cluster_m
                tiles = []
                for c in ids:
                    major, minor = cluster_coord(c, n_major, n_minor, swizzle)
                    km, kn = (major, minor) if raster == "along_m" else (minor, major)
                    tiles.append((km * cluster_m + cm, kn * cluster_n + cn))
                out[(p, rank)] = tiles
    return out
