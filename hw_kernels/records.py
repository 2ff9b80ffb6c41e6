"""The instrumentation record layout of the hardware kernels (pure Python: no DSL, no GPU needed).

The instrumented kernel writes fixed-size records into one global ``int32`` buffer. The buffer is cut
into *slices*, one per (CTA, role): a slice is written by exactly one elected thread, which keeps its
write position in a register, so no atomics and no cross-thread ordering are needed.

    slice s = cta_linear * ROLES_PER_CTA + role_slot          (role_slot: see ROLE_SLOTS)
    record i of slice s = buffer[(s * capacity + i) * RECORD_WORDS : ... + RECORD_WORDS]

Record ``0`` of a slice is its HEADER, record ``1`` its FOOTER (written last), data records start at
``FIRST_DATA_RECORD``. Every record is ``RECORD_WORDS`` int32 words (32 bytes):

    w0 = kind | stage << 8 | index << 16      (index: K-block or epilogue subtile, 16 bits)
    w1 = tile_m | tile_n << 16                (the output tile the record belongs to)
    w2..w7 = up to six timestamps: ``%clock`` (the low 32 bits of the SM's cycle counter, the same
             counter as ``clock64``), except where a kind's field list says ``gt_*`` (low 32 bits of
             ``%globaltimer``, ns)

HEADER and FOOTER carry full 64-bit values (lo, hi pairs) so that the 32-bit fields can be
unwrapped: a kernel run is far shorter than 2**32 cycles (~2 s) or 2**32 ns.
"""

from __future__ import annotations

#: int32 words per record (32 bytes: two 16-byte stores).
RECORD_WORDS = 8
#: Records 0 and 1 of each slice are the header and the footer.
FIRST_DATA_RECORD = 2

#: One slice per role per CTA, in this order.
ROLE_SLOTS: tuple[str, ...] = ("MainloopLoad", "Consumer0", "Consumer1")
ROLES_PER_CTA = len(ROLE_SLOTS)

#: Instrumentation levels (the kernel's compile-time ``instrument`` switch).
LEVEL_OFF = 0      # no records, no clock reads: the production kernel
LEVEL_TILE = 1     # per-tile records only (a few per tile per role: tile span, accumulator ready, tails)
LEVEL_KBLOCK = 2   # + one record per K-block per role (every mainloop barrier wait)
LEVEL_EPILOGUE = 3  # + one record per epilogue subtile (costs the epilogue some overlap)
#: The lightest level, below LEVEL_TILE although its number is larger: only each role's HEADER and
#: FOOTER (clock64 + globaltimer at role start and end), no data record and no clock read inside the
#: loops. Every timed launch of the campaign carries it: the in-kernel span (first role start to
#: last store landed) and the effective SM clock of that very launch.
LEVEL_SPAN = 4
#: Every valid value of the kernel's ``instrument`` switch.
LEVELS = (LEVEL_OFF, LEVEL_TILE, LEVEL_KBLOCK, LEVEL_EPILOGUE, LEVEL_SPAN)


def record_level(instrument: int) -> int:
    """The level of data records an ``instrument`` value writes (LEVEL_SPAN writes none: 0)."""
    return LEVEL_OFF if instrument == LEVEL_SPAN else instrument

# Record kinds (w0 & 0xff) and what w2..w7 hold for each.
HEADER = 1        # w1 = smid, w2,w3 = clock64 lo,hi at role start, w4,w5 = globaltimer lo,hi,
                  # w6 = cta rank in cluster, w7 = linear CTA id
FOOTER = 2        # w1 = number of records written (including header and footer), w2,w3 = clock64
                  # lo,hi at role end, w4,w5 = globaltimer lo,hi, w6 = tiles done, w7 = records dropped
P_KBLOCK = 10     # producer, per K-block: w2 = empty-wait start, w3 = empty-wait done,
                  # w4 = both TMA loads issued (A and B, arrive.expect_tx done)
P_TILE = 11       # producer, per tile: w2 = first acquire start, w3 = last K-block issued,
                  # w4 = gt_begin, w5 = gt_end, w6 = number of K-blocks
