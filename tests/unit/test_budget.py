"""The schedule: the order of worker processes, their budgets under a time limit, and
passes that the time left cannot hold dropped before they start (never run as stubs)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from gpuoverhead.cases import MOST_PROCESSES
from gpuoverhead.run.budget import (
    FINISH_S,
    HANDBACK_S,
    MIN_PROCESS_S,
    WARMUP_SHARE,
    Schedule,
    Slot,
)
from gpuoverhead.run.passes import fit_passes

#: Two benchmarks: one of two jobs (caps 4 and 2 s), one of one job (cap 2 s); 1 s hints.
JOBS = [[("a", 4.0, 1.0), ("b", 2.0, 1.0)], [("c", 2.0, 1.0)]]


def _order(schedule: Schedule) -> list[tuple[int, int, int]]:
    return [(s.benchmark, s.process, s.job) for s in schedule.slots()]


def test_without_a_limit_benchmarks_run_one_after_another_with_their_caps():
    schedule = Schedule(JOBS, processes=2)
    assert _order(schedule) == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (1, 0, 0),
                                (1, 1, 0)]
    assert [schedule.budget(s).process_s for s in schedule.slots()][:2] == [4.0, 2.0]
    assert schedule.deadline() == float("inf")


def test_with_a_limit_processes_run_in_passes_over_every_benchmark():
    schedule = Schedule(JOBS, processes=2, limit_s=1000.0)
    # Pass 0 breadth first (every benchmark's first job, then the second ...), the later
    # passes benchmark by benchmark (a ratio's pair adjacent in time).
    assert _order(schedule) == [(0, 0, 0), (1, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1),
                                (1, 1, 0)]


def test_a_limit_is_shared_in_proportion_to_the_caps_after_every_start_up():
    schedule = Schedule(JOBS, processes=2, limit_s=20.0)
    first = next(schedule.slots())
    # 6 processes, 1 s start-up each: 20 - FINISH_S - 6 s for caps 4+2+2 per pass (16 in all),
    # less the last one's hand-back.
    free = 20.0 - FINISH_S - HANDBACK_S - 6.0
    assert schedule.budget(first).process_s == pytest.approx(free * 4 / 16 / 1.25, rel=1e-3)
    assert schedule.budget(first).process_s <= first.cap
    schedule.start = time.monotonic() - 19.9
    assert schedule.budget(first).process_s == MIN_PROCESS_S


def test_a_process_must_stop_in_time_for_the_rest_of_its_pass():
    """However far it may overrun its budget, a process hands its rounds back in time for
    the jobs after it in its pass to start and sample their least (1 s hints, least
    MIN_PROCESS_S until measured): the last of a pass only before the run's deadline."""
    schedule = Schedule(JOBS, processes=2, limit_s=20.0)
    first, second, third = schedule._pass(0)  # breadth first: (0, 0), (1, 0), (0, 1)
    end = schedule.deadline() - HANDBACK_S
    assert (second.benchmark, third.job) == (1, 1)
    assert schedule.budget(first).stop_at == pytest.approx(end - 2 * (1.0 + MIN_PROCESS_S))
    assert schedule.budget(second).stop_at == pytest.approx(end - (1.0 + MIN_PROCESS_S))
    assert schedule.budget(third).stop_at == pytest.approx(end)
    assert Schedule(JOBS, processes=2).budget(first).stop_at == float("inf")


def test_a_pass_the_time_left_cannot_hold_is_dropped_before_it_starts():
    schedule = Schedule(JOBS, processes=3, limit_s=30.0)
    ran = []
    for slot in schedule.slots():
        ran.append(slot.process)
        # Each process took 4 s: 3 s of start-up, 1 s of sampling, 0.5 s of it the least.
        schedule.done(slot, 4.0, 1.0, 0.5)
        schedule.start -= 4.0  # and the clock moved as much
    # Pass 0 took 12 s of 30; one more pass needs 3 x (3 + 0.5) = 10.5 s, two 21 s.
    assert ran == [0, 0, 0, 1, 1, 1]
    assert schedule.processes == 2 and schedule.dropped == 1
    assert schedule.last(next(s for s in schedule.pass_of(0, 1) if s.job == 1))


