"""Where a run's planning goes, from the command's start to its first worker: the CPU probe,
reading the suite, and each implementation family's offers (adapters, kernels compiled once,
a browser started) and jobs, each timed in this process as `gpuoverhead run` makes them.

Run from the repository root: `python benchmarks/planning.py [SUITE] [--implementation all]`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from gpuoverhead.drivers import registry
from gpuoverhead.drivers.base import Request
from gpuoverhead.resources import suite_path
from gpuoverhead.run import cpus
from gpuoverhead.run.quick_types import quick_types
from gpuoverhead.suite.expand import load_suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", nargs="?", default="configs/ci.yaml")
    parser.add_argument("--implementation", default="all")
    args = parser.parse_args()
    steps: list[tuple[str, float]] = []

    def timed(name: str, started: float) -> float:
        now = time.perf_counter()
        steps.append((name, now - started))
        return now

    t = start = time.perf_counter()
    cpus.choose(None)
    t = timed("CPU probe", t)
    suite = load_suite(suite_path(Path(args.suite)), False)
    t = timed("suite", t)
    base, notes = Request(suite, None, None, None), []
    asked = registry.parse(args.implementation)
    with quick_types():
        for driver in registry.drivers():
            request = registry.request(asked, driver, base)
            if request is None:
                continue
            offers = driver.offers(request, notes)
            t = timed(f"{driver.FAMILY}: offers", t)
            jobs = [j for g in suite.groups for o in offers for j in driver.jobs(g, o, notes)]
            t = timed(f"{driver.FAMILY}: {len(jobs)} jobs", t)
    for name, seconds in steps:
        print(f"{name:28s} {seconds:7.2f} s")
    print(f"{'planning':28s} {time.perf_counter() - start:7.2f} s")


if __name__ == "__main__":
    main()
