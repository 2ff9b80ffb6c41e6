"""A candidate SM90 memory mechanism, replayed before it enters the model: each GPC's L2 -> SM path as a
shared link, and the GPC each CTA of a launch lands on.

Measured: 16 SMs streaming from an H200's L2 get 71.8 B/clk each where one alone gets 106, at every
footprint from 8 to 96 MiB (h200_microbench_v2 ``l2_to_sm.f*.16sm``); on an H100 the CTAs slowed
together are exactly those sharing a GPC (h100_microbench_v3j and its runs 2-3, ``shared_cap_rows`` in
l2_replay.md). Not in the shipped model: a link charged per CTA slowed GEMMs whose CTAs share A/B lines
within a GPC more than measured (stream-K campaign 8.4% -> 7.9% MAPE, but the H200 campaign 6.3% -> 6.9%,
and 128x64 few-tile rows from -13% to +25-36%); see the README's memory section.
"""

from __future__ import annotations

from simulator.kernels.scheduler import H200_PLACEMENT_DOMAINS, sm90_placement_domains
from simulator.machine.arch import ArchSpec
from simulator.machine.constants import Constant
from simulator.machine.memory import Channel

_MB2 = "validation/results/h200_microbench_v2.json"
#: The physical GPC of each placement domain of ``H200_PLACEMENT_DOMAINS`` (same order): the 8-SM domain and
#: the four 2-SM domains are one GPC of 16 SMs (measured on an H100, the same GH100 floorplan and domains:
#: h100_microbench_v3j's streams from L2 slow down together exactly when they share these groups).
H200_DOMAIN_GPC = (0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0)
#: One GPC's L2 -> SM link: 9 of the 16 CTAs of the v2 16-SM stream share a GPC in the launch order below.
GPC_L2_BYTES_PER_S = Constant("gpc_l2_to_sm_bytes_per_s", round(9 * 71.82 * 1980.1e6, -8), "B/s",
                              f"derived: 9 x {_MB2} l2_to_sm.f16MiB.16sm.bytes_per_clk_per_sm (71.82) x its "
                              "1980.1 MHz (9 of the 16 CTAs on one GPC: the launch order of h100_microbench_v3j)",
                              "measured-here")


def _domains(arch: ArchSpec) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(SMs per placement domain, the GPC of each): the H200's measured domains on its 132 SMs, else
    ``sm90_placement_domains``' GPCs, one domain each."""
    domains = sm90_placement_domains(arch)
    return domains, H200_DOMAIN_GPC if domains == H200_PLACEMENT_DOMAINS else tuple(range(len(domains)))


def launch_gpcs(cluster_size: int, clusters: int, arch: ArchSpec) -> tuple[int, ...]:
    """The GPC each of the first ``clusters`` clusters of a launch lands on, in launch (blockIdx) order: the
    order measured on the GH100 floorplan (h100_microbench_v3j ``smids``, grids of 1-132 CTAs). The 2-SM
    domains fill first; the rest is shared out over the other domains, one TPC each in turn (the second
    domain first, the first last; one cluster each for clusters of 2 or more), the TPCs' second SMs only
    once every TPC has one; and each domain takes its share as one contiguous run of blocks, in that turn
    order. Clusters past what fits wrap around to the start of that order."""
    size = max(1, cluster_size)
    domains, gpc_of = _domains(arch)
    small = [i for i, d in enumerate(domains) if d == 2]
    big = [i for i, d in enumerate(domains) if d != 2]
    big = big[1:] + big[:1]
    head = [gpc_of[i] for i in small for _ in range(domains[i] // size)][:clusters]
    share = dict.fromkeys(big, 0)
    left = clusters - len(head)
    passes = ([d // 2 for d in domains], [d - d // 2 for d in domains]) if size == 1 else ([d // size for d in domains],)
    for cap in passes:
        room = list(cap)
        while left > 0 and any(room[i] > 0 for i in big):
            for i in big:
                if left > 0 and room[i] > 0:
                    share[i] += 1
                    room[i] -= 1
                    left -= 1
    order = head + [gpc_of[i] for i in big for _ in range(share[i])] or [0]
    return tuple(order[c % len(order)] for c in range(clusters))


def gpc_count(arch: ArchSpec) -> int:
    """Physical GPCs :func:`launch_gpcs` places CTAs on."""
    return max(_domains(arch)[1]) + 1


def gpc_links(ctas: int, ghz: float, cluster_size: int = 1) -> list[Channel]:
    """Each CTA's GPC link for a launch of ``ctas`` CTAs (clusters of ``cluster_size``), in B per SM cycle at
    ``ghz``; CTAs of one GPC share one :class:`Channel`."""
    a = ArchSpec.h200()
    links = [Channel(f"gpc{g}", GPC_L2_BYTES_PER_S.value / (ghz * 1e9)) for g in range(gpc_count(a))]
    gpc_of = launch_gpcs(cluster_size, -(-ctas // cluster_size), a)
    return [links[gpc_of[c // cluster_size]] for c in range(ctas)]