def test_the_least_a_run_needs_and_its_deadline():
    schedule = Schedule(JOBS, processes=3, limit_s=60.0)
    assert schedule.minimum_s() == pytest.approx(FINISH_S + 3 * (1.0 + MIN_PROCESS_S * 1.25))
    aa = Schedule(JOBS, processes=6, limit_s=60.0, halves=2)
    assert aa.minimum_s() == pytest.approx(FINISH_S + 6 * (1.0 + MIN_PROCESS_S * 1.25))
    assert schedule.deadline() == pytest.approx(schedule.start + 60 - FINISH_S)
    # Once a benchmark's finish (estimates, files) has taken 2 s, the other one's is kept
    # free of processes too: the last processes of a tight run on lavapipe had ended as
    # 3-round stubs at a deadline that left no room for the finishes before them.
    schedule.finished(2.0)
    assert schedule.deadline() == pytest.approx(schedule.start + 60 - FINISH_S - 2.0)


def test_start_up_estimates_are_the_most_seen_of_a_kind_else_its_hint():
    schedule = Schedule(JOBS, processes=2, limit_s=100.0)
    a, b = list(schedule.slots())[:2]
    assert schedule.setup_s(a) == 1.0
    schedule.done(a, 5.0, 2.0, 1.0)
    schedule.done(a, 4.0, 2.0, 1.0)
    assert schedule.setup_s(a) == 3.0
    assert schedule.setup_s(b) == 3.0  # not seen: its hint, or what the machine shows more


def test_pass_zero_is_divided_as_if_alone_where_no_second_pass_would_fit():
    """Start-up of 50 s a pass in a 100 s limit: one pass fits, so pass 0 shares what its own
    start-ups leave, instead of stub budgets for three passes that will never run."""
    schedule = Schedule([[("slow", 30.0, 40.0), ("fast", 30.0, 10.0)]], processes=3,
                        limit_s=100.0)
    first = next(schedule.slots())
    assert schedule.budget(first).process_s == pytest.approx(
        (100.0 - FINISH_S - HANDBACK_S - 50.0) * 30 / 60 / 1.25, rel=1e-3)


def _simulated(startup_s: float, limit_s: float, least_s: float = 0.2
               ) -> tuple[Schedule, list[tuple[int, float]], float]:
    """A run of three jobs (a suite budget of 40 s each over 20 passes) whose every process
    takes `startup_s` to start and samples its budget plus the whole warm-up share (at least
    `least_s`), the clock moved as much; processes that do not fit are not started, as the
    runner does. Returns the schedule, (process, budget) of each that ran, and the time."""
    jobs = [[("a", 2.0, startup_s), ("b", 2.0, startup_s)], [("c", 2.0, startup_s)]]
    schedule = Schedule(jobs, processes=MOST_PROCESSES, limit_s=limit_s)
    ran = []
    for slot in schedule.slots():
        if not schedule.fits(slot):
            continue
        budget = schedule.budget(slot).process_s
        sampling = max(least_s, budget * (1 + WARMUP_SHARE))
        schedule.done(slot, startup_s + sampling, sampling, least_s)
        schedule.start -= startup_s + sampling
        ran.append((slot.process, budget))
    return schedule, ran, limit_s - schedule.left_s()


def test_cheap_start_up_buys_more_processes_than_dear_start_up():
    """Precision per second: with 0.5 s start-ups a 60 s limit is spent on many short
    processes, with 5 s start-ups on a few longer ones; either way within the limit, and
    every process that ran got at least its least sampling."""
    cheap, ran_cheap, took_cheap = _simulated(0.5, 60.0)
    dear, ran_dear, took_dear = _simulated(5.0, 60.0)
    assert cheap.processes > dear.processes >= 2
    assert cheap.processes >= 10 and dear.processes <= 4
    for schedule, ran, took in ((cheap, ran_cheap, took_cheap), (dear, ran_dear, took_dear)):
        assert took <= 60.0 - FINISH_S + 0.01  # its deadline, the finish kept
        # Every job in every whole pass that fitted, some in a partial one.
        assert len(ran) == 3 * schedule.whole + len(schedule.partial)
        assert schedule.whole + schedule.dropped <= MOST_PROCESSES
    assert cheap.dropped == 0
    # Fewer processes, each longer: the suite's budget follows the passes that run.
    assert max(b for _, b in ran_dear) > 2 * max(b for _, b in ran_cheap)


def test_passes_asked_that_the_time_does_not_hold_are_said_dropped():
    asked, _, _ = _simulated(5.0, 60.0)
    assert asked.whole <= 4 and asked.dropped == MOST_PROCESSES - asked.whole
    # The warning's figures: what was left when passes were dropped did not hold one more
    # than ran (pass 0 was over by then).
    assert 0 < asked.left_at_drop_s < asked.whole * asked.pass_s()


