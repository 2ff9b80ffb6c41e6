#!/usr/bin/env bash
# Fetch hbarclay/gemm-model (measured B200 GEMM runtimes + that repo's model predictions) into
# external/gemm-model, outside git (/external/ is git-ignored): its data is read, never committed.
#   scripts/fetch_gemm_model.sh [DIR]      (default: external/gemm-model)
# Then: wsim accuracy --data b200 (or set WSIM_GEMM_MODEL_DIR / pass --gemm-model DIR).
set -euo pipefail
dest="${1:-$(cd "$(dirname "$0")/.." && pwd)/external/gemm-model}"
if [ -d "$dest/.git" ]; then
  git -C "$dest" pull --ff-only
else
  mkdir -p "$(dirname "$dest")"
  git clone https://github.com/hbarclay/gemm-model "$dest"
fi
test -f "$dest/results/dsv3_fp16.csv" && echo "gemm-model data in $dest"
