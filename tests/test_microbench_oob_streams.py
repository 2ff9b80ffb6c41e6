"""The zero-fill stream families (l2share_lockstep, zero_fill_scaling, zero_fill_fraction) on a fake GPU:
what each launches and records, without a GPU."""

from __future__ import annotations

import pytest

from validation.microbench import build, l2share_lockstep, zero_fill_fraction, zero_fill_scaling

CYCLES_PER_BOX = 200


class FakeGpu:
    """Buffers, tensor maps and launches of ``validation.microbench.driver.Gpu``; every block of a launch
    records ``count`` boxes at CYCLES_PER_BOX cycles each on a 1.8 GHz clock."""

    sm_count = 132

    def __init__(self):
        self.launches, self.maps, self.freed, self.count = [], [], [], 0
        self.next = 1 << 20

    def alloc(self, n):
        self.next += int(n) + 4096
        return self.next

    def free(self, p):
        self.freed.append(p)

    def fill_random(self, p, n, seed=0):
        pass

    def func(self, path, name):
        return name

    def tensor_map_2d(self, buf, cols, rows, pitch, box_cols, box_rows):
        self.maps.append((rows, box_rows))
        return ("map", rows)

    def launch(self, fn, grid, block, args, smem=0, tmap=None, cluster=0):
        self.launches.append((fn, grid, tmap))
        self.count = args.i[1]

    def spans(self, out, n, width):
        cyc = self.count * CYCLES_PER_BOX
        return [[0, cyc, 0, int(cyc / 1.8), i, 0, 0, 0] for i in range(n)]


@pytest.fixture
def gpu(monkeypatch):
    monkeypatch.setattr(build, "cubin_path", lambda name: f"/nonexistent/{name}.cubin")
    return FakeGpu()


def test_zero_fill_scaling_streams_every_case_on_every_sm_count(gpu):
    res = zero_fill_scaling.measure(gpu, quick=True)
    rows = res["zero_fill_scaling"]
    assert [(r["height"], r["y0"], r["ctas"]) for r in rows] == [
        (h, y0, n) for h, y0 in zero_fill_scaling.CASES for n in zero_fill_scaling.CTAS]
    assert all(r["cycles_per_box"] == CYCLES_PER_BOX and r["stagger"] == 0 for r in rows)
    assert {r["in_bounds_rows"] for r in rows} == {32, 128}
    assert len(res["quantities"]) == len(rows) and len(gpu.freed) == 2


def test_zero_fill_fraction_names_the_wholly_past_boxes(gpu):
    res = zero_fill_fraction.measure(gpu, quick=True)
    keys = set(res["quantities"])
    assert "tma_oob_scaling.h32.box128_all_oob.lockstep.64sm.cycles_per_box" in keys
    assert "tma_oob_scaling.h64.box128.lockstep.64sm.cycles_per_box" in keys
    assert {r["in_bounds_rows"] for r in res["zero_fill_scaling"]} == {64, 96, 0}


def test_l2share_lockstep_keeps_its_box_names(gpu):
    res = l2share_lockstep.measure(gpu, quick=True)
    rows = res["oob_lockstep"]
    assert len(rows) == 8 and {r["stagger"] for r in rows} == {0, 8}
    assert {r["what"] for r in rows} == {"box128", "box128_all_oob"}
    assert "tma_oob_shared.h64.box128_all_oob.lockstep.132sm.cycles_per_box" in res["quantities"]


def test_a_failed_launch_is_recorded_and_the_rest_run(gpu, monkeypatch):
    real = gpu.launch
    calls = []

    def flaky(fn, grid, *a, **kw):
        calls.append(grid)
        if len(calls) == 1:
            raise RuntimeError("CUDA driver error 700: fake")
        return real(fn, grid, *a, **kw)
    monkeypatch.setattr(gpu, "launch", flaky)
    res = zero_fill_scaling.measure(gpu, quick=True)
    assert len(res["errors"]) == 1 and "fake" in res["errors"][0]["error"]
    assert len(res["zero_fill_scaling"]) == len(zero_fill_scaling.CASES) * len(zero_fill_scaling.CTAS) - 1


def test_l2share_window_launches_pairs_at_every_offset_and_a_reference_alone(gpu):
    from validation.microbench import l2share_window as w
    res = w.measure(gpu, quick=False)
    rows = res["window"]
    want = [(n, 2, off) for n in (132, 16) for off in w.OFFSETS] + [(132, 1, 0), (16, 1, 0)]
    assert sorted((r["ctas"], r["group"], r["offset_cycles"]) for r in rows) == sorted(want)
    assert {fn for fn, _, _ in gpu.launches} == {"tma_stream_offset"}
    pair = next(r for r in rows if r["ctas"] == 132 and r["group"] == 2)
    assert pair["footprint_mib"] == 16.5 and len(pair["smids"]) == 132 and "stagger" not in pair
    assert "l2share_window.132sm.pair.off400.bytes_per_s" in res["quantities"]
    assert len(res["quantities"]) == 2 * len(rows) and len(gpu.freed) == 2


