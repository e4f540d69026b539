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
    assert not c.never and not c.always


def test_a_dip_below_one_that_does_not_last_is_no_crossover():
    """Below 1 at 64 alone (a noisy size): the crossover is where it stays below."""
    c = crossing(SIZES, [2.0, 0.8, 1.5, 0.5, 0.4], [1.5, 0.5, 1.2, 0.3, 0.3],
                 [2.5, 0.9, 1.8, 0.7, 0.5])
    assert (c.value, c.low, c.high, c.undecided) == (1024.0, 1024.0, 1024.0, ())


def test_never_and_always_in_range():
    never = crossing(SIZES, [9.0, 7.0, 5.0, 2.0, 1.2], [8.0] * 4 + [0.9], [10.0] * 5)
    assert never.never and never.low == 4096 and never.high == math.inf
    assert never.undecided == (4096,)
    always = crossing(SIZES, [0.5] * 5, [0.4] * 5, [0.6] * 5)
    assert always.always and (always.low, always.high) == (16.0, 16.0)


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
    assert c.never and math.isnan(c.low) and c.high == math.inf and c.undecided == ()


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


def test_the_sentences_say_from_where_never_and_what_stays_undecided():
    from gpuoverhead.present import format as fmt

    line = pd.Series({"benchmark": "rec", "implementation": "gpu-a", "variant": "fused"})
    c = crossing(SIZES, [3.0, 1.5, 0.9, 0.5, 0.2], [2.0, 1.2, 0.7, 0.4, 0.1],
                 [4.0, 1.8, 1.1, 0.6, 0.3])
    assert fmt.crossover(line, c, "cpu-x") == ("rec: gpu-a fused beats cpu-x from H = 256 "
                                               "[256–1024]; undecided at H = 256")
    never = crossing(SIZES, [9.0] * 5, [8.0] * 5, [10.0] * 5)
    assert fmt.crossover(line, never, "cpu-x") == \
        "rec: gpu-a fused does not beat cpu-x in range (H 16–4096)"
    # An estimate below 1 whose interval lies above 1 (no interval of ours does that) is
    # lost: the estimate never leaves its own interval.
    lost = crossing(SIZES, [0.5] * 5, [0.4] * 4 + [1.1], [0.6] * 4 + [1.5])
    assert lost.never and math.isnan(lost.low) and lost.undecided == ()
    always = crossing(SIZES, [0.5] * 5, [0.4] * 5, [0.6] * 4 + [1.5])
    assert fmt.crossover(line, always, "cpu-x") == (
        "rec: gpu-a fused beats cpu-x from H = 16 [16–beyond 4096] (every H in range, "
        "H 16–4096); undecided at H = 4096")


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
