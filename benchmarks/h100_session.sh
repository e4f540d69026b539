#!/usr/bin/env bash
# What was run on the lent H100 (the device tool), in two steps, from the repository root
# with .gl/, .whl/ (../shared/gpu-bundle.sh) and .repro/ (a copy of ../shared/repro) carried.
#   bash benchmarks/h100_session.sh start    # setup, plain loop, submit_gap, main run started
#   bash benchmarks/h100_session.sh finish   # waits for the main run, plain loop again
#   bash benchmarks/h100_session.sh selftest # the A/A test, 3 processes per run
#   bash benchmarks/h100_session.sh speed    # issue 16: plain `run` timed, --suite full for
#                                            # wgpu-native, where a worker's start-up goes
#   bash benchmarks/h100_session.sh full     # --suite full for Dawn and PyTorch
#   bash benchmarks/h100_session.sh decode   # issue 17: the decode step (wgpu-native and
#                                            # Dawn in three encodings, PyTorch eager,
#                                            # CUDA graph, torch.compile), interleaved
#   bash benchmarks/h100_session.sh decode-1.5b # the same for Qwen2.5-1.5B's shapes
#   bash benchmarks/h100_session.sh decode-f16  # the same step with f32 and f16 weights
#   bash benchmarks/h100_session.sh limits   # issue 25: the plain run and a decode run
#                                            # under a time limit, timed from the shell,
#                                            # with the plain loop before and after
#   bash benchmarks/h100_session.sh state    # issue 25: the plain loop, the default run,
#                                            # --suite full for the WebGPU family, the plain
#                                            # loop again, interleaved within minutes
#   bash benchmarks/h100_session.sh aa       # issue 25: selftest at default settings
#   bash benchmarks/h100_session.sh episodes # issue 25: selftest at default settings with
#                                            # the host's /proc/stat beside it
#                                            # (benchmarks/host_monitor.py), the plain
#                                            # loop before and after
#   bash benchmarks/h100_session.sh pinned   # issue 25: submit per CPU (cpu_probe.py),
#                                            # then a default run and selftest at default
#                                            # settings with --affinity on the CPUs that
#                                            # are not slow
#   bash benchmarks/h100_session.sh round4   # issue 25, fourth round: the CPUs that are
#                                            # not slow, the plain loop, a default run,
#                                            # --suite full for the WebGPU family, the
#                                            # plain loop again, the interleaved selftest,
#                                            # all pinned to those CPUs
#   bash benchmarks/h100_session.sh aa4      # issue 25: the interleaved selftest at default
#                                            # settings, pinned to the CPUs not slow
#   bash benchmarks/h100_session.sh decode4  # issues 25, 27: the decode suite (token loop
#                                            # included), all implementations, pinned, under
#                                            # a time limit of 450 s
#   bash benchmarks/h100_session.sh crossover4  # issue 28: configs/crossover.yaml with
#                                            # wgpu-native, Dawn, PyTorch and the CPU
#                                            # references, pinned, limit 420 s
#   bash benchmarks/h100_session.sh telemetry4  # issue 30: a default run and the decode
#                                            # suite's WebGPU jobs with NVML telemetry
#   bash benchmarks/h100_session.sh crossover5  # the same after the recurrent product
#                                            # kernel's change, WebGPU and the CPU
#                                            # references only, limit 270 s
#   bash benchmarks/h100_session.sh round5a  # issues 28, 29: the crossover suite (host syncs
#                                            # and the hybrid step included), all forms, limit
#                                            # 300 s (run with 256-step loops then:
#                                            # results/round5-h100-crossover-256); the engine
#                                            # suite (bind groups, readback, sampling, the
#                                            # mega-kernel), limit 220 s
#   bash benchmarks/h100_session.sh round5b  # issue 27: Qwen2.5-1.5B's decode suite, all
#                                            # implementations, limit 420 s
#   bash benchmarks/h100_session.sh round5c  # issues 29, 25: torch.compile of the dependent
#                                            # loop up to its failure; the A/A selftest
#   bash benchmarks/h100_session.sh round5d  # issue 27: each read stream's bandwidth, then
#                                            # Qwen2.5-0.5B's decode suite, all
#                                            # implementations, limit 420 s
#   bash benchmarks/h100_session.sh round5e  # issues 27, 29: the read streams by size and
#                                            # kernel; torch.compile of the dependent loop
#                                            # up to its failure, on its own (300 s was short)
#   bash benchmarks/h100_session.sh round5f  # issue 28: the crossover suite again with
#                                            # 64-token host-read loops, limit 480 s
#   bash benchmarks/h100_session.sh round6a  # issues 25, 29: the A/A selftest at default
#                                            # settings (six processes a half); readback and
#                                            # sampling at 16 KiB-1 MiB and the vocabulary
#                                            # (benchmarks/suites/readback-large.yaml)
#   bash benchmarks/h100_session.sh round6b  # issues 27, 28: the decode kernels' variants,
#                                            # interleaved; PyTorch's crossover with two
#                                            # processes a job (suites/crossover-torch.yaml)
#   bash benchmarks/h100_session.sh round6c  # issue 27: which of the decode branch's commits
#                                            # made the fused step 5x slower (.revs/: each
#                                            # revision's tree, its decode_floor.py at 0.5B,
#                                            # cache 128); the readback sizes again, with the
#                                            # schedule that runs both processes asked for
#                                            # (.revs/REV: `git archive REV gpuoverhead
#                                            # benchmarks shaders configs | tar -x -C
#                                            # .revs/REV`; .revs/diag.py is kept in
#                                            # results/round6-h100-decode-bisect)
#   bash benchmarks/h100_session.sh round6d  # issue 27: Qwen2.5-0.5B's decode suite with the
#                                            # bisected kernels, all implementations, 420 s
#   bash benchmarks/h100_session.sh round6e  # issue 28: PyTorch's crossover at four sizes,
#                                            # two processes a job, 330 s
#   bash benchmarks/h100_session.sh round6f  # issue 27: Qwen2.5-1.5B's decode suite, 420 s
#   bash benchmarks/h100_session.sh round7   # issue 25: a default run (all implementations,
#                                            # 80 s limit) interrupted as Ctrl-C does (SIGINT
#                                            # to its process group) 50 s in, in a later
#                                            # pass: what it keeps; then the same run whole
#   bash benchmarks/h100_session.sh round8a  # issue 25: the crossover suite (450 s limit)
#                                            # with partial passes for cheap start-ups
#   bash benchmarks/h100_session.sh round8c  # the same with each job's ratio partners
#   bash benchmarks/h100_session.sh round8b  # issue 25: a default run, then selftest at
#                                            # default settings
# (Calls must fit 600 s each and the machine is released 30 s after one: nothing may be
# left running in the background for the next.)
set -uo pipefail
step=${1:?start, finish, selftest, speed, full, decode, decode-1.5b, decode-f16, limits, state, aa, episodes, pinned, round4, aa4, decode4, crossover4, crossover5, telemetry4, round5a, round5b, round5c, round5d, round5e, round5f, round6a, round6b, round6c, round6d, round6e, round6f, round7, round8a, round8b or round8c}
out=${OUT:-/tmp/out}; mkdir -p "$out" /tmp/results
setup() {
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
  python3 -m gpuoverhead adapters >/dev/null 2>&1 || \
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
}
timed() {  # timed RUN_ID [RUN OPTIONS...]: a run, its wall time from outside in times.txt
  local id=$1 t0; shift; t0=$(date +%s%N)
  python3 -m gpuoverhead run "$@" --run-id "$id" --out /tmp/results > "/tmp/results/$id.log" 2>&1
  echo "$id: $(( ($(date +%s%N) - t0) / 1000000 )) ms wall" | tee -a /tmp/results/times.txt
}
plain_loop() {
  inc="$(python3 -c 'import wgpu,os;print(os.path.dirname(wgpu.__file__))')/resources"
  (cd .repro && { [ -f plain_loop.so ] || gcc -O2 -shared -fPIC -I"$inc" plain_loop.c \
    -o plain_loop.so; } && python3 plain_loop.py)
}
bounded() {  # bounded SECONDS RUN_ID [RUN OPTIONS...]: timed under a timeout, results re-packed
  local limit=$1; shift
  timeout "$limit" bash -c "$(declare -f timed); timed $*"
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
}
good_cpus() {  # the CPUs on which the plain loop's submit is not slow (cpu_probe.py), as a list
  (cd .repro && gcc -O2 -shared -fPIC -I"$(python3 -c 'import wgpu,os;print(os.path.dirname(wgpu.__file__))')/resources" \
    plain_loop.c -o plain_loop.so)
  timeout 60 python3 benchmarks/cpu_probe.py > "$out/cpu_probe.json" 2>> /tmp/results/probe.err
  python3 -c "import json;print(json.load(open('$out/cpu_probe.json'))['good'])" 2>/dev/null \
    || echo 0-15
}
setup
case $step in
start)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
  python3 -m gpuoverhead adapters > "$out/adapters.txt" 2>&1
  plain_loop > "$out/plain_loop_before.json" 2>&1
  python3 benchmarks/submit_gap.py 3 > "$out/submit_gap.txt" 2>&1
  setsid nohup python3 -m gpuoverhead run --implementation all --processes 5 \
    --run-id h100-truth --out /tmp/results > /tmp/results/h100-truth.log 2>&1 < /dev/null &
  for _ in $(seq 1 100); do sleep 5; grep -q "results in" /tmp/results/h100-truth.log && break; done
  ;;
