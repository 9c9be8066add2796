#!/usr/bin/env bash
# Builds what `cargo xtask bench scaling` needs on a machine with no cargo
# and no network (a borrowed many-core machine), into .device/ at the
# repository root (ignored by git through .git/info/exclude):
#   .device/bin/xtask, .device/bin/binfmt   release builds, stripped
#   .device/bin/zstd                        a wrapper running the zstd here,
#   .device/lib/                            with the libraries it links
# Then, there: bash xtask/device/scaling.sh (THREADS, TEXT_MB, DIR).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
exclude="$(git rev-parse --git-common-dir)/info/exclude"
grep -qx '/.device/' "$exclude" 2>/dev/null || echo '/.device/' >> "$exclude"
cargo build --release --quiet -p xtask --bin xtask -p binfmt --bin binfmt
target=${CARGO_TARGET_DIR:-target}
rm -rf .device && mkdir -p .device/bin .device/lib
for bin in xtask binfmt; do
    strip -o ".device/bin/$bin" "$target/release/$bin"
done
zstd=$(command -v zstd)
cp "$zstd" .device/lib/zstd.real
ldd "$zstd" | awk '$3 ~ /^\// {print $3}' | grep -v -E '/(libc|libm|libpthread|libdl|ld-linux[^/]*)\.so' |
    while read -r lib; do cp "$lib" .device/lib/; done
cat > .device/bin/zstd <<'WRAP'
#!/bin/sh
here=$(dirname "$0")/../lib
LD_LIBRARY_PATH="$here" exec "$here/zstd.real" "$@"
WRAP
chmod +x .device/bin/zstd
du -sh .device
