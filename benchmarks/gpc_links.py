"""A candidate SM90 memory mechanism, replayed before it enters the model: the GPC each CTA (cluster) of a
launch lands on, each GPC's L2 -> SM path as a shared link, and loads of one slice from SMs of one GPC
merging when they come close enough in time.

Measured: 16 SMs streaming from an H200's L2 get 71.8 B/clk each where one alone gets 106 (h200_microbench_v2
``l2_to_sm.f*.16sm``); on an H100 the CTAs slowed together are exactly those sharing a GPC (v3j, runs 1-3);
pairs of CTAs reading the same boxes land twice the unique-line rate when both sit on one GPC and the second
starts within ~200 cycles of the first, and never when they sit on two GPCs (v3k, v3l). Not in the shipped
model: see the README's memory section for what it did to the development sets.
"""

from __future__ import annotations

from simulator.kernels.scheduler import H200_PLACEMENT_DOMAINS, sm90_placement_domains
from simulator.machine.arch import ArchSpec
from simulator.machine.constants import Constant
from simulator.machine.memory import Channel, MemorySystem
from validation.microbench.l2share_groups import DOMAIN_GPC as H200_DOMAIN_GPC
from validation.microbench.l2share_groups import gpc_of_sm

__all__ = ["H200_DOMAIN_GPC", "gpc_of_sm", "launch_gpcs", "gpc_count", "GpcPath", "gpc_paths",
           "GPC_L2_BYTES_PER_S", "GPC_MERGE_WINDOW"]

_MB2 = "validation/results/h200_microbench_v2.json"
#: One GPC's L2 -> SM link: 9 of the 16 CTAs of the v2 16-SM stream share a GPC in the launch order below.
GPC_L2_BYTES_PER_S = Constant("gpc_l2_to_sm_bytes_per_s", round(9 * 71.82 * 1980.1e6, -8), "B/s",
                              f"derived: 9 x {_MB2} l2_to_sm.f16MiB.16sm.bytes_per_clk_per_sm (71.82) x its "
                              "1980.1 MHz (9 of the 16 CTAs on one GPC: the launch order of h100_microbench_v3j)",
                              "measured-here")
#: Loads of one slice from SMs of one GPC merge when the second comes at most this many cycles after the first.
#: Near pairs (one GPC) land half-way between the unmerged and the merged rate at offsets of ~195 / 270 / 220
#: cycles with 132 / 66 / 32 CTAs streaming (the median taken) and ~20 with 16; far pairs (two GPCs) never merge.
GPC_MERGE_WINDOW = Constant("gpc_merge_window_cycles", 220.0, "cycles",
                            "validation/results/h100_microbench_v3l.json: the offset at which near pairs land half-way "
                            "between the unmerged and the merged rate, l2share_window.{132,66,32}sm.pair.off* (195, "
                            "270, 220; median)", "measured-here")


def _domains(arch: ArchSpec) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(SMs per placement domain, the GPC of each): the H200's measured domains on its 132 SMs, else
    ``sm90_placement_domains``' GPCs, one domain each."""
    domains = sm90_placement_domains(arch)
    return domains, H200_DOMAIN_GPC if domains == H200_PLACEMENT_DOMAINS else tuple(range(len(domains)))


def _shares(caps: tuple[list[int], ...], want: int, big: list[int]) -> dict[int, int]:
    """CTAs per domain when ``want`` CTAs are dealt to the domains of ``big`` one each in turn, a pass per list
    of ``caps`` (each domain up to its cap in that pass)."""
    share = dict.fromkeys(big, 0)
    for cap in caps:
        room = list(cap)
        while want > 0 and any(room[i] > 0 for i in big):
            for i in big:
                if want > 0 and room[i] > 0:
                    share[i] += 1
                    room[i] -= 1
                    want -= 1
    return share


