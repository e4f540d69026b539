"""Coverage and median half-width of the intervals over processes, per scenario, kind of
estimate and process count, in seeded simulations (gpuoverhead/analysis/coverage.py); the
first runs of every cell also go through combine.combine and pairs.paired_ratios, which
must agree; then how often compare's interval of two runs' ratio covers 1 in an A/A (the
same scenario measured twice), and, for two scenarios, against the interval compare used
before (the runs' own intervals combined around the ratio of their medians); then where
processes meet the machine's regimes (gpuoverhead/analysis/coverage_regimes.py): the CPU's
two states, figures from one state's rounds against every round's, and a process's life
(`--regimes`: that table alone). Prints the tables of docs/methodology.md ("Interval
coverage").
Run from the repository root:
`python benchmarks/investigations/coverage.py [--runs 10000] [--regimes | --modes]` (`--modes`: the
two modes' table alone, gpuoverhead/analysis/coverage_modes.py)."""

from __future__ import annotations

import argparse
import time

import numpy as np

from gpuoverhead.analysis import coverage, coverage_modes, coverage_regimes
from gpuoverhead.analysis.runs import combined_ratio, runs_ratio
from gpuoverhead.analysis.stats import Interval, between_processes

#: The process counts of the table: 2 (the CI suite), 3 (the default), 5, 6 (the first
#: with order statistics), 10 and 20 (pyperf's).
COUNTS = (2, 3, 5, 6, 10, 20)


def before_and_now(runs: int, seed: int) -> str:
    """Coverage of 1, median half-width (a factor) and the share of A/As whose ratio is
    within 10% with an interval inside x1.5 (what `same` asks), old interval and new."""
    def shown(i: Interval) -> str:
        return (f"{np.mean((i.low <= 1) & (i.high >= 1)):.1%}, "
                f"x{np.median(np.sqrt(i.high / i.low)):.2f}, "
                f"{np.mean((abs(i.value - 1) < 0.1) & (i.low >= 1 / 1.5) & (i.high <= 1.5)):.0%}")

    lines = ["| scenario | P | before: covers 1, half-width, within 10% and x1.5 | now |",
             "|---|---|---|---|"]
    for s in (coverage.AA_SCENARIOS[0], coverage.AA_SCENARIOS[-1]):
        for p in (3, 5, 10, 20):
            rng = np.random.default_rng([seed, p])
            base, new = (coverage.THETA * np.median(coverage.draw(s, runs, p, rng)[0], axis=2)
                         for _ in range(2))
            old = combined_ratio(between_processes(base, True), between_processes(new, True))
            lines.append(f"| {s.name} | {p} | {shown(old)} | {shown(runs_ratio(base, new))} |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="simulated runs per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--regimes", action="store_true", help="the regimes' table alone")
    parser.add_argument("--modes", action="store_true",
                        help="the two modes' table alone (analysis/coverage_modes.py)")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.modes:
        print(coverage.markdown(coverage_modes.table(args.runs, args.seed)))
    elif not args.regimes:
        print(coverage.markdown(coverage.table(args.runs, args.seed, COUNTS)))
        print()
        print(coverage.markdown(coverage.aa_table(args.runs, args.seed, COUNTS)))
        print()
        print(before_and_now(args.runs, args.seed))
        print()
    if not args.modes:
        print(coverage.markdown(coverage_regimes.table(args.runs, args.seed, COUNTS)))
    print(f"\n{args.runs} runs per cell, seed {args.seed}, "
          f"{time.perf_counter() - start:.0f} s")