def test_the_passes_that_fit_are_those_whose_processes_reach_their_least_sampling():
    # Nothing but start-up and the least sampling fits twice: one pass, which the limit holds.
    assert fit_passes(10.0, 4.0, 2.0, done=0, most=20) == 1
    # Start-up free, sampling plentiful: all twenty.
    assert fit_passes(1000.0, 0.0, 1.0, done=0, most=20) == 20
    # Each at exactly its least sampling: 7 passes of 5 s start-up and 1 s sampling.
    assert fit_passes(7 * (5.0 + 1.0), 5.0, 1.0, done=0, most=20) == 7
    assert fit_passes(7 * (5.0 + 1.0) - 0.1, 5.0, 1.0, done=0, most=20) == 6
    # Two already run: the time left is for the passes after them.
    assert fit_passes(2 * (5.0 + 1.0), 5.0, 1.0, done=2, most=20) == 4


def test_an_aa_run_chooses_and_drops_passes_in_pairs():
    """selftest's halves take alternate processes: an odd count would leave one half a
    process short."""
    assert fit_passes(1000.0, 0.0, 1.0, done=1, most=11, halves=2) == 10
    # Pass 0 takes 10.5 s of a 46 s limit: four passes fit. Pass 1 takes 12 s: the
    # 20.5 s left hold one more pass but not the pair, so none runs (not a third alone).
    schedule = Schedule([[("a", 1.0, 10.0)]], processes=6, limit_s=46.0, halves=2)
    ran = []
    for slot, took in zip(schedule.slots(), (10.5, 12.0, 10.5, 10.5), strict=False):
        schedule.done(slot, took, 0.5, 0.5)
        schedule.start -= took
        ran.append(slot.process)
    assert ran == [0, 1] and schedule.processes == 2


def test_processes_asked_for_run_where_the_time_holds_them_whatever_the_suite_budget():
    """The readback suite on the H100 (--processes 2, 150 s) ran one process a job with 94 s
    left: its budget (0.5 s a case) was below two processes' least sampling, and the choice
    counted that as not fitting. A count asked for is run where the time holds it."""
    schedule = Schedule([[("a", 0.1, 5.0)]], processes=2, limit_s=100.0)
    ran = []
    for slot in schedule.slots():
        schedule.done(slot, 6.0, 1.0, 1.0)
        schedule.start -= 6.0
        ran.append(slot.process)
    assert ran == [0, 1] and schedule.dropped == 0


def _run(schedule: Schedule, startup_s: Callable[[Slot], float], least_s: float = 1.0
         ) -> list[tuple[int, int, int]]:
    """Every slot run as the runner does (those that do not fit not started), each taking
    its kind's start-up and its budget plus the warm-up share (at least `least_s`), the
    clock moved as much; returns (benchmark, process, job) of those that ran."""
    ran = []
    for slot in schedule.slots():
        if not schedule.fits(slot):
            continue
        sampling = max(least_s, schedule.budget(slot).process_s * (1 + WARMUP_SHARE))
        took = startup_s(slot) + sampling
        schedule.done(slot, took, sampling, least_s)
        schedule.start -= took
        ran.append((slot.benchmark, slot.process, slot.job))
    return ran


def test_jobs_with_cheap_start_up_run_a_further_process_where_no_whole_pass_fits():
    """The crossover run on the H100 measured one process a job with a third of its limit
    left: no whole second pass fitted. The jobs whose start-up the spare time holds now
    run a second process, the cheapest first, and the limit still holds."""
    jobs = [[("dear", 2.0, 40.0), ("cheap", 2.0, 2.0)], [("cheap2", 2.0, 3.0)]]
    schedule = Schedule(jobs, processes=MOST_PROCESSES, limit_s=100.0)
    ran = _run(schedule, lambda s: {"dear": 40.0, "cheap": 2.0, "cheap2": 3.0}[s.kind])
    assert schedule.whole == 1 and schedule.partial == {(0, 1), (1, 0)}
    assert sorted(ran) == [(0, 0, 0), (0, 0, 1), (0, 1, 1), (1, 0, 0), (1, 1, 0)]
    assert 100.0 - schedule.left_s() <= 100.0 - FINISH_S + 0.01
    assert schedule.count(next(schedule.pass_of(0, 0))) == 1  # the dear job: one process
    # Each benchmark is finished after its own last process.
    assert [schedule.last(s) for s in schedule.pass_of(0, 1)] == [True]
    assert [schedule.last(s) for s in schedule.pass_of(1, 1)] == [True]
    assert not any(schedule.last(s) for s in schedule.pass_of(0, 0))


