#!/usr/bin/env bash
# Runs `xtask bench scaling` from the binaries xtask/device/prepare.sh put
# in .device/, at the repository root of a machine with no cargo: writes
# the table into this copy's docs/benchmarks.md and copies it, with the
# log, to $OUT (./out when OUT is unset).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/out}
mkdir -p "$out"
export PATH="$root/.device/bin:$PATH" XTASK_PREBUILT="$root/.device/bin" XTASK_WORKSPACE="$root"
{ nproc; zstd --version; tar --version | head -1; grep -m1 'model name' /proc/cpuinfo; } 2>&1 | tee "$out/machine.txt"
# A tmpfs when it has room for the shards, the corpus and two archives.
dir=${DIR:-}
if [ -z "$dir" ]; then
    if [ "$(df --output=avail -B1G /dev/shm 2>/dev/null | tail -1)" -ge 8 ] 2>/dev/null; then
        dir=/dev/shm/binfmt-scaling
    else
        dir=/tmp/binfmt-scaling
    fi
fi
df -h "$(dirname "$dir")" | tee -a "$out/machine.txt"
xtask bench scaling --threads "${THREADS:-$(nproc)}" --text-mb "${TEXT_MB:-400}" \
    --dir "$dir" --markdown 2>&1 | tee "$out/scaling.log"
status=${PIPESTATUS[0]}
cp docs/benchmarks.md "$out/benchmarks.md"
exit "$status"
