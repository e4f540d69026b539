"""crossover: where a GPU line crosses below the CPU reference, on synthetic sweeps."""

import math

import numpy as np
import pandas as pd
import pytest

from gpuoverhead.analysis.crossover import crossing, lines, with_crossovers
from gpuoverhead.analysis.pairs import cpu_reference_of, paired_ratios
from gpuoverhead.analysis.series import Key, Series
from gpuoverhead.cases import Case

SIZES = [16, 64, 256, 1024, 4096]


def test_the_estimate_is_where_the_ratio_stays_below_one_and_its_interval_where_it_may():
    # Lost at 16 and 64, undecided at 256, won from 1024: the crossover is at 256 or 1024.
    c = crossing(SIZES, [3.0, 1.5, 0.9, 0.5, 0.2], [2.0, 1.2, 0.7, 0.4, 0.1],
                 [4.0, 1.8, 1.1, 0.6, 0.3])
    assert (c.value, c.low, c.high, c.undecided) == (256.0, 256.0, 1024.0, (256,))
    assert (c.won, c.lost, c.outcome, c.censored) == ((1024, 4096), (16, 64), "found", False)


def test_a_dip_below_one_that_does_not_last_is_no_crossover():
    """Below 1 at 64 alone (a noisy size): the crossover is where it stays below."""
    c = crossing(SIZES, [2.0, 0.8, 1.5, 0.5, 0.4], [1.5, 0.5, 1.2, 0.3, 0.3],
                 [2.5, 0.9, 1.8, 0.7, 0.5])
    assert (c.value, c.low, c.high, c.undecided) == (1024.0, 1024.0, 1024.0, ())


def test_lost_then_undecided_is_not_decided_and_won_everywhere_is_censored():
    later = crossing(SIZES, [9.0, 7.0, 5.0, 2.0, 1.2], [8.0] * 4 + [0.9], [10.0] * 5)
    assert later.outcome == "not decided" and later.low == 4096 and later.high == math.inf
    assert later.undecided == (4096,) and math.isnan(later.value)
    always = crossing(SIZES, [0.5] * 5, [0.4] * 5, [0.6] * 5)
    assert always.censored and (always.low, always.high) == (16.0, 16.0)


def test_a_size_without_an_interval_is_undecided():
    c = crossing(SIZES, [2.0, 2.0, 0.5, 0.5, 0.5], [1.5, 1.5, math.nan, 0.4, 0.4],
                 [2.5, 2.5, math.nan, 0.6, 0.6])
    assert (c.value, c.low, c.high, c.undecided) == (256.0, 256.0, 1024.0, (256,))


def _sweep(gpu_ns, cpu_ns, processes: int, noise: float, seed: int, sizes: list[int]
           ) -> list[tuple]:
    """Per H, the GPU's cpu_ratio estimate from `processes` process pairs through
    pairs.paired_ratios: each pair shares a drift of the machine (lognormal, `noise`), and
    each process has its own rounds' noise."""
    rng = np.random.default_rng(seed)
    out = []
    for h in sizes:
        gpu, cpu = (Case("rec", "fusion_recurrent", h, 64, "fusion", "dispatch", "wait", (1,),
                         variant=v, k=1) for v in ("fused", "unfused"))
        mine, theirs = [], []
        for _ in range(processes):
            drift = rng.lognormal(0, noise)
            for found, case, true in ((mine, gpu, gpu_ns(h)), (theirs, cpu, cpu_ns(h))):
                rounds = true * drift * rng.lognormal(0, noise / 3, 9)
                found.append({Key(case, "per_unit_ns", "ns", "fit"): Series(
                    rounds, np.arange(9.0), 9)})
        (row,) = paired_ratios(mine, theirs, "cpu", "cpu_ratio", ("per_unit_ns",),
                               cpu_reference_of((cpu,)))
        e = row.estimate
        out.append((h, e.value, e.ci_low, e.ci_high))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_a_synthetic_sweep_crosses_where_the_model_does(seed):
    """GPU: 60 µs of overhead a step plus 0.5 ns per H^2; CPU: 1 ns per H^2 plus 2 µs. The
    GPU is slower at H = 256 (ratio 1.37) and faster from 512 (0.72): with five process
    pairs and 20% drift shared within a pair the crossover is 512, within its interval."""
    sweep = _sweep(lambda h: 60_000 + 0.5 * h * h, lambda h: 2_000 + 1.0 * h * h, 5, 0.2,
                   seed, [16, 64, 256, 512, 1024, 4096])
    c = crossing(*map(list, zip(*sweep, strict=True)))
    assert c.value == 512 and c.low <= 512 <= c.high
    assert all(h in (256, 512, 1024) for h in c.undecided)