def test_an_aa_runs_partial_pass_gives_both_halves_a_process():
    jobs = [[("dear", 2.0, 40.0), ("cheap", 2.0, 2.0)]]
    schedule = Schedule(jobs, processes=MOST_PROCESSES, limit_s=180.0, halves=2)
    ran = _run(schedule, lambda s: {"dear": 40.0, "cheap": 2.0}[s.kind])
    assert schedule.whole == 2 and schedule.partial == {(0, 1)}
    assert sorted(p for _, p, j in ran if j == 1) == [0, 1, 2, 3]
    assert sorted(p for _, p, j in ran if j == 0) == [0, 1]


def test_a_partial_pass_the_time_left_cannot_hold_shrinks_to_the_jobs_it_holds():
    """Planned as pass 1 began (one more process of `cheap` and `mid`), then `mid`'s second
    process started three times slower (a loaded machine): the partial pass is planned again
    among its own jobs as it would start, never run as stubs."""
    jobs = [[("dear", 2.0, 30.0), ("cheap", 2.0, 2.0), ("mid", 2.0, 6.0)]]
    schedule = Schedule(jobs, processes=3, limit_s=125.0)
    planned, ran = [], []
    for slot in schedule.slots():
        planned.append(schedule.partial)
        sampling = max(1.0, schedule.budget(slot).process_s * (1 + WARMUP_SHARE))
        took = {"dear": 30.0, "cheap": 2.0, "mid": 6.0}[slot.kind] \
            * (3 if (slot.process, slot.kind) == (1, "mid") else 1) + sampling
        schedule.done(slot, took, sampling, 1.0)
        schedule.start -= took
        ran.append((slot.process, slot.job))
    assert {(0, 1), (0, 2)} in planned
    assert schedule.whole == 2 and schedule.dropped == 1 and schedule.partial == {(0, 1)}
    assert ran == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 1)]
    assert 125.0 - schedule.left_s() <= 125.0 - FINISH_S + 0.01


def test_a_partial_pass_takes_the_jobs_a_ratio_is_paired_with():
    """The crossover run on the H100 gave 21 of 45 jobs a second process, none of them the
    CPU reference every `cpu_ratio` is paired with: no ratio got a second pair. A job now
    comes with its partners, the cheapest bundle first."""
    jobs = [[("ref", 0.2, 4.0), ("a", 0.2, 1.0), ("b", 0.2, 1.0), ("dear", 0.2, 40.0)]]
    took = {"ref": 4.0, "a": 1.0, "b": 1.0, "dear": 40.0}
    alone = Schedule(jobs, processes=MOST_PROCESSES, limit_s=85.0)
    _run(alone, lambda s: took[s.kind])
    assert alone.partial == {(0, 1), (0, 2)}  # the cheapest two, with no pair between them
    paired = Schedule(jobs, processes=MOST_PROCESSES, limit_s=85.0,
                      partners=[[(), (0,), (0,), ()]])
    ran = _run(paired, lambda s: took[s.kind])
    assert paired.partial == {(0, 0), (0, 1)}  # a with the reference its ratio needs
    assert [(p, j) for _, p, j in ran if p == 1] == [(1, 0), (1, 1)]


def test_an_aa_runs_halves_take_the_passes_in_reversed_blocks():
    """a b b a a b b a: each half gets as many odd passes as even ones and the same mean
    pass, so neither a steady drift nor a pattern from one pass to the next tells the halves
    apart (strict alternation gave half b every odd pass, one pass later)."""
    from gpuoverhead.run.passes import half_of
    assert [half_of(p, 2) for p in range(8)] == [0, 1, 1, 0, 0, 1, 1, 0]
    assert [half_of(p, 1) for p in range(3)] == [0, 0, 0]
    for passes in (4, 8, 12):
        a = [p for p in range(passes) if half_of(p, 2) == 0]
        b = [p for p in range(passes) if half_of(p, 2) == 1]
        assert sum(a) == sum(b) and sum(p % 2 for p in a) == sum(p % 2 for p in b)
