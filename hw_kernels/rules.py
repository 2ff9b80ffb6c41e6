"""The SM90 hardware twin's rules on its configuration and on a problem (pure Python: no DSL, no GPU).

``Sm90TmaWsGemm`` (hw_kernels/sm90_gemm.py) raises with :func:`config_problems` at construction, and
``hw_kernels.host.Runner.prepare`` refuses a problem that :func:`can_implement` rejects, so that the
host can name the broken rule without compiling anything. Each entry names the value and the rule.
:func:`mainloop_stages_that_fit` is the kernel's stage count (so that it can be compared with the
SM90 model's without the DSL).
"""

from __future__ import annotations

import math

from . import records as R

#: The stream-K scheduler's decompositions the twin runs (CUTLASS DecompositionMode; "data_parallel": the
#: static scheduler) and its reduction modes: CUTLASS's two (ReductionMode: a turnstile, or atomic adds after
#: the first split's store) and "separate": every non-final split stores its partials in a slot of its own
#: without waiting and counts its K tiles in, and the tile's final split, once the flag holds its own first
#: K tile, sums the slots in K order (deterministic; CUTLASS's separate
#: reduction, done by the final split instead of reduction units, which CUTLASS 3.x leaves switched off).
DECOMPOSITIONS = ("data_parallel", "heuristic", "split_k", "stream_k")
REDUCTIONS = ("deterministic", "nondeterministic", "separate")
#: Floats a thread moves per workspace access in the fixup (``fixup_vec``): one word, or 16 B
#: (ld/st.global.v4.f32, as CUTLASS's BlockStripedReduce moves an AccessType per thread).
FIXUP_VECS = (1, 4)
#: tile_n a warpgroup of 64 rows takes (cooperative, 64-row ping-pong): wgmma N up to 256 in steps of the
#: epilogue's 32-column subtile (96, 160 and 224 cover ragged N such as 800 = 5 x 160 without a part-empty tile).
TILE_N_64_ROWS = tuple(range(64, 257, 32))


