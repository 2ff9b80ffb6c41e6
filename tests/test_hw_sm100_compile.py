"""The SM100 CuTe-DSL kernel (hw_kernels/sm100_gemm.py) compiles for sm_100a on a CPU, its PTX holds
the Blackwell instructions the SimPy model assumes, and its barriers are initialised with the counts
of ``simulator.protocol.arrivals``. Marker ``dsl``: skipped without nvidia-cutlass-dsl and torch. The kernel is
never run (no Blackwell GPU): this is all the verification it gets."""

from __future__ import annotations

import re
from collections import Counter

import pytest

pytestmark = pytest.mark.dsl

cutlass = pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
pytest.importorskip("torch", reason="torch is not installed")

from hw_kernels.sm100_gemm import Sm100TmaWsGemm  # noqa: E402
from hw_kernels.sm100_host import compile_sm100  # noqa: E402
from simulator.errors import ConfigError  # noqa: E402
from simulator.kernels.sm100_config import Sm100GemmConfig  # noqa: E402
from simulator.protocol.arrivals import KernelFacts, sm100_arrival_counts, sm100_barrier_counts  # noqa: E402

# The seed's default (2-SM 256x256 MMA tile, cluster 2x1) and a 1-SM kernel whose cluster multicasts A and B.
DEFAULT = Sm100GemmConfig()
ONE_SM_MCAST = Sm100GemmConfig(mma_tile_m=128, mma_tile_n=128, use_2sm=False, cluster_m=2, cluster_n=2)


@pytest.fixture(scope="module")
def compiled():
    return {"default": compile_sm100(DEFAULT, "bf16"), "1sm": compile_sm100(ONE_SM_MCAST, "fp16")}


def _mbarrier_init_counts(ptx: str) -> Counter:
    """The arrival count of every ``mbarrier.init`` in the PTX (immediate, or a register set by mov)."""
    regs = dict(re.findall(r"mov\.b32\s+(%r\d+),\s*(\d+);", ptx))
    counts = Counter()
    for arg in re.findall(r"mbarrier\.init\.shared(?:::cta)?\.b64\s+\[[^\]]+\],\s*([^;]+);", ptx):
        arg = arg.strip()
        counts[int(regs[arg]) if arg in regs else int(arg)] += 1
    return counts


@pytest.mark.parametrize("which", ["default", "1sm"])
def test_compiles_for_sm100a_with_blackwell_instructions(compiled, which):
    ptx = compiled[which].ptx
    assert ".target sm_100a" in ptx
    for needle in ("tcgen05.mma", "tcgen05.ld", "tcgen05.alloc", "tcgen05.dealloc", "tcgen05.commit",
                   "clusterlaunchcontrol.try_cancel", "clusterlaunchcontrol.query_cancel",
                   "mbarrier.try_wait.parity", "cp.async.bulk.tensor", "cp.async.bulk.commit_group"):
        assert needle in ptx, needle
    # no instrumentation: no clock reads
    assert "%clock" not in ptx and "globaltimer" not in ptx


def test_2sm_uses_cta_pairs_and_1sm_multicasts(compiled):
    two, one = compiled["default"].ptx, compiled["1sm"].ptx
    assert "tcgen05.mma.cta_group::2" in two and "tcgen05.alloc.cta_group::2" in two
    assert "cta_group::2" not in one and "tcgen05.mma.cta_group::1" in one
    # cluster 2x2: the TMA loads of A and B are multicast
    assert re.search(r"cp\.async\.bulk\.tensor\.\S*multicast::cluster", one)


