"""Where a run's planning goes, from the command's start to its first worker, as `gpuoverhead
run` makes it in this process: the run's imports, the CPU probe (run/cpus.py; kept an hour
this boot), the plan (the suite read, each implementation family's offers at once: adapters,
kernels compiled, a browser asked and torch's device found, or their answers kept from the
last day) and the schedule (the time limit's plan). Run it twice: the first run on a boot
probes and asks; what a user's next runs wait for is the second.

Run from the repository root: `python benchmarks/speed/planning.py [SUITE] [--implementation all]
[--time-limit S]`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

START = time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", nargs="?", default="configs/ci.yaml")
    parser.add_argument("--implementation", default="all")
    parser.add_argument("--time-limit", type=float, default=None)
    args = parser.parse_args()
    from gpuoverhead.drivers import registry
    from gpuoverhead.resources import suite_path
    from gpuoverhead.run import cpus, runner, startups
    from gpuoverhead.run.plan import RunOptions, prepare

    start = time.perf_counter()
    cpus.choose(None)
    probed = time.perf_counter()
    options = RunOptions(suite=suite_path(Path(args.suite)), out_root=Path("unused"),
                         implementations=registry.parse(args.implementation),
                         time_limit_s=args.time_limit, started=time.monotonic())
    plan = prepare(options)
    planned = time.perf_counter()
    runner._schedule(plan, options.started, startups.load())
    done = time.perf_counter()
    for name, seconds in (("imports", start - START), ("CPU probe", probed - start),
                          ("plan", planned - probed), ("schedule", done - planned),
                          ("planning", done - start), ("all", done - START)):
        print(f"{name:10s} {seconds:6.2f} s")


if __name__ == "__main__":
    main()
