"""Interleaving, the probe, the time limit's shares and drift detection, on data whose
truth is known."""

from __future__ import annotations

import math
import os
import time
from dataclasses import replace

import numpy as np

from gpuoverhead.analysis.samples import Calibration, measured
from gpuoverhead.analysis.stats import drift
from gpuoverhead.cases import Case, Group, Kernel, Sampling
from gpuoverhead.methods import series
from gpuoverhead.run.budget import Budget
from gpuoverhead.run.rounds import sample_group
from gpuoverhead.run.worker import seeds


def _group() -> Group:
    kernel = Kernel("k", None, "", "all")  # type: ignore[arg-type]
    cases = tuple(Case("b", "k", 1, 1, "sequential", e, "wait", (1, 2, 4))
                  for e in ("submit", "pass", "dispatch"))
    return Group("b", kernel, 1, 1, Sampling(10.0, 0.5, 6, 6, 1), cases)


def _order(seed: tuple[int, ...]) -> list[list[tuple[str, int]]]:
    """The (case, N) order of each measured round when sampling with `seed`."""
    group = _group()
    log: list[tuple[str, int]] = []

    def op_for(case: Case):
        return lambda n: log.append((case.encoding, n))

    ops = {c: op_for(c) for c in group.cases}
    counts = dict.fromkeys(group.cases, 0)
    samples = sample_group(group, ops, np.random.default_rng(list(seed)),
                           Budget(30.0), lambda s: 1.0, lambda *a: None, counts)
    per_round = 9
    measured = log[samples.warmup_rounds * per_round:]
    return [measured[i:i + per_round] for i in range(0, len(measured), per_round)]


def test_order_is_shuffled_per_round_and_reproducible_from_the_seed():
    rounds = _order(seeds(1234, 0, 0, 0))
    assert len(rounds) == 6
    assert all(sorted(r) == sorted(rounds[0]) for r in rounds)  # every (case, N) once a round
    assert len({tuple(r) for r in rounds}) > 1  # not the same order every round
    assert _order(seeds(1234, 0, 0, 0)) == rounds
    assert _order(seeds(1234, 0, 1, 0)) != rounds  # another process gets another order


def test_drift_fires_on_a_trend_and_not_on_stationary_noise():
    rng = np.random.default_rng(5)
    t = np.arange(300.0)
    found = drift(100 + 0.05 * t + rng.normal(0, 2, t.size), t)
    assert found is not None and found.rho > 0.3 and found.change > 0.1
    false_alarms = sum(drift(100 + rng.normal(0, 2, t.size), t) is not None for _ in range(200))
    assert false_alarms <= 2


def _probed(seconds_at: dict[int, float]):
    """A group of two cases over N = 1, 2, 4, 8 sampled with a 1 s budget (a sample may take
    50 ms): case 0 sleeps `seconds_at[N]` (default 1 ms), case 1 does nothing. Returns the
    samples, the dispatch counts and the N of every call of case 0."""
    group = _group()
    cases = (replace(group.cases[0], n_values=(1, 2, 4, 8)),
             replace(group.cases[1], n_values=(1, 2, 4, 8)))
    group = replace(group, cases=cases, sampling=Sampling(1.0, 0.5, 3, 3, 1))
    calls: list[int] = []

    def slow(n: int) -> tuple[int]:
        calls.append(n)
        time.sleep(seconds_at.get(n, 0.001))
        return (time.perf_counter_ns(),)  # the issue time, as sequential ops return it

    ops = {cases[0]: slow, cases[1]: lambda n: (time.perf_counter_ns(),)}
    counts = dict.fromkeys(cases, 0)
    samples = sample_group(group, ops, np.random.default_rng(0), Budget(1.0),
                           lambda s: 1.0, lambda *a: None, counts)
    return samples, counts, calls


def test_the_probe_stops_a_case_at_the_first_n_whose_sample_is_too_long():
    samples, counts, _ = _probed({4: 0.2})
    assert samples.cut == {0: (1, 2)}  # N = 4 took 200 ms > 50 ms: no N = 4 or 8 after it
    rec = np.array(samples.records)
    assert set(rec[rec[:, 0] == 0, 1]) == {1, 2}  # the crossing sample is not kept either
    assert set(rec[rec[:, 0] == 1, 1]) == {1, 2, 4, 8}
    assert len(measured(rec, 0)) == 2 * samples.rounds
    assert counts[samples.cases[0]] == 1 + 2 + 4 + 3 * (1 + 2)  # every dispatch is counted
    fits = series(samples, Calibration(0.0, None))
    slopes = [s for k, s in fits.items() if k.metric == "per_dispatch_ns" and k.case.encoding ==
              "submit"]
    assert slopes and slopes[0].values.size == samples.rounds


def test_the_probe_keeps_two_n_however_slow_the_first_sample():
    samples, _, _ = _probed({1: 0.06, 2: 0.06, 4: 0.06})
    assert samples.cut == {0: (1, 2)}


def test_the_probe_does_not_run_a_sample_its_line_says_is_too_long():
    samples, _, calls = _probed({2: 0.03})  # 1 ms, then 30 ms: N = 4 would take ~90 ms
    assert samples.cut == {0: (1, 2)} and 4 not in calls and 8 not in calls


