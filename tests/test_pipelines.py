"""Exact event orders of each pipeline type on tiny cases."""

import simpy

from simulator.protocol.pipeline import (
    OrderedSequenceBarrier,
    PipelineAsync,
    PipelineCLCFetchAsync,
    PipelineParams,
    PipelineState,
    PipelineTmaAsync,
    PipelineTransactionAsync,
    PipelineUmmaAsync,
    make_producer_start_state,
)


def test_pipeline_state_wraps_and_flips_phase():
    st = PipelineState(3)
    seen = []
    for _ in range(7):
        seen.append((st.index, st.phase, st.count, st.round))
        st.advance()
    assert seen == [(0, 0, 0, 0), (1, 0, 1, 0), (2, 0, 2, 0), (0, 1, 3, 1), (1, 1, 4, 1), (2, 1, 5, 1),
                    (0, 0, 6, 2)]
    p = make_producer_start_state(3)
    assert (p.index, p.phase, p.count) == (0, 1, 0)


def _wait(ev):
    if ev is not None:
        yield ev


def test_pipeline_async_two_stages_exact_order():
    """Producer runs ahead by exactly the stage count, then waits for each release."""
    env = simpy.Environment()
    pipe = PipelineAsync(env, PipelineParams("p", 2, 1, 1), 0)
    log = []

    def producer():
        st = make_producer_start_state(2)
        for i in range(4):
            yield from _wait(pipe.producer_acquire(st, "P"))
            log.append((env.now, "P acquire", i, st.index))
            pipe.producer_commit(st, "P")
            st.advance()

    def consumer():
        st = PipelineState(2)
        for i in range(4):
            yield from _wait(pipe.consumer_wait(st, "C"))
            log.append((env.now, "C wait", i, st.index))
            yield env.timeout(10)
            pipe.consumer_release(st, "C")
            log.append((env.now, "C release", i, st.index))
            st.advance()

    env.process(producer())
    env.process(consumer())
    env.run()
    assert log == [
        (0, "P acquire", 0, 0), (0, "P acquire", 1, 1),
        (0, "C wait", 0, 0), (10, "C release", 0, 0),
        # the consumer finds stage 1 already full and goes on; the woken producer runs after it
        (10, "C wait", 1, 1), (10, "P acquire", 2, 0),
        (20, "C release", 1, 1), (20, "C wait", 2, 0), (20, "P acquire", 3, 1),
        (30, "C release", 2, 0),
        (30, "C wait", 3, 1), (40, "C release", 3, 1),
    ]
    assert all(b.violation_count == 0 for b in pipe.barriers())


def test_tma_pipeline_bytes_complete_the_phase():
    env = simpy.Environment()
    pipe = PipelineTmaAsync(env, PipelineParams("mainloop", 2, 1, 1, transaction_bytes=1000), 0)
    log = []

    def producer():
        st = make_producer_start_state(2)
        for k in range(3):
            yield from _wait(pipe.producer_acquire(st, "P"))
            pipe.producer_acquire_expect(st, "P")
            stage = st.index
            log.append((env.now, "issue", k))
            # the bytes land 50 cycles later in two halves
            env.process(_land(env, pipe, stage, 50))
            st.advance()

    def consumer():
        st = PipelineState(2)
        for k in range(3):
            yield from _wait(pipe.consumer_wait(st, "C"))
            log.append((env.now, "consume", k))
            yield env.timeout(100)
            pipe.consumer_release_to(st, [0], "C")
            st.advance()

    env.process(producer())
    env.process(consumer())
    env.run()
    # stage 1 landed at 50, so the consumer goes on at 150 before the woken producer issues k=2
    assert log == [(0, "issue", 0), (0, "issue", 1), (50, "consume", 0), (150, "consume", 1),
                   (150, "issue", 2), (250, "consume", 2)]


def _land(env, pipe, stage, delay):
    yield env.timeout(delay)
    pipe.full[stage].complete_tx(600)
    pipe.full[stage].complete_tx(400)


