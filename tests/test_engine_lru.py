"""The L2 model's LRU (arrays indexed by integer keys) evicts exactly as a plain LRU by bytes."""

from __future__ import annotations

import random
from collections import OrderedDict

import pytest

from simulator.machine.memory import MemorySystem, MemoryTiming

TIMING = MemoryTiming(hbm_bytes_per_cycle=64.0, l2_bytes_per_cycle=256.0, hbm_latency=500.0, l2_latency=200.0,
                      tma_overhead=30.0, l2_bytes=30_000)


class _PlainLru:
    """The obvious model: an OrderedDict of resident keys -> bytes, oldest first."""

    def __init__(self, capacity: int):
        self.cap = capacity
        self.d: OrderedDict = OrderedDict()
        self.bytes = 0

    def access(self, key, nbytes: int) -> bool:
        if key in self.d:
            self.d.move_to_end(key)
            return True
        self.d[key] = nbytes
        self.bytes += nbytes
        while self.bytes > self.cap and self.d:
            _, b = self.d.popitem(last=False)
            self.bytes -= b
        return False


@pytest.mark.parametrize("seed", range(5))
def test_same_hits_and_times_as_a_plain_lru(seed):
    rng = random.Random(seed)
    mem = MemorySystem(TIMING)
    plain = _PlainLru(TIMING.l2_bytes)
    blocks = {name: mem.key_block(name, 4) for name in (("A", i) for i in range(6))}
    sizes: dict = {}
    now = 0.0
    for _ in range(3000):
        now += rng.choice((0.0, 0.0, 1.5, 7.0))
        if rng.random() < 0.8:
            name = ("A", rng.randrange(6))
            kb = rng.randrange(4)
            key, plain_key = blocks[name] + kb, (name, kb)
        else:
            key = plain_key = ("other", rng.randrange(6))     # any hashable key works too
        nbytes = sizes.setdefault(plain_key, rng.choice((0, 512, 1024, 3000, 12_000)))
        hits_before = mem.l2_hits
        mem.load(now, key, nbytes)
        assert (mem.l2_hits > hits_before) == plain.access(plain_key, nbytes)
    assert mem.l2_hits + mem.l2_misses == 3000 and 300 < mem.l2_hits < 2700
    assert mem._lru_bytes == plain.bytes


def test_key_blocks_are_disjoint_and_stable():
    mem = MemorySystem(TIMING)
    a = mem.key_block(("A", 0), 4)
    b = mem.key_block(("B", 0), 3)
    assert mem.key_block(("A", 0), 4) == a and b >= a + 4
    with pytest.raises(ValueError):
        mem.key_block(("B", 0), 5)       # more keys than the block has