def test_each_round_records_the_cpu_it_starts_on_and_the_worker_entry_summarizes_them():
    """One CPU read per round (warm-up first), outside any timed call, and run.json's worker
    entry says which CPUs, the most frequent, the changes and the affinity's size."""
    from gpuoverhead.drivers.base import Job, Offer, Prepared
    from gpuoverhead.records import AdapterInfo
    from gpuoverhead.run.checks import process_entry
    from gpuoverhead.run.worker import Task, _sample, cpu_notes

    group = _group()
    ops = {c: lambda n: (time.perf_counter_ns(),) for c in group.cases}
    sent: list[tuple] = []
    adapter = AdapterInfo("wgpu-native", "vulkan", "CPU", "mesa", 0, "llvmpipe", "", False)
    task = Task(Job(group, Offer(adapter), "webgpu"), Budget(0.2), (0,), 0)
    outcome = _sample(task, Prepared(group, ops, lambda counts: None), np.random.default_rng(0),
                      sent.append)
    s, notes = outcome.samples, outcome.device_notes
    rounds = s.warmup_rounds + s.rounds
    assert sum(n for _, n in notes["cpu_runs"]) == rounds  # one read a round, no more
    allowed = os.sched_getaffinity(0)
    assert notes["cpu_affinity"] == len(allowed)
    assert notes["cpus"] and set(notes["cpus"]) <= allowed
    assert notes["cpu_most"] in notes["cpus"]
    assert notes["cpu_changes"] == len(notes["cpu_runs"]) - 1
    entry = process_entry(outcome)  # what run.json's worker entry holds
    assert {"cpus", "cpu_most", "cpu_changes", "cpu_affinity", "cpu_runs"} <= set(entry)
    assert cpu_notes([3, 3, 5, 3, -1]) | {"cpu_affinity": None} == {
        "cpus": [3, 5], "cpu_most": 3, "cpu_changes": 2, "cpu_affinity": None,
        "cpu_runs": [[3, 2], [5, 1], [3, 1], [-1, 1]]}


def _sampled(min_rounds: int, op_s: float, budget_s: float, stop_at: float = math.inf):
    """A group sampled with ops that each take `op_s`, precision never reached."""
    group = replace(_group(), sampling=Sampling(10.0, 0.0, min_rounds, 1000, 1))
    ops = {c: (lambda n: time.sleep(op_s)) for c in group.cases}
    return sample_group(group, ops, np.random.default_rng(0),
                        Budget(budget_s, stop_at=stop_at),
                        lambda s: 1.0, lambda *a: None, dict.fromkeys(group.cases, 0))


def test_a_process_reaches_min_rounds_past_its_budget_but_not_past_the_overrun():
    """Rounds of 9 ms (nine ops of 1 ms) against a 50 ms budget: it is spent after about
    six, and the 8 min_rounds (72 ms, within OVERRUN times the budget) are measured anyway.
    Against a 10 ms budget, 20 min_rounds would take 18x the budget, so the process stops
    as `short` once OVERRUN times the budget is spent, with at least MIN_ROUNDS."""
    from gpuoverhead.run.rounds import MIN_ROUNDS, OVERRUN

    quick = _sampled(min_rounds=8, op_s=0.001, budget_s=0.05)
    assert quick.stop == "budget" and quick.rounds == 8
    slow = _sampled(min_rounds=20, op_s=0.001, budget_s=0.01)
    assert slow.stop == "short" and MIN_ROUNDS <= slow.rounds <= 10  # a round: >= 4 ms
    # What the guard holds: it stopped at the first round past MIN_ROUNDS that ended
    # OVERRUN x the budget after sampling began. The samples' walls leave out the loop's
    # own time between them (a fraction of a ms a round), so the rounds before the last
    # summed under it (unless MIN_ROUNDS held it), and all of them, with that allowance,
    # reached it.
    rounds = np.zeros(slow.rounds)
    for r in slow.records:
        if not r[3]:
            rounds[r[2]] += r[5] / 1e9
    assert rounds.sum() + 0.002 * slow.rounds >= OVERRUN * 0.01
    assert slow.rounds == MIN_ROUNDS or rounds[:-1].sum() < OVERRUN * 0.01


def test_energy_is_read_around_each_sample_and_added_to_its_case():
    """A counter that moves 1 J between any two reads: each sample adds exactly 1 J to its
    case (the reads bracket the sample alone), so a case's joules are its sample count."""
    group = _group()
    ticks = iter(range(10**6))
    joules: dict[Case, float] = {}
    samples = sample_group(group, {c: (lambda n: None) for c in group.cases},
                           np.random.default_rng(0), Budget(0.01), lambda s: 1.0,
                           lambda *a: None, dict.fromkeys(group.cases, 0), None,
                           lambda: float(next(ticks)), joules)
    per_case = {c: sum(r[0] == i for r in samples.records) for i, c in enumerate(group.cases)}
    assert joules == {c: float(k) for c, k in per_case.items()} and all(per_case.values())


def test_a_process_stops_before_the_run_s_deadline_with_the_rounds_it_has():
    """Rounds of 9 ms, a budget of 10 s and min_rounds of 20, but the run's deadline 80 ms
    away: the process hands back its rounds (at least MIN_ROUNDS) as `short` before it,
    where the parent would stop it there and keep nothing."""
    from gpuoverhead.run.rounds import MIN_ROUNDS

    stop_at = time.monotonic() + 0.08
    found = _sampled(min_rounds=20, op_s=0.001, budget_s=10.0, stop_at=stop_at)
    assert found.stop == "short" and MIN_ROUNDS <= found.rounds < 20
    # 20 rounds would end 100 ms past it; a slow round under load may end a little past
    assert time.monotonic() < stop_at + 0.05
