"""Stream-K / split-K: the decomposition against CUTLASS's formulas, and the fixup in both kernel models.

Expected values are worked out by hand from CUTLASS (commit 7107b0553), the lines named in each case:
params = include/cutlass/gemm/kernel/tile_scheduler_params.h (PersistentTileSchedulerSm90StreamKParams),
sched = include/cutlass/gemm/kernel/sm90_tile_scheduler_stream_k.hpp.
"""

from __future__ import annotations

import pytest

from simulator.engine.run import simulate
from simulator.errors import ConfigError
from simulator.kernels.sm90_config import Sm90GemmConfig
from simulator.kernels.sm100_config import Sm100GemmConfig
from simulator.kernels.stream_k import (
    adjust_split_count,
    decompose,
    decompose_sm100,
    for_config,
    grid_ctas,
    max_cta_occupancy,
    stream_k_params,
    workspace_bytes,
)
from simulator.machine.arch import get_arch
from simulator.protocol.knobs import ProtocolKnobs
from simulator.protocol.mutations import STREAM_K_FIXUP, mutations_for


def _params(blocks, k_tiles, *, cluster=(1, 1), sms=132, active=0, splits=1, mode="heuristic", raster="heuristic",
            swizzle=1, bypass=False):
    return stream_k_params(blocks=blocks, k_tiles=k_tiles, cluster=cluster, sm_count=sms, max_active_clusters=active,
                           splits=splits, max_swizzle=swizzle, raster_option=raster, decomposition=mode,
                           reduction="deterministic", bypass_occupancy=bypass)


def _segs(d, u):
    return [(s.cluster_tile, s.k_start, s.k_count) for s in d.units[u]]


# ------------------------------------------------------------------------------ CUTLASS formulas
def test_stream_k_512x512x32768_on_132_sms():
    # 128x128x64 tiles: blocks 4x4, 512 K tiles. get_grid_shape: cluster size 1 -> sm_count = 132 CTAs.
    # get_num_sk_tiles: full_waves 0, dp_waves 0, sk_tiles 16; tail 16, 2*16 < 132 -> stream-K.
    # get_num_sk_units: min(132, 16 * 512 / 8) = 132. calculate_groups: AlongN (4 > 4 is false), max groups
    # blocks_n / cluster_n = 4; g=4 divides 132 and 16, (16/4 * 512) / (132/4) = 62 >= 8 -> 4 groups.
    # k_tiles_per_sk_unit = (4 * 512) / 33 = 62; 132 % 16 != 0 -> not split-K.
    p = _params((4, 4, 1), 512)
    assert (p.mode, p.ctas_per_wave, p.sk_tiles, p.sk_units, p.dp_units) == ("stream_k", 132, 16, 132, 0)
    assert (p.groups, p.big_groups, p.k_tiles_per_sk_unit, p.units_per_problem) == (4, 0, 62, 132)
    d = decompose(p)
    # sched get_current_work_iter_start...: unit u -> group u % 4, cluster u // 4; 2048 K tiles per group over
    # 33 units: 62 each, the first 2 (big_units_in_group = 2048 - 62 * 33) one more.
    assert _segs(d, 0) == [(0, 0, 63)]
    assert _segs(d, 4) == [(0, 63, 63)]          # cl 1: start 62 + 1 (big), 63 K tiles
    assert _segs(d, 8) == [(0, 126, 62)]         # cl 2: start 124 + 2 (after the big units), 62
    assert _segs(d, 1) == [(1, 0, 63)]           # group 1's first tile is tile 0 * 4 + 1
    # cl 8 of group 0: [498, 560) spans tile 0 (group tile 0) and tile 4 (group tile 1); the unit walks
    # backwards (update_output_tile_id_and_work_tile_k: the tile of its last K tile first).
    assert _segs(d, 32) == [(4, 0, 48), (0, 498, 14)]
    assert [a for _, a, _ in d.peers[0]] == [0, 63, 126, 188, 250, 312, 374, 436, 498]