def test_a_gpu_that_never_wins_is_never_in_range():
    sweep = _sweep(lambda h: 1e8, lambda h: 2_000 + 1.0 * h * h, 4, 0.2, 11, SIZES)
    c = crossing(*map(list, zip(*sweep, strict=True)))
    assert c.outcome == "beyond" and c.low == c.high == math.inf and c.undecided == ()


def _summary() -> pd.DataFrame:
    rows = []
    for impl, ratios in (("gpu-a", [3.0, 1.5, 0.9, 0.5, 0.2]), ("gpu-b", [9.0] * 5)):
        for h, r in zip(SIZES, ratios, strict=True):
            rows.append({"benchmark": "rec", "implementation": impl, "family": impl,
                         "variant": "fused", "k": 1, "sync": "wait", "encoding": "dispatch",
                         "call": "per_unit_ns", "elements": h, "metric": "cpu_ratio",
                         "process": pd.NA, "value": r, "ci_low": r * 0.8, "ci_high": r * 1.2,
                         "case": f"rec/{h}"})
    return pd.DataFrame(rows).astype({"process": "Int64"})


def test_with_crossovers_adds_a_row_per_line_and_nothing_without_ratios():
    summary = _summary()
    out = with_crossovers(summary)
    added = out[out.metric == "crossover_hidden"].set_index("implementation")
    assert len(out) == len(summary) + 2 and set(added.elements) == {4096}
    assert added.loc["gpu-a", "value"] == 256 and added.loc["gpu-a", "ci_high"] == 1024
    assert math.isnan(added.loc["gpu-b", "value"])
    assert "undecided at H: 256" in added.loc["gpu-a", "estimator"]
    assert [c.value for _, c in lines(summary)][0] == 256
    plain = summary.assign(metric="per_unit_ns")
    assert with_crossovers(plain) is plain


LINE = pd.Series({"benchmark": "rec", "implementation": "gpu-a", "variant": "fused"})


def _said(sizes: list[int], value: list[float], low: list[float], high: list[float]) -> str:
    """The console's sentence for one line with these ratios and intervals."""
    from gpuoverhead.present import format as fmt

    return fmt.crossover(LINE, crossing(sizes, value, low, high), "cpu-x")


def test_one_h_straddling_one_is_not_decided_and_has_no_range():
    """Issue 41: one H measured, its interval straddling 1 (or none, one pair of processes)
    read 'from H = 16 [16–beyond 16] (every H in range, H 16–16)'."""
    for low, high in ((0.5, 1.3), (math.nan, math.nan)):
        c = crossing([16], [0.8], [low], [high])
        assert (math.isnan(c.value), c.low, c.high, c.outcome) == (True, 16, math.inf,
                                                                    "not decided")
        assert _said([16], [0.8], [low], [high]) == \
            "rec: whether gpu-a fused beats cpu-x is not decided at H = 16"


def test_several_h_none_deciding_claim_no_crossover():
    """Below 1 at every H but no interval excludes a tie: no 'beats ... from 16'."""
    assert _said(SIZES, [0.8, 0.7, 0.5, 0.3, 0.2], [0.4] * 5, [1.2] * 5) == \
        "rec: whether gpu-a fused beats cpu-x is not decided in H 16–4096"
    assert _said(SIZES, [0.8] * 5, [math.nan] * 5, [math.nan] * 5) == \
        "rec: whether gpu-a fused beats cpu-x is not decided in H 16–4096"


def test_won_at_the_smallest_h_is_at_or_below_it():
    assert _said(SIZES, [0.5] * 5, [0.4] * 5, [0.6] * 5) == \
        "rec: gpu-a fused beats cpu-x at or below the smallest H measured, H = 16"
    assert _said([16], [0.5], [0.4], [0.6]) == \
        "rec: gpu-a fused beats cpu-x at or below the smallest H measured, H = 16"
    assert _said(SIZES, [0.5] * 5, [0.4] * 5, [0.6] * 4 + [1.5]) == (
        "rec: gpu-a fused beats cpu-x at or below the smallest H measured, H = 16 "
        "[at or below 16–beyond 4096]; undecided at H = 4096")
    # Below 1 from 16 but won at 64 alone: the estimate is 16, not a win there.
    assert _said(SIZES, [0.5] * 5, [0.4] * 5, [1.2, 0.6, 1.2, 1.2, 1.2]) == (
        "rec: gpu-a fused beats cpu-x from H = 16 [at or below 16–beyond 4096]; undecided "
        "at H = 16, 256, 1024, 4096")