finish)
  for _ in $(seq 1 110); do grep -q "results in" /tmp/results/h100-truth.log && break; sleep 5; done
  plain_loop > "$out/plain_loop_after.json" 2>&1
  ;;
speed)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
  timed h100-default
  timed h100-full-wgpu-native --suite full --implementation wgpu-native
  python3 benchmarks/worker_start.py > /tmp/results/worker_start.txt 2>&1
  ;;
full)
  timed h100-full-dawn --suite full --implementation dawn
  timed h100-full-torch --suite full --implementation torch
  ;;
decode)  # within one device call: 600 s
  timed h100-decode --suite decode --implementation all --time-limit 540
  ;;
decode4)  # issue 25 and 27: the decode suite with its token loop, all implementations,
  # pinned, under a time limit it must keep; within one device call
  good=$(good_cpus)
  timeout 500 bash -c "$(declare -f timed); timed h100-decode --suite decode \
    --implementation all --time-limit 450 --affinity $good"
  ;;
crossover4|crossover5)  # issue 28: the recurrent step's crossover against the machine's
  # CPU, pinned; crossover5 after the product kernel's change (a lane group a row): WebGPU
  # and the CPU references only (PyTorch's forms did not change), limit 270 s
  good=$(good_cpus)
  if [ "$step" = crossover4 ]; then id=h100-crossover impl=wgpu-native,dawn,torch,cpu-ref limit=420
  else id=h100-crossover5 impl=wgpu-native,dawn,cpu-ref limit=270; fi
  timeout $((limit + 60)) bash -c "$(declare -f timed); timed $id --suite crossover \
    --implementation $impl --time-limit $limit --affinity $good"
  ;;
