"""Interleaving, between-process CIs and drift detection, on data whose truth is known."""

from __future__ import annotations

import numpy as np

from gpuoverhead.analysis.stats import drift
from gpuoverhead.run.budget import Budget
from gpuoverhead.run.rounds import sample_group
from gpuoverhead.run.worker import seeds
from gpuoverhead.suite.model import Case, Group, Kernel, Sampling


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
                           Budget(10.0, len(group.cases), 1), lambda s: 1.0, lambda *a: None,
                           counts)
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
