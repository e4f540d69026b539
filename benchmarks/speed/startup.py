"""Cold-start cost of the commands a user types first: the median of 10 fresh processes
each, wall time and CPU seconds (user plus system of the process and the worker processes it
waited for), for `--help`, for `validate` of the shipped CI suite without compiling its
kernels, and for `run` of a tiny suite (one empty kernel, naive, one process, 0.2 s of
budget: a run's fixed cost whatever its budget, with `--implementation`). With `--against
ROOT`, each command also as the package of another checkout (`ROOT`, e.g. one at the
previous commit) runs it, alternating with this one, and the paired median difference.

Run from the repository root: `python benchmarks/speed/startup.py [--runs 10]
[--implementation wgpu-native] [--against ROOT] [COMMAND...]` (default: every command).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = """name: tiny
defaults: {n_sweep: [1, 4], budget_s: 0.2, min_rounds: 3, methodologies: [naive],
           layers: [wrapper]}
benchmarks: [{name: empty, kernel: empty, elements: 1}]
"""


def commands(folder: Path, implementation: str) -> dict[str, list[str]]:
    """Each command's arguments; a run writes its suite and results under `folder`."""
    suite = folder / "tiny.yaml"
    suite.write_text(TINY)
    return {"--help": ["--help"],
            "validate": ["validate", str(ROOT / "configs" / "ci.yaml"), "--no-compile"],
            "run": ["run", "--suite", str(suite), "--implementation", implementation,
                    "--processes", "1", "--out", str(folder / "runs"), "--force",
                    "--run-id", "tiny"]}


def cold_start(args: list[str], root: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds of one fresh process running `root`'s package."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "gpuoverhead", *args], cwd=root,
                            env={**os.environ, "PYTHONPATH": str(root)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with proc.stderr:  # type: ignore[union-attr]
        stderr = proc.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)  # its usage: Popen.wait() would drop it
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{args[0]} in {root} failed: {stderr.decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commands", nargs="*")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--implementation", default="wgpu-native")
    parser.add_argument("--against", type=Path, help="another checkout's root")
    args = parser.parse_args()
    roots = {"": ROOT} | ({" (against)": args.against.resolve()} if args.against else {})
    with tempfile.TemporaryDirectory() as folder:
        known = commands(Path(folder), args.implementation)
        for name in args.commands or known:
            found: dict[str, list[tuple[float, float]]] = {r: [] for r in roots}
            for i in range(args.runs):
                for label in list(roots)[::1 if i % 2 == 0 else -1]:  # alternating order
                    found[label].append(cold_start(known[name], roots[label]))
            for label, times in found.items():
                print(f"{name + label:20s} median of {args.runs} cold starts: "
                      f"{statistics.median(t[0] for t in times):.3f} s, "
                      f"{statistics.median(t[1] for t in times):.3f} CPU-s", flush=True)
            if args.against:
                diffs = [a[1] - b[1] for a, b in zip(*found.values(), strict=True)]
                print(f"{name:20s} this - against, paired: median "
                      f"{statistics.median(diffs):+.3f} CPU-s", flush=True)


if __name__ == "__main__":
    main()