def config_problems(tile_m, tile_n, tile_k, cluster_m, cluster_n, schedule, raster, swizzle,
                    epilogue_tile_n, epilogue_store_stages, instrument, decomposition="data_parallel", splits=1,
                    reduction="deterministic", fixup_vec=1) -> list[str]:
    """Rules of this kernel on its configuration (each broken rule named with its value)."""
    p = []
    if decomposition not in DECOMPOSITIONS:
        p.append(f"decomposition={decomposition!r}: must be one of {', '.join(DECOMPOSITIONS)}")
    elif decomposition != "data_parallel":
        if schedule != "cooperative":
            p.append(f"decomposition={decomposition!r} with schedule={schedule!r}: the stream-K scheduler runs "
                     "in the cooperative kernel only (CUTLASS: ping-pong does not support stream-K)")
        if instrument in (R.LEVEL_KBLOCK, R.LEVEL_EPILOGUE):
            p.append(f"instrument={instrument} with decomposition={decomposition!r}: the stream-K kernel writes "
                     "tile, fixup and span records only (levels 0, 1, 4)")
    if reduction not in REDUCTIONS:
        p.append(f"reduction={reduction!r}: must be one of {', '.join(REDUCTIONS)}")
    if fixup_vec not in FIXUP_VECS:
        p.append(f"fixup_vec={fixup_vec!r}: must be one of {FIXUP_VECS} (floats per thread per workspace access)")
    if not isinstance(splits, int) or splits < 1:
        p.append(f"splits={splits!r}: must be an integer >= 1")
    elif splits > 1 and decomposition not in ("heuristic", "split_k"):
        p.append(f"splits={splits} with decomposition={decomposition!r}: a split count > 1 needs the heuristic or "
                 "split-K decomposition (CUTLASS can_implement)")
    if schedule not in ("cooperative", "pingpong"):
        p.append(f"schedule={schedule!r}: must be 'cooperative' or 'pingpong'")
    ok_m = (64, 128)
    if tile_m not in ok_m:
        p.append(f"tile_m={tile_m}: must be one of {ok_m} for {schedule} (cooperative: tile_m / 64 warpgroups x "
                 "64 rows; ping-pong: one warpgroup x one or two m64 wgmma)")
    # a warpgroup holds (64 cooperative, tile_m ping-pong) x tile_n fp32 accumulators in 232 registers; the
    # epilogue's 32-column subtile (and every cluster's multicast slice of B, 8-row swizzle atoms) divides tile_n
    wg_rows = 64 if schedule == "cooperative" else tile_m
    ok_n = TILE_N_64_ROWS if wg_rows == 64 else (64, 128)
    if tile_n not in ok_n:
        p.append(f"tile_n={tile_n}: must be one of {ok_n} for {schedule} with tile_m={tile_m} (wgmma N, a "
                 f"multiple of 32; a warpgroup holds {wg_rows} x tile_n fp32 accumulators in 232 registers)")
    if tile_k != 64:
        p.append(f"tile_k={tile_k}: must be 64 (one 128-byte swizzle row of 16-bit elements)")
    for name, v in (("cluster_m", cluster_m), ("cluster_n", cluster_n)):
        if v not in (1, 2, 4):
            p.append(f"{name}={v}: must be 1, 2 or 4")
    if cluster_m * cluster_n > 4:
        p.append(f"cluster {cluster_m}x{cluster_n}: at most 4 CTAs (portable cluster size on sm_90)")
    if raster not in ("m", "n", "heuristic"):
        p.append(f"raster={raster!r}: must be 'm', 'n' or 'heuristic'")
    if swizzle not in (1, 2, 4, 8):
        p.append(f"swizzle={swizzle}: the max swizzle size must be 1, 2, 4 or 8")
    if epilogue_tile_n not in (16, 32, 64) or tile_n % epilogue_tile_n:
        p.append(f"epilogue_tile_n={epilogue_tile_n}: must be 16, 32 or 64 and divide tile_n={tile_n}")
    if epilogue_store_stages < 2:
        p.append(f"epilogue_store_stages={epilogue_store_stages}: must be >= 2 (one buffer written "
                 "while one is stored)")
    if instrument not in R.LEVELS:
        p.append(f"instrument={instrument}: must be 0 (off), 1 (tiles), 2 (K-blocks), 3 (+ epilogue "
                 "subtiles) or 4 (span: each role's start and end only)")
    return p


#: SMEM the kernel keeps beside the stages' A and B and the epilogue buffers: the mainloop and math-order
#: mbarriers (8 B each: 2 per stage + 4), padded to the 1024-byte alignment of the swizzled A buffer after them.
SMEM_RESERVED_BYTES = 1024


def mainloop_stages_that_fit(tile_m, tile_n, tile_k, epilogue_tile_n, epilogue_store_stages, ab_bits, c_bits,
                             smem_capacity) -> int:
    """The most mainloop stages (one K-block of A[tile_m, tile_k] + B[tile_n, tile_k] each) that fit in
    ``smem_capacity`` bytes beside the epilogue's store buffers (tile_m x epilogue_tile_n each) and
    :data:`SMEM_RESERVED_BYTES`: the kernel's stage count when ``mainloop_stages`` is None."""
    ab_stage_bytes = (tile_m + tile_n) * tile_k * ab_bits // 8
    epi_bytes = tile_m * epilogue_tile_n * c_bits // 8 * epilogue_store_stages
    return (smem_capacity - epi_bytes - SMEM_RESERVED_BYTES) // ab_stage_bytes


def can_implement(m: int, n: int, k: int, dtype_bits: int = 16) -> list[str]:
    """Rules on the problem (empty list: it can run). TMA needs 16-byte aligned row strides."""
    p = []
    align = 128 // dtype_bits
    if min(m, n, k) < 1:
        p.append(f"problem {m}x{n}x{k}: every extent must be >= 1")
    if k % align:
        p.append(f"k={k}: must be a multiple of {align} (16-byte rows of A and B for TMA)")
    if n % align:
        p.append(f"n={n}: must be a multiple of {align} (16-byte rows of D for TMA)")
    if math.ceil(max(m, n) / 64) >= 1 << 16 or math.ceil(k / 64) >= 1 << 16:
        p.append(f"problem {m}x{n}: tile coordinates must fit the records' 16-bit fields")
    return p