telemetry4)  # issue 30: NVML around every worker (.whl carries nvidia-ml-py), pinned: a
  # default run, then the decode suite's WebGPU jobs (J per token per implementation)
  good=$(good_cpus)
  timeout 110 bash -c "$(declare -f timed); timed h100-default-telemetry --affinity $good"
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  timeout 320 bash -c "$(declare -f timed); timed h100-decode-telemetry --suite decode \
    --implementation webgpu --time-limit 300 --affinity $good"
  ;;
decode-1.5b)  # within one device call: 600 s
  timed h100-decode-1.5b --suite decode-1.5b --implementation all --time-limit 540
  ;;
decode-f16)
  timed h100-decode-f16 --suite decode-f16 --implementation all --time-limit 540
  ;;
limits)  # within one device call: 600 s; the results are re-packed after each step
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
  timeout 60 bash -c "$(declare -f plain_loop); plain_loop" > "$out/plain_loop_before.json" 2>&1
  timeout 150 bash -c "$(declare -f timed); timed h100-default"
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  timeout 330 bash -c "$(declare -f timed); timed h100-decode-limit --suite decode --implementation all --time-limit 270"
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  timeout 60 bash -c "$(declare -f plain_loop); plain_loop" > "$out/plain_loop_after.json" 2>&1
  ;;
state)  # within one device call: 600 s; the results are re-packed after each step
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
  timeout 60 bash -c "$(declare -f plain_loop); plain_loop" > "$out/plain_loop_before.json" 2>&1
  timeout 120 bash -c "$(declare -f timed); timed h100-default-b"
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  timeout 260 bash -c "$(declare -f timed); timed h100-full-webgpu --suite full --implementation webgpu --time-limit 200"
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  timeout 60 bash -c "$(declare -f plain_loop); plain_loop" > "$out/plain_loop_after.json" 2>&1
  timeout 120 bash -c "$(declare -f timed); timed h100-default-c"
  ;;
aa)  # the A/A test at default settings: two default runs of 80 s each
  timeout 400 python3 -m gpuoverhead selftest --out /tmp/results > /tmp/results/selftest.log 2>&1
  ;;
