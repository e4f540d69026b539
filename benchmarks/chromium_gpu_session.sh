#!/usr/bin/env bash
# WebGPU in Chromium on a lent NVIDIA machine (issue 44; docs/browser-gpu.md): two device
# calls from the repository root, the second within 30 s of the first's end (the machine
# keeps /tmp only while it stays warm):
#   call 1, carry .chromium .gl (results/ and tests/data/ moved aside):
#                             bash benchmarks/chromium_gpu_session.sh probe
#   call 2, carry .gl .whl:   bash benchmarks/chromium_gpu_session.sh run
# probe: unpacks .chromium into /tmp/gpuo-chromium, runs benchmarks/chromium_gpu_probe.py into
#   /tmp/gpuo-probe ($OUT/probe.tgz); exits 0 where a flag set got the GPU, 1 where none did.
# run [QUESTION...]: installs .gl and .whl, takes the probe's winning flags
#   (/tmp/gpuo-probe/winner.env), then each QUESTION under /tmp/results, packed to
#   $OUT/results.tgz after each (a call cut short keeps what finished). QUESTION: adapters
#   (the list, chromium's run.json details), default (the default suite, every
#   implementation, --time-limit 180), browser-tax (benchmarks/suites/browser-tax.yaml:
#   wgpu-native, Dawn and chromium, 300 s). Default: adapters default browser-tax (~9 min).
set -uo pipefail
mode=${1:-}
shift || true
out=${OUT:-/tmp/out}
browser=/tmp/gpuo-chromium/chromium
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
    timeout 500 python3 benchmarks/chromium_gpu_probe.py --browser "$browser" --out /tmp/gpuo-probe
    rc=$?
    tar -C /tmp -czf "$out/probe.tgz" gpuo-probe
    exit $rc
    ;;
  run)
    if [ ! -x "$browser" ]; then
      echo "error: no $browser: the machine went back since call 1; run call 1 (probe) again" >&2
      exit 3
    fi
    loaders
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
      || exit 2
    if [ -f /tmp/gpuo-probe/winner.env ]; then
      . /tmp/gpuo-probe/winner.env
    else
      echo "warning: the probe got no GPU under any flag set: chromium runs as auto gives" >&2
    fi
    results=/tmp/results
    mkdir -p "$results"
    python3 -m gpuoverhead adapters --browser "$browser" > "$results/adapters-first.txt" 2>&1 \
      || export VK_DRIVER_FILES=$icd
    env | grep -E '^(GPUOVERHEAD|VK_)' | sort > "$results/env.txt"
    [ $# -gt 0 ] || set -- adapters default browser-tax
    for question in "$@"; do
      rm -rf "${results:?}/$question"
      case $question in
        adapters) timed 120 adapters adapters --browser "$browser" ;;
        default) timed 260 default run --implementation all --browser "$browser" \
          --time-limit 180 --out "$results/default" --run-id default ;;
        browser-tax) timed 380 browser-tax run --suite benchmarks/suites/browser-tax.yaml \
          --implementation wgpu-native,dawn,chromium --browser "$browser" \
          --out "$results/browser-tax" --run-id browser-tax ;;
        *) echo "unknown question: $question" >&2; exit 2 ;;
      esac
    done
    ;;
  *)
    echo "usage: bash benchmarks/chromium_gpu_session.sh probe|run [QUESTION...]" >&2
    exit 2
    ;;
esac