def test_heuristic_picks_split_k_when_units_divide_tiles():
    # blocks 2x2, 1024 K tiles: sk_tiles 4, sk_units = min(132, 4 * 1024 / 8) = 132, 132 % 4 == 0 ->
    # "basic split-K decomposition for the stream-K tiles" with sk_splits = 132 / 4 = 33 (params
    # select_decomposition_mode). set_params_basic: big_units = 1024 % 33 = 1, 1024 / 33 = 31 per split.
    p = _params((2, 2, 1), 1024)
    assert (p.mode, p.splits, p.big_units, p.k_tiles_per_sk_unit, p.units_per_problem) == ("split_k", 33, 1, 31, 4)
    d = decompose(p)
    assert len(d.units) == 132
    # linear id = split * 4 + tile (divmod_clusters_mnl_); split 0 is the big one: [0, 32); split s > 0
    # starts at 31 s + 1.
    assert _segs(d, 0) == [(0, 0, 32)]
    assert _segs(d, 5) == [(1, 32, 31)]
    assert _segs(d, 131) == [(3, 993, 31)]


def test_split_k_53_k_tiles_in_5_splits_as_the_sm100_comment():
    # sm100_tile_scheduler_stream_k.hpp convert_work comment: "53 k_tiles per output tile, 10 k_tiles for
    # normal size split, 11 k_tiles for start three big unit": K_idx [0,10] [11,21] [22,32] [33,42] [43,52].
    p = _params((1, 1, 1), 53, splits=5, mode="split_k")
    assert (p.splits, p.big_units, p.k_tiles_per_sk_unit) == (5, 3, 10)
    d = decompose(p)
    assert [_segs(d, u)[0][1:] for u in range(5)] == [(0, 11), (11, 11), (22, 11), (33, 10), (43, 10)]
    d100 = decompose_sm100(p, 1)     # SM100: the split is the grid's z (CLC launch order), same K ranges
    assert [(s.k_start, s.k_count) for (s,) in d100.units] == [(0, 11), (11, 11), (22, 11), (33, 10), (43, 10)]


def test_adjust_split_count_and_occupancy():
    # params adjust_split_count: at most sm_count, at most the K tiles.
    assert adjust_split_count(200, 132, 100) == 100
    assert adjust_split_count(200, 132, 500) == 132
    # params get_max_cta_occupancy, the comment's example: 20 SMs per GPC, cluster 8, 148 SMs: 7 x 16 + 8 = 120
    # (the comment's last line says 148, but the code takes min(sm_count, 120) = 120).
    assert max_cta_occupancy(20, 8, 148) == 120
    # GH100 (18 per GPC), cluster 4, 132 SMs: 7 x 16 + (6 - 6 % 4) = 116.
    assert max_cta_occupancy(18, 4, 132) == 116
    # get_grid_shape with max_active_clusters: cluster 2, 66 active on 132 SMs -> 132 CTAs.
    assert grid_ctas((8, 8, 1), (2, 1), 132, 66, 1, "heuristic", False) == 132


def test_data_parallel_without_a_small_tail():
    # 8192^3, 128x256 tiles: 64 x 32 = 2048 tiles on 132 CTAs: 15 full waves, tail 68, 2 x 68 >= 132 ->
    # "prefer data-parallel ... the tail wave is more than half full" (get_num_sk_tiles).
    p = _params((64, 32, 1), 128)
    assert (p.mode, p.sk_tiles, p.sk_units) == ("data_parallel", 0, 0)
    # forced stream-K: dp_waves = 15 - 1 = 14, sk_tiles = 2048 - 14 x 132 = 200, sk_units 132.
    f = _params((64, 32, 1), 128, mode="stream_k")
    assert (f.mode, f.sk_tiles, f.sk_units, f.dp_units) == ("stream_k", 200, 132, 1848)
    # K tiles <= 8: never split (get_num_sk_tiles).
    assert _params((2, 2, 1), 8, mode="stream_k").mode == "data_parallel"


