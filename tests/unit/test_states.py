"""The CPU's two Python speeds (analysis/states.py): which state each round met, the rounds a
benchmark's figures come from, and what a finished job says of them; on seeded processes
shaped as the H200 VM's default runs (issue 54: a Python loop step of 1.2 or 2.2 µs, the
slow state in 80-90% of the rounds, the wrapper's `submit` 38 µs in the fast one and 54 in
the slow one)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
from test_startups import plan  # noqa: F401  (the fixture: a plan of a driver with no GPU)

from gpuoverhead.analysis import combine, states
from gpuoverhead.analysis.samples import Calibration, GroupSamples
from gpuoverhead.methods import series
from gpuoverhead.run.finish import finish
from gpuoverhead.run.worker import Outcome
from gpuoverhead.suite.expand import load_suite

SUITE = """name: t
defaults:
  methodologies: [sequential]
  encodings: [submit]
  layers: [wrapper]
  n_sweep: [1, 16, 256]
benchmarks:
  - name: empty
    kernel: empty
"""
CAL = Calibration(timer_ns=20.0, tick_ns=None)


def _group(tmp_path: Path):
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    return load_suite(path).groups[0]


def _process(group, slow_share: float, rounds: int = 60, seed: int = 0,
             fast_us: float = 38.0, slow_us: float = 54.0) -> GroupSamples:
    """Measured rounds (one warm-up before them) in stretches of the two states: each
    round's loop reading 1.2 or 2.2 µs (±3%), its slope 38 or 54 µs per op (±2%)."""
    rng = np.random.default_rng(seed)
    slow = np.repeat(rng.random(rounds // 4 + 1) < slow_share, 4)[: rounds + 2]
    loop_ns = [int((2200 if s else 1200) * math.exp(0.03 * rng.standard_normal()))
               for s in slow[: rounds + 1]]
    per_op_us = [(slow_us if slow[r + 1] else fast_us) * math.exp(0.02 * rng.standard_normal())
                 for r in range(rounds)]
    return rounds_of(group, per_op_us, loop_ns)


def rounds_of(group, per_op_us: list[float], loop_ns: list[int],
              apart_ns: int | None = None) -> GroupSamples:
    """A process's measured rounds (one warm-up before them) as a worker records them: round
    r's samples 200 µs plus `per_op_us[r]` µs an op, its GPU done 150 µs before each ends;
    the Python loop's readings `loop_ns` (one more than the rounds); the rounds back to back,
    or starting `apart_ns` apart."""
    samples = GroupSamples(group.cases, warmup_rounds=1, rounds=len(per_op_us))
    samples.python_step_ns = loop_ns
    t = 1_000_000_000
    for r, us in enumerate(per_op_us):
        if apart_ns is not None:
            t = 1_000_000_000 + r * apart_ns
        for n in group.cases[0].n_values:
            wall = int(200e3 + us * 1e3 * n)
            samples.records.append((0, n, r, False, t, wall))
            samples.parts[len(samples.records) - 1] = (t + wall - 150_000,)
            t += wall + 1000
    return samples


def _finished(planned, tmp_path, shares: tuple[float, ...], **process):
    """A job of the fake group whose processes met the slow state in `shares` of their
    rounds, finished; with the job and its group."""
    group = _group(tmp_path)
    job = replace(planned.benchmarks[0][0], group=group)
    outcomes = [Outcome(p, _process(group, share, seed=p, **process), CAL)
                for p, share in enumerate(shares)]
    return finish("r", [job], [outcomes], np.random.default_rng(0), 0), job, group


def test_two_speeds_are_found_and_the_slow_state_is_kept_unless_few_rounds_met_it(tmp_path):
    group = _group(tmp_path)
    found = states.find([_process(group, share, seed=s) for s, share in
                         enumerate((0.8, 0.9, 0.85))])
    assert found is not None and found.kept == states.SLOW
    assert abs(found.fast_ns / 1200 - 1) < 0.05 and abs(found.slow_ns / 2200 - 1) < 0.05
    assert 0.7 < found.slow_share < 0.95
    assert found.regime("back to back") == "back to back, CPU slow state"
    # Slow in under half the rounds (the H200's second run of a pair, 48%): still the slow
    # one, as in a run where most were slow, so both give one state's level (a majority
    # took the fast one there). Seldom slow: the fast one. One speed only: no states.
    near = states.find([_process(group, 0.4, seed=s) for s in range(3)])
    assert near.slow_share < 0.5 and near.kept == states.SLOW
    seldom = states.find([_process(group, 0.1, seed=s) for s in range(3)])
    assert seldom.slow_share < states.SLOW_KEPT_FROM and seldom.kept == states.FAST
    assert states.find([_process(group, 0.0, seed=s) for s in range(3)]) is None


def test_a_round_is_in_a_state_where_the_loop_read_it_at_both_ends(tmp_path):
    samples = GroupSamples(_group(tmp_path).cases, warmup_rounds=2, rounds=4)
    samples.python_step_ns = [9, 9, 2200, 2200, 1200, 1200, 2200]  # two warm-up readings first
    found = states.States(1200.0, 2200.0, 0.5, states.SLOW)
    assert list(states.rounds_in(samples, found, states.SLOW)) == [0]
    assert list(states.rounds_in(samples, found, states.FAST)) == [2]


def test_the_kept_states_rounds_make_processes_agree_where_their_mixes_differ(tmp_path):
    """Three processes with 60%, 85% and 95% of their rounds slow: their medians over every
    round differ by the state's 1.4x; over the slow rounds they agree."""
    group = _group(tmp_path)
    procs = [_process(group, share, seed=s) for s, share in enumerate((0.6, 0.85, 0.95))]
    found = states.find(procs)

    def estimate(rounds):
        rows = combine.combine([series(p, CAL, 0, r) for p, r in zip(procs, rounds, strict=True)],
                               np.random.default_rng(0))
        return next(r for r in rows if r.process is None and r.key.metric == "per_dispatch_ns")

    mixed = estimate([None] * 3)
    kept = estimate([states.rounds_in(p, found, found.kept) for p in procs])
    assert abs(kept.estimate.value / 54e3 - 1) < 0.02
    assert kept.estimate.rel_ci < 0.05 < mixed.estimate.rel_ci


def test_a_finished_job_names_its_state_and_keeps_the_others_level(plan, tmp_path):  # noqa: F811
    found, _, _ = _finished(plan, tmp_path, (0.9, 0.85, 0.6))
    summary = found.summaries[0]
    wall = summary[summary.metric == "per_dispatch_ns"]
    (whole,) = wall[wall.process.isna()].itertuples()
    assert whole.regime == "back to back, CPU slow state" and abs(whole.value / 54e3 - 1) < 0.03
    assert list(wall.process.dropna()) == [0, 1, 2] and set(summary.regime) == {whole.regime}
    record = found.entries[0]["cpu_states"]
    assert record["kept"] == "slow" and record["loop_step_us"]["fast"] == approx(1.2, 0.05)
    assert record["figures_from"] == "the slow state's rounds: it moved them"
    assert "empty/elements=1/sequential/submit/wrapper per_dispatch_ns" in record["moved"]
    assert all(isinstance(p["rounds_kept"], int) for p in record["processes"])
    assert record["processes"][0]["slow_share"] > 0.7
    level = record["fast_state_us"]["empty/elements=1/sequential/submit/wrapper per_dispatch_ns"]
    assert level == approx(38.0, 0.03)
    assert not found.warnings and "mixed" not in {kind for kind, _ in found.sampling}


def test_a_process_with_too_few_rounds_in_the_state_is_kept_and_the_job_takes_every_round(
        plan, tmp_path):  # noqa: F811
    """The H200 session's browser-tax run: fusion processes of 5 rounds met the kept state
    in 0-4 of them, were left out, and most jobs kept one process and no interval."""
    found, _, _ = _finished(plan, tmp_path, (0.9, 0.85, 0.02))
    wall = found.summaries[0]
    wall = wall[wall.metric == "per_dispatch_ns"]
    assert list(wall.process.dropna()) == [0, 1, 2]
    assert set(found.summaries[0].regime) == {"back to back, both CPU states"}
    assert not any("left_out" in p for p in found.entries[0]["processes"])
    record = found.entries[0]["cpu_states"]
    assert record["figures_from"].startswith("every round: too few in the slow state (process 2")
    assert {p["rounds_kept"] for p in record["processes"]} == {"all"}
    (note,) = [example for kind, example in found.sampling if kind == "mixed"]
    assert note.startswith("empty/elements=1 (fake) process 2: ")


def test_a_process_with_too_few_rounds_in_the_state_is_left_out_where_enough_others_keep_it(
        plan, tmp_path):  # noqa: F811
    """The H200's second plain run of a pair (2026-11-29): one PyTorch process of six met the
    slow state in 2 of 390 rounds, the job took every round and compared 0.74x against the
    run before. With LEAST_T others in the state the job keeps it and leaves that process
    out: its figures are the slow state's level (the old code gave the mix)."""
    found, _, _ = _finished(plan, tmp_path, (0.9, 0.85, 0.8, 0.9, 0.85, 0.0))
    wall = found.summaries[0]
    wall = wall[wall.metric == "per_dispatch_ns"]
    (whole,) = wall[wall.process.isna()].itertuples()
    assert whole.regime == "back to back, CPU slow state" and abs(whole.value / 54e3 - 1) < 0.03
    assert 5 not in set(wall.process.dropna())
    record = found.entries[0]["cpu_states"]
    assert record["figures_from"] == ("the slow state's rounds: it moved them; left out, "
                                      "under min_rounds rounds in it: process 5")


def test_a_state_that_moves_no_figure_splits_nothing(plan, tmp_path):  # noqa: F811
    found, job, group = _finished(plan, tmp_path, (0.9, 0.85, 0.3), fast_us=54.0)
    assert set(found.summaries[0].regime) == {"back to back"}
    record = found.entries[0]["cpu_states"]
    assert record["moved"] == [] and record["figures_from"] == \
        "every round: the state moved no figure"
    # Where the loop switched at every round no round is in one state: nothing to judge.
    few = [Outcome(p, _process(group, 0.5, seed=p), CAL) for p in range(3)]
    for o in few:
        o.samples.python_step_ns = [(1200, 2200)[r % 2] for r in range(61)]
    plain = finish("r", [job], [few], np.random.default_rng(0), 0)
    assert set(plain.summaries[0].regime) == {"back to back"}
    assert plain.entries[0]["cpu_states"]["figures_from"] == \
        "every round: the state moved no figure"
    # One speed: no record of states at all.
    steady = [Outcome(p, _process(group, 0.0, seed=p), CAL) for p in range(3)]
    assert "cpu_states" not in finish("r", [job], [steady], np.random.default_rng(0),
                                      0).entries[0]


def test_a_figure_moves_with_the_state_where_its_other_rounds_differ_beyond_chance():
    rng = np.random.default_rng(3)

    def process(level: float, kept: int, other: int, factor: float):
        noise = np.exp(0.03 * rng.standard_normal(kept + other))
        return level * noise[:kept], level * factor * noise[kept:]

    # Dawn's wrapper: 0.65-0.79x in the fast rounds; processes at their own levels.
    assert states.moves([process(lv, 50, 12, 0.72) for lv in (38.0, 36.0, 41.0)])
    # Its C loop's: within 2% of the kept state's in either direction.
    assert not states.moves([process(lv, 50, 12, f) for lv, f in
                             ((13.0, 1.01), (12.5, 0.99), (13.2, 1.0))])
    # Two values in the other rounds, or a process with none, cannot show it.
    assert not states.moves([process(38.0, 50, 2, 0.7), process(36.0, 50, 0, 1.0)])
    # 4% up in 43 rounds against 150 (wgpu-native's reference loop on the H200): it moves.
    assert states.moves([process(lv, 50, 14, 1.04) for lv in (17.6, 16.7, 17.1)])


def test_rank_sum_p_is_scipys_asymptotic_mann_whitney():
    """moves's p is scipy.stats.mannwhitneyu's (method="asymptotic", two-sided; computed
    without importing scipy.stats in every run's parent): apart, close, tied (rounded
    values), unequal sizes, either way round, and every value tied (p = 1, as scipy's)."""
    import pytest
    from scipy import stats as sps

    rng = np.random.default_rng(56)
    cases = [(rng.normal(1.0, 0.1, 30), rng.normal(1.2, 0.1, 12)),
             (rng.normal(1.0, 0.1, 8), rng.normal(1.01, 0.1, 40)),
             (np.round(rng.normal(10, 2, 25)), np.round(rng.normal(11, 2, 25))),
             (np.array([1.0, 2.0, 2.0]), np.array([2.0, 3.0, 3.0, 3.0])),
             (np.ones(4), np.ones(3))]
    for a, b in cases:
        for x, y in ((a, b), (b, a)):
            expected = sps.mannwhitneyu(x, y, method="asymptotic").pvalue
            assert states.rank_sum_p(x, y) == pytest.approx(expected, rel=1e-12), (x, y)
    assert states.rank_sum_p(*cases[0]) < 1e-4 < states.rank_sum_p(*cases[1])


def approx(value: float, rel: float):
    import pytest

    return pytest.approx(value, rel=rel)


def _beside(found) -> dict[str, tuple[float, list[int], set[str]]]:
    """Per CPU state kept beside the headline: its `submit` per op over processes (µs), the
    processes it is over and its regimes."""
    out = {}
    for table in found.states:
        wall = table[table.metric == "per_dispatch_ns"]
        (whole,) = wall[wall.process.isna()].itertuples()
        out[whole.cpu_state] = (whole.value / 1e3, list(wall.process.dropna()),
                                set(table.regime))
    return out


def test_a_split_job_keeps_the_other_states_estimates_beside_its_headline(plan, tmp_path):  # noqa: F811
    """Three processes slow in 40-60% of their rounds: the headline is the slow state's (as
    without this), and the fast state's estimates, which each process measured with
    min_rounds rounds, are kept beside with their intervals, for `compare`."""
    found, _, _ = _finished(plan, tmp_path, (0.6, 0.5, 0.4))
    headline = found.summaries[0]
    assert set(headline.regime) == {"back to back, CPU slow state"}
    assert "cpu_state" not in headline
    beside = _beside(found)
    assert set(beside) == {"fast"}
    level, processes, regimes = beside["fast"]
    assert level == approx(38.0, 0.03) and processes == [0, 1, 2]
    assert regimes == {"back to back, CPU fast state"}
    (table,) = found.states
    whole = table[table.process.isna() & (table.metric == "per_dispatch_ns")].iloc[0]
    assert whole.ci_low < whole.value < whole.ci_high


def test_a_job_of_both_states_keeps_the_state_its_processes_measured(plan, tmp_path):  # noqa: F811
    """The H200's second plain run of a pair (six-processes-3): PyTorch's processes met the
    slow state too rarely, the job took every round ("both CPU states"), and a compare
    against a run that kept the slow state had nothing in common. The fast state, which
    every process measured, is kept beside; the slow one, of two processes, is not."""
    found, _, _ = _finished(plan, tmp_path, (0.5, 0.45, 0.02))
    assert set(found.summaries[0].regime) == {"back to back, both CPU states"}
    beside = _beside(found)
    assert set(beside) == {"fast"} and beside["fast"][0] == approx(38.0, 0.03)
    # A state that moves no figure keeps nothing beside: the headline names none.
    (tmp_path / "plain").mkdir()
    plain, _, _ = _finished(plan, tmp_path / "plain", (0.6, 0.5, 0.4), fast_us=54.0)
    assert not plain.states
