"""Cold-start time of the commands a user types first: the median of 10 fresh processes
each, for `--help` and for `validate` of the shipped CI suite without compiling its kernels.
Run from the repository root: `python benchmarks/speed/startup.py`."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {"--help": ["--help"],
            "validate": ["validate", str(ROOT / "configs" / "ci.yaml"), "--no-compile"]}


def cold_start(args: list[str], runs: int = 10) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gpuoverhead", *args], cwd=ROOT, check=True,
                       capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    for name, args in COMMANDS.items():
        print(f"{name:10s} median of 10 cold starts: {cold_start(args):.3f} s")
