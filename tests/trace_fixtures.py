"""A small, realistic SM100 trace made by hand, with the counts and times the tests expect.

The schedule follows the seed kernel's roles and pipelines on a 2-CTA cluster (two SMs, 1-SM MMA):
MainloopLoad issues one TMA load per K-block into ``stages`` SMEM stages (waiting on
``mainloop.empty`` when all are held), MMA consumes them (waiting on ``accumulator.empty`` before a
tile and ``mainloop.full`` before each K-block) and hands the accumulator to the Epilogue, which
waits on ``accumulator.full`` and writes ``subtiles`` subtiles, each followed by an asynchronous
TMA store. Sched (CTA 0 only) issues one CLC query per tile and waits on ``clc_throttle.full`` for
MainloopLoad's permission. Every role starts with a prologue. Counters: per-SM
``mainloop.stages_full`` and ``accumulator.stages_full`` and device-wide ``hbm_gbps``.

Times are integers in ns (recorded in cycles at 2 GHz, like the simulator does) so that the
expected sums are exact.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from simulator.engine.trace import Trace

CLOCK_GHZ = 2.0
PROLOGUE = 50
ISSUE = 10         # MainloopLoad: time to issue one TMA load
MMA = 100          # one K-block on the tensor core
EPI_SUB = 60       # one epilogue subtile
STORE = 90         # one TMA store in flight (> EPI_SUB, so two stores overlap)
CLC = 200          # CLC query latency
LOAD_BYTES = 2 * 128 * 64 * 2   # A and B K-block, 128x64 bf16 each


@dataclass
class Expected:
    counts: Counter = field(default_factory=Counter)            # kind -> spans
    counts_by_sm: Counter = field(default_factory=Counter)      # (sm, kind) -> spans
    waits: dict = field(default_factory=lambda: defaultdict(float))  # (sm, role, barrier) -> ns
    wait_counts: Counter = field(default_factory=Counter)       # barrier -> wait spans
    extent: dict = field(default_factory=dict)                  # (sm, role) -> (first, last) ns
    end_ns: float = 0.0
    roles: dict = field(default_factory=dict)                   # sm -> roles present
    n_counters: Counter = field(default_factory=Counter)        # counter name -> samples


def make_sm100_trace(n_sms: int = 2, tiles_per_sm: int = 3, k_tiles: int = 4, stages: int = 2,
                     acc_stages: int = 2, subtiles: int = 4) -> tuple[Trace, Expected]:
    tr = Trace(meta={"source": "synthetic", "arch": "sm100", "kernel": "sm100_tma_ws",
                     "config": {"m": 128 * tiles_per_sm, "n": 128 * n_sms, "k": 64 * k_tiles,
                                "mainloop_stages": stages, "acc_stages": acc_stages}},
               clock_ghz=CLOCK_GHZ)
    ex = Expected()
    clk = CLOCK_GHZ
    hbm_events: list[tuple[float, float]] = []   # (time, +-GB/s)

    def span(sm, role, kind, s, e, **kw):
        tr.add(sm, sm % 2, sm // 2, role, kind, s * clk, e * clk, **kw)
        ex.counts[kind] += 1
        ex.counts_by_sm[(sm, kind)] += 1
        f, la = ex.extent.get((sm, role), (s, e))
        ex.extent[(sm, role)] = (min(f, s), max(la, e))
        ex.end_ns = max(ex.end_ns, e)
        ex.roles.setdefault(sm, set()).add(role)
        if kind == "wait":
            ex.waits[(sm, role, kw["barrier"])] += e - s
            ex.wait_counts[kw["barrier"]] += 1

    def wait(sm, role, s, e, barrier, stage=-1):
        if e > s:
            span(sm, role, "wait", s, e, barrier=barrier, stage=stage)

    for sm in range(n_sms):
        cta = sm % 2
        tma_lat = 300 + 50 * sm            # SM 1 sees a slower memory path
        roles = ["MainloopLoad", "MMA", "Epilogue"] + (["Sched"] if cta == 0 else [])
        for r in roles:
            span(sm, r, "prologue", 0, PROLOGUE)
        n_k = tiles_per_sm * k_tiles
        issue = [0.0] * n_k
        landed = [0.0] * n_k
        release = [0.0] * n_k
        acc_full = [0.0] * tiles_per_sm
        acc_release = [0.0] * tiles_per_sm
        loader_t = float(PROLOGUE)
        mma_t = float(PROLOGUE)
        epi_t = float(PROLOGUE)
        tiles = [(sm, t, 0) for t in range(tiles_per_sm)]
        # The mainloop and MMA are interleaved K-block by K-block; the epilogue of tile t runs after
        # its accumulator is full, and MMA of tile t + acc_stages waits for that epilogue.
        g = 0
        for t in range(tiles_per_sm):
            for k in range(k_tiles):
                st = g % stages
                if g >= stages:   # stage reused: wait until MMA released it
                    wait(sm, "MainloopLoad", loader_t, max(loader_t, release[g - stages]), "mainloop.empty", st)
                    loader_t = max(loader_t, release[g - stages])
                issue[g] = loader_t
                landed[g] = loader_t + tma_lat
                span(sm, "MainloopLoad", "tma_load", issue[g], landed[g], tile=tiles[t], k_block=k, stage=st)
                gbps = LOAD_BYTES / tma_lat
                hbm_events += [(issue[g], gbps), (landed[g], -gbps)]
                loader_t += ISSUE
                # MMA side for this K-block
                if k == 0:
                    a = t % acc_stages
                    if t >= acc_stages:
                        # acc_release of tile t - acc_stages is known only after its epilogue;
                        # epilogues are computed below as soon as a tile's accumulator is full.
                        wait(sm, "MMA", mma_t, max(mma_t, acc_release[t - acc_stages]), "accumulator.empty", a)
                        mma_t = max(mma_t, acc_release[t - acc_stages])
                    tile_start = max(mma_t, landed[g])
                wait(sm, "MMA", mma_t, max(mma_t, landed[g]), "mainloop.full", st)
                mma_t = max(mma_t, landed[g])
                span(sm, "MMA", "mma", mma_t, mma_t + MMA, tile=tiles[t], k_block=k, stage=st)
                mma_t += MMA
                release[g] = mma_t
                g += 1
            a = t % acc_stages
            acc_full[t] = mma_t
            span(sm, "MMA", "tile", tile_start, mma_t, tile=tiles[t])
            span(sm, "MMA", "acc_handoff", mma_t, mma_t, tile=tiles[t], stage=a)
            # Epilogue of tile t
            wait(sm, "Epilogue", epi_t, max(epi_t, acc_full[t]), "accumulator.full", a)
            epi_t = max(epi_t, acc_full[t])
            e0 = epi_t
            for j in range(subtiles):
                span(sm, "Epilogue", "epilogue", epi_t, epi_t + EPI_SUB, tile=tiles[t], k_block=j, stage=j % 2)
                epi_t += EPI_SUB
                span(sm, "Epilogue", "tma_store", epi_t, epi_t + STORE, tile=tiles[t], k_block=j, stage=j % 2)
            acc_release[t] = epi_t
            span(sm, "Epilogue", "tile", e0, epi_t, tile=tiles[t])
        # Counters for this SM: stages full = landed and not yet released.
        for name, ups, downs in (("mainloop.stages_full", landed, release),
                                 ("accumulator.stages_full", acc_full, acc_release)):
            evs = sorted([(x, 1) for x in ups] + [(x, -1) for x in downs], key=lambda ev: (ev[0], ev[1]))
            v = 0
            tr.add_counter(sm, name, 0, ns=0.0)
            ex.n_counters[name] += 1
            for x, d in evs:
                v += d
                tr.add_counter(sm, name, v, cycle=x * clk)
                ex.n_counters[name] += 1
        if cta == 0:
            # Sched: one CLC query per tile; the next is allowed once MainloopLoad started the tile.
            q = float(PROLOGUE)
            for t in range(tiles_per_sm):
                allowed = issue[t * k_tiles]
                wait(sm, "Sched", q, max(q, allowed), "clc_throttle.full", t % 2)
                q = max(q, allowed)
                span(sm, "Sched", "clc_query", q, q + CLC, stage=t % 2)
                q += CLC
    # Device-wide HBM bandwidth in use.
    hbm_events.sort()
    bw = 0.0
    tr.add_counter(-1, "hbm_gbps", 0.0, ns=0.0)
    ex.n_counters["hbm_gbps"] += 1
    for x, d in hbm_events:
        bw += d
        tr.add_counter(-1, "hbm_gbps", round(bw, 6), ns=x)
        ex.n_counters["hbm_gbps"] += 1
    return tr, ex


def make_sm90_trace(n_sms: int = 1, tiles: int = 2, k_tiles: int = 3) -> Trace:
    """A tiny Hopper-style trace (producer + two consumers) for role-order tests."""
    tr = Trace(meta={"source": "synthetic", "arch": "sm90"}, clock_ghz=CLOCK_GHZ)
    for sm in range(n_sms):
        t = 0.0
        for tile in range(tiles):
            for k in range(k_tiles):
                tr.add_ns(sm, 0, sm, "MainloopLoad", "tma_load", t, t + 300, tile=(tile, 0, 0), k_block=k,
                          stage=k % 2)
                for c in (0, 1):
                    tr.add_ns(sm, 0, sm, f"Consumer{c}", "mma", t + 300, t + 400, tile=(tile, c, 0), k_block=k,
                              stage=k % 2)
                t += 100
            tr.add_ns(sm, 0, sm, "EpilogueLoad", "epi_load", t, t + 200, tile=(tile, 0, 0), stage=0)
    return tr


_SIM_CACHE: dict = {}


def simulated(m: int = 512, n: int = 512, k: int = 256, **cfg):
    """A small simulated SM100 GEMM with its trace (cached); skips the test when the simulator is
    not importable yet."""
    import pytest

    key = (m, n, k, tuple(sorted(cfg.items())))
    if key not in _SIM_CACHE:
        engine = pytest.importorskip("simulator.engine")
        from simulator.kernels.sm100_config import Sm100GemmConfig
        from simulator.machine.arch import ArchSpec

        _SIM_CACHE[key] = engine.simulate(Sm100GemmConfig(m=m, n=n, k=k, **cfg), ArchSpec.b200(), trace=True)
    return _SIM_CACHE[key]
