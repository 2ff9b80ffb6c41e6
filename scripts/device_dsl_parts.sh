#!/usr/bin/env bash
# Split .device/cutedsl.tar.xz (the DSL wheels packed by shared/device/pack-cutedsl.sh, ~54 MiB) into N parts,
# .device/p1/part ... .device/pN/part (default N = 3), so that each GPU job carries one of them: the working
# tree (~38 MiB of tracked files) plus the whole tarball is over the device machine's 64 MiB per call.
#   scripts/device_dsl_parts.sh [N]
# Then N calls in a row on the warm machine (it stays warm ~30 s after each):
#   calls 1 .. N-1, carrying .device/pI:  cp .device/pI/part /tmp/dsl.partI
#   call N, carrying .device/pN:  cat /tmp/dsl.part* .device/pN/part > /tmp/dsl.tar.xz && mkdir -p /tmp/site &&
#     tar -xJf /tmp/dsl.tar.xz -C /tmp/site &&
#     export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD && <the job>
# (/tmp/dsl.part1 ... sort before the last part, so the cat keeps their order for N <= 9.)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-3}"
src=.device/cutedsl.tar.xz
test -f "$src" || { echo "device_dsl_parts: $src missing: run shared/device/pack-cutedsl.sh first" >&2; exit 2; }
case "$n" in [2-9]) ;; *) echo "device_dsl_parts: N=$n: give a part count from 2 to 9" >&2; exit 2 ;; esac
rm -rf .device/p[1-9]
size=$(stat -c %s "$src")
chunk=$(( (size + n - 1) / n ))
for i in $(seq 1 "$n"); do
  mkdir -p ".device/p$i"
  dd if="$src" of=".device/p$i/part" bs="$chunk" skip="$((i - 1))" count=1 status=none
done
cat .device/p[1-9]/part | cmp - "$src"
du -h .device/p[1-9]/part