def test_transaction_pipeline_needs_every_producer_thread():
    """PipelineTransactionAsync: expect-tx by one thread does not arrive; commit by 32 does."""
    env = simpy.Environment()
    pipe = PipelineTransactionAsync(env, PipelineParams("epi_load", 1, 32, 128, transaction_bytes=256), 0)
    st = make_producer_start_state(1)
    pipe.producer_expect_transaction(st)
    pipe.full[0].complete_tx(256)
    assert pipe.full[0].phase == 0          # bytes in, but no arrivals yet
    pipe.producer_commit(st, "EpilogueLoad", 32)
    assert pipe.full[0].phase == 1


def test_umma_pipeline_commit_multicasts_to_pair_and_consumers_release_to_leader():
    env = simpy.Environment()
    params = PipelineParams("accumulator", 2, 1, 256)
    pair = [PipelineUmmaAsync(env, params, r) for r in range(2)]
    for r, p in enumerate(pair):
        p.peers = pair
        p.rank = r
    st = make_producer_start_state(2)
    pair[0].producer_commit_to(PipelineState(2), [0, 1], "MMA")
    assert pair[0].full[0].phase == 1 and pair[1].full[0].phase == 1
    cs = PipelineState(2)
    pair[0].consumer_release_to(cs, 0, "Epi0", 128)
    assert pair[0].empty[0].phase == 0
    pair[1].consumer_release_to(cs, 0, "Epi1", 128)
    assert pair[0].empty[0].phase == 1 and pair[1].empty[0].phase == 0   # only the leader's barrier
    # The producer can now re-acquire stage 0 in its second round.
    st.advance()
    st.advance()
    assert pair[0].producer_acquire(st, "MMA") is None


def test_clc_pipeline_expects_on_every_cta_and_releases_to_cta0():
    env = simpy.Environment()
    consumers = 32 + 3 * 192
    params = PipelineParams("clc", 2, 1, consumers, transaction_bytes=16)
    ctas = [PipelineCLCFetchAsync(env, params, r) for r in range(3)]
    for r, p in enumerate(ctas):
        p.peers = ctas
        p.rank = r
    st = make_producer_start_state(2)
    assert ctas[0].producer_acquire(st, "Sched") is None
    ctas[0].producer_acquire_expect(st, "Sched")
    assert [c.full[0].tx for c in ctas] == [16, 16, 16]
    for c in ctas:
        c.full[0].complete_tx(16)
    assert [c.full[0].phase for c in ctas] == [1, 1, 1]
    cs = PipelineState(2)
    ctas[0].consumer_release(cs, "Sched", 32)
    for c in ctas:
        for n in (32, 128, 32):
            c.consumer_release(cs, "role", n)
    assert ctas[0].empty[0].phase == 1
    assert ctas[1].empty[0].phase == 0 and ctas[1].empty[0].arrivals_total == 0


def test_ordered_sequence_barrier():
    env = simpy.Environment()
    osb = OrderedSequenceBarrier(env, "load_order", 32, 0)
    log = []

    def epi_load():
        yield from _wait(osb.wait("EpilogueLoad"))
        log.append((env.now, "C loads may start"))

    def main_load():
        yield env.timeout(30)
        osb.arrive("MainloopLoad", 32)

    env.process(epi_load())
    env.process(main_load())
    env.run()
    assert log == [(30, "C loads may start")]


def test_tma_umma_commit_multicast_reaches_remote_ctas_later():
    """umma_arrive_multicast: the committing CTA's own empty barrier at once, the peers' after
    the remote (DSMEM) latency, in one multicast."""
    from simulator.protocol.pipeline import PipelineTmaUmmaAsync

    env = simpy.Environment()
    params = PipelineParams("mainloop", 2, 1, 2, transaction_bytes=64)
    ctas = [PipelineTmaUmmaAsync(env, params, r, remote_latency=180) for r in range(3)]
    for r, p in enumerate(ctas):
        p.peers = ctas
        p.rank = r
    ctas[0].release_stage(1, 0, [0, 2], "MMA", 1)
    assert ctas[0].empty[1].pending == 1 and ctas[2].empty[1].pending == 2
    env.run()
    assert env.now == 180 and ctas[2].empty[1].pending == 1 and ctas[1].empty[1].pending == 2
