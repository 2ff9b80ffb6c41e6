"""benchmarks/gpc_links.py: the candidate GPC links (the launch order onto GPCs, one L2 -> SM link per GPC)
against the microbenchmarks they come from."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from benchmarks import l2_replay as R
from benchmarks.gpc_links import H200_DOMAIN_GPC, launch_gpcs
from simulator.kernels.scheduler import H200_PLACEMENT_DOMAINS, sm90_cluster_capacity
from simulator.machine.arch import ArchSpec


def _v3j_gpcs(name: str) -> list[tuple[int, tuple[int, ...]]]:
    """(CTAs, the GPC of each CTA in blockIdx order) of every grid of a v3j run, its ``smids`` mapped to GPCs by
    the H200's placement domains (the same GH100 floorplan)."""
    res = Path(__file__).resolve().parents[1] / "validation" / "results"
    domains = json.loads((res / "h200_microbench_v2.json").read_text())["results"]["cluster"]["gpcs"]
    gpc_of_sm = {sm: H200_DOMAIN_GPC[i] for i, d in enumerate(domains) for sm in d}
    runs = json.loads((res / name).read_text())["results"]["tma_loaded"]["loaded"]
    return [(r["ctas"], tuple(gpc_of_sm[sm] for sm in r["smids"])) for r in runs]


@pytest.mark.parametrize("run", ["h100_microbench_v3j.json", "h100_microbench_v3j_run2.json",
                                 "h100_microbench_v3j_run3.json"])
def test_launch_gpcs_put_as_many_ctas_on_each_gpc_as_measured_in_contiguous_runs(run):
    arch = ArchSpec.h200()
    grids = _v3j_gpcs(run)
    assert {n for n, _ in grids} == {1, 8, 16, 32, 64, 132}
    for n, measured in grids:
        assert Counter(measured) == Counter(launch_gpcs(1, n, arch)), n
        # past the first 8 (SMs 124-131), each GPC's blocks are one contiguous run
        rest = measured[8:]
        assert len({g for i, g in enumerate(rest) if i == 0 or rest[i - 1] != g}) == len(set(rest)), (n, rest)


def test_launch_gpcs_give_the_measured_block_order_of_the_first_two_runs():
    """Runs 1 and 2 start the turn at the second domain, as launch_gpcs does (run 3 starts elsewhere: the
    counts and runs hold, the turn's start does not)."""
    arch = ArchSpec.h200()
    for run in ("h100_microbench_v3j.json", "h100_microbench_v3j_run2.json"):
        for n, measured in _v3j_gpcs(run):
            assert measured == launch_gpcs(1, n, arch), (run, n)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 6, 8, 9, 12, 16])
def test_launch_gpcs_fill_each_gpc_to_its_cluster_capacity(size):
    arch = ArchSpec.h200()
    cap = sm90_cluster_capacity(size, arch)
    got = Counter(launch_gpcs(size, cap, arch))
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
    cycles = R.depth_stream(sms, 6, 32768, 64, "l2", r["clock_mhz"] / 1e3, distinct=4, gpc=True)
    assert 32768 / cycles == pytest.approx(r["bytes_per_clk_per_sm"], rel=0.08)


def test_without_gpc_links_16_sms_would_stream_as_fast_as_one():
    alone = R.depth_stream(1, 6, 32768, 64, "l2", 1.98, distinct=4)
    assert R.depth_stream(16, 6, 32768, 64, "l2", 1.98, distinct=4) == pytest.approx(alone, rel=0.01)
    assert R.depth_stream(16, 6, 32768, 64, "l2", 1.98, distinct=4, gpc=True) > 1.3 * alone


def test_an_in_flight_merge_explains_lockstep_sharers_but_not_spread_ones():
    """v3's l2share: g CTAs reading the same boxes at once land ~1.9-2.5x the unique-line L2 rate, 8 boxes apart
    exactly that rate; the shipped model charges every read (lockstep 0.54 at g = 2), the merge candidate
    merges the simultaneous ones only."""
    rows = {r["what"]: r for r in R.share_rows()}
    lock, spread = rows["l2share g=2 lockstep"], rows["l2share g=2 spread"]
    assert lock["model"] / lock["measured"] < 0.6
    assert lock["merged"] / lock["measured"] == pytest.approx(1.0, abs=0.1)
    assert spread["merged"] == pytest.approx(spread["model"], rel=1e-9)