@pytest.mark.parametrize("which,cfg", [("default", DEFAULT), ("1sm", ONE_SM_MCAST)])
def test_barrier_counts_are_the_models(compiled, which, cfg):
    kern = compiled[which].kernel
    facts = KernelFacts.from_config(cfg)
    a = sm100_arrival_counts(facts)
    assert kern.arrival_counts == a
    b = {rank: sm100_barrier_counts(facts, rank) for rank in range(cfg.cluster_size)}
    assert kern.barrier_counts == b
    # what the kernel's code arrives with, as set by _setup_attributes from the DSL's cluster layout
    kc = kern.kernel_counts
    for pipe in ("mainloop", "accumulator", "clc", "clc_throttle"):
        assert (kc[f"{pipe}.producer"], kc[f"{pipe}.consumer"]) == (a[pipe].producer, a[pipe].consumer), pipe
    assert kc["epilogue_throttle.cta0"] == b[0]["epilogue_throttle"]
    assert kc["epilogue_throttle.peer"] == b[1]["epilogue_throttle"]
    assert kc["tmem_alloc"] == b[0]["tmem_alloc"] and kc["tmem_dealloc"] == b[0]["tmem_dealloc"]
    # ... and what the compiled code initialises its mbarriers with
    stages, acc, sched = kern.mainloop_stages, kern.accumulator_stages, kern.scheduler_stages
    want = Counter()
    for pipe, n in (("mainloop", stages), ("accumulator", acc), ("clc", sched), ("clc_throttle", sched)):
        want[a[pipe].producer] += n
        want[a[pipe].consumer] += n
    want[b[0]["epilogue_throttle"]] += 1  # one init per CTA rank branch
    want[b[1]["epilogue_throttle"]] += 1
    if b[0]["tmem_dealloc"]:
        want[b[0]["tmem_dealloc"]] += 1
    assert _mbarrier_init_counts(compiled[which].ptx) == want


def test_default_counts_in_numbers(compiled):
    kc = compiled["default"].kernel.kernel_counts
    # 2-SM, cluster 2x1: 1 commit frees a stage; both CTAs' 128 epilogue threads free an accumulator;
    # Sched 32 + 2 CTAs x (MainloopLoad 32 + Epilogue 128 + MMA 32) consume a CLC response.
    assert (kc["mainloop.consumer"], kc["accumulator.consumer"], kc["clc.consumer"]) == (1, 256, 416)
    assert (kc["epilogue_throttle.cta0"], kc["epilogue_throttle.peer"], kc["tmem_dealloc"]) == (96, 64, 32)


@pytest.mark.parametrize("kwargs,match", [
    ({"mma_tile_mn": (192, 256)}, r"mma_tile_m=192"),
    ({"mma_tile_mn": (128, 256), "use_2sm": False, "cluster_mn": (1, 1), "mainloop_stages": 4,
      "accumulator_stages": 4}, r"accumulator_stages=4"),
    ({"mma_tile_mn": (256, 200)}, r"mma_tile_n=200"),
    ({"cluster_mn": (1, 1)}, r"cluster_m=1.*even"),
    ({"cluster_mn": (3, 1)}, r"cluster_m=3"),
    ({"cluster_mn": (8, 4)}, r"cluster_m x cluster_n=32"),
    ({"epi_tile_mn": (128, 48)}, r"epi_tile=\(128, 48\)"),
    ({"dtype": "fp32"}, r"dtype='fp32'"),
])
def test_can_implement_names_the_value(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        Sm100TmaWsGemm.can_implement(512, 512, 256, **kwargs)
    with pytest.raises(ConfigError, match=match):
        Sm100TmaWsGemm(**kwargs)


def test_can_implement_tma_alignment():
    Sm100TmaWsGemm.can_implement(1000, 1032, 520)  # no exception: K and N are multiples of 8
    with pytest.raises(ConfigError, match=r"k=100.*16 B"):
        Sm100TmaWsGemm.can_implement(512, 512, 100)
    with pytest.raises(ConfigError, match=r"n=1001.*16 B"):
        Sm100TmaWsGemm.can_implement(512, 1001, 256)
    with pytest.raises(ConfigError, match=r"read_c=True"):
        Sm100TmaWsGemm.from_config(Sm100GemmConfig(read_c=True))