def test_min_iters_adjustment_can_leave_a_unit_empty():
    # blocks 1x2, 50 K tiles, forced stream-K: 12 units (100 / 8), one group (AlongM, blocks_m = 1),
    # 8 K tiles each, the first 4 one more (100 - 96). Unit 5 starts at 44 (> 50 - 8): it sheds its 6 K
    # tiles of tile 0 to unit 4 and starts at 50 with 2, whose end (2 < 8) it sheds too: no K tile is
    # left (sched: "Adjust our work to shed these K tiles"), so unit 4 covers [36, 50) and unit 6 [50, 60).
    p = _params((1, 2, 1), 50, mode="stream_k")
    assert (p.sk_units, p.groups, p.k_tiles_per_sk_unit) == (12, 1, 8)
    d = decompose(p)
    assert _segs(d, 4) == [(0, 36, 14)]
    assert _segs(d, 5) == []
    assert _segs(d, 6) == [(1, 0, 10)]


@pytest.mark.parametrize("blocks,k,mode,splits,cluster", [
    ((4, 4, 1), 512, "heuristic", 1, (1, 1)), ((40, 7, 1), 47, "heuristic", 1, (1, 1)),
    ((8, 8, 2), 100, "stream_k", 1, (2, 1)), ((6, 10, 1), 77, "stream_k", 1, (2, 2)),
    ((3, 5, 1), 64, "split_k", 7, (1, 1)), ((12, 12, 1), 36, "heuristic", 1, (1, 2)),
])
def test_every_k_block_of_every_tile_is_computed_once(blocks, k, mode, splits, cluster):
    active = 132 // (cluster[0] * cluster[1])
    p = _params(blocks, k, cluster=cluster, active=active, splits=splits, mode=mode)
    d = decompose(p)
    seen: dict = {}
    for segs in d.units:
        for s in segs:
            for kb in range(s.k_start, s.k_start + s.k_count):
                seen[(s.cluster_tile, kb)] = seen.get((s.cluster_tile, kb), 0) + 1
    tiles = p.output_tiles // p.cluster_size
    assert set(seen) == {(t, kb) for t in range(tiles) for kb in range(k)}
    assert set(seen.values()) == {1}


def test_workspace_size():
    # params get_workspace_component_sizes, split-K: every output tile; 4 tiles x 1 barrier x 32 bits,
    # rounded up to 128 B; 32-bit accumulators 128 x 128 per tile.
    p = _params((2, 2, 1), 1024)
    assert workspace_bytes(p, 128, 128, 1) == (128, 4 * 128 * 128 * 4)
    assert workspace_bytes(_params((64, 32, 1), 128), 128, 256, 2) == (0, 0)


# ------------------------------------------------------------------------------ configs
def test_config_rules():
    h200 = get_arch("h200")
    with pytest.raises(ConfigError, match="splits=3 with decomposition='stream_k'"):
        Sm90GemmConfig(decomposition="stream_k", splits=3).can_implement(h200)
    with pytest.raises(ConfigError, match="Ping-pong kernel does not currently support"):
        Sm90GemmConfig(schedule="pingpong", decomposition="split_k", splits=2).can_implement(h200)
    with pytest.raises(ConfigError, match="decomposition='streamk': unknown"):
        Sm90GemmConfig(decomposition="streamk").can_implement(h200)
    with pytest.raises(ConfigError, match="reduction='atomic': unknown"):
        Sm90GemmConfig(decomposition="stream_k", reduction="atomic").can_implement(h200)
    with pytest.raises(ConfigError, match="scheduler_sm_count=200: more SMs than H200"):
        Sm90GemmConfig(decomposition="stream_k", scheduler_sm_count=200).can_implement(h200)
    with pytest.raises(ConfigError, match="hands its units out through CLC"):
        Sm100GemmConfig(decomposition="stream_k", tile_scheduler="static").can_implement(get_arch("b200"))


def test_sm100_tile_n_192_is_forced_data_parallel():
    cfg = Sm100GemmConfig(m=512, n=768, k=32768, mma_tile_n=192, decomposition="stream_k").resolved(get_arch("b200"))
    d = for_config(cfg, get_arch("b200"))
    assert d.mode == "data_parallel" and "ForceDataParallel" in d.params.notes[0]


# ------------------------------------------------------------------------------ the kernel models
def _arch(name: str, sms: int):
    return get_arch(name).with_overrides({"sm_count": sms, "gpc_count": 1}, origin="test")


