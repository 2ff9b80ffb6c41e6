"""The memory system seen by TMA: a shared L2 in front of HBM, as bandwidth reservations.

Design (kept cheap: no event per byte): a shared resource is a :class:`Channel` with a
next-free time; a transfer of ``n`` bytes issued at ``t`` finishes at ``max(t, next_free) + n/bw``
and moves ``next_free`` there, so transfers queue in issue order and the channel never exceeds
its bandwidth. Latency is added on top. No per-byte or per-chunk events.

L2 is a byte-capacity LRU over the tiles TMA loads (one entry per K-block slice of A, B or C), so a
tile that another CTA already brought in is served from L2 and costs no HBM traffic: raster
order, swizzle and multicast change HBM bytes the way they do on hardware. Stores write through
to HBM (their bytes are counted once, as the compulsory output traffic). The stream-K / split-K
workspace (partial accumulators the epilogue threads store, add atomically and load back,
:meth:`MemorySystem.workspace_write` / :meth:`MemorySystem.workspace_read`) stays in L2 like any other
slice (write-back: a dirty slice that is evicted is written to HBM then).
Rows of a TMA box past the tensor are zero-filled (:meth:`MemorySystem.zero_fill`): no memory
traffic, but on the H200 they occupy the L2 -> SM path longer than read bytes do (measured).

The LRU is a doubly linked list threaded through arrays indexed by integer slice keys (the kernel
models reserve them with :meth:`MemorySystem.key_block`; other keys are numbered on first use):
O(1) per load, and plain C arrays when the module is compiled.
"""

from __future__ import annotations

