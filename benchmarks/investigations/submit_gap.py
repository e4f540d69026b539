"""Why does `submit` cost more inside gpuoverhead's worker than in a plain loop? Candidates,
each in fresh processes, alternating in time (round r runs every variant once):

- `alone`: only wgpu imported, a device with nothing else on it, the native C loop;
- `dawn-loaded`: the same after `import wgpudawn` (its native library in the process, as
  every worker had before workers imported only the implementation they measure);
- `dawn-enumerated`: the same after Dawn enumerated its adapters (a second Vulkan instance);
- `timestamps+limits`: the device asked for timestamp queries and the suite's limits;
- `busy-device`: 24 more buffers, a readback and a timestamp query set used before timing;
- `sweep`: `alone`, but N swept over the default suite's 1..1024 in shuffled rounds, the
  cost per op being the Theil-Sen slope, as gpuoverhead estimates it;
- `worker`: gpuoverhead's own reference job (run/worker.py: a spawned worker process,
  interleaved rounds, warm-up, the stop rule), its slope as the summary reports it.

`python benchmarks/investigations/submit_gap.py big-encoder` shows what the sweep found:
submit cost per op (N = 256, issue time) before and after one command encoder of 1024
compute passes on the same device, and on a second device of the same process.

Each prints the median cost per op (µs) over 15 samples of N = 256 ops and one wait, per
encoding, timing issue and wait together like ../shared/repro/plain_loop.py, and the issue
time alone. Run from the repository root: `python benchmarks/investigations/submit_gap.py [rounds]`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from time import perf_counter_ns

import numpy as np

VARIANTS = ("alone", "dawn-loaded", "dawn-enumerated", "timestamps+limits", "busy-device",
            "sweep", "worker")
SWEEP = (1, 4, 16, 64, 256, 1024)
N, SAMPLES = 256, 15


def child(variant: str) -> dict[str, dict[str, float]]:
    import numpy as np

    if variant == "worker":
        return _worker()
    if variant.startswith("dawn"):
        import wgpudawn

        if variant == "dawn-enumerated":
            wgpudawn.gpu.enumerate_adapters_sync()
    from gpuoverhead.cases import Case, Group, Kernel, Sampling
    from gpuoverhead.drivers import webgpu
    from gpuoverhead.gpu import adapters
    from gpuoverhead.gpu.layers import native
    from gpuoverhead.gpu.targets import build_targets, compile_pipeline
    from gpuoverhead.gpu.wait import waiter
    from gpuoverhead.resources import SHADERS_DIR

    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], None, None)[0]
    features = ["timestamp-query"] if variant in ("timestamps+limits", "busy-device") else []
    limits = {"max-buffer-size": 1 << 28} if variant == "timestamps+limits" else {}
    device = found.adapter.request_device_sync(required_features=features,
                                               required_limits=limits)
    path = SHADERS_DIR / "empty.wgsl"
    kernel = Kernel("empty", path, path.read_text(), "first")
    case = Case("gap", "empty", 1, 64, "sequential", "submit", "wait", (N,), "native")
    group = Group("gap", kernel, 1, 64, Sampling(1.0, 0.1, 3, 3, 1), (case,))
    target = build_targets(device, compile_pipeline(device, kernel, 64), group,
                           np.random.default_rng(0), webgpu.binding("wgpu-native"),
                           waiter(device))[case]
    keep = []
    if variant == "busy-device":
        keep = [device.create_buffer(size=1 << 20, usage=0x80 | 0x4 | 0x8) for _ in range(24)]
        device.queue.read_buffer(target.data)
        keep.append(device.create_query_set(type="timestamp", count=2))
    loop = native.load()
    issue = native.issuers(loop, target)
    if variant == "sweep":
        return _sweep(issue, target.wait)
    out: dict[str, dict[str, float]] = {}
    for encoding in ("submit", "pass", "dispatch"):
        issue[encoding](N)
        target.wait()
        walls, issues = [], []
        for _ in range(SAMPLES):
            t0 = perf_counter_ns()
            issue[encoding](N)
            t1 = perf_counter_ns()
            target.wait()
            walls.append((perf_counter_ns() - t0) / N / 1e3)
            issues.append((t1 - t0) / N / 1e3)
        out[encoding] = {"wall": float(np.median(walls)), "issue": float(np.median(issues))}
    return out


def _sweep(issue: dict, wait: object) -> dict[str, dict[str, float]]:
    """Every (encoding, N) once per round in a shuffled order, 20 rounds; per-round slopes."""
    import numpy as np

    from gpuoverhead.analysis.stats import round_fits

    rng = np.random.default_rng(1)
    units = [(e, n) for e in ("submit", "pass", "dispatch") for n in SWEEP]
    walls = {u: [] for u in units}
    issues = {u: [] for u in units}
    for _ in range(20):
        for k in rng.permutation(len(units)):
            encoding, n = units[k]
            t0 = perf_counter_ns()
            issue[encoding](n)
            t1 = perf_counter_ns()
            wait()
            walls[units[k]].append(perf_counter_ns() - t0)
            issues[units[k]].append(t1 - t0)
    out = {}
    for encoding in ("submit", "pass", "dispatch"):
        w = np.array([walls[(encoding, n)] for n in SWEEP]).T[5:]
        i = np.array([issues[(encoding, n)] for n in SWEEP]).T[5:]
        out[encoding] = {"wall": float(np.median(round_fits(np.array(SWEEP), w)[0])) / 1e3,
                         "issue": float(np.median(round_fits(np.array(SWEEP), i)[0])) / 1e3,
                         "issue_per_op_at_n": {n: float(np.median(i[:, j])) / n / 1e3
                                               for j, n in enumerate(SWEEP)}}
    return out


def _worker() -> dict[str, dict[str, float]]:
    """gpuoverhead's reference job for the empty kernel, through its own worker."""
    from dataclasses import replace

    from gpuoverhead.cases import REFERENCE
    from gpuoverhead.drivers import webgpu
    from gpuoverhead.drivers.base import Job, Offer
    from gpuoverhead.gpu import adapters
    from gpuoverhead.gpu.layers import native
    from gpuoverhead.methods import series
    from gpuoverhead.resources import DEFAULT_SUITE
    from gpuoverhead.run import worker
    from gpuoverhead.run.budget import Budget
    from gpuoverhead.suite.expand import load_suite

    native.load()
    group = load_suite(DEFAULT_SUITE).groups[0]
    cases = tuple(replace(c, variant=REFERENCE) for c in group.cases
                  if c.layer == "native" and c.methodology == "sequential")
    group = replace(group, cases=cases)
    found = adapters.discover([webgpu.binding("wgpu-native")])[0]
    info = adapters.select(found, None, None)[0].info
    task = worker.Task(Job(group, Offer(info, settings={"layers": {"native": {}}}), "webgpu"),
                       Budget(1.0), (0, 0, 0, 0), 0)
    outcome = worker.run(task, lambda *a: None)
    found = series(outcome.samples, outcome.calibration)
    out: dict[str, dict[str, float]] = {}
    for key, s in found.items():
        metric = {"per_dispatch_ns": "wall", "cpu_per_dispatch_ns": "issue"}.get(key.metric)
        if metric:
            out.setdefault(key.case.encoding, {})[metric] = float(np.median(s.values)) / 1e3
    return out


