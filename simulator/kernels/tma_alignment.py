"""TMA loads of rows whose pitch is not a multiple of the 128-B cache line.

A and B are K-major (``gemm_config``): a row of a tile's K-block is 64 elements of one operand row,
and the next row starts ``K x element bytes`` later. When that pitch is a multiple of 128 B every
row segment is one 128-B line; otherwise each segment straddles two lines and the TMA unit and the
L2 -> SM path move more than the bytes asked for. Measured on the H200 with the same stream at
both pitches (``python -m validation.microbench.run``): one SM streams 47.8 instead of 106.3 B/clk
(``tma_stream.l2.p8208.1sm`` / ``p8192.1sm``), all 132 SMs read L2 at 6.11 instead of 9.05 TB/s
(``tma_stream.l2.p8208.132sm`` / ``p8192.132sm``); HBM streams are unaffected (4.31 vs 4.36 TB/s).
Both kernel models charge those two factors; on SM100 they are the H200's (the line size and the
TMA box semantics are the same; no B200 measurement exists), so they print as estimates there.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.machine.constants import Constant

_MB2 = "validation/results/h200_microbench_v2.json"
#: The cache line a TMA row segment has to fit in.
LINE_BYTES = 128

TMA_MISALIGNED_COST = Constant(
    "tma_misaligned_cost", round(106.35 / 47.84, 3), "x",
    f"derived: {_MB2} tma_stream.l2.p8192.1sm.bytes_per_clk_per_sm (106.35) / "
    "tma_stream.l2.p8208.1sm.bytes_per_clk_per_sm (47.84, row pitch 8208 B)", "measured-here")
L2_MISALIGNED_COST = Constant(
    "l2_misaligned_cost", round(9.049 / 6.111, 3), "x",
    f"derived: {_MB2} tma_stream.l2.p8192.132sm.bytes_per_s (9.049e12) / "
    "tma_stream.l2.p8208.132sm.bytes_per_s (6.111e12)", "measured-here")


@dataclass(frozen=True)
class RowPitchCost:
    """What one K-major operand row pitch costs the TMA unit and the L2 -> SM path, per byte."""

    pitch: int           # bytes from one row to the next
    aligned: bool        # a multiple of LINE_BYTES
    tma_cost: float      # TMA unit occupancy per byte, relative to aligned rows
    l2_cost: float       # L2 -> SM occupancy per byte, relative to aligned rows

    @classmethod
    def of(cls, k: int, bits: int) -> RowPitchCost:
        pitch = k * bits // 8
        aligned = pitch % LINE_BYTES == 0
        return cls(pitch, aligned, 1.0 if aligned else TMA_MISALIGNED_COST.value,
                   1.0 if aligned else L2_MISALIGNED_COST.value)

    def note(self, where: str = "") -> str:
        if self.aligned:
            return f"A/B row pitch {self.pitch} B: a multiple of {LINE_BYTES} B"
        return (f"A/B row pitch {self.pitch} B: not a multiple of {LINE_BYTES} B: TMA x{self.tma_cost:g}, "
                f"L2 x{self.l2_cost:g} per byte ({TMA_MISALIGNED_COST.name}, {L2_MISALIGNED_COST.name}{where})")
