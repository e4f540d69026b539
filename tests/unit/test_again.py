"""run/again.py: a process far off its job's others is measured again in a fresh one where
the time left holds it beside every process still to start, in the same half."""

from __future__ import annotations

import time

from test_odd import _process
from test_startups import plan  # noqa: F401  (the fixture: a plan of a driver with no GPU)

from gpuoverhead.run import again, runner
from gpuoverhead.run.budget import Slot
from gpuoverhead.run.worker import Outcome


def _outcomes(levels: list[float]) -> list[Outcome]:
    return [Outcome(i, samples=level, budget_s=2.0) for i, level in enumerate(levels)]


def test_the_far_process_is_named_by_its_number_once(monkeypatch):
    monkeypatch.setattr(again, "series", lambda level, cal, offset: _process(level))
    found = _outcomes([1.0, 3.4, 1.1])
    assert again.odd(found) == [1]
    found.append(Outcome(3, samples=1.05, device_notes={again.AGAIN_FOR: 1}))
    assert again.odd(found) == []  # measured again already: not again
    failed = [Outcome(0, error="output check failed"), *_outcomes([1.0, 3.4, 1.1])[1:]]
    assert again.odd(failed) == []  # two processes that ran: none is the odd one


def test_a_fresh_process_fits_only_beside_what_the_run_still_has_to_start(plan):  # noqa: F811
    schedule = runner._schedule(plan, time.monotonic(), {})
    schedule.left_out = frozenset()
    last = Slot(0, 0, 0, *schedule.jobs[0][0])
    found = _outcomes([1.0, 3.4, 1.1])
    # 20 s with every job's first process still to start (4 s each by the hint): no room.
    assert again.slot_for(schedule, last, 0, found, 1, halves=1) is None
    schedule.limit_s = 1e4
    slot, budget = again.slot_for(schedule, last, 0, found, 1, halves=1)
    assert slot.process == 3 and slot.job == 0 and budget.process_s == 2.0
    assert budget.stop_at < schedule.deadline()
    assert again.slot_for(schedule, last, 0, found, 1, halves=2)[0].process == 3
    # An A/A run's halves alternate: in the half of the one it replaces, after the others.
    assert again.slot_for(schedule, last, 0, found, 2, halves=2)[0].process == 4
    schedule.limit_s = None
    slot, budget = again.slot_for(schedule, last, 0, found, 2, halves=1)
    assert slot.process == 3 and budget.stop_at == float("inf")