def big_encoder() -> None:
    """Submit cost per op before and after one encoder of 1024 passes, on that device (A)
    and on a second device (B) of the same process."""
    import numpy as np

    from gpuoverhead.cases import Case, Group, Kernel, Sampling
    from gpuoverhead.drivers import webgpu
    from gpuoverhead.gpu import adapters
    from gpuoverhead.gpu.layers import native
    from gpuoverhead.gpu.targets import build_targets, compile_pipeline
    from gpuoverhead.gpu.wait import waiter
    from gpuoverhead.resources import SHADERS_DIR

    found = adapters.select(adapters.discover([webgpu.binding("wgpu-native")])[0], None, None)[0]
    path = SHADERS_DIR / "empty.wgsl"
    kernel = Kernel("empty", path, path.read_text(), "first")
    case = Case("gap", "empty", 1, 64, "sequential", "submit", "wait", (N,), "native")
    group = Group("gap", kernel, 1, 64, Sampling(1.0, 0.1, 3, 3, 1), (case,))
    loop, samplers = native.load(), []
    for _ in range(2):
        device = found.adapter.request_device_sync()
        target = build_targets(device, compile_pipeline(device, kernel, 64), group,
                               np.random.default_rng(0), webgpu.binding("wgpu-native"),
                               waiter(device))[case]
        samplers.append((native.issuers(loop, target), target))  # the target keeps the
        # pipeline and bind group alive: the C loop holds only their handles

    def per_op(which: int, encoding: str = "submit", n: int = N) -> float:
        issue, wait = samplers[which][0], samplers[which][1].wait
        t0 = perf_counter_ns()
        issue[encoding](n)
        t1 = perf_counter_ns()
        wait()
        return round((t1 - t0) / n / 1e3, 1)

    for _ in range(5):
        per_op(0), per_op(1)
    print("before:           A", [per_op(0) for _ in range(6)], "B", [per_op(1) for _ in range(6)])
    per_op(0, "pass", 1024)
    print("after 1024 passes on A: A", [per_op(0) for _ in range(6)],
          "B", [per_op(1) for _ in range(6)])


def main(rounds: int) -> None:
    results: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    for _ in range(rounds):
        for variant in VARIANTS:
            proc = subprocess.run([sys.executable, __file__, "--child", variant],
                                  capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                results[variant].append({"error": proc.stderr.strip().splitlines()[-1:]})
                continue
            results[variant].append(json.loads(proc.stdout))
    print(json.dumps(results))
    for variant, found in results.items():
        ok = [f for f in found if "error" not in f]
        if not ok:
            print(f"{variant:18s} failed: {found[0]}")
            continue
        cells = []
        for enc in ("submit", "pass", "dispatch"):
            wall = [f[enc]["wall"] for f in ok]
            issue = [f[enc]["issue"] for f in ok]
            cells.append(f"{enc} {min(wall):6.1f}-{max(wall):6.1f} "
                         f"(issue {min(issue):5.1f}-{max(issue):5.1f})")
        print(f"{variant:18s} " + "  ".join(cells))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2])))
    elif sys.argv[1:] == ["big-encoder"]:
        big_encoder()
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