episodes)  # within one device call: 600 s; the results are re-packed after each step
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
  python3 benchmarks/host_monitor.py > /tmp/results/host.csv 2>&1 &
  timeout 60 bash -c "$(declare -f plain_loop); plain_loop" > "$out/plain_loop_before.json" 2>&1
  t0=$(date +%s%N)
  timeout 400 python3 -m gpuoverhead selftest --out /tmp/results > /tmp/results/selftest.log 2>&1
  echo "selftest: $(( ($(date +%s%N) - t0) / 1000000 )) ms wall" | tee -a /tmp/results/times.txt
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  timeout 60 bash -c "$(declare -f plain_loop); plain_loop" > "$out/plain_loop_after.json" 2>&1
  kill %1
  ;;
pinned)  # within one device call: 600 s
  (cd .repro && [ -f plain_loop.so ] || gcc -O2 -shared -fPIC \
    -I"$(python3 -c 'import wgpu,os;print(os.path.dirname(wgpu.__file__))')/resources" \
    plain_loop.c -o plain_loop.so)
  timeout 120 python3 benchmarks/cpu_probe.py > "$out/cpu_probe_before.json" 2>> /tmp/results/probe.err
  good=$(python3 -c "import json;print(json.load(open('$out/cpu_probe_before.json'))['good'])")
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  timeout 120 bash -c "$(declare -f timed); timed h100-default-pinned --affinity $good"
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  t0=$(date +%s%N)
  timeout 400 python3 -m gpuoverhead selftest --affinity "$good" --out /tmp/results \
    > /tmp/results/selftest.log 2>&1
  echo "selftest: $(( ($(date +%s%N) - t0) / 1000000 )) ms wall" | tee -a /tmp/results/times.txt
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  timeout 60 python3 benchmarks/cpu_probe.py > "$out/cpu_probe_after.json" 2>> /tmp/results/probe.err
  ;;
round4)  # within one device call: 600 s; the results are re-packed after each step
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  timeout 60 taskset -c "$good" bash -c "$(declare -f plain_loop); plain_loop" \
    > /tmp/results/plain_loop_before.json 2>&1
  timeout 110 bash -c "$(declare -f timed); timed h100-default --affinity $good"
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  timeout 125 bash -c "$(declare -f timed); timed h100-full-webgpu --suite full \
    --implementation webgpu --time-limit 100 --affinity $good"
  timeout 60 taskset -c "$good" bash -c "$(declare -f plain_loop); plain_loop" \
    > /tmp/results/plain_loop_after.json 2>&1
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  t0=$(date +%s%N)
  timeout 190 python3 -m gpuoverhead selftest --affinity "$good" --out /tmp/results \
    > /tmp/results/selftest.log 2>&1
  echo "selftest: $(( ($(date +%s%N) - t0) / 1000000 )) ms wall" | tee -a /tmp/results/times.txt
  ;;
round6a)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  t0=$(date +%s%N)
  timeout 380 python3 -m gpuoverhead selftest --affinity "$good" --out /tmp/results \
    > /tmp/results/selftest.log 2>&1
  echo "selftest: $(( ($(date +%s%N) - t0) / 1000000 )) ms wall" | tee -a /tmp/results/times.txt
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  bounded 170 h100-readback-large --suite benchmarks/suites/readback-large.yaml \
    --implementation wgpu-native,dawn,torch --processes 2 --time-limit 150 --affinity "$good"
  ;;
round6b)
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  timeout 200 python3 benchmarks/decode_floor.py --bandwidth 3350 --variants \
    --json /tmp/results/decode_variants.json > /tmp/results/decode_variants.txt 2>&1
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  bounded 270 h100-crossover-torch --suite benchmarks/suites/crossover-torch.yaml \
    --implementation torch,cpu-ref --processes 2 --time-limit 240 --affinity "$good"
  ;;
round6c)
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  for rev in 7fb7ef8 41ea91a 4a6f7a0 5169579 f7bcbe7 aa2c899; do
    timeout 75 taskset -c "$good" python3 .revs/diag.py ".revs/$rev" wgpu-native,dawn \
      > "/tmp/results/diag-$rev.txt" 2>&1
    tar -C /tmp/results -czf "$out/results-$step.tgz" .
  done
  bounded 140 h100-readback-large --suite benchmarks/suites/readback-large.yaml \
    --implementation wgpu-native,dawn,torch --processes 2 --time-limit 120 --affinity "$good"
  ;;
round6d)
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  bounded 450 h100-decode --suite decode --implementation all --time-limit 420 \
    --affinity "$good"
  ;;