def _tiny(sm90: bool, **kw):
    """One 128 x 64 tile of 16 K-blocks, split in two on a 2-SM GPU."""
    base = dict(m=128, n=64, k=1024, cluster_m=1, cluster_n=1, decomposition="split_k", splits=2)
    base.update(kw)
    if sm90:
        return Sm90GemmConfig(tile_m=128, tile_n=64, mainloop_stages=4, **base), _arch("h200", 2)
    return Sm100GemmConfig(mma_tile_m=128, mma_tile_n=64, use_2sm=False, **base), _arch("b200", 2)


@pytest.mark.parametrize("sm90", [True, False])
def test_tiny_split_k_protocol_event_order(sm90):
    cfg, arch = _tiny(sm90)
    res = simulate(cfg, arch, trace=True, race_check=True)
    assert res.ok and res.tile_check() == (res.tiles_expected, 0)
    rows = list(res.trace.spans())
    role = "Consumer0" if sm90 else "Epilogue"
    mine = [s for s in rows if s.role == role and (s.kind.startswith("fixup") or s.kind in ("epilogue", "tile")
                                                   or (s.kind == "wait" and s.barrier == "fixup"))]
    mine.sort(key=lambda s: (s.end_cycle, s.cluster))
    order = [(s.cluster, s.kind) for s in mine if s.kind != "epilogue" or s.k_block == 0]
    # In the order they end: unit 0 (cluster 0, K-blocks 0-7) stores its partial and ends its tile; unit 1
    # (cluster 1, K-blocks 8-15), at the fixup as early as unit 0, waits for the flag, loads and adds the
    # partial, and only then runs the epilogue (its first subtile) and ends the tile.
    assert order == [(0, "fixup_store"), (0, "tile"), (1, "wait"), (1, "fixup_load"), (1, "epilogue"), (1, "tile")]
    store = next(s for s in mine if s.kind == "fixup_store")
    wait = next(s for s in mine if s.kind == "wait")
    load = next(s for s in mine if s.kind == "fixup_load")
    l2 = arch.l2_latency_cycles.value
    # The red lands half an L2 round trip after the fence, the waiter sees it one poll (a round trip) later.
    assert wait.end_cycle == pytest.approx(store.end_cycle + l2 / 2 + l2)
    assert load.start_cycle == wait.start_cycle and load.end_cycle > wait.end_cycle
    assert not any(s.kind == "epilogue" and s.cluster == 0 for s in rows)
    # every K-block computed once: the MMA spans of unit 0 are 0-7, of unit 1 8-15
    mma_role = "Consumer0" if sm90 else "MMA"
    kbs = sorted((s.cluster, s.k_block) for s in rows if s.kind == "mma" and s.role == mma_role)
    assert kbs == [(0, kb) for kb in range(8)] + [(1, kb) for kb in range(8, 16)]


@pytest.mark.parametrize("sm90", [True, False])
def test_skipped_fixup_arrival_deadlocks_on_the_final_split(sm90):
    cfg, arch = _tiny(sm90)
    res = simulate(cfg, arch, knobs=ProtocolKnobs.make(skip_release=["fixup"]), allow_protocol_experiments=True)
    d = res.deadlock
    assert d is not None
    roles = {(b.role, b.pipeline, b.cluster) for b in d.blocked}
    want = {("Consumer0", "fixup", 1), ("Consumer1", "fixup", 1)} if sm90 else {("Epilogue", "fixup", 1)}
    assert want <= roles
    b = next(b for b in d.blocked if b.pipeline == "fixup")
    assert "unit 0" in b.owed_by and "flag == 8" in b.describe()


@pytest.mark.parametrize("sm90,reduction", [(True, "deterministic"), (True, "nondeterministic"),
                                            (False, "deterministic"), (False, "nondeterministic")])
