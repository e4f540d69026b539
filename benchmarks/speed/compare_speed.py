"""Benchmark (run by hand, not collected by pytest): `compare`'s computing over every
committed result set, each compared with itself (the verdicts, not their rendering). Prints
each set's estimates and CPU seconds, and the sum.

    python benchmarks/speed/compare_speed.py [RESULTS_FOLDER]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from gpuoverhead.present.compare import compare
from gpuoverhead.results import read


def main() -> None:
    root = (Path(sys.argv[1]) if len(sys.argv) > 1
            else Path(__file__).resolve().parents[2] / "results")
    total = 0.0
    for folder in sorted(p.parent for p in root.rglob("run.json")):
        base, new = read.load(folder), read.load(folder)
        start = time.process_time()
        rows = len(compare(base, new))
        took = time.process_time() - start
        total += took
        print(f"{folder.relative_to(root)}: {rows} estimates, {took:.2f} CPU-s")
    print(f"all: {total:.1f} CPU-s")


if __name__ == "__main__":
    main()
