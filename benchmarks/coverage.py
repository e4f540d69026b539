"""Coverage and median half-width of the intervals over processes, per scenario, kind of
estimate and process count, in seeded simulations (gpuoverhead/analysis/coverage.py); the
first runs of every cell also go through combine.combine and pairs.paired_ratios, which
must agree. Prints the table of docs/methodology.md ("Interval coverage").
Run from the repository root: `python benchmarks/coverage.py [--runs 10000]`."""

from __future__ import annotations

import argparse
import time

from gpuoverhead.analysis import coverage

#: The process counts of the table: 2 (the CI suite), 3 (the default), 5, 6 (the first
#: with order statistics), 10 and 20 (pyperf's).
COUNTS = (2, 3, 5, 6, 10, 20)

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="simulated runs per cell")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    found = coverage.table(args.runs, args.seed, COUNTS)
    print(coverage.markdown(found))
    print(f"\n{args.runs} runs per cell, seed {args.seed}, "
          f"{time.perf_counter() - start:.0f} s")
