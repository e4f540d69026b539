#!/usr/bin/env bash
# The published measurements of a GPU machine, each a plain gpuoverhead command, written as
# results/<question>/ folders (docs/reproduce.md says which figure each one makes):
#   bash benchmarks/measure_gpu_machine.sh QUESTION...    # from the repository root
# QUESTION: default (a plain run), limit300 (the default suite in 300 s), selftest (the A/A
# test), selftest-again (the same, later), decode (the decode suite, every implementation,
# in 300 s: as many of 6 processes a job as that holds),
# crossover-small (the small crossover suite, every implementation).
# On a lent machine with no network (the device tool) carry .gl/ and .whl/ made by
# ../shared/gpu-bundle.sh; where $OUT is set, /tmp/results is packed there after each step,
# so a call cut short still returns what had finished. Each step is bounded by `timeout`.
set -uo pipefail
results=/tmp/results
mkdir -p "$results"
if [ -d .gl ] && ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
if [ -d .whl ] && ! python3 -c "import wgpu" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1
python3 -m gpuoverhead adapters > "$results/adapters.txt" 2>&1 || \
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version \
  --format=csv > "$results/gpu.txt" 2>&1

timed() {  # timed SECONDS QUESTION COMMAND...: its wall time from the shell in times.txt
  local limit=$1 question=$2 t0 rc; shift 2; t0=$(date +%s%N)
  timeout "$limit" python3 -m gpuoverhead "$@" > "$results/$question.log" 2>&1; rc=$?
  echo "$question: exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms wall" \
    | tee -a "$results/times.txt"
  [ -n "${OUT:-}" ] && tar -C "$results" -czf "$OUT/results.tgz" .
}

for question in "$@"; do
  rm -rf "${results:?}/$question"  # a question asked again on the same machine starts afresh
  out=(--out "$results/$question" --run-id "$question")
  case $question in
    default) timed 120 default run "${out[@]}" ;;
    limit300) timed 340 limit300 run --time-limit 300 "${out[@]}" ;;
    selftest|selftest-again) timed 380 "$question" selftest --out "$results/$question" ;;
    decode) timed 340 decode run --suite decode --implementation all --time-limit 300 \
      --processes 6 "${out[@]}" ;;
    crossover-small) timed 80 crossover-small run --suite \
      benchmarks/suites/crossover-small.yaml --implementation wgpu-native,dawn,torch,cpu-ref \
      "${out[@]}" ;;
    *) echo "unknown question: $question" >&2; exit 2 ;;
  esac
done
