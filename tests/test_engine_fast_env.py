"""FastEnv orders events exactly as SimPy does: time, then priority (process starts first), then
the order they were scheduled in. The same processes run on both and log what they do."""

from __future__ import annotations

import random

import pytest
import simpy

from simulator.engine.fast_env import FastEnv
from simulator.errors import SimulationLimitError
from simulator.protocol.mbarrier import MBarrier, call_at


def _world(env, seed: int) -> list:
    """Processes with many same-time ties: timeouts of small integer delays, barrier waits,
    bare callbacks, processes started mid-run, events yielded after they were processed."""
    rng = random.Random(seed)
    log: list = []
    bars = [MBarrier(env, f"b{i}", 2) for i in range(3)]

    def note(*what):
        log.append((env.now, *what))

    def worker(name, steps):
        for s in range(steps):
            d = rng.choice((0, 0, 1, 2, 3))
            yield env.timeout(d)
            note(name, "t", s)
            if rng.random() < 0.3:
                call_at(env, rng.choice((0, 1, 2)), note, name, "call", s)
            if rng.random() < 0.2:
                env.process(child(f"{name}.{s}"))
            b = bars[rng.randrange(3)]
            if rng.random() < 0.5:
                b.arrive(1, who=name)
                note(name, "arrive", b.name)
            else:
                ev = b.wait(b.phase & 1, name)
                if ev is not None:
                    yield ev
                    note(name, "woke", b.name)

    def child(name):
        note(name, "start")
        yield env.timeout(rng.choice((0, 1)))
        note(name, "end")

    def late_yield():
        t = env.timeout(1)
        yield env.timeout(3)        # t was processed meanwhile
        yield t                     # carries on at once
        note("late", "after processed")

    for i in range(12):
        env.process(worker(f"w{i}", 25))
    env.process(late_yield())

    def feeder():                   # keeps barriers moving so few waiters strand
        for _ in range(200):
            yield env.timeout(1)
            for b in bars:
                b.arrive(1, who="feeder")
    env.process(feeder())
    return log


@pytest.mark.parametrize("seed", range(6))
def test_same_order_as_simpy(seed):
    a = simpy.Environment(initial_time=0.0)
    la = _world(a, seed)
    a.run()
    b = FastEnv()
    lb = _world(b, seed)
    b.run()
    assert len(la) > 300
    assert lb == la


def test_urgent_process_start_runs_before_same_time_events():
    logs = []
    for env in (simpy.Environment(), FastEnv()):
        log = []

        def p(name, d, env=env, log=log):
            log.append((name, "start", env.now))
            yield env.timeout(d)
            log.append((name, "end", env.now))

        def spawner(env=env, log=log):
            yield env.timeout(1)
            env.timeout(0)                    # a NORMAL event at t=1, queued first
            call_at(env, 0, log.append, ("call", "at", env.now))
            env.process(p("late", 0))         # starts before that call: process starts are URGENT
        env.process(p("a", 1))
        env.process(spawner())
        env.run()
        logs.append(log)
    assert logs[0] == logs[1]
    assert logs[0].index(("late", "start", 1)) < logs[0].index(("call", "at", 1))


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_max_events_stops_the_run_and_progress_is_called(engine):
    from simulator.engine.run import ReferenceEnvironment

    calls = []
    loop = FastEnv if engine == "fast" else ReferenceEnvironment
    env = loop(max_events=100, progress=lambda: calls.append(env.now), progress_every=16)

    def forever():
        while True:
            yield env.timeout(1)
    env.process(forever())
    with pytest.raises(SimulationLimitError) as e:
        env.run()
    assert len(calls) == 6 and env.events_processed == 112
    # both loops stop with the one message (simulator.errors.events_exceeded), at the cycle reached
    assert str(e.value) == (f"max_events=100: the run processed more events than allowed and was stopped at "
                            f"cycle {env.now:,.0f} (raise --max-events, or simulate a smaller problem)")


def test_negative_delay_rejected():
    with pytest.raises(ValueError):
        FastEnv().timeout(-1)
