#!/usr/bin/env bash
# WebGPU in Chromium on a lent NVIDIA machine (issues 44, 55; docs/browser-gpu.md): two device
# calls from the repository root, the second within 30 s of the first's end (the machine
# keeps /tmp only while it stays warm; the browser bundle and the wheels do not fit one call):
#   call 1, carry .chromium .gl (results/ and tests/data/ moved aside):
#                             bash benchmarks/chromium_gpu_session.sh probe
#   call 2, carry .gl .whl:   bash benchmarks/chromium_gpu_session.sh run
# probe: unpacks .chromium into /tmp/gpuo-chromium and asks the page for its adapter under the
#   tool's GPU flag set (the tool builds and enables its surface layer itself) and its default
#   flags (benchmarks/chromium_gpu_probe.py --only, into /tmp/gpuo-probe, $OUT/probe.tgz);
#   exits 0 where the GPU set got the GPU, 1 where none did. About 1 minute.
# run [QUESTION...]: installs .gl and .whl, takes the probe's winning set (winner.env) and asks
#   for a hardware adapter (GPUOVERHEAD_CHROMIUM_ADAPTER=hardware: SwiftShader is refused, not
#   measured), then each QUESTION under /tmp/results, packed to
#   $OUT/results.tgz after each (a call cut short keeps what finished), each bounded by
#   `timeout`. QUESTION: adapters (the list and chromium's run.json details), browser-tax
#   (benchmarks/suites/browser-tax.yaml: wgpu-native, Dawn and chromium, --time-limit 240),
#   browser-tax-torch (benchmarks/suites/browser-tax-torch.yaml: chromium and PyTorch,
#   --time-limit 150), default (the default suite, every implementation, --time-limit 180).
#   Default: adapters browser-tax browser-tax-torch, about 7.5 minutes, at most 8.9 (its
#   timeouts: 45 + 280 + 190 s, and the wheels' install).
# RUN_ONLY=1 (a machine without a GPU, to check this script on SwiftShader): `run` skips the
#   wheels, loaders and the hardware requirement; BROWSER, RESULTS and OUT name the browser,
#   the results folder and where the tarball goes.
set -uo pipefail
mode=${1:-}
shift || true
out=${OUT:-/tmp/out}
browser=${BROWSER:-/tmp/gpuo-chromium/chromium}
results=${RESULTS:-/tmp/results}
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD

loaders() {  # the Vulkan/GL loaders of .gl, where carried and missing
  if [ -d .gl ] && ! ldconfig -p | grep -q libvulkan.so.1; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
}

timed() {  # timed SECONDS QUESTION COMMAND...: its log and wall time, results packed after
  local limit=$1 question=$2 t0 rc
  shift 2
  t0=$(date +%s)
  timeout "$limit" python3 -m gpuoverhead "$@" > "$results/$question.log" 2>&1
  rc=$?
  echo "$question: exit $rc, $(($(date +%s) - t0)) s" | tee -a "$results/times.txt"
  tail -3 "$results/$question.log"
  tar -C "$results" -czf "$out/results.tgz" .
}

case $mode in
  probe)
    loaders
    bash benchmarks/chromium_unpack.sh || exit 2
    timeout 150 python3 benchmarks/chromium_gpu_probe.py --browser "$browser" \
      --out /tmp/gpuo-probe --only gpu+layer,default
    rc=$?
    tar -C /tmp -czf "$out/probe.tgz" gpuo-probe
    exit $rc
    ;;
  run)
    if [ "${RUN_ONLY:-0}" != 1 ]; then
      if [ ! -x "$browser" ]; then
        echo "error: no $browser: the machine went back since call 1; run call 1 (probe) again" >&2
        exit 3
      fi
      loaders
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
        .whl/*.whl || exit 2
      # the probe's set where it found one; never SwiftShader in place of the GPU
      [ ! -f /tmp/gpuo-probe/winner.env ] || . /tmp/gpuo-probe/winner.env
      export GPUOVERHEAD_CHROMIUM_ADAPTER=hardware
    fi
    mkdir -p "$results"
    python3 -m gpuoverhead adapters --browser "$browser" > "$results/adapters-first.txt" 2>&1 \
      || export VK_DRIVER_FILES=$icd
    env | grep -E '^(GPUOVERHEAD|VK_)' | sort > "$results/env.txt"
    [ $# -gt 0 ] || set -- adapters browser-tax browser-tax-torch
    for question in "$@"; do
      rm -rf "${results:?}/$question"
      case $question in
        adapters) timed 45 adapters adapters --browser "$browser" ;;
        browser-tax) timed 280 browser-tax run --suite benchmarks/suites/browser-tax.yaml \
          --implementation wgpu-native,dawn,chromium --browser "$browser" --time-limit 240 \
          --out "$results/browser-tax" --run-id browser-tax ;;
        browser-tax-torch) timed 190 browser-tax-torch run \
          --suite benchmarks/suites/browser-tax-torch.yaml --implementation chromium,torch \
          --browser "$browser" --time-limit 150 --out "$results/browser-tax-torch" \
          --run-id browser-tax-torch ;;
        default) timed 260 default run --implementation all --browser "$browser" \
          --time-limit 180 --out "$results/default" --run-id default ;;
        *) echo "unknown question: $question" >&2; exit 2 ;;
      esac
    done
    ;;
  *)
    echo "usage: bash benchmarks/chromium_gpu_session.sh probe|run [QUESTION...]" >&2
    exit 2
    ;;
esac
