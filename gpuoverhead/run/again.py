"""Worker processes measured again: one far slower than its job's others (analysis/odd.py)
is left out of the job's estimates, and where the time left holds it, its job runs one more
fresh process in its place before the benchmark is finished, so that the estimate keeps its
count of processes. The simulation in issue 40 (processes 3.4x slow at p = 0.06, levels
log-normal by 15%) kept 94-95% coverage at a clean run's width this way, for 0.2-0.6 more
processes a job; leaving the process out without a new one narrows the count instead.

Under a time limit a process is run again only where its start-up and least sampling fit
beside the least of every process the run still has to start (it never takes another
job's place); without a limit, always. The new process goes to the same half of an A/A run
as the one it replaces, and run.json names the process it was measured again for.
"""

from __future__ import annotations

import statistics

from gpuoverhead.analysis.odd import odd_processes
from gpuoverhead.methods import series
from gpuoverhead.run.budget import HANDBACK_S, Budget, Schedule, Slot
from gpuoverhead.run.worker import Outcome

#: run.json's key, in the new process's entry, for the process it was measured again for.
AGAIN_FOR = "measured_again_for"


def odd(outcomes: list[Outcome]) -> list[int]:
    """The numbers of the processes of one job that finishing will leave out as far off,
    less those already measured again."""
    done = [o for o in outcomes if not o.cut and not o.error and o.samples is not None]
    every = [series(o.samples, o.calibration, o.clock_offset_ns) for o in done]
    again = {o.device_notes.get(AGAIN_FOR) for o in outcomes}
    return [done[i].process for i, _ in odd_processes(every) if done[i].process not in again]


def slot_for(schedule: Schedule, last: Slot, job: int, outcomes: list[Outcome], process: int,
             halves: int) -> tuple[Slot, Budget] | None:
    """The slot and budget of a fresh process of `job` (of `last`'s benchmark, whose last
    process `last` was) in place of `process`, or None where the time left does not hold it
    beside every process still to start."""
    number = max(o.process for o in outcomes) + 1
    number += (process - number) % halves  # the same half as the one it replaces
    slot = Slot(last.benchmark, number, job, *schedule.jobs[last.benchmark][job])
    later = sum(schedule.least_s(s) for s in schedule.remaining(last, schedule.processes)
                if s != last)
    if schedule.least_s(slot) + 2 * HANDBACK_S + later > schedule.until_deadline_s():
        return None
    given = [o.budget_s for o in outcomes if o.budget_s > 0]
    return slot, Budget(statistics.median(given) if given else slot.cap,
                        stop_at=schedule.deadline() - HANDBACK_S - later)