def launch_gpcs(cluster_size: int, clusters: int, arch: ArchSpec, policy: str = "cluster") -> tuple[int, ...]:
    """The GPC each of the first ``clusters`` clusters of a launch lands on, in launch (blockIdx) order.

    ``policy="cluster"``, a launch with a cluster shape, as the twin's kernels are launched whatever their
    cluster size (the ``smids`` of every twin trace, 1x1 and 2x1, H100 and H200; h200_microbench_v2
    ``cluster.launches`` for sizes 2-16): turns over the placement domains, the 2-SM domains first, one cluster
    per domain with room left in each turn, so that neighbouring clusters sit on different GPCs.
    ``policy="plain"``, a launch without one (the microbenchmarks; h100_microbench_v3j ``smids``, grids of 1-132
    CTAs): the 2-SM domains fill first; the rest is shared out over the other domains one TPC each in turn (the
    second domain first, the first last), the TPCs' second SMs only once every TPC has one, and each domain
    takes its share as one contiguous run of blocks. Clusters past what fits wrap around."""
    if policy not in ("cluster", "plain"):
        raise ValueError(f"launch policy {policy!r}: must be 'cluster' or 'plain'")
    size = max(1, cluster_size)
    domains, gpc_of = _domains(arch)
    small = [i for i, d in enumerate(domains) if d == 2]
    big = [i for i, d in enumerate(domains) if d != 2]
    if policy == "plain" and size == 1:
        head = [gpc_of[i] for i in small for _ in range(domains[i])][:clusters]
        turn = big[1:] + big[:1]
        share = _shares(([d // 2 for d in domains], [d - d // 2 for d in domains]), clusters - len(head), turn)
        order = head + [gpc_of[i] for i in turn for _ in range(share[i])]
    else:
        order = []
        room = [d // size for d in domains]
        while len(order) < clusters and any(r > 0 for r in room):
            for i in small + big:
                if len(order) < clusters and room[i] > 0:
                    order.append(gpc_of[i])
                    room[i] -= 1
    order = order or [0]
    return tuple(order[c % len(order)] for c in range(clusters))


def gpc_count(arch: ArchSpec) -> int:
    """Physical GPCs :func:`launch_gpcs` places CTAs on."""
    return max(_domains(arch)[1]) + 1


class GpcPath:
    """One GPC's side of the L2 -> SM path: a :class:`Channel` its SMs share, and (``window`` > 0) request
    merging: a slice this GPC asked for at most ``window`` cycles before is served with that first request (it
    lands with it and crosses neither the L2 nor the link again). Loads from other GPCs never merge."""

    def __init__(self, name: str, bytes_per_cycle: float, window: float, latency: float):
        self.link = Channel(name, bytes_per_cycle)
        self.window = window
        self.latency = latency
        self._recent: dict = {}
        self.merged_loads = 0

    def load(self, mem: MemorySystem, now: float, key, nbytes: int) -> float:
        """A TMA load of slice ``key`` (``nbytes``) from an SM of this GPC at ``now``; returns when it lands."""
        got = self._recent.get(key) if self.window > 0 else None
        if got is not None and now - got[0] <= self.window:
            self.merged_loads += 1
            return got[1]
        land = max(mem.load(now, key, nbytes), self.link.reserve(now, nbytes) + self.latency)
        if self.window > 0:
            self._recent[key] = (now, land)
        return land


def gpc_paths(mem: MemorySystem, ctas: int, ghz: float, cluster_size: int = 1, merge: bool = True,
              policy: str = "plain") -> list[GpcPath]:
    """Each CTA's :class:`GpcPath` for a launch of ``ctas`` CTAs (clusters of ``cluster_size``) on the H200 at
    ``ghz``: one per GPC, CTAs placed by :func:`launch_gpcs` (``policy``: the microbenchmarks' plain launches by
    default); ``merge`` False: the links alone."""
    a = ArchSpec.h200()
    window = GPC_MERGE_WINDOW.value if merge else 0.0
    paths = [GpcPath(f"gpc{g}", GPC_L2_BYTES_PER_S.value / (ghz * 1e9), window, mem.t.l2_latency + mem.t.tma_overhead)
             for g in range(gpc_count(a))]
    gpc_of = launch_gpcs(cluster_size, -(-ctas // cluster_size), a, policy)
    return [paths[gpc_of[c // cluster_size]] for c in range(ctas)]
