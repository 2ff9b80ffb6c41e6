"""ArchSpec constants and overrides; config derivations (pinned by hand) and every can_implement rule."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.errors import ConfigError
from simulator.kernels.config_io import config_from_mapping, load_toml
from simulator.kernels.gemm_config import dtype_bits, dtype_bytes
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.machine.arch import ArchSpec, get_arch
from simulator.machine.constants import SOURCE_KINDS, Constant

B200 = ArchSpec.b200()
H200 = ArchSpec.h200()


# ------------------------------------------------------------------------------------------- arch
@pytest.mark.parametrize("arch", [B200, H200], ids=["b200", "h200"])
def test_every_constant_has_a_source(arch):
    consts = arch.constants()
    assert len(consts) == len(ArchSpec.constant_names()) == 27
    for c in consts:
        assert isinstance(c, Constant)
        assert c.source and len(c.source) > 5, c.name
        assert c.kind in SOURCE_KINDS
        assert c.value >= 0


def test_b200_values():
    assert B200.sm_version == 100
    assert B200.sm_count.value == 148
    assert B200.mma_flops_per_clk_per_sm.value == 8192  # 2*128*256*16 / 128 clk
    assert B200.mma_latency_cycles.value == 264
    assert B200.smem_bytes_per_cta.value == 232448
    assert B200.tmem_columns.value == 512 and B200.tmem_lanes.value == 128
    assert B200.hbm_bytes_per_s.value == pytest.approx(7.29e12, rel=1e-3)   # measured; bus figure 7.67e12
    assert B200.hbm_bytes_per_s.kind == "microbenchmark"
    assert B200.gpc_count.value == 8
    assert B200.l2_bytes_per_s.kind == "chosen"      # 19 TB/s: what gemm-model's rows read at most
    assert B200.clc_query_latency_cycles.kind == "estimate"
    assert B200.max_cluster_size.value == 16
    assert "SemiAnalysis" in B200.mma_flops_per_clk_per_sm.source
    # peak = 148 x 8192 x 1.965 GHz = 2.38 PFLOP/s
    assert B200.peak_flops == pytest.approx(148 * 8192 * 1.965e9)


def test_h200_values():
    assert H200.sm_version == 90
    assert H200.sm_count.value == 132
    assert H200.mma_flops_per_clk_per_sm.value == 4096
    # 989 TFLOP/s / (132 SMs x 1.83 GHz) = 4094 ~ 4096
    assert 989e12 / (132 * 1.83e9) == pytest.approx(4096, rel=0.01)
    assert H200.tmem_columns.value == 0 and H200.clc_query_latency_cycles.value == 0
    assert H200.hbm_latency_cycles.value == pytest.approx(699.6)
    assert H200.hbm_latency_cycles.kind == "measured-here"
    assert "h200_microbench_v2.json" in H200.hbm_latency_cycles.source


#: Constants chosen (or derived) while looking at the rows that score the model, and those rows.
CHOSEN = {("B200", "l2_bytes_per_s"): "gemm-model", ("B200", "gpc_count"): "gemm-model",
          ("H200", "l2_bytes_per_s"): "h200_campaign.json", ("H200", "launch_overhead_ns"): "h200_campaign.json"}


def test_constants_chosen_on_scored_rows_say_so():
    """A constant picked while looking at the rows `wsim accuracy` scores is kind ``chosen``, printed
    ``[chosen on scored rows]``, and its source names those rows; no other constant is."""
    from simulator.engine import simulate
    from simulator.machine.constants import KIND_LABELS
    from simulator.views.report import format_result
    assert KIND_LABELS["chosen"] == "chosen on scored rows"
    found = {(a.name, c.name): c for a in (B200, H200) for c in a.constants() if c.kind == "chosen"}
    assert set(found) == set(CHOSEN)
    for key, rows in CHOSEN.items():
        c = found[key]
        assert c.label == "chosen on scored rows" and rows in c.source and "wsim accuracy" in c.source, key
    printed = format_result(simulate(Sm100GemmConfig(m=256, n=256, k=128))) + \
        format_result(simulate(Sm90GemmConfig(m=256, n=256, k=128)))
    for key in CHOSEN:
        assert f"[chosen on scored rows] {found[key].source}" in printed, key
    assert B200.clock_ghz.label == "microbenchmark"


def test_h200_clock_is_the_spec_maximum_as_recorded():
    """The H200's clock_ghz is its spec maximum (nvidia-smi's max SM clock, recorded with the campaign),
    not a clock measured under load."""
    import json
    from pathlib import Path
    env = json.loads((Path(__file__).resolve().parent.parent / "validation/results/h200_campaign.json")
                     .read_text())["env"]
    assert env["sm_clock_max"] == f"{H200.clock_ghz.value * 1000:.0f} MHz"
    assert H200.clock_ghz.kind == "datasheet" and "sm_clock_max" in H200.clock_ghz.source
    assert "spec maximum" in H200.clock_ghz.source


def test_overrides():
    a = B200.with_overrides({"clock_ghz": 1.5, "hbm_latency_cycles": 900}, "test.toml")
    assert a.clock_ghz.value == 1.5
    assert a.clock_ghz.kind == "override"
    assert "test.toml" in a.clock_ghz.source and "1.965" in a.clock_ghz.source
    assert a.hbm_latency_cycles.value == 900
    assert B200.clock_ghz.value == 1.965  # original untouched
    assert a.cycles_to_ns(1500) == pytest.approx(1000)


def test_override_unknown_name_lists_valid_names():
    with pytest.raises(ConfigError, match=r"'clok_ghz'.*valid names:.*clock_ghz"):
        B200.with_overrides({"clok_ghz": 2.0}, "cli")


@pytest.mark.parametrize("name,value", [("sm_count", 0), ("clock_ghz", -1.0), ("hbm_bytes_per_s", float("nan"))])
def test_override_non_positive_fails(name, value):
    with pytest.raises(ConfigError, match=name):
        B200.with_overrides({name: value}, "cli")


def test_override_zero_allowed_where_feature_may_be_absent():
    assert B200.with_overrides({"clc_query_latency_cycles": 0}, "x").clc_query_latency_cycles.value == 0
    with pytest.raises(ConfigError, match="tmem_columns=-1"):
        B200.with_overrides({"tmem_columns": -1}, "x")


@pytest.mark.parametrize("name,version", [("b200", 100), ("SM100", 100), ("H200", 90), ("sm90", 90)])
def test_get_arch(name, version):
    assert get_arch(name).sm_version == version


def test_get_arch_unknown():
    with pytest.raises(ConfigError, match=r"arch='a100'.*b200.*h200"):
        get_arch("a100")


# ------------------------------------------------------------------------------------------ dtypes
def test_dtypes():
    assert dtype_bits("bf16") == 16 and dtype_bytes("fp8e4m3") == 1 and dtype_bytes("tf32") == 4
    assert dtype_bytes("f32") == 4 and dtype_bits("fp8e5m2") == 8
    with pytest.raises(ConfigError, match="dtype_ab='int4'"):
        dtype_bits("int4", "dtype_ab")


# --------------------------------------------------------------------------------- SM100 derived
def test_default_sm100_derivation():
    # Default: 2-SM, MMA tile 256x256x64 bf16, cluster 2x1, no C.
    # per-CTA stage: A 128x64x2 B = 16384 + B (256/2)x64x2 B = 16384 (half of B per CTA) + 16 B barriers = 32784
    # accumulator stages: 128x512 / (128x256) = 2; scheduler stages 2
    # kernel carve-out: acc 2x16 + CLC 2x16 + load-order 16 + TMEM dealloc 8 + throttle 2x16 + responses 2x16
    #                   + TMEM ptrs 2x4 = 160
    # epilogue tile (4,1) warps: M = min(128, 32*4) = 128, N = 4096/128 = 32 -> 128x32; 8 subtiles
    # StagesD = min(8,2) = 2, StagesC = min(8,4) = 4; epilogue SMEM = 2 x 128x32x2 + 4 x 16 = 16448
    # stages = (232448 - 160 - 16448) // 32784 = 215840 // 32784 = 6
    c = Sm100GemmConfig()
    assert c.tile_k == 64 and c.mma_tile_k is None
    assert c.atom_thr_m == 2 and c.cta_tile_m == 128 and c.cta_tile_n == 256
    assert c.a_stage_bytes_per_cta == 16384 and c.b_stage_bytes_per_cta == 16384
    assert c.mainloop_stage_bytes == 32784
    assert c.tma_transaction_bytes == 65536  # both CTAs' A+B on the leader's full barrier
    assert c.acc_stages == 2 and c.sched_stages == 2
    assert c.kernel_smem_carveout_bytes == 160
    assert c.epi_tile == (128, 32) and c.epi_subtiles == 8
    assert c.store_stages == 2 and c.load_stages == 4
    assert c.epilogue_smem_bytes == 16448
    r = c.resolved()
    assert r.mainloop_stages == 6
    assert (r.mma_tile_k, r.accumulator_stages, r.scheduler_stages) == (64, 2, 2)
    assert (r.epilogue_tile_m, r.epilogue_tile_n, r.epilogue_load_stages, r.epilogue_store_stages) == (128, 32, 4, 2)
    assert r.smem_bytes() == 6 * 32784 + 160 + 16448 <= 232448
    r.can_implement(B200)
    assert dataclasses.replace(r, mainloop_stages=None).resolved() == r  # idempotent


def test_sm100_1sm_128x256_stages():
    # A 128x64x2 = 16384, B 256x64x2 = 32768 (no split) + 16 = 49168; acc 65536/(128*256) = 2;
    # carve-out 160; epilogue 16448 as above -> (232448-160-16448)//49168 = 215840//49168 = 4
    c = Sm100GemmConfig(use_2sm=False, mma_tile_m=128, mma_tile_n=256, cluster_m=1, cluster_n=1)
    assert c.mainloop_stage_bytes == 49168 and c.tma_transaction_bytes == 49152
    assert c.resolved().mainloop_stages == 4


def test_sm100_1sm_128x128_with_c_stages():
    # A = B = 16384 -> 32784; acc 65536/(128*128) = 4 -> carve-out 4x16 + 2x16 + 16 + 8 + 2x16 + 2x16 + 8 = 192
    # with C (bf16, 16-bit): N_perf = 32 (CTA_N <= 128) -> epi 128x32, 4 subtiles; StagesD = 2,
    # ReuseSmemC (16 > 8 bits) -> StagesC = max(min(4,4), 3) = 4; union 4 x 8192 = 32768 + 4x16 = 32832
    # stages = (232448 - 192 - 32832) // 32784 = 199424 // 32784 = 6
    c = Sm100GemmConfig(use_2sm=False, mma_tile_m=128, mma_tile_n=128, cluster_m=1, cluster_n=1, read_c=True)
    assert c.acc_stages == 4 and c.kernel_smem_carveout_bytes == 192
    assert c.reuse_smem_c and c.load_stages == 4 and c.store_stages == 2
    assert c.epilogue_smem_bytes == 32832
    assert c.resolved().mainloop_stages == 6


def test_sm100_with_c_256_wide_epilogue_tile():
    # with C, 16-bit, CTA_N = 256 > 128 -> N_perf = 64: epilogue tile 128x64
    c = Sm100GemmConfig(read_c=True)
    assert c.epi_tile == (128, 64) and c.epi_subtiles == 4


def test_accumulator_stage_formula():
    # 1-SM M=64: (512 / CTA_N) x 2 = 8 -> capped at 4; 1-SM 64x256: (512/256)*2 = 4
    assert Sm100GemmConfig(use_2sm=False, mma_tile_m=64, mma_tile_n=128, cluster_m=1).acc_stages == 4
    assert Sm100GemmConfig(use_2sm=False, mma_tile_m=64, mma_tile_n=256, cluster_m=1).acc_stages == 4
    # 2-SM M=128: CTA 64x256: 65536 / (64*256) = 4
    assert Sm100GemmConfig(mma_tile_m=128, mma_tile_n=256).acc_stages == 4
    # 2-SM M=128 uses the (2,2) TMEM warp layout: epilogue M = min(64, 32*2) = 64
    assert Sm100GemmConfig(mma_tile_m=128, mma_tile_n=256).epi_tile[0] == 64


def test_fp8_default_tile_k_is_128_bytes():
    c = Sm100GemmConfig(dtype_ab="fp8e4m3")
    assert c.tile_k == 128 and c.a_stage_bytes_per_cta == 128 * 128
    assert Sm100GemmConfig(dtype_ab="tf32").tile_k == 32


def test_sm100_grid_and_bytes():
    c = Sm100GemmConfig(m=8192, n=8192, k=8192, cluster_m=4, cluster_n=2)
    assert c.tiles_m == 32 and c.tiles_n == 32 and c.k_tiles == 128
    assert c.cluster_mma_tiles_m == 2 and c.cluster_mma_tiles_n == 2
    assert c.cluster_tiles_m == 16 and c.cluster_tiles_n == 16 and c.num_clusters_grid == 256
    assert c.flops == 2 * 8192**3
    assert c.compulsory_bytes == 3 * 8192 * 8192 * 2
    assert Sm100GemmConfig(read_c=True).compulsory_bytes == 4 * 8192 * 8192 * 2
    odd = Sm100GemmConfig(m=1000, n=300, k=100, use_2sm=False, mma_tile_m=128, mma_tile_n=128, cluster_m=1)
    assert (odd.tiles_m, odd.tiles_n, odd.k_tiles) == (8, 3, 2)


# --------------------------------------------------------------------------------- SM100 rules
def _err(cfg, arch=B200, **kw):
    with pytest.raises(ConfigError) as ei:
        cfg.can_implement(arch, **kw)
    return str(ei.value)


ONE_SM = dict(use_2sm=False, mma_tile_m=128, mma_tile_n=128, cluster_m=1, cluster_n=1)


@pytest.mark.parametrize("kw,expect", [
    (dict(m=0), "m=0"),
    (dict(k=-8), "k=-8"),
    (dict(dtype_ab="int4"), "dtype_ab='int4'"),
    (dict(dtype_d="fp4"), "dtype_d='fp4'"),
    (dict(dtype_acc="bf16"), "dtype_acc='bf16'"),
    (dict(dtype_acc="fp16"), "dtype_acc='fp16'"),  # fp16 accumulation only for fp16/fp8 inputs
    (dict(mma_tile_m=64), "mma_tile_m=64: 2-SM"),
    (dict(mma_tile_n=200), "mma_tile_n=200"),
    (dict(mma_tile_n=272), "mma_tile_n=272"),
    (dict(ONE_SM, mma_tile_m=256), "mma_tile_m=256: 1-SM"),
    (dict(ONE_SM, mma_tile_n=12), "mma_tile_n=12"),
    (dict(mma_tile_k=8), "mma_tile_k=8"),
    (dict(cluster_m=1), "cluster_m=1"),
    (dict(cluster_m=6), "cluster_m=6, cluster_n=1: cluster dimensions must be powers of two"),
    (dict(ONE_SM, cluster_m=3), "cluster_m=3, cluster_n=1"),
    (dict(cluster_m=8, cluster_n=4), "cluster_m*cluster_n=32 > 16"),
    (dict(tile_scheduler="dynamic"), "tile_scheduler='dynamic'"),
    (dict(raster="x"), "raster='x'"),
    (dict(swizzle=3), "swizzle=3"),
    (dict(scheduler_stages=0), "scheduler_stages=0"),
    (dict(mainloop_stages=1), "mainloop_stages=1: SM100 needs at least 2"),
    (dict(mainloop_stages=7), "mainloop_stages=7: SMEM overflow"),
    (dict(ONE_SM, mma_tile_n=256, accumulator_stages=3), "accumulator_stages=3: TMEM overflow"),
    (dict(ONE_SM, mma_tile_n=64, accumulator_stages=5), "accumulator_stages=5 > 4"),
    (dict(accumulator_stages=0), "accumulator_stages=0"),
    (dict(overlapping_accum=True), "overlapping_accum=True with accumulator_stages=2"),
    (dict(epilogue_tile_n=48), "epilogue_tile_m x epilogue_tile_n=128x48"),
    (dict(epilogue_store_stages=0), "epilogue_store_stages=0"),
    (dict(epilogue_load_stages=0), "epilogue_load_stages=0"),
    (dict(k=8196), "k=8196"),
    (dict(n=8196), "n=8196"),
])
def test_sm100_can_implement_rules(kw, expect):
    msg = _err(Sm100GemmConfig(**kw))
    assert expect in msg, msg


def test_smem_overflow_names_the_bytes():
    msg = _err(Sm100GemmConfig(mainloop_stages=7))
    # 7 x 32784 + 160 + 16448 = 246096 > 232448
    assert "246096 B > 232448 B" in msg and "7 x 32784 B" in msg


def test_tmem_overflow_names_the_numbers():
    msg = _err(Sm100GemmConfig(**dict(ONE_SM, mma_tile_n=256, accumulator_stages=3)))
    # 3 x 128 x 256 = 98304 > 128 x 512 = 65536
    assert "98304 cells > 65536" in msg


def test_protocol_experiments_skip_protocol_rules_only():
    Sm100GemmConfig(mainloop_stages=1).can_implement(B200, allow_protocol_experiments=True)
    Sm100GemmConfig(**dict(ONE_SM, mma_tile_n=64, accumulator_stages=5)).can_implement(
        B200, allow_protocol_experiments=True)
    # hardware rules still apply
    assert "SMEM overflow" in _err(Sm100GemmConfig(mainloop_stages=7), allow_protocol_experiments=True)
    assert "mainloop_stages=0" in _err(Sm100GemmConfig(mainloop_stages=0), allow_protocol_experiments=True)
    assert "TMEM overflow" in _err(Sm100GemmConfig(**dict(ONE_SM, mma_tile_n=256, accumulator_stages=3)),
                                   allow_protocol_experiments=True)


def test_sm100_on_h200_rejected():
    assert "sm_version=90" in _err(Sm100GemmConfig(), H200)


def test_cluster_limit_follows_arch():
    arch = B200.with_overrides({"max_cluster_size": 8}, "portable")
    assert "cluster_m*cluster_n=16 > 8" in _err(Sm100GemmConfig(cluster_m=4, cluster_n=4), arch)
    Sm100GemmConfig(cluster_m=4, cluster_n=4).can_implement(B200)


@pytest.mark.parametrize("kw", [
    {}, dict(read_c=True), dict(ONE_SM), dict(use_2sm=False, mma_tile_m=64, mma_tile_n=64, cluster_m=1),
    dict(dtype_ab="fp8e4m3", dtype_d="fp8e4m3", read_c=True, dtype_c="fp8e4m3"),
    dict(cluster_m=4, cluster_n=4), dict(mma_tile_m=128, mma_tile_n=64, swizzle=8, raster="n"),
    dict(tile_scheduler="static", dtype_ab="fp16", dtype_acc="fp16"),
])
def test_sm100_valid_configs(kw):
    Sm100GemmConfig(**kw).can_implement(B200)


# ------------------------------------------------------------------------------------------ SM90
def test_sm90_cooperative_stages():
    # 128x256x64 bf16: round_up(16384 + 32768, 128) + 16 = 49168; epilogue tile (128, 32): 8 subtiles,
    # StagesD 2 -> 2 x 8192 + 4 x 16 = 16448 -> round_up 128 = 16512
    # stages = (232448 - 16512) // 49168 = 215936 // 49168 = 4
    c = Sm90GemmConfig()
    assert c.cta_tile_n == 256 and c.cta_tile_k == 64
    assert c.mainloop_stage_bytes == 49168 and c.epi_tile == (128, 32)
    assert c.epilogue_smem_bytes == 16448
    assert c.resolved().mainloop_stages == 4
    assert c.accumulator_registers_per_thread == 128  # 128*256*4 B / 4 B / 256 threads
    c.can_implement(H200)


def test_sm90_pingpong_defaults():
    # pingpong default 128x128: epilogue tile (min(64,128), 32) = 64x32, 8 subtiles -> 2 x 4096 + 64 = 8256
    # -> 8320; stage 32784; (232448 - 8320) // 32784 = 224128 // 32784 = 6; regs 128*128*4/4/128 = 128
    c = Sm90GemmConfig(schedule="pingpong")
    assert c.cta_tile_n == 128 and c.epi_tile == (64, 32)
    assert c.resolved().mainloop_stages == 6
    assert c.accumulator_registers_per_thread == 128
    c.can_implement(H200)


@pytest.mark.parametrize("kw,expect", [
    (dict(schedule="coop"), "schedule='coop'"),
    (dict(tile_m=192), "tile_m=192: cooperative"),
    (dict(schedule="pingpong", tile_m=96), "tile_m=96: pingpong"),
    (dict(tile_n=264), "tile_n=264"),
    (dict(tile_n=100), "tile_n=100"),
    (dict(tile_m=256, tile_n=256), "tile_m x tile_n=256x256"),  # 256 regs > 232
    (dict(schedule="pingpong", tile_n=256), "tile_m x tile_n=128x256"),
    (dict(tile_scheduler="clc"), "tile_scheduler='clc'"),
    (dict(cluster_m=3), "cluster_m=3, cluster_n=1"),
    (dict(cluster_m=4, cluster_n=8), "cluster_m*cluster_n=32 > 16"),
    (dict(mainloop_stages=1), "mainloop_stages=1: SM90 needs at least 2"),
    (dict(mainloop_stages=5), "mainloop_stages=5: SMEM overflow"),
    (dict(swizzle=16), "swizzle=16"),
    (dict(raster="z"), "raster='z'"),
    (dict(dtype_ab="tf32", dtype_acc="fp16"), "dtype_acc='fp16'"),
    (dict(k=12), "k=12"),
    (dict(l=0), "l=0"),
    (dict(tile_k=4), "tile_k=4"),
    (dict(epilogue_tile_m=96), "epilogue_tile_m x epilogue_tile_n=96x32"),
])
def test_sm90_can_implement_rules(kw, expect):
    msg = _err(Sm90GemmConfig(**kw), H200)
    assert expect in msg, msg


def test_sm90_on_b200_rejected():
    assert "sm_version=100" in _err(Sm90GemmConfig(), B200)


# ------------------------------------------------------------------------------------ mappings
def test_config_from_mapping():
    c = config_from_mapping(Sm100GemmConfig, {"m": 4096, "use_2sm": False, "mma_tile_m": 128, "cluster_m": 1,
                                              "mainloop_stages": None, "k": 1024}, "t")
    assert c.m == 4096 and c.k == 1024 and isinstance(c.k, int) and not c.use_2sm


@pytest.mark.parametrize("mapping,expect", [
    ({"mm": 1}, "mm=1 (job.toml): unknown Sm100GemmConfig field; valid fields: m, n, k"),
    ({"m": "8192"}, "m='8192' (job.toml): expected int, got str"),
    ({"m": True}, "m=True (job.toml): expected int, got bool"),
    ({"use_2sm": 1}, "use_2sm=1 (job.toml): expected bool"),
    ({"mainloop_stages": 2.5}, "mainloop_stages=2.5 (job.toml): expected int | None"),
])
def test_config_from_mapping_errors(mapping, expect):
    with pytest.raises(ConfigError) as ei:
        config_from_mapping(Sm100GemmConfig, mapping, "job.toml")
    assert expect in str(ei.value)


def test_load_toml(tmp_path):
    p = tmp_path / "cfg.toml"
    p.write_text('[kernel]\nm = 4096\nschedule = "pingpong"\n')
    data = load_toml(str(p))
    c = config_from_mapping(Sm90GemmConfig, data["kernel"], str(p))
    assert c.m == 4096 and c.schedule == "pingpong"


def test_warnings_for_small_tile_k():
    assert Sm100GemmConfig(mma_tile_k=32).warnings()
    assert not Sm100GemmConfig().warnings()
