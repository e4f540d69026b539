"""run/again.py: a process far off its job's others is measured again in a fresh one where
the time left holds it beside every process still to start, in the same half."""

from __future__ import annotations

import time

from test_odd import _process
from test_startups import plan  # noqa: F401  (the fixture: a plan of a driver with no GPU)

from gpuoverhead.run import again, runner
from gpuoverhead.run.budget import HANDBACK_S, Slot
from gpuoverhead.run.worker import Outcome


def _outcomes(levels: list[float]) -> list[Outcome]:
    return [Outcome(i, samples=level, budget_s=2.0) for i, level in enumerate(levels)]


def test_the_far_process_is_named_by_its_number_once(monkeypatch):
    monkeypatch.setattr(again, "series", lambda level, cal, offset: _process(level))
    found = _outcomes([1.0, 3.4, 1.1])
    assert again.odd(found) == [(1,)]
    found.append(Outcome(3, samples=1.05, device_notes={again.AGAIN_FOR: 1}))
    assert again.odd(found) == []  # measured again already: not again
    failed = [Outcome(0, error="output check failed"), *_outcomes([1.0, 3.4, 1.1])[1:]]
    assert again.odd(failed) == []  # two processes that ran: none is the odd one


def test_an_aa_run_judges_each_half_as_it_is_finished_and_pairs_them(monkeypatch):
    """Each half is finished, and its processes judged, alone: half a (processes 0, 3 and
    4: a b b a a b) at 1.0, 3.0 and 1.05 leaves its 3.0 out, which among all six (half b at
    2.0-2.2) is within the others' spread and would not be measured again."""
    monkeypatch.setattr(again, "series", lambda level, cal, offset: _process(level))
    found = _outcomes([1.0, 2.0, 2.2, 3.0, 1.05, 2.1])
    assert again.odd(found, halves=1) == []
    assert again.odd(found, halves=2) == [(3, None)]  # half b's fresh one beside it
    # Half b's slow process is the one to replace: half a's runs beside it.
    assert again.odd(_outcomes([1.0, 1.0, 3.4, 1.05, 1.1, 1.1]), halves=2) == [(None, 2)]
    both = _outcomes([1.0, 1.0, 3.4, 3.4, 1.1, 1.1, 1.05, 1.05])  # a b b a a b b a
    assert again.odd(both, halves=2) == [(3, 2)]


def test_a_fresh_process_fits_only_beside_what_the_run_still_has_to_start(plan):  # noqa: F811
    schedule = runner._schedule(plan, time.monotonic(), {})
    schedule.left_out = frozenset()
    last = Slot(0, 0, 0, *schedule.jobs[0][0])
    found = _outcomes([1.0, 3.4, 1.1])
    # 20 s with every job's first process still to start (4 s each by the hint): no room.
    assert again.slots_for(schedule, last, 0, found, (1,)) is None
    schedule.limit_s = 1e4
    [(slot, budget, notes)] = again.slots_for(schedule, last, 0, found, (1,))
    assert slot.process == 3 and slot.job == 0 and budget.process_s == 2.0
    assert notes == {again.AGAIN_FOR: 1} and budget.stop_at < schedule.deadline()
    schedule.limit_s = None
    [(slot, budget, _)] = again.slots_for(schedule, last, 0, found, (2,))
    assert slot.process == 3 and budget.stop_at == float("inf")


def test_an_aa_run_measures_again_one_process_a_half_in_turn(plan):  # noqa: F811
    """The halves share the run's time in reversed blocks (processes a b b a a b b a ...):
    the fresh process of the half whose process was far off, and one of the other half
    beside it, run one after the other, each in its half, each stopping in time for the
    other's least."""
    schedule = runner._schedule(plan, time.monotonic(), {})
    schedule.left_out = frozenset()
    schedule.limit_s = 1e4
    last = Slot(0, 5, 0, *schedule.jobs[0][0])
    found = _outcomes([1.0, 1.0, 3.4, 1.05, 1.1, 1.1])
    fresh = again.slots_for(schedule, last, 0, found, (None, 2))  # 2 is in half b
    assert [(s.process, notes) for s, _, notes in fresh] == [
        (6, {again.AGAIN_FOR: 2}), (7, {again.BESIDE: 6})]  # 6 is b's, 7 a's
    assert fresh[0][1].stop_at < fresh[1][1].stop_at < schedule.deadline()
    # After 7 processes, 7 and 8 are both half a's: half b's next number is 9.
    seven = _outcomes([1.0, 1.0, 1.05, 3.4, 1.1, 1.1, 1.0])
    fresh = again.slots_for(schedule, last, 0, seven, (3, None))
    assert [(s.process, notes) for s, _, notes in fresh] == [
        (7, {again.AGAIN_FOR: 3}), (9, {again.BESIDE: 7})]
    # Where the time left holds one of the pair but not both, neither runs.
    later = sum(schedule.least_s(s) for s in schedule.remaining(last, schedule.processes)
                if s != last)
    left = later + 1.5 * schedule.least_s(fresh[0][0]) + 3 * HANDBACK_S
    schedule.until_deadline_s = lambda: left
    assert again.slots_for(schedule, last, 0, found, (None, 2)) is None
    assert again.slots_for(schedule, last, 0, found[:3], (2,)) is not None