P_TAIL = 12       # producer_tail (waits until consumers released every stage): w2 = start, w3 = end
C_KBLOCK = 20     # consumer WG, per K-block k: w2 = full-wait start, w3 = full-wait done,
                  # w4 = wgmma of k issued and committed, w5 = wgmma.wait_group(1) returned (the
                  # K-block k-1 is complete; = w4 for k = 0), w6 = empty-barrier release of k-1
                  # done (= w5 for k = 0)
C_TILE = 21       # consumer WG, per tile: w2 = tile start (before the first full wait),
                  # w3 = accumulator ready (wait_group(0) returned, last stage released),
                  # w4 = epilogue done (last subtile's store issued / barrier passed),
                  # w5 = gt_begin, w6 = gt_end, w7 = number of K-blocks
C_EPI = 22        # (level 3) consumer WG, per epilogue subtile (index = subtile in the tile, stage = SMEM
                  # store buffer): w2 = w3 = written to SMEM (registers -> convert -> stmatrix ->
                  # fence.proxy.async done; the subtile's start is the previous record's w4/w5),
                  # w4 = epilogue named barrier passed, w5 = TMA store issued and committed (store
                  # thread; = w4 otherwise), w6 = store-buffer wait done (cp.async.bulk.wait_group.read;
                  # store thread; = w3 otherwise)
C_STORE_TAIL = 23  # store thread at exit: w2 = start, w3 = all TMA stores complete (wait_group 0)
C_ORDER = 24      # ping-pong, per tile: math-order waits: w2 = mainloop-turn wait start, w3 = its end,
                  # w4 = epilogue-turn wait start (accumulator ready), w5 = its end
C_FIXUP = 25      # stream-K / split-K, per split tile and consumer WG (stage = FIXUP_STORE / _REDUCE / _LOAD,
                  # index = the split's first K-block): w2 = fixup start (accumulator ready), w3 = flag wait
                  # done, w4 = done (partials stored / added and the flag raised, or loaded and added),
                  # w5 = flag index, w6 = the split's K-blocks
#: What a C_FIXUP record's split did (its ``stage`` field).
FIXUP_STORE, FIXUP_REDUCE, FIXUP_LOAD = 0, 1, 2

KIND_NAMES: dict[int, str] = {
    HEADER: "HEADER", FOOTER: "FOOTER", P_KBLOCK: "P_KBLOCK", P_TILE: "P_TILE", P_TAIL: "P_TAIL",
    C_KBLOCK: "C_KBLOCK", C_TILE: "C_TILE", C_EPI: "C_EPI", C_STORE_TAIL: "C_STORE_TAIL", C_ORDER: "C_ORDER",
    C_FIXUP: "C_FIXUP",
}


def pack_w0(kind: int, stage: int = 0, index: int = 0) -> int:
    """Host-side mirror of the kernel's header word (for tests and synthetic buffers)."""
    return (kind & 0xFF) | ((stage & 0xFF) << 8) | ((index & 0xFFFF) << 16)


def unpack_w0(w0):
    """(kind, stage, index) of a record's word 0: ints, or numpy arrays of a column of words."""
    w = w0 & 0xFFFFFFFF
    return w & 0xFF, (w >> 8) & 0xFF, (w >> 16) & 0xFFFF


def unpack_tile(w1):
    """(tile_m, tile_n) of a record's word 1: ints, or numpy arrays of a column of words."""
    w = w1 & 0xFFFFFFFF
    return w & 0xFFFF, (w >> 16) & 0xFFFF


def slice_capacity(tiles_per_cta: int, k_blocks: int, epi_subtiles: int, level: int) -> int:
    """Records one slice needs for a CTA that runs ``tiles_per_cta`` tiles (with margin)."""
    if level == LEVEL_SPAN:
        return FIRST_DATA_RECORD  # the header and the footer, nothing else
    per_tile = 2
    if level >= LEVEL_KBLOCK:
        per_tile += k_blocks
    if level >= LEVEL_EPILOGUE:
        per_tile += epi_subtiles
    return FIRST_DATA_RECORD + tiles_per_cta * per_tile + 4