round6e)
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  bounded 360 h100-crossover-torch --suite benchmarks/suites/crossover-torch.yaml \
    --implementation torch,cpu-ref --processes 2 --time-limit 330 --affinity "$good"
  ;;
round6f)
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  bounded 450 h100-decode-1.5b --suite decode-1.5b --implementation all --time-limit 420 \
    --affinity "$good"
  ;;
round7)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  t0=$(date +%s%N)
  setsid python3 -m gpuoverhead run --affinity "$good" --run-id h100-interrupted \
    --out /tmp/results > /tmp/results/h100-interrupted.log 2>&1 &
  runner=$!
  sleep 50
  kill -INT -- -"$runner"
  wait "$runner"; code=$?
  echo "h100-interrupted: SIGINT at 50 s, exit $code, $(( ($(date +%s%N) - t0) / 1000000 )) ms wall" \
    | tee -a /tmp/results/times.txt
  tar -C /tmp/results -czf "$out/results-$step.tgz" .
  bounded 110 h100-default --affinity "$good"
  ;;
round8a|round8c)  # issue 25: the crossover suite as round5f ran it (one process a job then),
  # now with partial passes for the jobs whose start-up is cheap (round8c: each job with
  # the jobs its ratios are paired with)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  id=h100-crossover-partial; [ "$step" = round8c ] && id=h100-crossover-paired
  bounded 500 $id --suite crossover \
    --implementation wgpu-native,dawn,torch,cpu-ref --time-limit 450 --affinity "$good"
  ;;
round8b)  # issue 25: a default run and selftest at default settings with this round's code
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  bounded 110 h100-default --affinity "$good"
  t0=$(date +%s%N)
  timeout 380 python3 -m gpuoverhead selftest --affinity "$good" --out /tmp/results \
    > /tmp/results/selftest.log 2>&1
  echo "selftest: $(( ($(date +%s%N) - t0) / 1000000 )) ms wall" | tee -a /tmp/results/times.txt
  ;;
round5a)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  bounded 330 h100-crossover --suite crossover --implementation wgpu-native,dawn,torch,cpu-ref \
    --time-limit 300 --affinity "$good"
  # asked with --time-limit 120 first: refused before measuring (start-up alone 116 s);
  # results/round5-h100-engine is this line with 220, run in a call of its own
  bounded 250 h100-engine --suite engine --implementation wgpu-native,dawn,torch \
    --time-limit 220 --affinity "$good"
  ;;
round5b)
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  bounded 450 h100-decode-1.5b --suite decode-1.5b --implementation all --time-limit 420 \
    --affinity "$good"
  ;;
round5c)
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  bounded 300 h100-compile --suite compile --implementation torch --processes 1 \
    --affinity "$good"
  t0=$(date +%s%N)
  timeout 230 python3 -m gpuoverhead selftest --affinity "$good" --out /tmp/results \
    > /tmp/results/selftest.log 2>&1
  echo "selftest: $(( ($(date +%s%N) - t0) / 1000000 )) ms wall" | tee -a /tmp/results/times.txt
  ;;
round5d)
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  timeout 60 python3 benchmarks/read_streams.py > /tmp/results/read_streams.txt 2>&1
  bounded 450 h100-decode --suite decode --implementation all --time-limit 420 \
    --affinity "$good"
  ;;
round5e)
  timeout 90 python3 benchmarks/read_streams.py > /tmp/results/read_streams.txt 2>&1
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  bounded 500 h100-compile --suite compile --implementation torch --processes 1 \
    --affinity "$good"
  ;;
round5f)
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  bounded 520 h100-crossover-b --suite crossover --implementation wgpu-native,dawn,torch,cpu-ref \
    --time-limit 480 --affinity "$good"
  ;;
aa4)
  good=$(good_cpus)
  echo "affinity: $good" | tee -a /tmp/results/times.txt
  t0=$(date +%s%N)
  timeout 230 python3 -m gpuoverhead selftest --affinity "$good" --out /tmp/results \
    > /tmp/results/selftest.log 2>&1
  echo "selftest: $(( ($(date +%s%N) - t0) / 1000000 )) ms wall" | tee -a /tmp/results/times.txt
  ;;
selftest)
  python3 -m gpuoverhead selftest --processes 3 --implementation wgpu-native \
    --out /tmp/results > /tmp/results/selftest.log 2>&1
  ;;
esac
tail -n 5 /tmp/results/*.log
tar -C /tmp/results -czf "$out/results-$step.tgz" .
ls -la "$out"
