"""Worker processes measured again: one far slower than its job's others (analysis/odd.py)
is left out of the job's estimates, and where the time left holds it, its job runs one more
fresh process in its place before the benchmark is finished, so that the estimate keeps its
count of processes. The simulation in issue 40 (processes 3.4x slow at p = 0.06, levels
log-normal by 15%) kept 94-95% coverage at a clean run's width this way, for 0.2-0.6 more
processes a job; leaving the process out without a new one narrows the count instead.

Under a time limit a process is run again only where its start-up and least sampling fit
beside the least of every process the run still has to start (it never takes another
job's place); without a limit, always. An A/A run's processes are judged within their half,
as each half is finished, and its fresh processes run a pair at a time, one in each half
(in place of that half's next far-off process, else beside the other's), so that the two
halves keep sharing the machine's time (run/passes.py `half_of`): a process of one half
alone, after all of the other's,
would measure a stretch of the machine's time that the other half did not. run.json names
the process a new one was measured again for, or the one it was measured beside.
"""

from __future__ import annotations

import statistics
from itertools import zip_longest

from gpuoverhead.analysis.odd import odd_processes
from gpuoverhead.methods import series
from gpuoverhead.run.budget import HANDBACK_S, Budget, Schedule, Slot
from gpuoverhead.run.passes import half_of
from gpuoverhead.run.worker import Outcome

#: run.json's key, in the new process's entry, for the process it was measured again for.
AGAIN_FOR = "measured_again_for"
#: run.json's key, in an A/A run's new process that replaces none, for the other half's
#: process it was measured beside.
BESIDE = "measured_beside"


def odd(outcomes: list[Outcome], halves: int = 1) -> list[tuple[int | None, ...]]:
    """The numbers of the processes of one job that finishing will leave out as far off,
    less those already measured again, as they are to be measured again: one at a time, or
    in an A/A run (`halves` 2) one of each half at a time, half a's first (None where that
    half has none left: a process measured beside the other's)."""
    again = {o.device_notes.get(AGAIN_FOR) for o in outcomes}
    found = []
    for half in range(halves):  # judged as each half is finished
        done = [o for o in outcomes if half_of(o.process, halves) == half and not o.cut
                and not o.error and o.samples is not None]
        every = [series(o.samples, o.calibration, o.clock_offset_ns) for o in done]
        found.append([done[i].process for i, _ in odd_processes(every)
                      if done[i].process not in again])
    return list(zip_longest(*found))


def slots_for(schedule: Schedule, last: Slot, job: int, outcomes: list[Outcome],
              processes: tuple[int | None, ...]) -> list[tuple[Slot, Budget, dict]] | None:
    """The fresh processes of `job` (of `last`'s benchmark, whose last process `last` was)
    in place of `processes` (an entry a half, as `odd` gives them), in the order they run:
    each slot, its budget and its notes for run.json (AGAIN_FOR, or BESIDE); None where
    the time left does not hold them all beside every process still to start."""
    halves = len(processes)
    numbers: list[int] = []
    for half in range(halves):  # a number a half, the first free after every process's
        number = max(o.process for o in outcomes) + 1
        while half_of(number, halves) != half or number in numbers:
            number += 1
        numbers.append(number)
    slots = [Slot(last.benchmark, n, job, *schedule.jobs[last.benchmark][job])
             for n in sorted(numbers)]  # in turn
    later = sum(schedule.least_s(s) for s in schedule.remaining(last, schedule.processes)
                if s != last)
    least = [schedule.least_s(s) + HANDBACK_S for s in slots]
    if sum(least) + HANDBACK_S + later > schedule.until_deadline_s():
        return None
    given = [o.budget_s for o in outcomes if o.budget_s > 0]
    each = statistics.median(given) if given else slots[0].cap
    replaced = [processes[half_of(s.process, halves)] for s in slots]
    beside = next(s.process for s, p in zip(slots, replaced, strict=True) if p is not None)
    # Each stops in time for the least of those after it, in the pair and in the run.
    return [(s, Budget(each, stop_at=schedule.deadline() - HANDBACK_S - later
                       - sum(least[i + 1:])),
             {AGAIN_FOR: p} if p is not None else {BESIDE: beside})
            for i, (s, p) in enumerate(zip(slots, replaced, strict=True))]
