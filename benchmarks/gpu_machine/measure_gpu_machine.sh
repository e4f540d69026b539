#!/usr/bin/env bash
# The published measurements of a GPU machine, each a plain gpuoverhead command, written as
# /tmp/results/<question>/ run folders, which go to results/<machine>/<question>/ as they are
# (docs/reproduce.md says which figure each one makes):
#   bash benchmarks/gpu_machine/measure_gpu_machine.sh QUESTION...    # from the repository root
# QUESTION, the name of its folder:
#   default          a plain run (the default suite, every implementation: 6 processes a
#                    job in its 160 s; the sets made before issue 54's six: 3 in 80 s)
#   default-again    the same, right after (`compare default default-again`: run to run)
#   cadence          the cadence suite, wgpu-native in 225 s (its 5 gaps, 3 processes of 10 s each)
#   cadence-all      the cadence suite, every implementation, in its 400 s
#   c-loop           a plain C loop's submit, bursts back to back and 30 ms apart, 2
#                    processes of 10 s each (benchmarks/investigations/submit_cadence.py; c-loop/c-loop.json)
#   c-loop-b2b       the same back to back only, about 25 s (c-loop-b2b/c-loop.json)
#   figures          issue 54's done-when figures from the folders above
#                    (benchmarks/investigations/regime_figures.py; figures.txt)
#   processes-3      the same with --processes 3; processes-6, processes-10: with 6, 10
#   limit300         the default suite in 300 s
#   selftest         the A/A test (its halves in selftest/a and selftest/b);
#   selftest-again   the same, later (selftest-again/a, b)
#   selftest-b2b     its back-to-back form: two plain runs of the default suite one after
#                    the other (selftest-b2b/a, b), at most 2 x 160 s and the compare:
#                    `default` and `default-again` with the verdict and the run-to-run
#                    allowance
# Issue 54's plain run, in one call of at most 9 minutes (about 6.5 on the H200: start-up,
# 25 s, 2 x 160 s, 10 s; figures.txt has the precision, the pair's verdicts and the native
# layer's submit over the C loop's):
#   bash benchmarks/gpu_machine/measure_gpu_machine.sh c-loop-b2b selftest-b2b figures
#   decode           the decode suite (Qwen2.5-0.5B's shapes), every implementation, in
#                    300 s: as many of 6 processes a job as that holds
#   decode-1.5b      the same with Qwen2.5-1.5B's shapes
#   decode-energy    the decode suite, WebGPU only, J a token (needs nvidia-ml-py)
#   crossover        the crossover suite, WebGPU, PyTorch and the CPU references
#   crossover-webgpu the crossover suite, WebGPU and the CPU references (two processes a job)
#   crossover-torch  the crossover at four sizes, PyTorch and the CPU references
#   crossover-small  the small crossover suite, every implementation
#   readback         readback and sampling up to 1 MiB
#   engine           bind group per dispatch, the mega-kernel MLP, small readbacks
#   compile          torch.compile of the dependent loop
#   fusion           the fusion suite, one run per implementation (fusion/wgpu-native, ...)
# On a lent machine with no network (the device tool) carry .gl/ and .whl/ made by
# ../shared/gpu-bundle.sh; where $OUT is set, /tmp/results is packed there after each step,
# so a call cut short still returns what had finished. Each step is bounded by `timeout`;
# its console output is the folder's run.log (selftest.log for the A/A), its wall time from
# the shell a line of /tmp/results/times.txt. DEFAULT_ARGS, where set, are more options of
# the questions that run the default suite (default*, processes-*, limit300, selftest*),
# split at spaces: a test of this script on a machine with no GPU, e.g.
#   RESULTS=/tmp/r DEFAULT_ARGS="--suite small.yaml --implementation wgpu-native" bash ...
set -uo pipefail
results=${RESULTS:-/tmp/results}  # RESULTS: elsewhere (a machine shared with other work)
mkdir -p "$results"
if [ -d .gl ] && ! ldconfig -p | grep -q libvulkan.so.1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
if [ -d .whl ] && ! python3 -c "import wgpu" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1
# The scripts under benchmarks/ import gpuoverhead from this checkout too.
case ":${PYTHONPATH:-}:" in *":$PWD:"*) ;; *) export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" ;; esac
python3 -m gpuoverhead adapters > "$results/adapters.txt" 2>&1 || \
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version \
  --format=csv > "$results/gpu.txt" 2>&1