def test_won_from_a_middle_h_says_from_where_and_what_stays_undecided():
    assert _said(SIZES, [3.0, 1.5, 0.9, 0.5, 0.2], [2.0, 1.2, 0.7, 0.4, 0.1],
                 [4.0, 1.8, 1.1, 0.6, 0.3]) == \
        "rec: gpu-a fused beats cpu-x from H = 256 [256–1024]; undecided at H = 256"
    # Undecided at the smallest H: the earliest crossover allowed is there or below it.
    assert _said(SIZES, [1.2, 0.5, 0.5, 0.5, 0.5], [0.7] + [0.4] * 4, [1.5] + [0.6] * 4) == \
        "rec: gpu-a fused beats cpu-x from H = 64 [at or below 16–64]; undecided at H = 16"
    # Lost, then won from 1024: known to one H, so no range.
    assert _said(SIZES, [2.0, 2.0, 2.0, 0.5, 0.5], [1.5] * 3 + [0.4] * 2,
                 [2.5] * 3 + [0.6] * 2) == "rec: gpu-a fused beats cpu-x from H = 1024"


def test_never_won_puts_the_crossover_beyond_the_largest_h():
    assert _said(SIZES, [9.0] * 5, [8.0] * 5, [10.0] * 5) == (
        "rec: gpu-a fused does not beat cpu-x in H 16–4096: its crossover is beyond the "
        "largest H measured")
    assert _said([16], [9.0], [8.0], [10.0]) == (
        "rec: gpu-a fused does not beat cpu-x at H = 16: its crossover is beyond the "
        "largest H measured")
    # An estimate below 1 whose interval lies above 1 (no interval of ours does that) is
    # lost: the estimate never leaves its own interval.
    lost = crossing(SIZES, [0.5] * 5, [0.4] * 4 + [1.1], [0.6] * 4 + [1.5])
    assert lost.outcome == "not decided" and lost.low == math.inf and lost.lost == (4096,)


def test_a_win_before_a_loss_is_no_crossover():
    """Won at 16, lost at 64, then below 1 with no interval deciding: the point estimate
    (256) rests on no win, so none is claimed, and the sentence says which H is which."""
    assert _said(SIZES, [0.5, 2.0, 0.8, 0.8, 0.8], [0.4, 1.5, 0.5, 0.5, 0.5],
                 [0.6, 2.5, 1.2, 1.2, 1.2]) == (
        "rec: gpu-a fused is not shown to beat cpu-x in H 16–4096; won at H = 16; lost at "
        "H = 64; undecided at H = 256, 1024, 4096")


def test_the_row_claims_no_value_where_the_sentence_claims_no_win():
    rows = _summary().assign(ci_low=lambda f: f.value * 0.5, ci_high=lambda f: f.value * 1.5)
    added = with_crossovers(rows).query("metric == 'crossover_hidden'").set_index(
        "implementation")
    # gpu-a: 0.5 [0.25–0.75] at 1024 is won; gpu-b: 9 [4.5–13.5] lost everywhere.
    assert added.loc["gpu-a", "value"] == 256 and added.loc["gpu-a", "ci_low"] == 64
    assert added.loc["gpu-a", "estimator"].startswith("smallest H from which")
    assert math.isnan(added.loc["gpu-b", "value"]) and added.loc["gpu-b", "ci_low"] == math.inf
    assert added.loc["gpu-b", "estimator"].startswith("none, beyond the largest H measured")
    one = rows[rows.elements == 16].assign(value=0.8, ci_low=0.5, ci_high=1.3)
    added = with_crossovers(one).query("metric == 'crossover_hidden'")
    assert added.value.isna().all() and (added.ci_low == 16).all()
    assert (added.ci_high == math.inf).all()
    assert added.estimator.str.startswith("none, not decided").all()
    assert added.estimator.str.contains("at H = 16; undecided at H: 16").all()


def test_the_plot_has_a_line_per_form_and_the_cpus_among_them():
    from gpuoverhead.present import plots

    ratios = _summary()
    times = ratios.assign(metric="per_unit_ns", value=ratios.value * 1e3,
                          ci_low=ratios.ci_low * 1e3, ci_high=ratios.ci_high * 1e3)
    cpu = times[times.implementation == "gpu-a"].assign(implementation="cpu-x",
                                                        variant="unfused")
    frame = pd.concat([ratios, times, cpu], ignore_index=True)
    fig = plots.crossover(frame, ("cpu-x",))
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert labels == ["gpu-a fused", "gpu-b fused", "cpu-x unfused (CPU)"]
    assert plots.crossover(times, ("cpu-x",)) is None  # no CPU reference in that run
