"""Measured B200 GEMM runtimes from hbarclay/gemm-model, read from a directory outside git.

The public repository https://github.com/hbarclay/gemm-model holds 640 runtimes of CUTLASS's CuTe-DSL
example ``dense_gemm_persistent.py`` on a B200 (``results/dsv3_fp16.csv``) and that repository's own
analytical-model predictions for the same rows (``results/fp16/predictions_*.csv``). Its data is
not ours to commit: this module reads it from a directory given by ``--gemm-model DIR``, the
environment variable ``WSIM_GEMM_MODEL_DIR``, or ``external/gemm-model`` (git-ignored; fetch it with
``scripts/fetch_gemm_model.sh``). Only the fp16 rows are used; the fp8 and nvfp4 files are kept
for a later, independent check of whatever the fp16 rows taught the model.

What was timed (read from that repository's ``benchmark_gemm.py`` and its copy of
``cutlass/CuTeDSL/blackwell/dense_gemm_persistent.py``; CuTe DSL 4.3.0.dev0, CUDA 13.0, driver 580):

* the kernel: 2-CTA ``tcgen05.mma`` (``use_2cta_instrs=True``), MMA tile ``(2 x cta_m) x cta_n``,
  clusters 2x1 or 2x2, K-major A and B, N-major fp16 D, fp32 accumulators, no C source; one TMA warp,
  one MMA warp, four epilogue warps (TMEM -> registers -> SMEM -> TMA store, two named-barrier syncs
  per epilogue subtile); the static persistent tile scheduler (grid = min(CTAs of the problem,
  ``cudaOccupancyMaxActiveClusters`` x cluster size), cluster ids M-fastest, no swizzle); two TMEM
  accumulator stages; mainloop stages = (SMEM capacity - 1 KiB - 2 epilogue subtiles) // stage
  bytes, and every SMEM byte left over becomes another epilogue (C) store stage.
* the problem: ``pad_mnk`` rounds M, N and K up to 16-byte multiples (8 fp16 elements) before the
  launch, so the rows listed with K=257 or N=257 ran K=264 or N=264 with zero padding: 16-byte
  aligned, as TMA needs, but a K=264 fp16 row is 528 B, not a multiple of the 128-B cache line, so
  its rows straddle lines (``simulator/kernels/tma_alignment.py`` charges that).
  The CSV lists the unpadded sizes; this loader simulates the padded problem, which is what the
  GPU executed (the FLOP counts used for throughput are the padded ones too).
* the clock: locked with ``nvidia-smi -lgc 1300,1300`` (README), so the rows are simulated at
  1.3 GHz.
* the time: ``cutlass.cute.testing.benchmark(..., warmup_iterations=2, iterations=5,
  use_cold_l2=True)`` -- positional arguments of ``run()`` in ``benchmark_gemm.py`` (the example's docstring
  says warmup 1, iterations 10; the script passes 2 and 5). One CUDA event
  before and one after five back-to-back launches from Python, elapsed / 5, no CUDA graph, cycling
  through up to 7 copies of A, B and D so that L2 starts cold. Back to back, the GPU-side time per
  launch is what the model predicts (cycles / clock + its launch overhead). The host's launch
  interval would show only for kernels shorter than it; fitted as a constant beside the launch
  overhead, it came out below every row's modelled time, so it is not part of the comparison.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

from simulator.kernels.sm100_config import Sm100GemmConfig

REPO_URL = "https://github.com/hbarclay/gemm-model"
ENV_VAR = "WSIM_GEMM_MODEL_DIR"
DEFAULT_DIR = Path(__file__).resolve().parent.parent / "external" / "gemm-model"
FP16_CSV = "results/dsv3_fp16.csv"
PREDICTIONS = {
    "l2hit": "results/fp16/predictions_WSPersistentGEMMModel_l2hit.csv",
    "ws": "results/fp16/predictions_WSPersistentGEMMModel.csv",
    "sol": "results/fp16/predictions_SOLModel.csv",
}
#: The SM clock the data was measured at (nvidia-smi -lgc 1300,1300; gemm-model README).
CLOCK_GHZ = 1.3
CLOCK_SOURCE = "hbarclay/gemm-model README: clocks locked with nvidia-smi -lgc 1300,1300"
#: cutlass.cute.testing.benchmark arguments benchmark_gemm.py passes (positional, see module doc).
WARMUP_ITERATIONS = 2
ITERATIONS = 5
#: CuTe DSL dense_gemm_persistent.py _compute_stages: barrier/helper bytes reserved in SMEM.
DSL_MBAR_HELPER_BYTES = 1024
DSL_SMEM_CAPACITY = (228 - 1) * 1024       # cutlass_dsl SMEM_CAPACITY_MAP["sm_100"]
DSL_ACC_STAGES = 2                         # _compute_stages: num_acc_stage = 2
DSL_INITIAL_C_STAGES = 2                   # _compute_stages: num_c_stage = 2 with TMA store


class GemmModelDataMissing(FileNotFoundError):
    """The gemm-model checkout is not where we looked (the message says where and how to get it)."""


def data_dir(path: str | os.PathLike | None = None) -> Path:
    """The gemm-model directory: ``path``, else $WSIM_GEMM_MODEL_DIR, else external/gemm-model."""
    if path is None:
        path = os.environ.get(ENV_VAR) or DEFAULT_DIR
    p = Path(path)
    if not (p / FP16_CSV).is_file():
        raise GemmModelDataMissing(
            f"gemm-model data not found: {p / FP16_CSV} does not exist (get it with "
            f"scripts/fetch_gemm_model.sh, i.e. git clone {REPO_URL} external/gemm-model, or point "
            f"--gemm-model / ${ENV_VAR} at a checkout)")
    return p


def pad16(x: int, elem_bytes: int = 2) -> int:
    """benchmark_gemm.py ``pad_mnk``: round up to a multiple of 16 bytes of elements."""
    a = 16 // elem_bytes
    return -(-x // a) * a


@dataclass(frozen=True)
class B200Row:
    """One measured launch: problem (as listed and as run), MMA tile, cluster, runtime."""

    index: int             # row number in dsv3_fp16.csv (0-based, = gemm-model's row_idx)
    m: int                 # as listed
    n: int
    k: int
    mma_m: int             # 2 x cta_m (2-CTA MMA)
    mma_n: int
    cluster_m: int
    cluster_n: int
    runtime_us: float

    @property
    def padded(self) -> tuple[int, int, int]:
        return pad16(self.m), pad16(self.n), pad16(self.k)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k

    @property
    def shape_name(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def config_name(self) -> str:
        return f"{self.mma_m}x{self.mma_n}_c{self.cluster_m}x{self.cluster_n}"

    @property
    def flops(self) -> int:
        m, n, k = self.padded
        return 2 * m * n * k

    def stage_counts(self) -> tuple[int, int]:
        """(mainloop stages, epilogue store stages) as dense_gemm_persistent.py _compute_stages sets them."""
        cfg = self._base_config()
        ab = cfg.ab_stage_bytes_per_cta
        c_stage = cfg.epi_d_subtile_bytes
        c_bytes = DSL_INITIAL_C_STAGES * c_stage
        ab_stages = (DSL_SMEM_CAPACITY - (DSL_MBAR_HELPER_BYTES + c_bytes)) // ab
        c_stages = DSL_INITIAL_C_STAGES + (DSL_SMEM_CAPACITY - ab * ab_stages
                                           - (DSL_MBAR_HELPER_BYTES + c_bytes)) // c_stage
        return ab_stages, c_stages

    def _base_config(self) -> Sm100GemmConfig:
        m, n, k = self.padded
        return Sm100GemmConfig(
            m=m, n=n, k=k, l=1, dtype_ab="fp16", dtype_acc="f32", dtype_c="fp16", dtype_d="fp16",
            mma_tile_m=self.mma_m, mma_tile_n=self.mma_n, use_2sm=True,
            cluster_m=self.cluster_m, cluster_n=self.cluster_n, read_c=False,
            accumulator_stages=DSL_ACC_STAGES, tile_scheduler="static", raster="m", swizzle=1,
        ).resolved()

    def config(self) -> Sm100GemmConfig:
        """The Sm100GemmConfig of the kernel that ran (static scheduler, M-fastest, stage counts of the DSL)."""
        from dataclasses import replace
        ml, st = self.stage_counts()
        return replace(self._base_config(), mainloop_stages=ml, epilogue_store_stages=st)


def row_from_label(label: str, index: int = -1) -> B200Row:
    """The row a ``"MxNxK MMAMxMMAN_cCMxCN"`` label names (``wsim accuracy``'s row labels), without
    its runtime: enough to rebuild the config that ran, with no gemm-model data at hand."""
    try:
        shape, cfg = label.split()
        m, n, k = (int(x) for x in shape.split("x"))
        tile, cluster = cfg.split("_c")
        mma_m, mma_n = (int(x) for x in tile.split("x"))
        cm, cn = (int(x) for x in cluster.split("x"))
    except ValueError:
        raise ValueError(f"{label!r}: not a gemm-model row label (MxNxK MMAMxMMAN_cCMxCN)") from None
    return B200Row(index, m, n, k, mma_m, mma_n, cm, cn, float("nan"))


def _read_csv(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def load_rows(path: str | os.PathLike | None = None) -> list[B200Row]:
    """The fp16 rows of dsv3_fp16.csv (every row: fp16 in and out, fp32 accumulate, K-major, 2-CTA)."""
    d = data_dir(path)
    rows = []
    for i, r in enumerate(_read_csv(d / FP16_CSV)):
        if (r["in_dtype"], r["out_dtype"], r["acc_dtype"]) != ("fp16", "fp16", "fp32"):
            raise ValueError(f"{d / FP16_CSV} row {i}: dtypes {r['in_dtype']}/{r['out_dtype']}/{r['acc_dtype']}, "
                             "expected fp16/fp16/fp32")
        if (r["a_major"], r["b_major"], r["c_major"]) != ("k", "k", "n"):
            raise ValueError(f"{d / FP16_CSV} row {i}: layouts {r['a_major']}{r['b_major']}{r['c_major']}, "
                             "expected k, k, n")
        mma_m, cta_m = int(r["mma_m"]), int(r["cta_m"])
        if mma_m != 2 * cta_m:
            raise ValueError(f"{d / FP16_CSV} row {i}: mma_m={mma_m} is not 2 x cta_m={cta_m} (2-CTA MMA)")
        rows.append(B200Row(i, int(r["m"]), int(r["n"]), int(r["k"]), mma_m, int(r["mma_n"]),
                            int(r["cluster_m"]), int(r["cluster_n"]), float(r["runtime_us"])))
    return rows


def load_predictions(variant: str = "l2hit", path: str | os.PathLike | None = None) -> dict[int, float]:
    """gemm-model's own predicted runtime (us) per row index (``row_idx``), for one model variant:
    ``l2hit`` (WSPersistentGEMMModel with a 0.4 L2 hit rate, the one its README reports), ``ws``
    (same, no L2 hits) or ``sol`` (max of math and DRAM time)."""
    if variant not in PREDICTIONS:
        raise ValueError(f"variant={variant!r}: unknown; valid: {', '.join(PREDICTIONS)}")
    d = data_dir(path)
    out: dict[int, float] = {}
    rows = load_rows(d)
    for r in _read_csv(d / PREDICTIONS[variant]):
        i = int(r["row_idx"])
        row = rows[i]
        if (int(r["m"]), int(r["n"]), int(r["k"]), int(r["mma_n"]), int(r["cluster_n"])) != \
                (row.m, row.n, row.k, row.mma_n, row.cluster_n):
            raise ValueError(f"{d / PREDICTIONS[variant]}: row_idx {i} does not match dsv3_fp16.csv row {i}")
        out[i] = float(r["predicted_runtime"])
    return out


def source_commit(path: str | os.PathLike | None = None) -> str:
    """The gemm-model commit the data came from, if the directory says (a clone, or our extract's stamp)."""
    d = data_dir(path)
    stamp = d / ".wsim_source"
    if stamp.is_file():
        return stamp.read_text().strip()
    head = d / ".git" / "HEAD"
    if head.is_file():
        ref = head.read_text().strip()
        if ref.startswith("ref: "):
            f = d / ".git" / ref[5:]
            return f.read_text().strip() if f.is_file() else ref[5:]
        return ref
    return "unknown commit"


__all__ = ["B200Row", "row_from_label", "GemmModelDataMissing", "load_rows", "load_predictions", "data_dir", "source_commit",
           "CLOCK_GHZ", "CLOCK_SOURCE", "WARMUP_ITERATIONS", "ITERATIONS", "REPO_URL", "ENV_VAR", "pad16"]
