"""mbarrier semantics: phases, parity waits, transaction bytes, carry-over, violations."""

import pytest
import simpy

from simulator.protocol.mbarrier import ClusterBarrier, MBarrier, NamedBarrier, call_at


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


def test_later_bytes_wake_the_waiter_at_the_last_landing_with_no_event_of_their_own():
    """Bytes recorded for later times (TMA landings) complete the phase at the last landing; the
    waiter resumes then (plus the wake latency) and no separate landing events are processed."""
    env = simpy.Environment()
    b = MBarrier(env, "full", 1, wake_latency=5)
    log = []

    def consumer():
        ev = b.wait(0, "MMA")
        if ev is not None:
            yield ev
        log.append(env.now)

    b.complete_tx_at(40, 100)        # the peer CTA's slice lands first
    b.arrive_and_expect_tx(300)      # the producer posts the whole stage
    b.complete_tx_at(70, 200)        # its own slice lands last
    env.process(consumer())
    env.run()
    assert log == [75]
    assert b.phase == 1 and b.phase_done_at == 70 and b.tx_total == 300


def test_later_arrivals_apply_in_time_order_when_the_barrier_is_next_used():
    env = simpy.Environment()
    b = MBarrier(env, "empty", 2)
    b.arrive_at(30, 1, who="x", round=0)
    b.arrive_at(10, 1, who="y", round=0)
    assert b.phase == 0 and b.pending == 2       # nothing applied yet

    def later():
        yield env.timeout(50)
        assert b.test_wait(0)                    # applied when used: phase 0 completed at 30
        assert b.phase_done_at == 30

    env.process(later())
    env.run()
    assert b.violation_count == 0


def test_later_arrivals_for_the_wrong_phase_are_still_flagged():
    env = simpy.Environment()
    b = MBarrier(env, "empty", 1)
    b.arrive_at(10, 1, who="x", round=0)
    b.arrive_at(20, 1, who="y", round=0)         # meant for phase 0, lands in phase 1
    b.flush()
    assert b.phase == 2 and b.violation_count == 1


def test_waiter_for_a_phase_the_known_operations_cannot_complete_stays_blocked():
    env = simpy.Environment()
    b = MBarrier(env, "empty", 2)
    b.arrive_at(10, 1, who="x", round=0)         # one of two arrivals
    ev = b.wait(0, "producer")
    assert ev is not None
    env.run()
    b.flush()
    assert [w.who for w in b.waiters] == ["producer"]   # a deadlock analysis would see it
