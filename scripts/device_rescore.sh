#!/usr/bin/env bash
# Re-score on the device machine's 16 cores what the local re-score chain runs on 2: install the
# simulator's build and run dependencies from cp312 wheels, compile the simulator core there, run the
# given commands, and pack every file they wrote under validation/results into $OUT/rescore.tgz (the
# device returns at most 8 files, 2 folders down); unpack it here with tar -xzf.
#   here, once:  scripts/device_rescore.sh --wheels      (fetches the wheels into .device/w312)
#   device call (carry .device/w312 and external/gemm-model):
#                scripts/device_rescore.sh 'wsim accuracy --data h200-small-m --out validation/results/small_m' ...
# Each command runs as given (add --jobs 16 where it takes one); a failing one is reported and the
# rest still run. Result files record the device's Python and numpy in their simulation cache key.
# The device has Python 3.12, gcc, numpy and matplotlib (checked 2026-12-06).
set -uo pipefail
cd "$(dirname "$0")/.."
W=.device/w312
if [ "${1:-}" = "--wheels" ]; then
  mkdir -p "$W"
  pip download -q --only-binary=:all: --no-deps --python-version 3.12 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 -d "$W" \
    cython simpy setuptools wheel nvidia-matmul-heuristics==0.1.0.27 iniconfig packaging pluggy pytest
  du -sh "$W"; exit 0
fi
: "${OUT:?device_rescore: run it on the device machine (\$OUT unset)}"
ls "$W"/*.whl > /dev/null || { echo "device_rescore: no wheels in $W: run scripts/device_rescore.sh --wheels here" >&2; exit 2; }
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/w "$W"/*.whl || exit 2
export PYTHONPATH=/tmp/w:$PWD PATH=/tmp/w/bin:$PATH
python3 setup.py -q build_ext --inplace > "$OUT/build.log" 2>&1
python3 -c "import simulator._native as n; print('simulator core:', 'compiled' if n.COMPILED else n.REASON)"
mkdir -p "$OUT/logs"
touch /tmp/rescore.start
rc=0
for cmd in "$@"; do
  t0=$(date +%s)
  echo "== $cmd"
  cmd=${cmd/#wsim /python3 -m wsim }
  if ! bash -c "$cmd" > "$OUT/logs/$(echo "$cmd" | md5sum | cut -c1-8).log" 2>&1; then
    echo "   FAILED (log under logs/)"; rc=1
  fi
  echo "   $(( $(date +%s) - t0 )) s"
done
find validation/results -type f -newer /tmp/rescore.start | tar -czf "$OUT/rescore.tgz" -T -
tar -tzf "$OUT/rescore.tgz"
exit $rc