def test_stream_k_runs_conserve_partial_bytes_and_are_deterministic(sm90, reduction):
    kw = dict(m=256, n=192, k=2560, decomposition="stream_k", reduction=reduction, cluster_m=1, cluster_n=1)
    if sm90:
        cfg, arch = Sm90GemmConfig(tile_m=128, tile_n=64, mainloop_stages=4, **kw), _arch("h200", 16)
        groups, group_bytes = 2, 64 * 64 * 4
    else:
        cfg, arch = Sm100GemmConfig(mma_tile_m=128, mma_tile_n=64, use_2sm=False, **kw), _arch("b200", 16)
        groups, group_bytes = 1, 128 * 64 * 4
    a = simulate(cfg, arch, race_check=True, trace=True)
    b = simulate(cfg, arch, race_check=True, engine="reference")
    assert a.ok and a.fingerprint() == b.fingerprint()
    assert a.tile_check() == (a.tiles_expected, 0)
    d = for_config(cfg.resolved(arch), arch)
    # every partial written is read once: by the final split's load or by a later split's atomic add
    partials = sum(len(p) - 1 for p in d.peers.values())
    assert partials > len([p for p in d.peers.values() if len(p) > 1])      # some tile has a middle split
    assert a.workspace_write_bytes == a.workspace_read_bytes
    assert a.workspace_write_bytes == partials * groups * group_bytes
    # every (tile, K-block) once across units
    role = "Consumer0" if sm90 else "MMA"
    kb = [(s.tile_m, s.tile_n, s.k_block) for s in a.trace.spans() if s.kind == "mma" and s.role == role]
    assert len(kb) == len(set(kb)) == a.tiles_expected * cfg.resolved(arch).k_tiles


def test_default_config_has_no_stream_k_and_fixup_mutations_are_na():
    cfg = Sm90GemmConfig(m=512, n=768, k=320).resolved(get_arch("h200"))
    assert for_config(cfg, get_arch("h200")) is None
    muts = {m.id: m for m in mutations_for(cfg)}
    for mid in STREAM_K_FIXUP:
        assert muts[mid].skip_class == "n/a" and "data_parallel" in muts[mid].skip_why
    with pytest.raises(ConfigError, match="skip_release fixup: cannot apply"):
        ProtocolKnobs.make(skip_release=["fixup"]).check_applies(cfg)


# ------------------------------------------------------- the twin's one-warpgroup cooperative kernel (tile_m 64)
def test_64_row_cooperative_has_one_math_warpgroup_and_its_counts():
    from simulator.protocol.arrivals import (
        Sm90KernelFacts,
        sm90_arrival_counts,
        sm90_barrier_counts,
        sm90_fixup_counts,
    )

    cfg = Sm90GemmConfig(m=64, n=1024, k=4096, tile_m=64, tile_n=128, cluster_m=1, cluster_n=2).resolved(get_arch("h200"))
    assert cfg.num_consumer_warpgroups == 1 and cfg.consumer_threads_per_tile == 128
    assert cfg.accumulator_registers_per_thread == 64            # 64 x 128 fp32 over 128 threads
    f = Sm90KernelFacts.from_config(cfg)
    assert sm90_arrival_counts(f)["mainloop"].consumer == 4 * 1 * 2      # 4 warps x 1 warpgroup x (1 + 2 - 1) CTAs
    assert sm90_barrier_counts(f)["epilogue_named"] == 128
    assert sm90_fixup_counts(f).barriers_per_tile == 1
    assert Sm90GemmConfig(m=256, n=256, k=64, tile_m=128).num_consumer_warpgroups == 2
    with pytest.raises(ConfigError, match=r"tile_m=192: .* multiple of 128 .* or 64"):
        Sm90GemmConfig(m=256, n=256, k=64, tile_m=192).check_given()


def test_64_row_cooperative_split_k_runs_one_consumer_and_its_fixup():
    cfg, arch = _tiny(True)
    cfg = Sm90GemmConfig(**{**cfg.__dict__, "tile_m": 64, "m": 64})
    res = simulate(cfg, arch, trace=True, race_check=True)
    assert res.ok and res.tile_check() == (res.tiles_expected, 0)
    rows = list(res.trace.spans())
    assert {s.role for s in rows} >= {"Consumer0", "MainloopLoad"} and "Consumer1" not in {s.role for s in rows}
    mine = sorted((s for s in rows if s.role == "Consumer0" and (s.kind.startswith("fixup") or s.kind == "tile")),
                  key=lambda s: (s.end_cycle, s.cluster))
    assert [(s.cluster, s.kind) for s in mine] == [(0, "fixup_store"), (0, "tile"), (1, "fixup_load"), (1, "tile")]
    # one 64 x 64 fp32 partial through the workspace, written once and read once
    assert res.workspace_write_bytes == res.workspace_read_bytes == 64 * 64 * 4
    kbs = sorted((s.cluster, s.k_block) for s in rows if s.kind == "mma" and s.role == "Consumer0")
    assert kbs == [(0, kb) for kb in range(8)] + [(1, kb) for kb in range(8, 16)]
    dead = simulate(cfg, arch, knobs=ProtocolKnobs.make(skip_release=["fixup"]), allow_protocol_experiments=True)
    assert dead.deadlock is not None
    assert {(b.role, b.pipeline, b.cluster) for b in dead.deadlock.blocked if b.pipeline == "fixup"} == {
        ("Consumer0", "fixup", 1)}


