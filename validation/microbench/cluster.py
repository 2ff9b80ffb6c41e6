"""Cluster residency on the H200, and where the clusters of one launch land (``cuda/cluster.cu``).

* ``cuOccupancyMaxActiveClusters`` for cluster sizes 1, 2, 3, 4, 6, 8, 9, 12, 16 (above 8 is
  non-portable: the kernel opts in), with 384 threads and the hardware twin's dynamic SMEM footprint (230,400 B: its stage count
  fills the SM for every tile it supports, see ``hw_kernels/sm90_gemm.py``), and with 1 KiB for
  comparison; the DSL's ``HardwareInfo().get_max_active_clusters`` beside it when the DSL is there.
* ``cluster_probe`` launched with exactly that many clusters: every CTA records %smid, %nsmid, its
  cluster id and rank, then waits until all CTAs have checked in (a timeout says they were not
  co-resident). Clusters never span GPCs, so SMs seen in one cluster share a GPC: the union over all
  launches and sizes gives the GPCs (:func:`infer_gpcs`).
"""

from __future__ import annotations

#: Cluster sizes probed (3, 6, 9, 12 tile GPCs of 18 SMs, so the SMs that 2^k-sized clusters leave idle
#: show up in some cluster and join their GPC).
SIZES = (1, 2, 3, 4, 6, 8, 9, 12, 16)
TWIN_SMEM = 230400
THREADS = 384


def infer_gpcs(clusters: list[list[int]]) -> list[list[int]]:
    """Connected components of SMs that shared a cluster (union-find); sorted by first SM."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for sms in clusters:
        for s in sms:
            find(s)
        for s in sms[1:]:
            ra, rb = find(sms[0]), find(s)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    comps: dict[int, list[int]] = {}
    for s in parent:
        comps.setdefault(find(s), []).append(s)
    return sorted((sorted(c) for c in comps.values()), key=lambda c: c[0])


def clusters_per_gpc(gpcs: list[list[int]], size: int) -> int:
    """Clusters of ``size`` that fit if each GPC holds floor(its SMs / size): the GPC-aware count."""
    return sum(len(g) // size for g in gpcs)


def measure(gpu, quick: bool = False) -> dict:
    from .build import cubin_path
    from .driver import Args
    fn = gpu.func(cubin_path("cluster"), "cluster_probe")
    res: dict = {"occupancy": [], "launches": []}
    for smem in (TWIN_SMEM, 1024):
        for cs in SIZES:
            try:
                m = gpu.max_active_clusters(fn, cs, THREADS, smem)
                err = None
            except RuntimeError as e:
                m, err = None, str(e)
            res["occupancy"].append({"cluster": cs, "smem": smem, "threads": THREADS, "max_active_clusters": m,
                                     "error": err})
            print(f"[cluster] size {cs:2d} smem {smem}: max active clusters {m} {err or ''}", flush=True)
    try:
        import cutlass.utils
        hw = cutlass.utils.HardwareInfo()
        res["dsl_hardware_info"] = {str(cs): hw.get_max_active_clusters(cs) for cs in (1, 2, 4, 8, 16)}
    except Exception as e:  # noqa: BLE001 - the DSL is optional here
        res["dsl_hardware_info"] = {"error": f"{type(e).__name__}: {e}"[:200]}
    out = gpu.alloc(4096 * 8 * 8)
    counter = gpu.alloc(64)
    all_clusters: list[list[int]] = []
    for cs in SIZES:
        occ = next(o for o in res["occupancy"] if o["cluster"] == cs and o["smem"] == TWIN_SMEM)
        m = occ["max_active_clusters"]
        if not m:
            continue
        for rep in range(1 if quick else 3):
            blocks = m * cs
            gpu.memset(counter, 0, 64)
            gpu.launch(fn, blocks, THREADS, Args.of([out, counter], [blocks, 50_000_000]), smem=TWIN_SMEM,
                       cluster=cs if cs > 1 else 0)
            recs = gpu.spans(out, blocks, 8)
            groups: dict[int, list[int]] = {}
            for r in recs:
                groups.setdefault(int(r[2]), []).append(int(r[0]))
            clusters = [sorted(v) for _, v in sorted(groups.items())]
            all_clusters += clusters
            res["launches"].append({
                "cluster": cs, "rep": rep, "blocks": blocks, "all_resident": bool((recs[:, 7] >= blocks).all()),
                "distinct_sms": len(set(recs[:, 0].tolist())), "nsmid": int(recs[0, 1]),
                "clusters_sms": clusters,
                "start_spread_ns": int(recs[:, 5].max() - recs[:, 5].min())})
            print(f"[cluster] size {cs:2d} launch {rep}: {len(clusters)} clusters, all resident "
                  f"{res['launches'][-1]['all_resident']}, {res['launches'][-1]['distinct_sms']} SMs", flush=True)
    gpcs = infer_gpcs(all_clusters)
    res["gpcs"] = gpcs
    res["gpc_sizes"] = sorted((len(g) for g in gpcs), reverse=True)
    res["clusters_per_gpc_estimate"] = {str(cs): clusters_per_gpc(gpcs, cs) for cs in SIZES}
    used = sorted({s for c in all_clusters for s in c})
    res["sms_seen"] = len(used)
    res["smid_max"] = max(used) if used else None
    gpu.free(out)
    gpu.free(counter)
    res["quantities"] = quantities(res)
    return res


def quantities(res: dict) -> dict:
    from .common import qv
    q = {}
    for o in res["occupancy"]:
        if o["max_active_clusters"] is None:
            continue
        tag = "twin_smem" if o["smem"] == TWIN_SMEM else "smem1k"
        q[f"cluster.c{o['cluster']}.max_active_clusters.{tag}"] = qv(
            o["max_active_clusters"], "clusters",
            f"cuOccupancyMaxActiveClusters, {o['threads']} threads, {o['smem']} B dynamic SMEM")
    if res.get("gpc_sizes"):
        q["cluster.gpcs_inferred"] = qv(len(res["gpc_sizes"]), "GPCs",
                                        "connected components of SMs sharing a cluster over all probe launches")
    return q