def test_l2share_window_load_launches_near_and_far_pairs_at_every_load(gpu):
    from validation.microbench import l2share_window as w
    from validation.microbench import l2share_window_load as wl
    res = wl.measure(gpu, quick=False)
    rows = res["window"]
    want = ([(n, 2, p, off) for n in w.LOAD_CTAS for p in ("near", "far") for off in w.OFFSETS_FINE]
            + [(n, 1, "near", 0) for n in w.LOAD_CTAS])
    assert sorted((r["ctas"], r["group"], r.get("pairing", "near"), r["offset_cycles"]) for r in rows) == sorted(want)
    assert {fn for fn, _, _ in gpu.launches} == {"tma_stream_offset", "tma_stream_offset_far"}
    assert "l2share_window.66sm.pair.far.off150.bytes_per_s" in res["quantities"]
    assert "l2share_window.16sm.pair.off150.bytes_per_s" in res["quantities"]
    assert len(res["quantities"]) == 2 * len(rows)


class MaskedGpu(FakeGpu):
    """Block i runs on SM i; only the SMs set in the last mask stream, and in each 16-SM GPC four SMs stream
    1.4x faster when everyone streams (the measured pattern)."""

    def __init__(self, gmap):
        super().__init__()
        self.mask, self.gmap = None, gmap
        by = {}
        for sm in sorted(gmap):
            by.setdefault(gmap[sm], []).append(sm)
        self.fast = {s for g, sms in by.items() if len(sms) == 16 for s in sms[:4]}

    def h2d(self, p, arr):
        self.mask = arr.copy()

    def spans(self, out, n, width):
        cyc = self.count * CYCLES_PER_BOX
        return [[0, int(cyc / (1.4 if i in self.fast else 1.0)), 0, int(cyc / 1.8), i, 0, 0, 0] if self.mask[i]
                else [0, 0, 0, 0, i, 0, 0, 0] for i in range(n)]


def test_l2share_groups_finds_the_fast_sms_and_streams_them_apart(monkeypatch):
    from validation.microbench import l2share_groups as lg
    monkeypatch.setattr(build, "cubin_path", lambda name: f"/nonexistent/{name}.cubin")
    gmap = lg.gpc_of_sm()
    gpu = MaskedGpu(gmap)
    res = lg.measure(gpu, quick=True)
    runs = {r["what"]: r for r in res["runs"]}
    assert len(runs["all"]["sms"]) == 132
    assert len(runs["fast SMs of every GPC"]["sms"]) == 24 == len(gpu.fast)
    assert len(runs["slow SMs of the GPCs with fast ones"]["sms"]) == 72
    alone = [w for w in runs if w.endswith("alone")]
    assert [len(runs[w]["sms"]) for w in alone] == [16, 12, 4, 18]
    assert {fn for fn, _, _ in gpu.launches} == {"tma_stream_masked"}
    assert "l2share_groups.fast_SMs_of_every_GPC.sum_bytes_per_clk" in res["quantities"]


class FlushingGpu(FakeGpu):
    def __init__(self):
        super().__init__()
        self.flushes = 0

    def flush_l2(self):
        self.flushes += 1


def test_l2share_hbm_streams_each_footprint_once_per_case_cold_and_warm(monkeypatch):
    """Every case launches 128 CTAs in stripes of g over one pass of its footprint: a cold case is one launch after
    an L2 flush, a warm one two launches (the first untimed); the landed bytes are the footprint times g."""
    from validation.microbench import l2share_hbm as h
    monkeypatch.setattr(build, "cubin_path", lambda name: f"/nonexistent/{name}.cubin")
    gpu = FlushingGpu()
    res = h.measure(gpu, quick=True)
    rows = res["streams"]
    assert [(r["footprint_mib"], r["group"], r["stages"], r["what"], r["cold"]) for r in rows] == h.cases()
    assert len(rows) == 2 * 2 * 2 * 7 and gpu.flushes == len(rows) // 2
    assert len(gpu.launches) == 3 * len(rows) // 2 and {fn for fn, _, _ in gpu.launches} == {"tma_stream_grouped"}
    assert all(grid == h.CTAS for _, grid, _ in gpu.launches)
    for r in rows:
        assert r["count"] * h.CTAS // r["group"] * h.BOX_BYTES == r["footprint_mib"] * 2**20
        assert r["bytes_landed"] == r["footprint_mib"] * 2**20 * r["group"]
        assert r["stagger"] == (h.SPREAD if r["what"] == "spread" else 0)
    g4 = next(r for r in rows if (r["footprint_mib"], r["group"]) == (64, 4))
    assert g4["count"] == 128                    # each SM reads 2 MiB, as a 512x512x32768 split-K 8 unit does
    assert "l2share_hbm.f64.g4.s8.lockstep.cold.bytes_per_s" in res["quantities"]
    assert len(res["quantities"]) == 2 * len(rows) and len(gpu.freed) == 2
