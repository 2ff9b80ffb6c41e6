#!/usr/bin/env bash
# Split .device/cutedsl.tar.xz (the DSL wheels packed by shared/device/pack-cutedsl.sh, ~54 MiB) into two
# parts, .device/p1/ and .device/p2/, so that each GPU job carries one of them: the working tree (~36 MiB
# of tracked files) plus the whole tarball is over the device machine's 64 MiB per call.
#   scripts/device_dsl_parts.sh            then, on the warm machine, two calls in a row (it stays warm ~30 s):
#   1. carry .device/p1:  cp .device/p1/part /tmp/dsl.part1
#   2. carry .device/p2:  cat /tmp/dsl.part1 .device/p2/part > /tmp/dsl.tar.xz && mkdir -p /tmp/site &&
#      tar -xJf /tmp/dsl.tar.xz -C /tmp/site &&
#      export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD && <the job>
set -euo pipefail
cd "$(dirname "$0")/.."
src=.device/cutedsl.tar.xz
test -f "$src" || { echo "device_dsl_parts: $src missing: run shared/device/pack-cutedsl.sh first" >&2; exit 2; }
rm -rf .device/p1 .device/p2
mkdir -p .device/p1 .device/p2
half=$(( ($(stat -c %s "$src") + 1) / 2 ))
head -c "$half" "$src" > .device/p1/part
tail -c +"$((half + 1))" "$src" > .device/p2/part
cat .device/p1/part .device/p2/part | cmp - "$src"
du -h .device/p1/part .device/p2/part