timed() {  # timed SECONDS NAME COMMAND...: its wall time from the shell in times.txt
  local limit=$1 name=$2 t0 rc; shift 2; t0=$(date +%s%N)
  mkdir -p "$(dirname "$results/$name")"
  timeout "$limit" python3 -m gpuoverhead "$@" > "$results/$name.log" 2>&1; rc=$?
  echo "$name: exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms wall" \
    | tee -a "$results/times.txt"
  if [ -d "$results/$name" ]; then  # the log beside the run's files, once it has finished
    mv "$results/$name.log" "$results/$name/$([ -f "$results/$name/run.json" ] \
      && echo run.log || echo selftest.log)"
  fi
  [ -n "${OUT:-}" ] && tar -C "$results" -czf "$OUT/results.tgz" .
}

run() {  # run SECONDS QUESTION ARGS...: gpuoverhead run into /tmp/results/QUESTION/
  local limit=$1 question=$2; shift 2
  timed "$limit" "$question" run "$@" --out "$(dirname "$results/$question")" \
    --run-id "$(basename "$question")"
}

selftest() {  # selftest QUESTION SECONDS ARGS...: the A/A test, its halves as QUESTION/a, b
  local question=$1 limit=$2 half; shift 2
  timed "$limit" "$question" selftest --out "$results/$question" "$@"
  for half in a b; do
    for folder in "$results/$question"/selftest-*-"$half"; do
      [ -d "$folder" ] && mv "$folder" "$results/$question/$half"
    done
  done
}

crossover=(--suite crossover --implementation wgpu-native,dawn,torch,cpu-ref)
read -ra suite <<< "${DEFAULT_ARGS:-}"  # the default suite's questions' (above)
for question in "$@"; do
  rm -rf "${results:?}/$question"  # a question asked again on the same machine starts afresh
  case $question in
    default|default-again) run 200 "$question" "${suite[@]}" ;;
    cadence) run 250 cadence --suite cadence --implementation wgpu-native --time-limit 225 ;;
    cadence-all) run 440 cadence-all --suite cadence ;;
    c-loop|c-loop-b2b) mkdir -p "$results/$question"
      gaps=0 limit=60
      [ "$question" = c-loop ] && gaps=0,30 limit=120
      timeout "$limit" python3 benchmarks/investigations/submit_cadence.py \
        --gaps "$gaps" --seconds 10 --processes 2 --json "$results/$question/c-loop.json" \
        > "$results/$question/run.log" 2>&1
      echo "$question: exit $?" | tee -a "$results/times.txt"
      [ -n "${OUT:-}" ] && tar -C "$results" -czf "$OUT/results.tgz" . ;;
    figures) timeout 120 python3 benchmarks/investigations/regime_figures.py "$results" \
        | tee "$results/figures.txt"
      [ -n "${OUT:-}" ] && tar -C "$results" -czf "$OUT/results.tgz" . ;;
    processes-3) run 200 processes-3 --processes 3 "${suite[@]}" ;;
    processes-6) run 200 processes-6 --processes 6 "${suite[@]}" ;;
    processes-10) run 200 processes-10 --processes 10 "${suite[@]}" ;;
    limit300) run 340 limit300 --time-limit 300 "${suite[@]}" ;;
    selftest|selftest-again) selftest "$question" 380 "${suite[@]}" ;;
    selftest-b2b) selftest "$question" 380 --back-to-back "${suite[@]}" ;;
    decode) run 340 decode --suite decode --implementation all --time-limit 300 --processes 6 ;;
    decode-1.5b) run 460 decode-1.5b --suite decode-1.5b --implementation all \
      --time-limit 420 ;;
    decode-energy) run 240 decode-energy --suite decode --implementation webgpu \
      --time-limit 200 ;;
    crossover) run 490 crossover "${crossover[@]}" --time-limit 450 ;;
    crossover-webgpu) run 310 crossover-webgpu --suite crossover \
      --implementation wgpu-native,dawn,cpu-ref --time-limit 270 ;;
    crossover-torch) run 370 crossover-torch --suite benchmarks/suites/crossover-torch.yaml \
      --implementation torch,cpu-ref --processes 2 --time-limit 330 ;;
    crossover-small) run 80 crossover-small --suite benchmarks/suites/crossover-small.yaml \
      --implementation wgpu-native,dawn,torch,cpu-ref ;;
    readback) run 160 readback --suite benchmarks/suites/readback-large.yaml \
      --implementation wgpu-native,dawn,torch --processes 2 --time-limit 120 ;;
    engine) run 260 engine --suite engine --implementation wgpu-native,dawn,torch \
      --time-limit 220 ;;
    compile) run 420 compile --suite compile --implementation torch --processes 1 ;;
    fusion) for impl in wgpu-native dawn torch; do
        run 590 "fusion/$impl" --suite fusion --implementation "$impl" --processes 2
      done ;;
    *) echo "unknown question: $question" >&2; exit 2 ;;
  esac
done
