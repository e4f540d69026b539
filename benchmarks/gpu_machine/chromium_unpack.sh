#!/usr/bin/env bash
# Unpack .chromium/ (made by benchmarks/gpu_machine/chromium_bundle.sh, carried to the GPU server) into
# DEST (default /tmp/gpuo-chromium), from the repository root:
#   bash benchmarks/gpu_machine/chromium_unpack.sh [DEST]
# and print the --browser path to use (docs/browser-gpu.md). Needs only sh, python3 and xz
# (or python3's lzma). DEST/chromium is a wrapper that sets the library path for the browser
# alone, read at each start (the surface layer is the tool's: gpuoverhead/browser/surface.py):
#   GPUOVERHEAD_SYSTEM_VULKAN=1   the system's Vulkan loader for Chromium and Dawn (ANGLE
#                                 opens the one beside the binary whatever the path says)
set -euo pipefail
src=${CHROMIUM_BUNDLE:-.chromium}
dest=${1:-/tmp/gpuo-chromium}
if [ ! -f "$src/SHA256SUMS" ]; then
  echo "error: no $src/SHA256SUMS: carry .chromium (bash benchmarks/gpu_machine/chromium_bundle.sh makes it)" >&2
  exit 2
fi
(cd "$src" && sha256sum -c --quiet SHA256SUMS) || { echo "error: $src is damaged" >&2; exit 2; }
rm -rf "$dest"
mkdir -p "$dest"
if command -v xz >/dev/null; then
  xz -dc "$src/headless_shell.xz" > "$dest/headless_shell"
  xz -dc "$src/rest.tar.xz" | tar -C "$dest" -xf -
else
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$src/headless_shell.xz" "$dest/headless_shell"
  python3 -c 'import tarfile, sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' \
    "$src/rest.tar.xz" "$dest"
fi
chmod +x "$dest/headless_shell"
cat > "$dest/chromium" <<'WRAPPER'
#!/bin/sh
# gpuoverhead's headless Chromium (benchmarks/gpu_machine/chromium_unpack.sh): its own libraries.
d=$(dirname "$(readlink -f "$0")")
lib="$d/lib"
[ "${GPUOVERHEAD_SYSTEM_VULKAN:-0}" = 1 ] || lib="$lib:$d"  # ANGLE opens $d's loader anyway
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$d/headless_shell" "$@"
WRAPPER
chmod +x "$dest/chromium"
echo "chromium $(cat "$src/VERSION") unpacked: $(du -sm "$dest" | cut -f1) MiB in $dest"
echo "  --browser $dest/chromium"
echo "  python3 benchmarks/gpu_machine/chromium_gpu_probe.py --browser $dest/chromium --out /tmp/gpuo-probe"
