"""mbarrier semantics: phases, parity waits, transaction bytes, carry-over, violations."""

import pytest
import simpy

from simulator.mbarrier import ClusterBarrier, MBarrier, NamedBarrier, call_at


def test_fresh_barrier_parity():
    env = simpy.Environment()
    b = MBarrier(env, "b", 2)
    # Phase 0 in progress: waiting on parity 0 blocks, parity 1 (the producer start state) passes.
    assert not b.test_wait(0)
    assert b.test_wait(1)
    assert b.wait(1, "p") is None
    assert b.wait(0, "c") is not None


def test_phase_completes_on_arrivals_and_bytes():
    env = simpy.Environment()
    b = MBarrier(env, "full", 1)
    b.arrive_and_expect_tx(100)
    assert b.phase == 0 and b.pending == 0 and b.tx == 100
    b.complete_tx(60)
    assert b.phase == 0
    b.complete_tx(40)
    assert b.phase == 1 and b.pending == 1 and b.tx == 0


def test_bytes_before_expectation():
    """TMA bytes may land before the producer posts the expectation: tx goes negative, then zero."""
    env = simpy.Environment()
    b = MBarrier(env, "full", 1)
    b.complete_tx(64)
    assert b.tx == -64 and b.phase == 0
    b.arrive_and_expect_tx(64)
    assert b.phase == 1


def test_surplus_arrivals_carry_into_next_phase_and_are_flagged():
    env = simpy.Environment()
    b = MBarrier(env, "empty", 3)
    b.arrive(2, who="x", round=0)
    b.arrive(2, who="y", round=0)   # one arrival completes phase 0, one lands in phase 1
    assert b.phase == 1 and b.pending == 2
    assert b.violation_count == 1
    assert "arrived for phase 0" in b.violations[0].describe()


def test_waiters_woken_in_order_with_latency():
    env = simpy.Environment()
    b = MBarrier(env, "full", 2, wake_latency=5)
    log = []

    def waiter(name, parity):
        ev = b.wait(parity, name)
        if ev is not None:
            yield ev
        log.append((env.now, name))

    def arriver():
        yield env.timeout(10)
        b.arrive(1)
        yield env.timeout(10)
        b.arrive(1)

    env.process(waiter("a", 0))
    env.process(waiter("b", 0))
    env.process(waiter("c", 1))       # passes at once
    env.process(arriver())
    env.run()
    assert log == [(0, "c"), (25, "a"), (25, "b")]
    assert b.phase == 1 and b.waiters == ()


def test_count_must_be_positive():
    with pytest.raises(ValueError, match="arrival count 0"):
        MBarrier(simpy.Environment(), "x", 0)


def test_named_barrier_releases_all_and_resets():
    env = simpy.Environment()
    nb = NamedBarrier(env, "tmem_alloc", 160)
    log = []

    def epi():
        ev = nb.arrive_and_wait(128, "epi")
        if ev is not None:
            yield ev
        log.append(("epi", env.now))

    def mma():
        yield env.timeout(7)
        nb.arrive(32, "mma")
        log.append(("mma", env.now))

    env.process(epi())
    env.process(mma())
    env.run()
    assert log == [("mma", 7), ("epi", 7)]
    assert nb.pending == 160 and nb.generation == 1


def test_cluster_barrier_remote_arrival_latency():
    env = simpy.Environment()
    cb = ClusterBarrier(env, "dealloc", 1, remote_latency=180)
    cb.arrive_remote(1)
    assert cb.phase == 0
    env.run()
    assert cb.phase == 1 and env.now == 180


def test_call_at():
    env = simpy.Environment()
    seen = []
    call_at(env, 12, seen.append, "x")
    env.run()
    assert seen == ["x"] and env.now == 12
