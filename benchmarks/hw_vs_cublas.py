"""The hardware kernel (hw_kernels.sm90_gemm) against cuBLAS (torch.matmul), on an H200.

    python benchmarks/hw_vs_cublas.py --out OUT            # on the GPU machine (needs the DSL and torch)
    python benchmarks/hw_vs_cublas.py --table results.json  # print the table of a finished run

Same random-normal inputs for both, warm-up first, runs interleaved in rounds, medians of per-launch
CUDA-event times, TFLOP/s and the ratio to cuBLAS, with the effective SM clock of each measurement
(in-kernel clock64/globaltimer from an instrumented twin run in the same interleave, and NVML
samples). Writes OUT/results.json and OUT/bench.md. The committed result of this script is
validation/results/hw_vs_cublas.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="bench_out", help="output folder (GPU run)")
    ap.add_argument("--table", help="print the markdown table of an existing results.json and exit")
    ap.add_argument("--quick", action="store_true", help="fewer shapes and configs")
    a = ap.parse_args(argv)
    from validation.collect import bench_markdown
    if a.table:
        res = json.loads(Path(a.table).read_text())
        print(bench_markdown(res["bench"], res["env"]))
        return 0
    from validation.timing import require_cuda_gpu
    require_cuda_gpu("benchmarks/hw_vs_cublas.py")
    from validation import collect
    rc = collect.main(["--out", a.out, "--phase", "bench", *(["--quick"] if a.quick else [])])
    res = json.loads((Path(a.out) / collect.RESULTS).read_text())
    md = bench_markdown(res["bench"], res["env"])
    (Path(a.out) / "bench.md").write_text(md)
    print(md)
    return rc


if __name__ == "__main__":
    sys.exit(main())