from array import array
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
        return self.reserve_scaled(now, nbytes, 1.0)

    def reserve_scaled(self, now: float, nbytes: int, cost: float) -> float:
        """:meth:`reserve` for ``nbytes`` that occupy the channel as long as ``nbytes x cost`` would
        (e.g. TMA rows that straddle cache lines: each row costs more than its bytes)."""
        start = self.next_free if self.next_free > now else now
        dur = nbytes * cost / self.bytes_per_cycle
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
        self.hbm_read_bytes = 0
        self.hbm_write_bytes = 0
        self.l2_hits = 0
        self.l2_misses = 0
        self.load_bytes = 0
        self.zero_fill_bytes = 0
        self.last_hit = False       # whether the latest load hit in L2 (read by the SM90 model)
        # Options a kernel model may switch on (off: the behaviour the SM100 model is built on):
        # ``fill_wait``: a hit on a slice whose miss is still being filled from HBM waits for that
        # fill (the data is not in L2 yet; hit-under-miss); ``miss_extra``: cycles a miss lands
        # later than ``hbm_latency + tma_overhead`` (a TMA miss costs more than a plain load's).
        self.fill_wait = False
        self.miss_extra = 0.0
        self._key_blocks: dict = {}
        self._next_key = 0
        # The stream-K / split-K workspace: bytes written to it and read from it (L2 atomics read what
        # they add to), and how many resident slices are dirty (0: no eviction can write back).
        self.workspace_write_bytes = 0
        self.workspace_read_bytes = 0
        self._dirty_slots = 0
        # The LRU: slot ``key + 1`` per slice key, slot 0 the list head (its next: the least
        # recently used slice; its prev: the most recently used). ``_size[slot]`` is the slice's
        # bytes while it is resident in L2, -1 while it is not.
        self._lru_bytes = 0
        self._prev_arr = array("q", [0])
        self._next_arr = array("q", [0])
        self._size_arr = array("q", [-1])
        self._ready_arr = array("d", [0.0])     # per slot: when a missed slice's bytes have landed
        self._dirty_arr = array("b", [0])       # per slot: 1 while the resident slice holds unwritten stores
        self._prev = self._prev_arr
        self._next = self._next_arr
        self._size = self._size_arr
        self._ready = self._ready_arr
        self._dirty = self._dirty_arr

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
        self._reserve_slots(self._next_key + 1)
        return base

    def _reserve_slots(self, slots: int) -> None:
        """Make the LRU arrays at least ``slots`` long (doubling, so growth costs O(1) a key)."""
        have = len(self._size_arr)
        if slots <= have:
            return
        extra = max(slots, 2 * have) - have
        # Compiled, _prev/_next/_size are views of the arrays: let go of them while they grow.
        self._prev = self._next = self._size = self._ready = self._dirty = None
        self._prev_arr.extend(array("q", [0]) * extra)
        self._next_arr.extend(array("q", [0]) * extra)
        self._size_arr.extend(array("q", [-1]) * extra)
        self._ready_arr.extend(array("d", [0.0]) * extra)
        self._dirty_arr.extend(array("b", [0]) * extra)
        self._prev = self._prev_arr
        self._next = self._next_arr
        self._size = self._size_arr
        self._ready = self._ready_arr
        self._dirty = self._dirty_arr

    def _unlink(self, slot: int) -> None:
        prev, nxt = self._prev, self._next
        p = prev[slot]
        n = nxt[slot]
        nxt[p] = n
        prev[n] = p

    def _push_most_recent(self, slot: int) -> None:
        prev, nxt = self._prev, self._next
        last = prev[0]
        nxt[last] = slot
        prev[slot] = last
        nxt[slot] = 0
        prev[0] = slot

    def load(self, now: float, key, nbytes: int) -> float:
        """A TMA load of one tile slice issued at ``now``; returns the cycle its bytes land in SMEM.

        ``key`` names the slice: an integer from :meth:`key_block`, or any other hashable (numbered
        on first use). Loads of the same key hit in L2 while it is resident."""
        return self.load_scaled(now, key, nbytes, 1.0)

    def load_scaled(self, now: float, key, nbytes: int, l2_cost: float) -> float:
        """:meth:`load` whose bytes occupy the L2 -> SM path ``l2_cost`` times as long as aligned ones
        (rows whose pitch is not a multiple of the 128-B line straddle two lines); HBM is unchanged.
        ``l2_cost`` 1.0 is exactly :meth:`load`. Sets :attr:`last_hit`."""
        self.load_bytes += nbytes
        slot = (key if type(key) is int else self.key_block(("key", key), 1)) + 1
        size = self._size
        if size[slot] >= 0:
            # A hit: the slice becomes the most recently used.
            self._unlink(slot)
            self._push_most_recent(slot)
            self.l2_hits += 1
            self.last_hit = True
            end = self.l2.reserve_scaled(now, nbytes, l2_cost)
            land = end + self._l2_latency + self._tma_overhead
            if self.fill_wait and self._ready[slot] > land:
                # Hit under miss: the slice is still on its way from HBM; it lands with the fill.
                land = self._ready[slot]
            return land
        self.l2_misses += 1
        self.last_hit = False
        self.hbm_read_bytes += nbytes
        end = self.hbm.reserve(now, nbytes)
        # The bytes also pass through L2 on their way to the SM.
        self.l2.reserve_scaled(now, nbytes, l2_cost)
        size[slot] = nbytes
        self._push_most_recent(slot)
        self._lru_bytes += nbytes
        self._evict(now)
        land = end + self._hbm_latency + self._tma_overhead + self.miss_extra
        if self.fill_wait:
            self._ready[slot] = land
        return land

    def _evict(self, now: float) -> None:
        """Evict least recently used slices until the resident bytes fit; a dirty one (workspace
        stores) is written back to HBM now."""
        size = self._size
        nxt = self._next
        while self._lru_bytes > self._l2_capacity and nxt[0] != 0:
            old = nxt[0]
            self._unlink(old)
            self._lru_bytes -= size[old]
            if self._dirty_slots and self._dirty[old]:
                self._dirty[old] = 0
                self._dirty_slots -= 1
                self.hbm_write_bytes += size[old]
                self.hbm.reserve(now, size[old])
            size[old] = -1

    def workspace_write(self, now: float, key: int, nbytes: int, l2_cost: float = 1.0) -> float:
        """Partial accumulators stored (or added atomically, ``l2_cost`` > 1: the L2 reads what it adds
        to) into workspace slice ``key`` (from :meth:`key_block`) at ``now``: the bytes cross the L2
        channel and the slice is resident and dirty; returns when L2 holds them."""
        self.workspace_write_bytes += nbytes
        if l2_cost > 1.0:
            self.workspace_read_bytes += nbytes
        slot = key + 1
        end = self.l2.reserve_scaled(now, nbytes, l2_cost)
        size = self._size
        if size[slot] >= 0:
            self._unlink(slot)
            self._lru_bytes -= size[slot]
        size[slot] = nbytes
        self._push_most_recent(slot)
        self._lru_bytes += nbytes
        if not self._dirty[slot]:
            self._dirty[slot] = 1
            self._dirty_slots += 1
        self._evict(now)
        return end + self._l2_latency

    def workspace_read(self, now: float, key: int, nbytes: int) -> float:
        """Partial accumulators loaded from workspace slice ``key`` at ``now`` (plain loads, no TMA):
        from L2 if resident, else from HBM; returns when the bytes are in registers."""
        self.workspace_read_bytes += nbytes
        slot = key + 1
        if self._size[slot] >= 0:
            self._unlink(slot)
            self._push_most_recent(slot)
            return self.l2.reserve(now, nbytes) + self._l2_latency
        self.hbm_read_bytes += nbytes
        end = self.hbm.reserve(now, nbytes)
        self.l2.reserve(now, nbytes)
        return end + self._hbm_latency

    def zero_fill(self, now: float, nbytes: int, cost: float) -> float:
        """TMA zero-fills ``nbytes`` of box rows past the tensor, issued at ``now``: no memory traffic,
        but the zeros come back over the L2 -> SM path, occupying it ``cost`` times as long as read
        bytes would; returns when they have landed (``now`` when ``cost`` is 0: zero fill is free)."""
        if cost <= 0.0 or nbytes <= 0:
            return now
        self.zero_fill_bytes += nbytes
        end = self.l2.reserve_scaled(now, nbytes, cost)
        return end + self._l2_latency + self._tma_overhead

    def store(self, now: float, nbytes: int) -> float:
        """A TMA store issued at ``now``; returns when its bytes are written (write-through)."""
        self.hbm_write_bytes += nbytes
        end = self.hbm.reserve(now, nbytes)
        return end + self._hbm_latency

    def store_accepted(self, now: float, nbytes: int) -> float:
        """A TMA store issued at ``now``: its bytes reserve the HBM channel (write-through); returns
        when the channel has taken them (no DRAM latency: the writer sees the store complete once
        the memory system has accepted it, not when DRAM has written it)."""
        self.hbm_write_bytes += nbytes
        return self.hbm.reserve(now, nbytes)

    @property
    def hbm_bytes(self) -> int:
        return self.hbm_read_bytes + self.hbm_write_bytes
