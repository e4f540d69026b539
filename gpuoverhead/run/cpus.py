"""Which CPUs a run uses: all it may, less those the probe finds much slower at issuing work.

A run on a cloud VM cannot know its CPUs in advance: on a lent H200 VM vCPU 14 ran `submit`
3.4x slower than the other 15, a worker process that landed there measured 55 µs where the
others measured 16, and that process alone widened its job's interval to [4-148] µs. So
before anything is planned the run times the issue path on every CPU it may use
(gpu/cpu_probe.py, well under a second; kept an hour this boot) and keeps itself and its
workers (they inherit the mask) off the CPUs at least SLOW_FACTOR times the median of the
others, says so in one line and records the probe in run.json (`host.cpus`). `--affinity`
decides instead, and is recorded alike.
Where the OS cannot pin (macOS, Windows) nothing is probed; a process that measured far
slower than its job's others is left out of the estimate (analysis/odd.py) wherever it ran.

What holds of the probe, and what the regimes explain (issue 54, 56): a slow vCPU stayed
slow all day, so a CPU left out stays out for the hour the probe is kept; each CPU is judged
at its best window (gpu/cpu_probe.py), since its median window sampled the Python-speed
state it met then, whose ratio (1.5-1.8x) is SLOW_FACTOR's; a CPU made busy after the probe
is used as if quiet for that hour, but no worker is pinned to one CPU (the OS moves it off a
busy one), the run's figures are those of one CPU state (analysis/states.py), and a process
far slower than its job's others is left out (analysis/odd.py).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from gpuoverhead.gpu import cpu_probe, kept
from gpuoverhead.run.environment import pin

#: A CPU this many times slower than the median of the others at issuing work is left out.
SLOW_FACTOR = 1.5
#: The probe is kept this long for this boot and these CPUs (gpuoverhead/gpu/kept.py): it took
#: 0.85 s of a run's planning on the 2-core machine and 2.4-2.9 s on the H200 VM, whose
#: slow vCPU stayed slow all day; a CPU busy for a while is left out that long, as the
#: start line says.
KEEP_S = 3600.0
FILE = "cpus.json"


def choose(affinity: str | None) -> tuple[dict[str, Any], list[str]]:
    """Pin this process (and so its workers) to the CPUs the run should use; run.json's
    record of the choice, and the lines to say at the start."""
    if affinity is not None:
        pin(affinity)
        return {"affinity": affinity, "used": span(sorted(os.sched_getaffinity(0)))}, []
    if not hasattr(os, "sched_setaffinity"):
        return {"affinity": None, "probe": "not made: this OS cannot pin processes"}, []
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return {"affinity": None, "used": span(allowed)}, []
    probe, age = _kept(allowed), None
    if probe is not None:
        probe, age = probe
    else:
        try:
            probe = _measure(allowed)
        except Exception as exc:  # a driver that fails here fails the plan too, in its words
            return {"affinity": None, "used": span(allowed),
                    "probe": f"failed: {' '.join(str(exc).split())[:200]}"}, []
        kept.put(FILE, allowed, {"seconds": {n: {str(c): s for c, s in by_cpu.items()}
                                             for n, by_cpu in probe.seconds.items()},
                                 "took_s": probe.took_s, "time": time.time()})
    used, record, lines = decide(probe, allowed)
    if age is not None:
        record["probe"]["kept_from_s_ago"] = round(age)
        lines = [f"{line} (probed {age / 60:.0f} min ago, kept for {KEEP_S / 3600:g} h this boot)"
                 for line in lines]
    os.sched_setaffinity(0, used)
    return record, lines


@contextlib.contextmanager
def restored() -> Iterator[None]:
    """This process's CPUs as they were once a run that `choose` pinned is over: a second run
    in the same process (`selftest --back-to-back`) chooses among them all again, with the
    probe kept for them, as a second plain run would, not among what the first one chose
    (it re-probed a subset and left out 4 more vCPUs on the H200, 2026-11-29)."""
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        yield
    finally:
        if before is not None:
            os.sched_setaffinity(0, before)


def _measure(allowed: list[int]) -> cpu_probe.Probe:
    probe = cpu_probe.measure(allowed)
    if slow := _slow(probe):  # a CPU busy for a moment is not left out: slow again
        fastest = {min(by_cpu, key=by_cpu.get) for by_cpu in probe.seconds.values()}
        again = cpu_probe.measure(sorted({*slow, *fastest}))
        probe = replace(probe, took_s=probe.took_s + again.took_s, seconds={
            name: {c: min(s, again.seconds[name].get(c, s)) for c, s in by_cpu.items()}
            for name, by_cpu in probe.seconds.items()})
    return probe


def _kept(allowed: list[int]) -> tuple[cpu_probe.Probe, float] | None:
    """The probe of these CPUs made this boot within KEEP_S, and its age; None if none or
    it does not read as one."""
    return kept.get(FILE, allowed, KEEP_S, lambda found: _as_probe(found, allowed))


def _as_probe(found: Any, allowed: list[int]) -> tuple[cpu_probe.Probe, float] | None:
    """A kept probe of `allowed` and its age, or None where it is not one (gpu/kept.py says
    so)."""
    try:
        seconds = {str(n): {int(c): float(s) for c, s in by_cpu.items()}
                   for n, by_cpu in found["seconds"].items()}
        probe = cpu_probe.Probe(seconds, float(found["took_s"]))
        age = time.time() - float(found["time"])
    except (TypeError, KeyError, ValueError, AttributeError, OverflowError):
        return None
    ok = seconds and math.isfinite(probe.took_s) and math.isfinite(age) and all(
        set(by_cpu) == set(allowed) and all(math.isfinite(s) and s > 0 for s in by_cpu.values())
        for by_cpu in seconds.values())
    return (probe, age) if ok else None


def decide(probe: cpu_probe.Probe, allowed: list[int]
           ) -> tuple[list[int], dict[str, Any], list[str]]:
    """The CPUs to use, run.json's record of them and the line to say, from a probe."""
    slow = _slow(probe)
    record = {"affinity": None, "probe": {
        "seconds": round(probe.took_s, 3), "slow_factor": SLOW_FACTOR,
        "us": {name: {str(c): round(s * 1e6, 3) for c, s in by_cpu.items()}
               for name, by_cpu in probe.seconds.items()}}}
    if not slow:  # against the others' median, never most of them
        return allowed, {**record, "used": span(allowed), "slow": []}, []
    if len(slow) == len(allowed):  # each slower on a path: other work moved between them
        return allowed, {**record, "used": span(allowed), "slow": [],
                         "undecided": sorted(slow)}, [
            "CPUs differ: " + "; ".join(
                f"CPU {c} ran {f:.1f}x slower than the others ({path})"
                for c, (f, path) in sorted(slow.items()))
            + ": other work moved between them while they were probed, so none is left out;"
            f" the run uses CPUs {span(allowed)}"]
    used = [c for c in allowed if c not in slow]
    worst = max(slow, key=lambda c: slow[c][0])
    factor, path = slow[worst]
    normal = _others(probe.seconds[path], worst)
    which = f"CPU {worst}" if len(slow) == 1 else f"CPUs {span(sorted(slow))}"
    return used, {**record, "used": span(used), "slow": sorted(slow)}, [
        f"{which} ran {factor:.1f}x slower than the other CPUs ({path}: "
        f"{probe.seconds[path][worst] * 1e6:.1f} µs a step against {normal * 1e6:.1f} µs, "
        f"their median): the run uses CPUs {span(used)}; --affinity {span(allowed)} "
        "includes it"]


