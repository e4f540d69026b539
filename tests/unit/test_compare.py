"""compare on synthetic result sets: known values, known noise, so every verdict is known."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuoverhead.analysis.modes import MEAN
from gpuoverhead.errors import UserError
from gpuoverhead.metrics import HEADLINE
from gpuoverhead.present import compare as comparing
from gpuoverhead.present import format as fmt
from gpuoverhead.present.compare import compare
from gpuoverhead.results.columns import SCHEMA_VERSION
from gpuoverhead.results.read import load

RESULTS = Path(__file__).resolve().parents[2] / "results"
CASES = [("empty/naive/wait", "latency_ns", 200_000.0),
         ("empty/sequential/submit/wrapper", "per_dispatch_ns", 100_000.0),
         ("empty/sequential/dispatch/wrapper", "per_dispatch_ns", 10_000.0)]


def _result_set(folder: Path, factor: float, seed: int,
                processes: tuple[float, ...] = ()) -> Path:
    """A run folder whose estimates are `factor` times CASES' values, ±1% intervals, and
    whose raw samples scatter 1% around them (seeded); with `processes`, also a row of
    each process's own estimate (that factor times the estimate)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    summary, samples = [], []
    for case, metric, value in CASES:
        v = value * factor
        keys = {"implementation": "wgpu-native", "benchmark": "empty", "elements": 1,
                "case": case, "call": ""}
        summary.append({**keys, "metric": metric, "unit": "ns", "value": v,
                        "ci_low": v * 0.99, "ci_high": v * 1.01, "process": pd.NA,
                        "methodology": "sequential", "variant": ""})
        summary += [{**summary[-1], "value": v * f, "ci_low": v * f * 0.99,
                     "ci_high": v * f * 1.01, "process": i} for i, f in enumerate(processes)]
        n = 1 if metric == "latency_ns" else 256
        walls = v * n * rng.normal(1.0, 0.01, 200)
        samples += [{**keys, "phase": "measure", "process": k % max(len(processes), 1),
                     "n_dispatches": n, "wall_ns": int(w), "gpu_ns": pd.NA}
                    for k, w in enumerate(walls)]
    pd.DataFrame(summary).astype({"process": "Int64"}).to_parquet(folder / "summary.parquet")
    pd.DataFrame(samples).astype({"gpu_ns": "Int64"}).to_parquet(folder / "samples.parquet")
    (folder / "run.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION}))
    return folder


def test_a_slowdown_of_20_percent_is_slower_everywhere_and_the_same_run_is_same(tmp_path):
    base = load(_result_set(tmp_path / "base", 1.0, 1))
    slow = compare(base, load(_result_set(tmp_path / "slow", 1.2, 2)))
    assert (slow.verdict == "slower").all(), slow[["case", "verdict"]]
    assert np.allclose(slow.ratio, 1.2)
    assert ((slow.ratio_low > 1.15) & (slow.ratio_high < 1.25)).all()
    again = compare(base, load(_result_set(tmp_path / "again", 1.0, 3)))
    assert (again.verdict == "same").all(), again[["case", "verdict"]]


def test_a_change_within_the_noise_is_not_called_a_change(tmp_path):
    base = load(_result_set(tmp_path / "base", 1.0, 4))
    table = compare(base, load(_result_set(tmp_path / "new", 1.01, 5)), threshold=0.05)
    assert not table.verdict.isin(["slower", "faster"]).any(), table[["case", "verdict"]]


def test_runs_of_several_processes_are_weighed_by_their_processes(tmp_path):
    """Where both runs have processes of their own, their spread sets the interval (Welch
    on logs), not the ±1% each run claims for its median: processes in two modes (x6) are
    no change a comparison can call, and three tight processes 20% slower still are one."""
    modes = compare(load(_result_set(tmp_path / "a", 1.0, 1, (1.0, 1.0, 6.0))),
                    load(_result_set(tmp_path / "b", 6.0, 2, (1 / 6, 1.0, 1.0))))
    assert (modes.verdict == "unsure").all(), modes[["case", "verdict"]]
    assert np.allclose(modes.ratio, 6 ** (1 / 3))  # the geometric means' ratio
    assert (modes.ratio_high / modes.ratio_low > 100).all()
    slow = compare(load(_result_set(tmp_path / "c", 1.0, 3, (0.99, 1.0, 1.01))),
                   load(_result_set(tmp_path / "d", 1.2, 4, (0.99, 1.0, 1.01))))
    assert (slow.verdict == "slower").all(), slow[["case", "verdict"]]
    assert ((slow.ratio_low > 1.15) & (slow.ratio_high < 1.25)).all()


#: An A/A's headline estimates, seeded: per case its processes' values in half a and half b
#: (factors of 100 us) and whether its samples fall in two modes.
AA = {
    # Latencies whose samples fall at 0.4 or 2.4 ms, each process's median in either.
    "empty/naive/wait": ((1, 6, 1, 6, 6, 1), (6, 1, 6, 1, 1, 1), True),
    # Processes that range over 2x in both halves: the machine's spread.
    "empty/sequential/submit/wrapper": ((1.0, 2.0, 1.2, 0.9, 1.8, 1.1),
                                        (1.9, 1.0, 0.95, 2.1, 1.3, 1.0), False),
    # Tight processes, half b 20% slower throughout: a change called.
    "empty/sequential/pass/wrapper": ((0.99, 1.0, 1.01, 1.0, 0.99, 1.01),
                                      (1.19, 1.2, 1.21, 1.2, 1.19, 1.21), False),
    # Tight (14%), interleaved 10% apart: the processes' p 0.015, unsure.
    "empty/sequential/dispatch/wrapper": ((0.94, 0.97, 1.0, 1.02, 1.05, 1.08),
                                          (1.03, 1.07, 1.1, 1.13, 1.16, 1.2), False),
    # Sixteen more that agree: 95% of 20 leaves room for one in two modes.
    **{f"k{k}/sequential/{e}/wrapper": ((0.99, 1.0, 1.01, 1.0, 0.98, 1.02),
                                        (1.01, 0.99, 1.0, 1.02, 1.0, 0.98), False)
       for k in range(6) for e in ("submit", "pass", "dispatch")[: 3 if k < 5 else 1]},
}


def _aa_half(folder: Path, half: int, seed: int) -> Path:
    """One half of an A/A of the AA estimates: a row over processes and one per process,
    `rel_spread_between` the range of the processes' values, and per process 60 raw
    samples of each latency (in two modes where AA says so, else around its value)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    summary, samples = [], []
    for case, (*halves, two) in AA.items():
        values = 100_000.0 * np.array(halves[half])
        metric = "latency_ns" if "naive" in case else "per_dispatch_ns"
        keys = {"implementation": "wgpu-native", "benchmark": case.split("/")[0],
                "elements": 1, "case": case, "call": "", "metric": metric, "unit": "ns",
                "methodology": case.split("/")[1], "variant": ""}
        centre = float(np.exp(np.log(values).mean()))
        summary += [{**keys, "value": v, "ci_low": v * 0.99, "ci_high": v * 1.01,
                     "process": p, "rel_spread_between": np.nan}
                    for p, v in [(pd.NA, centre), *enumerate(values)]]
        summary[-len(values) - 1]["rel_spread_between"] = float(np.ptp(values) / centre)
        for p, v in enumerate(values if metric == "latency_ns" else ()):
            late = np.arange(60) < (45 if v > 300_000 else 15)  # its median in its mode
            walls = (np.where(late, 2_400_000, 400_000) if two else np.full(60, v)) \
                * rng.normal(1.0, 0.01, 60)
            samples += [{**keys, "phase": "measure", "process": p, "n_dispatches": 1,
                         "wall_ns": int(w), "gpu_ns": pd.NA} for w in walls]
    pd.DataFrame(summary).astype({"process": "Int64"}).to_parquet(folder / "summary.parquet")
    pd.DataFrame(samples).drop(columns=["metric", "unit", "methodology", "variant"]).astype(
        {"gpu_ns": "Int64"}).to_parquet(folder / "samples.parquet")
    (folder / "run.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION}))
    return folder


def test_an_aa_says_why_each_headline_estimate_is_not_same_and_what_would_pass(tmp_path):
    """Every verdict as compare gives it (nothing overwritten): of the twenty headline
    estimates, one in two modes, one whose processes spread, one called slower, one unsure
    with neither, sixteen `same`; the lines count each once, and the last says the A/A
    failed and what would pass it."""
    table = compare(*(load(_aa_half(tmp_path / name, h, h)) for h, name in enumerate("ab")))
    verdicts = dict(zip(table.case, table.verdict, strict=True))
    assert verdicts == {"empty/naive/wait": "unsure",
                        "empty/sequential/submit/wrapper": "unsure",
                        "empty/sequential/pass/wrapper": "slower",
                        "empty/sequential/dispatch/wrapper": "unsure",
                        **{c: "same" for c in AA if c.startswith("k")}}
    lines = comparing.aa_lines(table)
    assert lines[1] == "A/A, headline (latency, per dispatch): 80.0% of 20 estimates are 'same'"
    assert lines[2].startswith("of the 4 headline estimates not 'same', 1 were called a "
                               "change (e.g. wgpu-native empty/sequential/pass/wrapper "
                               "per_dispatch_ns slower, 1.200 [")
    assert "; 1 were unsure with samples in two modes (e.g. wgpu-native empty/naive/wait: " \
        "400 µs (" in lines[2]
    assert "; 1 were unsure with processes whose medians ranged over 25% of the estimate" \
        in lines[2]
    assert lines[2].endswith("; 1 were unsure with neither: a ratio too far off 1, or an "
                             "interval wider than x1.5, for 'same'")
    passed, said = comparing.aa_verdict(table, 6)
    assert not passed
    assert said == ("A/A failed: 16 of 20 headline estimates are 'same' (80.0%), under the 95% "
                    "it asks (19 of 20); more processes a half narrow those the machine's "
                    "spread or noise or two modes left unsure (--processes 12, about twice "
                    "the time); the "
                    "1 called a change are, in an A/A, the machine or chance: again on a "
                    "quieter machine (nothing else running, or --affinity on CPUs left alone)")


def test_an_aa_passes_from_95_percent_and_says_more_processes_narrow_two_modes():
    def table(same: int, unsure: int, modes: int = 0) -> pd.DataFrame:
        return pd.DataFrame({"metric": "latency_ns", "verdict": ["same"] * same
                             + ["unsure"] * (unsure + modes), "spread": 0.1, "regimes": "",
                             "modes": [""] * (same + unsure) + ["1 µs (50%) or 9 µs (50%)"]
                             * modes})
    assert comparing.aa_verdict(table(19, 1), 3) == (
        True, "A/A passed: 19 of 20 headline estimates are 'same' (95.0%), at least the 95% "
              "it asks")
    passed, said = comparing.aa_verdict(table(18, 1), 3)
    assert not passed and said.startswith("A/A failed: 18 of 19 headline estimates are "
                                          "'same' (94.7%), under the 95% it asks (19 of 19);")
    assert said.endswith("(--processes 6, about twice the time)")
    passed, said = comparing.aa_verdict(table(30, 0, modes=2), 6)
    assert not passed and said.endswith(  # a latency in two modes is a trimmed mean
        "more processes a half narrow those two modes left unsure (--processes 12, about "
        "twice the time)")
    assert comparing.aa_verdict(table(0, 0), 6) == (
        False, "A/A failed: the halves share no headline estimate to judge")


@pytest.mark.slow  # 1.6 s each: two halves' samples read
@pytest.mark.parametrize(("pair", "same", "every", "not_same"), [
    ("h200/regimes-check/selftest", 35, (230, 203), {}),
    ("h200-x4/selftest", 33, (224, 200), {
        ("torch-eager", "empty/elements=1/naive/torch-eager"): "1.384 [0.951–1.693]",
        ("torch-eager", "empty/elements=1/sequential/torch-eager"): "1.300 [0.970–1.457]"}),
])
def test_the_committed_aa_pairs_give_the_published_shares(pair, same, every, not_same):
    """docs/results.md: 35 of 35 headline estimates `same` and 203 of 230 in all on the
    H200 (the a b b a A/A of `regimes-check`); 33 of 35 and 200 of 224 on the 4-GPU VM
    (PyTorch eager's latency and per op, 1.38 [0.95-1.69] and 1.30 [0.97-1.46])."""
    halves = [load(RESULTS / pair / half) for half in "ab"]
    table = compare(*halves)
    head = table[table.metric.isin(HEADLINE)]
    assert (len(head), (head.verdict == "same").sum()) == (35, same)
    assert (len(table), (table.verdict == "same").sum()) == every
    others = head[head.verdict != "same"]
    assert {(r.implementation, r.case): fmt.ratio_with_ci(r.ratio, r.ratio_low, r.ratio_high)
            for r in others.itertuples()} == not_same
    assert comparing.aa_verdict(table, 6)[0] == (same >= 34)


def test_six_processes_a_run_are_judged_by_their_processes_not_their_pooled_samples(tmp_path):
    """Six processes a run whose values interleave (the new ones 10% higher, ranks mixed:
    exact Mann-Whitney p 0.015 over processes) while the pooled samples differ beyond doubt:
    the processes are the units, so no change is called (a pooled p called it `slower`)."""
    base = _result_set(tmp_path / "a", 1.0, 1, (0.94, 0.97, 1.0, 1.02, 1.05, 1.08))
    new = _result_set(tmp_path / "b", 1.1, 2,
                      tuple(x / 1.06 for x in (0.99, 1.03, 1.06, 1.09, 1.12, 1.16)))
    table = compare(load(base), load(new))
    assert (table.ratio_low > 1).all()  # the 95% interval alone would call it
    assert ((table.p_value > 0.01) & (table.p_value < 0.02)).all(), table.p_value
    assert (table.verdict == "unsure").all(), table[["case", "verdict"]]


def _with_regimes(folder: Path, regimes: list[str]) -> Path:
    """The result set with each of CASES' rows (in order) given a regime."""
    path = folder / "summary.parquet"
    summary = pd.read_parquet(path)
    summary["regime"] = summary["case"].map(dict(zip([c for c, _, _ in CASES], regimes,
                                                     strict=True)))
    summary.to_parquet(path)
    return folder


def test_estimates_of_two_cpu_states_are_unsure_whatever_their_ratio(tmp_path):
    """Two plain runs on the H200 took PyTorch's figures from different CPU states (one the
    slow state's rounds, the other every round) and compared them 0.71x, `faster`. A ratio
    of two states' levels is no change: `unsure`, both regimes said; a regime naming no
    state (the state moved nothing) compares with one that names it."""
    slow, both, plain = ("back to back, CPU slow state", "back to back, both CPU states",
                         "back to back")
    base = load(_with_regimes(_result_set(tmp_path / "base", 1.0, 1), [slow, slow, slow]))
    new = load(_with_regimes(_result_set(tmp_path / "new", 0.7, 2), [both, plain, slow]))
    table = compare(base, new).set_index("case")
    assert table.loc["empty/naive/wait", "verdict"] == "unsure"
    assert table.loc["empty/naive/wait", "regimes"] == f"{slow} vs {both}"
    assert (table.loc[["empty/sequential/submit/wrapper", "empty/sequential/dispatch/wrapper"],
                      "verdict"] == "faster").all()
    (line,) = [x for x in comparing.aa_lines(table.reset_index()) if x.startswith("of the")]
    assert "1 were unsure as the runs measured them in different regimes" in line


def _with_states(folder: Path, levels: dict[str, float],
                 processes: tuple[float, ...] = (0.99, 1.0, 1.01)) -> Path:
    """The result set with `states.parquet`: each of CASES' estimates in each CPU state of
    `levels` (its factor of CASES' values), over `processes` and per process."""
    rows = []
    for state, factor in levels.items():
        for case, metric, value in CASES:
            v = value * factor
            keys = {"implementation": "wgpu-native", "benchmark": "empty", "elements": 1,
                    "case": case, "call": "", "metric": metric, "unit": "ns",
                    "methodology": case.split("/")[1], "variant": "", "cpu_state": state,
                    "regime": f"back to back, CPU {state} state",
                    "rel_spread_between": float(np.ptp(processes))}
            rows += [{**keys, "value": v * f, "ci_low": v * f * 0.99, "ci_high": v * f * 1.01,
                      "process": p} for p, f in [(pd.NA, 1.0), *enumerate(processes)]]
    pd.DataFrame(rows).astype({"process": "Int64"}).to_parquet(folder / "states.parquet")
    return folder


def test_runs_whose_cpu_states_differ_are_judged_in_a_state_both_measured(tmp_path):
    """The H200's two plain runs back to back (six-processes-3): PyTorch's job kept the slow
    state's rounds in run a and took every round in run b, whose processes met the slow
    state too rarely; both measured the fast state (16.97 and 16.66 µs naive), and there
    they agree. Judged there, said in `regimes`, with the fast state's figures; a change
    in the shared state is still called; the old code called all three `unsure`."""
    slow, both = "back to back, CPU slow state", "back to back, both CPU states"
    spread = (0.99, 1.0, 1.01)
    base = _with_states(_with_regimes(_result_set(tmp_path / "base", 1.0, 1, spread),
                                      [slow] * 3), {"fast": 0.6})
    new = _with_states(_with_regimes(_result_set(tmp_path / "new", 0.7, 2, spread),
                                     [both] * 3), {"fast": 0.6})
    table = compare(load(base), load(new)).set_index("case")
    assert (table.verdict == "same").all(), table[["verdict", "regimes"]]
    assert (table.regimes == "compared in the fast state: base slow, new both").all()
    assert np.allclose(table.ratio, 1.0) and np.allclose(table.base / table.new, 1.0)
    assert np.allclose(table.base, [0.6 * v for _, _, v in CASES])
    lines = comparing.aa_lines(table.reset_index())
    assert lines[1].endswith("100.0% of 3 estimates are 'same'")
    changed = _with_states(_with_regimes(_result_set(tmp_path / "changed", 0.7, 3, spread),
                                         [both] * 3), {"fast": 0.72})
    found = compare(load(base), load(changed))
    assert (found.verdict == "slower").all() and np.allclose(found.ratio, 1.2)
    # The base's kept state first where both runs measured both.
    new_both = _with_states(_with_regimes(_result_set(tmp_path / "nb", 0.7, 4, spread),
                                          [both] * 3), {"slow": 1.0, "fast": 0.9})
    found = compare(load(base), load(new_both))
    assert (found.regimes == "compared in the slow state: base slow, new both").all()
    assert (found.verdict == "same").all()


def test_runs_that_share_no_cpu_state_stay_unsure_and_count_as_apart(tmp_path):
    """A run that kept the slow state and one that measured only the fast one: a ratio of two
    states' levels is no change, whatever it reads; an A/A says so and what would pass."""
    slow, fast = "back to back, CPU slow state", "back to back, CPU fast state"
    spread = (0.99, 1.0, 1.01)
    base = _with_regimes(_result_set(tmp_path / "base", 1.0, 1, spread), [slow] * 3)
    new = _with_states(_with_regimes(_result_set(tmp_path / "new", 1.0, 2, spread),
                                     [fast] * 3), {"fast": 1.0})
    table = compare(load(base), load(new))
    assert (table.verdict == "unsure").all()
    assert (table.regimes == f"{slow} vs {fast}").all()
    (line,) = [x for x in comparing.aa_lines(table) if x.startswith("of the")]
    assert line.startswith("of the 3 headline estimates not 'same', 3 were unsure as the runs "
                           "measured them in different regimes")
    passed, said = comparing.aa_verdict(table, 3)
    assert not passed and "the 3 measured in different regimes are judged where both" in said


def test_a_states_table_is_read_only_where_asked_and_checked(tmp_path):
    """`states.parquet` is beside the summary: the summary and its per-process rows are as
    without it; a table without `cpu_state` is refused in one line naming it."""
    spread = (0.99, 1.0, 1.01)
    plain = load(_result_set(tmp_path / "plain", 1.0, 1, spread))
    folder = _with_states(_result_set(tmp_path / "with", 1.0, 1, spread), {"fast": 0.6})
    found = load(folder)
    assert found.summary.equals(plain.summary) and found.per_process.equals(plain.per_process)
    assert plain.states().empty and set(found.states()["cpu_state"]) == {"fast"}
    table = pd.read_parquet(folder / "states.parquet")
    table.drop(columns="cpu_state").to_parquet(
        folder / "states.parquet")
    with pytest.raises(UserError, match="states.parquet: no cpu_state column"):
        load(folder).states()
    # A key column of lists, or a spread of text, is one line too (it was a traceback).
    table.assign(cpu_state=[["fast"]] * len(table)).to_parquet(folder / "states.parquet")
    with pytest.raises(UserError, match="cpu_state hold other than text"):
        load(folder).states()
    table.assign(rel_spread_between="wide").to_parquet(folder / "states.parquet")
    with pytest.raises(UserError, match="rel_spread_between hold text"):
        load(folder).states()


def _with_estimator(folder: Path, estimator: str, said: str = "") -> Path:
    """The result set with its latency's rows (CASES' first) made with `estimator` and its
    modes `said` (on the row over processes)."""
    path = folder / "summary.parquet"
    summary = pd.read_parquet(path)
    latency = summary["metric"] == "latency_ns"
    summary["estimator"] = np.where(latency, estimator, "median")
    summary["modes"] = np.where(latency & summary["process"].isna(), said, "")
    summary.to_parquet(path)
    return folder


def test_a_trimmed_mean_against_a_median_is_unsure_and_two_means_compare(tmp_path):
    """Where one half found a latency's samples in two modes splitting its processes'
    medians (its figure each process's trimmed mean, modes.MEAN) and the other did not (a
    median), the two estimate different things: `unsure` whatever the ratio, the side said
    in `modes`; where both made means they compare as any estimate does."""
    said = "94 µs (36%) or 290 µs (64%)"
    mean = _with_estimator(_result_set(tmp_path / "mean", 1.0, 1), MEAN, said)
    median = _with_estimator(_result_set(tmp_path / "median", 1.0, 2), "median")
    again = _with_estimator(_result_set(tmp_path / "again", 1.0, 3), MEAN, said)
    table = compare(load(mean), load(median)).set_index("case")
    both = compare(load(mean), load(again)).set_index("case")
    latency = table.loc["empty/naive/wait"]
    assert latency["verdict"] == "unsure" and 0.98 < latency["ratio"] < 1.02
    assert latency["modes"] == (f"two modes in base only ({said}): its trimmed mean against "
                                "the other's median")
    assert (table.drop("empty/naive/wait")["verdict"] == "same").all()
    assert (both["verdict"] == "same").all() and (both["modes"] == "").all()
