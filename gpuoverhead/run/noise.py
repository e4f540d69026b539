"""Noise hygiene, as pyperf's checks do: is this machine in a state to time anything?

Checked before and after a run, recorded in run.json (`noise`) and turned into warnings:
- the CPU frequency governor, where Linux exposes it: anything but `performance` lets
  clocks move under the measurement;
- the load average against the CPU count: other busy processes share the CPU that issues
  the dispatches (the run itself adds about one).
Where neither can be read (Windows, macOS, containers without /sys), that is recorded too.
A CI over its target after the budget is warned about per benchmark by the runner.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

GOVERNORS = Path("/sys/devices/system/cpu")
#: Load per CPU above which the machine counts as busy.
BUSY_LOAD_PER_CPU = 0.5


def governors(root: Path = GOVERNORS) -> list[str]:
    """The distinct scaling governors of the CPUs, [] where they cannot be read."""
    found = set()
    for path in root.glob("cpu[0-9]*/cpufreq/scaling_governor"):
        try:
            found.add(path.read_text().strip())
        except OSError:
            continue
    return sorted(found)


def check() -> tuple[dict[str, Any], list[str]]:
    """What the machine looks like now, and the warnings it deserves."""
    cpus = os.cpu_count() or 1
    state: dict[str, Any] = {"cpus": cpus, "governors": governors()}
    warnings = []
    if state["governors"] and state["governors"] != ["performance"]:
        warnings.append(f"CPU frequency governor {', '.join(state['governors'])} (not "
                        "performance): clocks can move under the measurement; "
                        "`cpupower frequency-set -g performance` fixes it")
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has no load average
        load = None
    state["load_1min"] = load
    if load is not None and load > BUSY_LOAD_PER_CPU * cpus + 1:
        warnings.append(f"the machine is busy: load average {load:.1f} on {cpus} CPUs; "
                        "other processes compete with the one issuing dispatches")
    return state, warnings