def _slow(probe: cpu_probe.Probe) -> dict[int, tuple[float, str]]:
    """The CPUs at least SLOW_FACTOR times the median of the others on some path, with their
    largest factor and its path. Against the fastest, a fresh H200 VM's first probe left out
    6 of 16 CPUs at 1.4-1.7x its one fastest; against the rest, vCPU 14 alone (1.9x)."""
    found: dict[int, tuple[float, str]] = {}
    for path, by_cpu in probe.seconds.items():
        for cpu, seconds in by_cpu.items():
            factor = seconds / _others(by_cpu, cpu)
            if factor >= SLOW_FACTOR and factor > found.get(cpu, (0,))[0]:
                found[cpu] = (factor, path)
    return found


def _others(by_cpu: dict[int, float], cpu: int) -> float:
    """The median of the other CPUs' times."""
    return float(np.median([s for c, s in by_cpu.items() if c != cpu]))


def span(cpus: list[int]) -> str:
    """CPU numbers as --affinity takes them: 0-13,15."""
    parts: list[str] = []
    for cpu in cpus:
        if parts and cpu == int(parts[-1].rpartition("-")[2]) + 1:
            parts[-1] = f"{parts[-1].partition('-')[0]}-{cpu}"
        else:
            parts.append(str(cpu))
    return ",".join(parts)
