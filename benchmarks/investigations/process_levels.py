"""What sets a worker process's level: does the speed of the CPU it runs on, just then,
explain why fresh processes of one job measure `submit` 40 µs in one and 60 in the next?

Fresh processes one after another, each pinned as one of MODES in turn:
`set` (every CPU the run may use, as a run pins today), `quiet1` (the CPU that ran a Python
loop fastest in a probe just before the process started) and `quiet3` (the three fastest).
Each process encodes and submits one empty dispatch N at a time through wgpu-native,
clock read before the wait, for SECONDS, and times a Python loop on its own CPU before and
after. Per mode: the spread of process medians (their range and sd over the median), and
the correlation of a process's level with its own loop's speed.

    python benchmarks/investigations/process_levels.py [--processes 30] [--seconds 1.5] \
        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from gpuoverhead.gpu import cpu_probe

MODES = ("set", "quiet1", "quiet3")
N = 32


def _loop_us() -> float:
    """µs of one small Python loop step on this CPU now (median of 5 windows of 4 ms)."""
    windows = []
    for _ in range(5):
        count, t0 = 0, time.perf_counter()
        while (now := time.perf_counter()) - t0 < 0.004:
            sum(range(200))
            count += 1
        windows.append((now - t0) / max(count, 1) * 1e6)
    return statistics.median(windows)


def _cpu_now() -> int:
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def child(seconds: float) -> dict:
    t0 = time.perf_counter()
    found = cpu_probe._webgpu_issue()  # the run's own probe path: wgpu-native, best adapter
    if found is None:
        raise SystemExit("no wgpu-native adapter")
    issue, name, wait = found
    t_device = time.perf_counter()
    for _ in range(3 * N):
        issue()
    wait()
    loop_before, cpus = _loop_us(), {_cpu_now()}
    rounds, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds:
        a = time.perf_counter()
        for _ in range(N):
            issue()
        b = time.perf_counter()
        wait()
        rounds.append((b - a) / N * 1e6)
        cpus.add(_cpu_now())
    return {"submit_us": statistics.median(rounds), "rounds": rounds,
            "loop_before_us": loop_before, "loop_after_us": _loop_us(),
            "cpus_seen": sorted(cpus), "startup_s": round(t_device - t0, 3),
            "path": name}


def quietest(allowed: list[int], k: int) -> tuple[list[int], dict[int, float]]:
    """The k CPUs that run the loop fastest now, and each CPU's loop µs."""
    before = os.sched_getaffinity(0)
    speed = {}
    try:
        for cpu in allowed:
            os.sched_setaffinity(0, {cpu})
            speed[cpu] = _loop_us()
    finally:
        os.sched_setaffinity(0, before)
    return sorted(speed, key=speed.get)[:k], speed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        os.sched_setaffinity(0, {int(c) for c in args.child.split(",")})
        print(json.dumps(child(args.seconds)))
        return
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) > 2:  # leave out the CPU a full probe finds slowest, as a run does
        _, speed = quietest(allowed, 1)
        allowed = [c for c in allowed if c != max(speed, key=speed.get)]
    found = []
    for i in range(args.processes):
        mode = MODES[i % len(MODES)]
        probe: dict[int, float] = {}
        cpus = allowed
        if mode != "set":
            cpus, probe = quietest(allowed, int(mode[-1]))
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, __file__, "--child", ",".join(map(str, cpus)),
                              "--seconds", str(args.seconds)], capture_output=True, text=True,
                             timeout=120)
        if out.returncode:
            print(out.stderr[-2000:], file=sys.stderr)
            continue
        rec = json.loads(out.stdout.strip().splitlines()[-1])
        rec.update(mode=mode, index=i, pinned=cpus, probe=probe,
                   wall_s=round(time.perf_counter() - t0, 3), at=time.time())
        found.append(rec)
        print(f"{i:3d} {mode:7s} cpus {rec['cpus_seen']} submit {rec['submit_us']:6.1f} µs "
              f"loop {rec['loop_before_us']:.2f}/{rec['loop_after_us']:.2f} µs "
              f"start {rec['startup_s']:.2f} s", flush=True)
    for mode in MODES:
        rows = [r for r in found if r["mode"] == mode]
        if len(rows) < 3:
            continue
        lv = [r["submit_us"] for r in rows]
        lp = [(r["loop_before_us"] + r["loop_after_us"]) / 2 for r in rows]
        mid = statistics.median(lv)
        print(f"{mode}: {len(rows)} processes, median {mid:.1f} µs, range "
              f"{(max(lv) - min(lv)) / mid:.0%}, sd {statistics.stdev(lv) / mid:.0%}, "
              f"corr(level, own loop) {statistics.correlation(lv, lp):+.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(found, f)


if __name__ == "__main__":
    main()