def test_sm90_warpgroups_share_the_sm_s_workspace_rate_at_once():
    """Both consumer warpgroups store their 64 x 64 fp32 partial at once, each at half the SM's rate: each
    fixup_store span lasts two slices over the quiet store rate (no other SM is inside a tile's loads by then)
    plus the fence's round trip, the second warpgroup's as long as the first's (not queued behind it)."""
    from simulator.kernels.sm90_tma_ws import SM90_WORKSPACE_STORE

    cfg, arch = _tiny(True)
    res = simulate(cfg, arch, trace=True)
    stores = sorted((s for s in res.trace.spans() if s.kind == "fixup_store"), key=lambda s: s.role)
    assert [(s.role, s.cluster) for s in stores] == [("Consumer0", 0), ("Consumer1", 0)]
    slice_bytes = 64 * 64 * 4
    expected = 2 * slice_bytes / SM90_WORKSPACE_STORE.at(0) + arch.l2_latency_cycles.value
    assert [s.end_cycle - s.start_cycle for s in stores] == pytest.approx([expected, expected])


def test_separate_reduction_sm90_only_no_waits_but_the_final_split():
    """The twin's separate reduction: every non-final split stores a slot of its own without waiting; the
    final split waits for the flag and reads one slot per other split; bytes conserved, race-free, the
    same on both engines; the SM100 kernel refuses it."""
    kw = dict(m=256, n=192, k=2560, decomposition="stream_k", cluster_m=1, cluster_n=1)
    cfg, arch = Sm90GemmConfig(tile_m=128, tile_n=64, mainloop_stages=4, reduction="separate", **kw), _arch("h200", 16)
    a = simulate(cfg, arch, race_check=True, trace=True)
    b = simulate(cfg, arch, race_check=True, engine="reference")
    assert a.ok and a.fingerprint() == b.fingerprint() and not a.races
    assert a.tile_check() == (a.tiles_expected, 0)
    d = for_config(cfg.resolved(arch), arch)
    partials = sum(len(p) - 1 for p in d.peers.values())
    assert a.workspace_write_bytes == a.workspace_read_bytes == partials * 2 * 64 * 64 * 4
    spans = list(a.trace.spans())
    assert not any(s.kind == "fixup_reduce" for s in spans)            # no read-add-write, no atomics
    waits = [s for s in spans if s.kind == "wait" and s.barrier == "fixup"]
    loads = {(s.cluster, s.tile_m, s.tile_n) for s in spans if s.kind == "fixup_load"}
    assert waits and all((s.cluster, s.tile_m, s.tile_n) in loads for s in waits)   # only final splits wait
    with pytest.raises(ConfigError, match="reduction='separate'"):
        Sm100GemmConfig(mma_tile_m=128, mma_tile_n=64, use_2sm=False, reduction="separate", **kw).check_given()


def test_nondeterministic_adds_of_middle_splits_are_no_race():
    """512x512x32768 on 2x2 clusters: ~8 splits per tile, the middle ones adding atomically at once. Their adds
    into one slice are not overwrites of each other (the race detector once said they were); a middle split
    that adds before the first split's store has landed still is (the mutation check catalogue)."""
    cfg = Sm90GemmConfig(m=512, n=512, k=32768, tile_m=128, tile_n=128, tile_k=64, cluster_m=2, cluster_n=2,
                         raster="n", decomposition="heuristic", reduction="nondeterministic")
    res = simulate(cfg, get_arch("h200"), race_check=True)
    assert res.ok and not res.races and res.tile_check() == (res.tiles_expected, 0)
