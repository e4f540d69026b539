"""Samples that fall in two modes, where a median is no stable figure.

Chromium on SwiftShader sees a sync's completion either at once or at its GPU process's
next poll of the device (about 0.4 or 2.4 ms), and lavapipe's map of a read buffer comes
back in about 0.4 or 2 ms. Each process gets its own share of the two by chance, and its
median sits in whichever mode holds more than half of its samples: processes then differ
by the whole gap between the modes, and more of them do not narrow the estimate. Such an
estimate is found (`two_modes`, on the raw samples behind it: `behind`) so that the run and
an A/A comparison can say why it is wide, instead of calling it the machine's spread.

Where a latency's are within a job's processes (`within_processes`, decided where all of
them are at hand: analysis/combine.py), each process's figure is the trimmed mean of its
samples instead (`trimmed_mean`, estimator MEAN): what an op costs on average over the
mixture, a smooth function of the modes' shares where the median jumps between modes. A
symmetric TRIM guards it against a latency's rare far spikes; the samples' `outlier` flag
cannot, being measured from a process's median and MAD, which in two modes flag a whole
minority mode (the mean would then jump as the median does).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpuoverhead.analysis import student_t
from gpuoverhead.analysis.stats import CONFIDENCE, WITHIN, Estimate

#: Each mode holds at least this share of the samples (a tail of outliers is not a mode).
MIN_SHARE = 0.15
#: The modes' medians are at least this factor apart.
MIN_FACTOR = 1.5
#: Ashman's D between the modes (on logs) is at least this: two clearly separate groups.
MIN_SEPARATION = 3.0
#: Estimates that are a median of each process's samples (not a slope over rounds).
PER_SAMPLE = ("latency_ns", "call_ns")
#: Those whose processes' figure is a trimmed mean where they fall in two modes: a
#: latency. A breakdown call's two modes (the Python state's, a few µs, often at the
#: clock's grain) were found in one half of an A/A and not the other in 47 of the 107 call
#: rows a mean changed in six H200 pairs, a mean then facing a median; a latency's in none
#: of 42.
MEAN_METRICS = ("latency_ns",)
#: Fewer samples than this are not judged.
MIN_SAMPLES = 20
#: Share of a process's samples cut from each end before its mean is taken (two modes):
#: far spikes (a preempted sample, 1 in 100 or fewer) go, while each mode keeps all but
#: the edge of its tail (every mode holds MIN_SHARE of the samples, three times this).
TRIM = 0.05
#: The estimator of a latency whose samples fell in two modes (the summary's
#: `estimator`; compare finds it by this text).
MEAN = f"{TRIM:.0%} trimmed mean of each process's samples: samples in two modes"


@dataclass(frozen=True)
class Modes:
    """Two modes: their medians (ns) and the share of samples in the upper one."""

    low_ns: float
    high_ns: float
    high_share: float

    def said(self) -> str:
        return (f"{self.low_ns / 1e3:.0f} µs ({1 - self.high_share:.0%}) or "
                f"{self.high_ns / 1e3:.0f} µs ({self.high_share:.0%})")


def two_modes(values: np.ndarray) -> Modes | None:
    """The two modes of positive `values`, or None where they are one group: the split of
    their sorted logs that leaves the least variance within its halves (Otsu's), kept
    where each half holds MIN_SHARE of the values, their medians are MIN_FACTOR apart and
    Ashman's D reaches MIN_SEPARATION."""
    logs = np.sort(np.log(values[np.isfinite(values) & (values > 0)]))
    n = logs.size
    if n < MIN_SAMPLES:
        return None
    k = np.arange(1, n)
    below = np.cumsum(logs)[:-1]
    between = k * (n - k) * (below / k - (logs.sum() - below) / (n - k)) ** 2
    least = math.ceil(MIN_SHARE * n)
    allowed = (k >= least) & (n - k >= least)
    if not allowed.any():
        return None
    cut = int(k[allowed][np.argmax(between[allowed])])
    low, high = logs[:cut], logs[cut:]
    spread = math.sqrt(low.var() + high.var())
    separation = math.sqrt(2) * (high.mean() - low.mean()) / spread if spread else math.inf
    factor = math.exp(np.median(high) - np.median(low))
    if factor < MIN_FACTOR or separation < MIN_SEPARATION:
        return None
    return Modes(math.exp(np.median(low)), math.exp(np.median(high)), (n - cut) / n)


def trimmed_mean(values: np.ndarray) -> Estimate:
    """The mean of `values` less TRIM of them at each end, with Yuen's interval within one
    process (the winsorized variance, t with the kept count - 1 degrees of freedom)."""
    ordered = np.sort(np.asarray(values, dtype=float))
    n = ordered.size
    cut = int(TRIM * n)  # under 20 samples none: a plain mean
    kept = ordered[cut:n - cut]
    if kept.size < 2:
        mean = float(kept.mean()) if kept.size else math.nan
        return Estimate(mean, math.nan, math.nan, n, 0.0, f"{WITHIN}: too few samples")
    winsorized = np.clip(ordered, kept[0], kept[-1])
    half = (student_t.quantile(kept.size - 1, 0.5 + CONFIDENCE / 2) * winsorized.std(ddof=1)
            / ((1 - 2 * cut / n) * math.sqrt(n)))
    mean = float(kept.mean())
    return Estimate(mean, float(mean - half), float(mean + half), n, CONFIDENCE,
                    f"{WITHIN}: Yuen's interval of a trimmed mean")


#: The columns of the samples table that `behind` reads, and the metrics it finds samples of.
BEHIND = ("call", "n_dispatches", "wall_ns", "gpu_ns")
RAW = ("latency_ns", "call_ns", "per_dispatch_ns", "gpu_ns")


def behind(samples: pd.DataFrame, metric: str, call: str = "") -> pd.Series | None:
    """The raw samples an estimate summarizes, from one (implementation, case)'s measured
    samples (the samples table's columns), indexed as `samples`: a latency's walls, a
    call's times, a sequential case's walls (or GPU times) at its largest N; None for
    derived figures (metrics not in RAW, which callers may ask before taking samples)."""
    if metric not in RAW:
        return None
    if metric == "latency_ns":
        return samples.loc[samples["call"] == "", "wall_ns"].astype(float)
    if metric == "call_ns":
        return samples.loc[samples["call"] == call, "wall_ns"].astype(float)
    if len(samples):  # per_dispatch_ns, gpu_ns
        top = samples[samples["n_dispatches"] == samples["n_dispatches"].max()]
        return top["gpu_ns" if metric == "gpu_ns" else "wall_ns"].dropna().astype(float)
    return None


def within_processes(values: pd.Series, process: pd.Series) -> Modes | None:
    """The two modes of `values` (the raw samples behind one estimate, `process` giving
    each one's worker) where they are within processes: half of them at least have
    MIN_SHARE / 2 of their samples in each (not a few slow processes). A process's median
    then sits in whichever mode holds more than half of its samples, whether or not this
    run's processes happened to fall on both sides (`split_medians`)."""
    return _within(values.to_numpy(float), lambda: _owners(values, process))


def _owners(values: pd.Series, process: pd.Series) -> np.ndarray:
    """Each of `values`' process as a number from 0 (numpy per process: pandas' groupby
    cost 3 ms an estimate)."""
    return pd.factorize(process.loc[values.index])[0]


def _within(values: np.ndarray, owners: Callable[[], np.ndarray]) -> Modes | None:
    """`within_processes` of `values`, `owners()` giving each one's process as a number
    (asked only where the values fall in two modes)."""
    found = two_modes(values)
    if found is None:
        return None
    owner = owners()
    upper = np.bincount(owner, values > _middle(found)) / np.bincount(owner)
    both = (upper >= MIN_SHARE / 2) & (upper <= 1 - MIN_SHARE / 2)
    return found if both.mean() >= 0.5 else None


def split_medians(values: pd.Series, process: pd.Series) -> Modes | None:
    """The two modes within processes (`within_processes`) where the processes' medians
    fall on both sides of them: the median's width is then the gap between the modes, not
    the machine's spread."""
    return split_by_owner(values.to_numpy(float), lambda: _owners(values, process))


def split_by_owner(values: np.ndarray, owners: Callable[[], np.ndarray]) -> Modes | None:
    """`split_medians` of `values`, `owners()` giving each one's process as a number from 0
    (compare.py indexes a run's samples once, not a frame per estimate)."""
    found = _within(values, owners)
    if found is None:
        return None
    owner = owners()
    medians = np.array([np.median(values[owner == i]) for i in range(owner.max() + 1)])
    middle = _middle(found)
    return found if (medians < middle).any() and (medians > middle).any() else None


def _middle(found: Modes) -> float:
    """Where one mode ends and the other begins: their medians' geometric middle."""
    return math.sqrt(found.low_ns * found.high_ns)


def of_estimate(values: np.ndarray, process: np.ndarray) -> str:
    """A per-sample estimate's two modes as said, where its raw samples (`behind`: a
    latency's walls, a call's times; `process` giving each one's) fall in two that split
    the processes' medians (`split_medians`); empty otherwise. A slope is not judged by its
    samples at its largest N: on lavapipe those of wgpu-native fall in two modes (the
    wait's) while its slopes, fitted round by round, agree across runs."""
    found = split_by_owner(values, lambda: pd.factorize(process)[0])
    return found.said() if found else ""
