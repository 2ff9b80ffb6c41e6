"""The memory system seen by TMA: a shared L2 in front of HBM, as bandwidth reservations.

Design (DESIGN.md, "Keeping the simulator fast"): a shared resource is a :class:`Channel` with a
next-free time; a transfer of ``n`` bytes issued at ``t`` finishes at ``max(t, next_free) + n/bw``
and moves ``next_free`` there, so transfers queue in issue order and the channel never exceeds
its bandwidth. Latency is added on top. No per-byte or per-chunk events.

L2 is a byte-capacity LRU over the tiles TMA loads (one entry per K-block slice of A, B or C), so a
tile that another CTA already brought in is served from L2 and costs no HBM traffic: raster
order, swizzle and multicast change HBM bytes the way they do on hardware. Stores write through
to HBM (their bytes are counted once, as the compulsory output traffic).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


class Channel:
    """A bandwidth reservation: ``bytes_per_cycle`` shared by everyone who uses the channel."""

    __slots__ = ("name", "bytes_per_cycle", "next_free", "bytes_total", "busy_cycles", "bin_cycles", "bins")

    def __init__(self, name: str, bytes_per_cycle: float, bin_cycles: float = 0.0):
        if bytes_per_cycle <= 0:
            raise ValueError(f"channel {name}: bandwidth {bytes_per_cycle} B/cycle must be positive")
        self.name = name
        self.bytes_per_cycle = bytes_per_cycle
        self.next_free = 0.0
        self.bytes_total = 0
        self.busy_cycles = 0.0
        self.bin_cycles = bin_cycles
        self.bins: dict[int, float] = {}

    def reserve(self, now: float, nbytes: int) -> float:
        """Reserve the channel for ``nbytes`` issued at ``now``; returns when the transfer ends."""
        start = self.next_free if self.next_free > now else now
        dur = nbytes / self.bytes_per_cycle
        end = start + dur
        self.next_free = end
        self.bytes_total += nbytes
        self.busy_cycles += dur
        if self.bin_cycles:
            b = int(end // self.bin_cycles)
            self.bins[b] = self.bins.get(b, 0.0) + nbytes
        return end


@dataclass(frozen=True, slots=True)
class MemoryTiming:
    """The constants the memory model uses, in cycles and bytes per cycle."""

    hbm_bytes_per_cycle: float
    l2_bytes_per_cycle: float
    hbm_latency: float
    l2_latency: float
    tma_overhead: float
    l2_bytes: int


class MemorySystem:
    """L2 (LRU by bytes) in front of HBM; TMA loads and stores go through it."""

    def __init__(self, timing: MemoryTiming, *, bin_cycles: float = 0.0):
        self.t = timing
        # The timing fields the per-load path reads, copied out of the frozen dataclass.
        self._hbm_latency = timing.hbm_latency
        self._l2_latency = timing.l2_latency
        self._tma_overhead = timing.tma_overhead
        self._l2_capacity = timing.l2_bytes
        self.hbm = Channel("hbm", timing.hbm_bytes_per_cycle, bin_cycles)
        self.l2 = Channel("l2", timing.l2_bytes_per_cycle, bin_cycles)
        self._lru: OrderedDict[tuple, int] = OrderedDict()
        self._lru_bytes = 0
        self.hbm_read_bytes = 0
        self.hbm_write_bytes = 0
        self.l2_hits = 0
        self.l2_misses = 0
        self.load_bytes = 0
        self._key_blocks: dict = {}
        self._next_key = 0

    def key_block(self, name: tuple, size: int) -> int:
        """The first of ``size`` consecutive integer keys reserved for the slices of ``name`` (e.g.
        the K-blocks of one A tile: ``key_block(("A", l, m, cy), k_tiles) + kb``). An integer key is
        cheaper to hash per load than a tuple; distinct names never share a key."""
        got = self._key_blocks.get(name)
        if got is not None:
            base, have = got
            if size <= have:
                return base
            raise ValueError(f"L2 key block {name}: asked for {size} keys, {have} reserved")
        base = self._next_key
        self._key_blocks[name] = (base, size)
        self._next_key += size
        return base

    def load(self, now: float, key, nbytes: int) -> float:
        """A TMA load of one tile slice issued at ``now``; returns the cycle its bytes land in SMEM.

        ``key`` names the slice (any hashable; the kernel models use integers): loads of the same
        key hit in L2 while it is resident."""
        self.load_bytes += nbytes
        lru = self._lru
        if key in lru:
            lru.move_to_end(key)
            self.l2_hits += 1
            end = self.l2.reserve(now, nbytes)
            return end + self._l2_latency + self._tma_overhead
        self.l2_misses += 1
        self.hbm_read_bytes += nbytes
        end = self.hbm.reserve(now, nbytes)
        # The bytes also pass through L2 on their way to the SM.
        self.l2.reserve(now, nbytes)
        lru[key] = nbytes
        self._lru_bytes += nbytes
        while self._lru_bytes > self._l2_capacity and lru:
            _, b = lru.popitem(False)
            self._lru_bytes -= b
        return end + self._hbm_latency + self._tma_overhead

    def store(self, now: float, nbytes: int) -> float:
        """A TMA store issued at ``now``; returns when its bytes are written (write-through)."""
        self.hbm_write_bytes += nbytes
        end = self.hbm.reserve(now, nbytes)
        return end + self._hbm_latency

    @property
    def hbm_bytes(self) -> int:
        return self.hbm_read_bytes + self.hbm_write_bytes
