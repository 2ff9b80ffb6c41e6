"""benchmarks/gpc_links.py: the candidate GPC side (the launch order onto GPCs, one L2 -> SM link per GPC, loads of one
slice merging within a GPC) against the microbenchmarks it comes from."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from benchmarks import l2_replay as R
from benchmarks.gpc_links import H200_DOMAIN_GPC, gpc_of_sm, launch_gpcs
from simulator.kernels.scheduler import H200_PLACEMENT_DOMAINS, sm90_cluster_capacity
from simulator.machine.arch import ArchSpec


def _v3j_gpcs(name: str) -> list[tuple[int, tuple[int, ...]]]:
    """(CTAs, the GPC of each CTA in blockIdx order) of every grid of a v3j run, its ``smids`` mapped to GPCs by
    the H200's placement domains (the same GH100 floorplan)."""
    res = Path(__file__).resolve().parents[1] / "validation" / "results"
    gpc_of = gpc_of_sm()
    runs = json.loads((res / name).read_text())["results"]["tma_loaded"]["loaded"]
    return [(r["ctas"], tuple(gpc_of[sm] for sm in r["smids"])) for r in runs]


@pytest.mark.parametrize("run", ["h100_microbench_v3j.json", "h100_microbench_v3j_run2.json",
                                 "h100_microbench_v3j_run3.json"])
def test_launch_gpcs_put_as_many_ctas_on_each_gpc_as_measured_in_contiguous_runs(run):
    arch = ArchSpec.h200()
    grids = _v3j_gpcs(run)
    assert {n for n, _ in grids} == {1, 8, 16, 32, 64, 132}
    for n, measured in grids:
        assert Counter(measured) == Counter(launch_gpcs(1, n, arch, "plain")), n
        # past the first 8 (SMs 124-131), each GPC's blocks are one contiguous run
        rest = measured[8:]
        assert len({g for i, g in enumerate(rest) if i == 0 or rest[i - 1] != g}) == len(set(rest)), (n, rest)


def test_launch_gpcs_give_the_measured_block_order_of_the_first_two_runs():
    """Runs 1 and 2 start the turn at the second domain, as launch_gpcs does (run 3 starts elsewhere: the
    counts and runs hold, the turn's start does not)."""
    arch = ArchSpec.h200()
    for run in ("h100_microbench_v3j.json", "h100_microbench_v3j_run2.json"):
        for n, measured in _v3j_gpcs(run):
            assert measured == launch_gpcs(1, n, arch, "plain"), (run, n)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 6, 8, 9, 12, 16])
def test_launch_gpcs_fill_each_gpc_to_its_cluster_capacity(size):
    arch = ArchSpec.h200()
    cap = sm90_cluster_capacity(size, arch)
    got = Counter(launch_gpcs(size, cap, arch))
    assert got == Counter(launch_gpcs(size, cap, arch, "plain"))
    want: Counter = Counter()
    for d, g in zip(H200_PLACEMENT_DOMAINS, H200_DOMAIN_GPC, strict=True):
        want[g] += d // size
    assert got == +want


def _l2_to_sm(sms: int, footprint_mib: int = 16) -> dict:
    rows = json.loads((R.RESULTS / "h200_microbench_v2.json").read_text())["results"]["tma"]["stream"]
    return next(r for r in rows if r["sms"] == sms and r["footprint_mib"] == footprint_mib)


@pytest.mark.parametrize("sms", [16, 66, 132])
def test_gpc_links_reproduce_the_h200_l2_streams_of_16_66_and_132_sms(sms):
    """16 SMs stream at 72 B/clk each where one alone streams at 106: 9 of them share one GPC's link (the
    constant's source); 66 SMs (12 on that GPC) are the check: the median CTA, on a GPC of 7-8, keeps ~79."""
    r = _l2_to_sm(sms)
    cycles = R.depth_stream(sms, 6, 32768, 64, "l2", r["clock_mhz"] / 1e3, distinct=4, side="links")
    assert 32768 / cycles == pytest.approx(r["bytes_per_clk_per_sm"], rel=0.08)


def test_without_gpc_links_16_sms_would_stream_as_fast_as_one():
    alone = R.depth_stream(1, 6, 32768, 64, "l2", 1.98, distinct=4)
    assert R.depth_stream(16, 6, 32768, 64, "l2", 1.98, distinct=4) == pytest.approx(alone, rel=0.01)
    assert R.depth_stream(16, 6, 32768, 64, "l2", 1.98, distinct=4, side="links") > 1.3 * alone


