#!/usr/bin/env bash
# WebGPU in Chromium on a lent NVIDIA machine (issues 44, 55; docs/browser-gpu.md): two device
# calls from the repository root, the second within 30 s of the first's end (the machine
# keeps /tmp only while it stays warm; the browser bundle and the wheels do not fit one call):
#   call 1, carry .chromium .gl (results/, tests/ and docs/ moved aside: neither part reads them):
#                             bash benchmarks/gpu_machine/chromium_gpu_session.sh probe
#   call 2, carry .gl .whl:   bash benchmarks/gpu_machine/chromium_gpu_session.sh run
# probe: unpacks .chromium into /tmp/gpuo-chromium and asks the page for its adapter under the
#   tool's GPU flag set (the tool builds and enables its surface layer itself) and its default
#   flags (benchmarks/gpu_machine/chromium_gpu_probe.py --only, into /tmp/gpuo-probe, $OUT/probe.tgz);
#   exits 0 where the GPU set got the GPU, 1 where none did. About 1 minute.
# run [QUESTION...]: installs .gl and .whl, takes the probe's winning set (winner.env) and asks
#   for a hardware adapter (GPUOVERHEAD_CHROMIUM_ADAPTER=hardware: SwiftShader is refused, not
#   measured), lists the adapters (adapters-first.txt; again as `adapters` under NVIDIA's ICD
#   alone where that list failed), then each QUESTION under /tmp/results, packed to
#   $OUT/results.tgz after each (a call cut short keeps what finished). Every step is bounded
#   by `timeout` and by the session's deadline, SESSION_S (default 495) after `run` began:
#   a step gets the least of its own bound and what is left, a run's --time-limit 40 s
#   under that, and a step the deadline leaves under 60 s is skipped (said in times.txt).
#   QUESTION: adapters (the list), browser-tax (benchmarks/suites/browser-tax.yaml:
#   wgpu-native, Dawn and chromium, timeout 280, --time-limit 240), browser-tax-torch
#   (benchmarks/suites/browser-tax-torch.yaml: chromium and PyTorch, up to timeout 190,
#   --time-limit 150), default (the default suite, every implementation, timeout 220,
#   --time-limit 180). Default: browser-tax browser-tax-torch, at most 8.25 minutes in all.
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

left() {  # seconds to the session's deadline, at most $1
  local rest=$((deadline - $(date +%s)))
  echo $((rest < $1 ? rest : $1))
}

timed() {  # timed SECONDS QUESTION COMMAND...: within SECONDS and the session's deadline (a
  # `run` given --time-limit 40 s under that), its log and wall time, results packed after
  local limit question=$2 t0 rc
  limit=$(left "$1")
  if [ "$limit" -lt 60 ] && [ "$limit" -lt "$1" ]; then  # cut under a minute by the deadline
    echo "$question: skipped, $limit s left of the session" | tee -a "$results/times.txt"
    return
  fi
  shift 2
  [ "$1" != run ] || set -- "$@" --time-limit $((limit - 40))
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
    bash benchmarks/gpu_machine/chromium_unpack.sh || exit 2
    timeout 150 python3 benchmarks/gpu_machine/chromium_gpu_probe.py --browser "$browser" \
      --out /tmp/gpuo-probe --only gpu+layer,default
    rc=$?
    tar -C /tmp -czf "$out/probe.tgz" gpuo-probe
    exit $rc
    ;;
  run)
    deadline=$(($(date +%s) + ${SESSION_S:-495}))
    if [ "${RUN_ONLY:-0}" != 1 ]; then
      if [ ! -x "$browser" ]; then
        echo "error: no $browser: the machine went back since call 1; run call 1 (probe) again" >&2
        exit 3
      fi
      loaders
      timeout 90 python3 -m pip install -q --no-index --no-deps --no-compile \
        --target /tmp/site .whl/*.whl || exit 2
      # the probe's set where it found one; never SwiftShader in place of the GPU
      [ ! -f /tmp/gpuo-probe/winner.env ] || . /tmp/gpuo-probe/winner.env
      export GPUOVERHEAD_CHROMIUM_ADAPTER=hardware
    fi
    mkdir -p "$results"
    [ $# -gt 0 ] || set -- browser-tax browser-tax-torch
    if ! timeout "$(left 45)" python3 -m gpuoverhead adapters --browser "$browser" \
        > "$results/adapters-first.txt" 2>&1; then
      export VK_DRIVER_FILES=$icd  # NVIDIA's ICD alone: listed again under it
      set -- adapters "$@"
    fi
    env | grep -E '^(GPUOVERHEAD|VK_)' | sort > "$results/env.txt"
    for question in "$@"; do
      rm -rf "${results:?}/$question"
      case $question in
        adapters) timed 45 adapters adapters --browser "$browser" ;;
        browser-tax) timed 280 browser-tax run --suite benchmarks/suites/browser-tax.yaml \
          --implementation wgpu-native,dawn,chromium --browser "$browser" \
          --out "$results/browser-tax" --run-id browser-tax ;;
        browser-tax-torch) timed 190 browser-tax-torch run \
          --suite benchmarks/suites/browser-tax-torch.yaml --implementation chromium,torch \
          --browser "$browser" --out "$results/browser-tax-torch" --run-id browser-tax-torch ;;
        default) timed 220 default run --implementation all --browser "$browser" \
          --out "$results/default" --run-id default ;;
        *) echo "unknown question: $question" >&2; exit 2 ;;
      esac
    done
    ;;
  *)
    echo "usage: bash benchmarks/gpu_machine/chromium_gpu_session.sh probe|run [QUESTION...]" >&2
    exit 2
    ;;
esac