def test_a_merge_within_a_gpc_explains_lockstep_sharers_but_not_spread_ones():
    """v3's l2share: g CTAs reading the same boxes at once land ~1.9-2.5x the unique-line L2 rate, 8 boxes apart
    exactly that rate; the shipped model charges every read (lockstep 0.54 at g = 2), the merge candidate
    merges the simultaneous ones only."""
    rows = {r["what"]: r for r in R.share_rows()}
    lock, spread = rows["l2share g=2 lockstep"], rows["l2share g=2 spread"]
    assert lock["model"] / lock["measured"] < 0.6
    assert lock["merge"] / lock["measured"] == pytest.approx(1.0, abs=0.1)
    assert spread["merge"] == pytest.approx(spread["links"], rel=1e-9)


def _cluster_launches() -> list[tuple[int, tuple[int, ...]]]:
    res = json.loads((R.RESULTS / "h200_microbench_v2.json").read_text())["results"]["cluster"]
    gpc_of = gpc_of_sm()
    return [(r["cluster"], tuple(gpc_of[c[0]] for c in r["clusters_sms"])) for r in res["launches"]]


def test_launch_gpcs_give_the_measured_order_of_every_cluster_launch():
    """Clusters of 2-16 go to the GPCs in turn (neighbours on different GPCs): the exact order of every repeat."""
    arch = ArchSpec.h200()
    launches = [(size, order) for size, order in _cluster_launches() if size > 1]
    assert {size for size, _ in launches} == {2, 3, 4, 6, 8, 9, 12, 16}
    for size, measured in launches:
        assert measured == launch_gpcs(size, len(measured), arch), size
    assert len(set(launch_gpcs(2, 8, arch)[4:])) == 4


def test_merges_happen_within_a_gpc_only():
    """v3l at 132 CTAs: partners on one GPC in step land about twice the rate of partners on two GPCs; the candidate
    merges the first and not the second."""
    near = R.window_stream(132, "near", 0, 1.98, side="merge")
    far = R.window_stream(132, "far", 0, 1.98, side="merge")
    assert near / far == pytest.approx(14.60 / 7.72, rel=0.15)
    assert R.window_stream(132, "far", 0, 1.98, side="links") == pytest.approx(far, rel=1e-9)


def test_the_replayed_merge_also_merges_partners_the_hardware_keeps_apart():
    """The limit of a merge window on the model's FIFO channels (why it is not in the model): pairs 800 cycles
    apart land the unmerged rate on the GPU, but queueing behind a FIFO link pulls the replay's partners into step."""
    rows = {(r["run"], r["ctas"], r["pairing"], r["offset"]): r for r in R.window_rows()}
    r = rows[("v3l", 132, "near", 800)]
    assert r["measured"] == pytest.approx(rows[("v3l", 132, "alone", 0)]["measured"], rel=0.03)
    assert r["merge"] > 1.8 * r["links"]


def _twin_launches() -> list[tuple[int, tuple[int, ...]]]:
    """(cluster size, the GPC of each CTA in blockIdx order) of every committed raw trace of the twin."""
    from validation import hw_trace as H
    gpc_of = gpc_of_sm()
    out = []
    for path in sorted(R.RESULTS.glob("**/raw_*.npz")):
        buf, meta = H.load_raw(path)
        sl = H.decode(buf, meta["capacity"], meta["ctas"])
        smids = [sm for _, sm in sorted((s.cta_linear, s.smid) for (_, role), s in sl.items() if role == "MainloopLoad")]
        out.append((meta["config"]["cluster_m"] * meta["config"]["cluster_n"], tuple(gpc_of[sm] for sm in smids)))
    return out


def test_the_twin_launches_even_single_ctas_in_turn_over_the_gpcs():
    """The twin's kernels are launched with a cluster shape: its 1x1 CTAs go to the GPCs in turn like clusters
    (neighbours on different GPCs), not in the contiguous runs of a plain launch."""
    arch = ArchSpec.h200()
    launches = _twin_launches()
    assert {size for size, _ in launches} == {1, 2} and len(launches) >= 10
    for size, measured in launches:
        n = len(measured) // size
        assert Counter(measured[::size]) == Counter(launch_gpcs(size, n, arch)), (size, n)
    one = next(m for size, m in launches if size == 1 and len(m) == 132)
    def repeats(order):
        return sum(a == b for a, b in zip(order, order[1:], strict=False))
    assert repeats(one) <= 8        # only the 2-SM domains (all on GPC 0) in a row
    assert repeats(launch_gpcs(1, 132, arch)) <= 8 and repeats(launch_gpcs(1, 132, arch, "plain")) > 100
