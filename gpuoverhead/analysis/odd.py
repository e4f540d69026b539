"""Worker processes far slower than the others of their job: kept in the samples, left out of
the job's estimates.

A process that lands on a CPU much slower at the timed calls (a lent VM's vCPU 14 ran
`submit` 3.4x slower) is not one more draw of a process's variation: one such process among
three widened an interval to [4-148] µs, and one among six still moved its upper end to
2.3x the value. The run keeps off such CPUs where it can (run/cpus.py); where it cannot
(no pinning, a CPU slow for a while), a process is said, its samples kept, and left out of
the estimates where, among three or more, its level is

- more than FAR times the median level of the others kept (at first the faster half: several
  slow ones would move the median of all), and
- an outlier among them: a modified z-score over OUTLIER_Z against their median absolute
  deviation, since where the kept processes vary widely a level FAR times theirs is within
  that variation (levels 1, 1.6 and 4.2: the third is 3.3x the others' median, its z 3.4,
  and it stays),

taken again among the processes kept until no more is found. A process's level is the
median, over its positive times, of its value over the median of all its job's processes:
a slow CPU slows most of a process's figures together, noise does not. Its factor, as said,
is over the median of the processes kept. Seeded, of 200,000 runs of three, six or ten
processes that vary log-normally by 15% (the H100's 10-25%) none left one out, and one
process 3.4x slower was found in 92%, 96% and 97% of them; at 25%, 0.2-0.3% of runs left
one out (tests/unit/test_odd.py checks 20,000). The simulation (analysis/coverage.py)
keeps its 95% with processes 2x and 3.4x slower.
"""

from __future__ import annotations

import math

import numpy as np

from gpuoverhead.analysis.combine import DIFFERENCES, SIGNED
from gpuoverhead.analysis.row_medians import nanmedian_rows
from gpuoverhead.analysis.series import Key, Series
from gpuoverhead.analysis.stats import OUTLIER_Z

#: A process this many times its job's median level is left out.
FAR = 2.5
#: Fewest processes among which one can be called far off (of two, neither is the odd one).
FEWEST = 3
#: Times the median and spread are taken again among the processes kept.
ROUNDS = 4


def far(levels: np.ndarray) -> np.ndarray:
    """Per row (runs) of per-process log levels (columns): which processes are left out
    (the module's rule); none where the row has fewer than FEWEST."""
    return _rule(levels)[0]


def _rule(levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The processes left out, and each process's log level over the median of those kept."""
    levels = np.atleast_2d(np.asarray(levels, dtype=float))
    if levels.shape[1] < FEWEST:
        return np.zeros(levels.shape, dtype=bool), np.zeros(levels.shape)
    flags = levels > nanmedian_rows(levels)[:, None]  # first the faster half
    for _ in range(ROUNDS):
        kept = np.where(flags, np.nan, levels)
        with np.errstate(invalid="ignore", divide="ignore"):
            above = levels - nanmedian_rows(kept)[:, None]
            spread = nanmedian_rows(np.abs(np.where(flags, np.nan, above)))[:, None]
            found = (above > math.log(FAR)) & (OUTLIER_Z * spread < 0.6745 * above)
        if (found == flags).all():
            break
        flags = found
    return flags, above


def levels(per_process: list[dict[Key, Series]]) -> np.ndarray:
    """Each process's log level: over its keys that are times (unit ns, not a difference:
    SIGNED, DIFFERENCES), the median of log(its value / the median of all processes' values
    of that key); nan for a process with no such key."""
    keys = [k for k in dict.fromkeys(k for p in per_process for k in p)
            if k.unit == "ns" and k.metric not in SIGNED | DIFFERENCES]
    logs = np.full((len(per_process), len(keys) + 1), np.nan)  # a column of nan: never empty
    for j, key in enumerate(keys):
        values = np.array([p[key].point() if key in p else np.nan for p in per_process])
        if not np.isfinite(values).any():
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            logs[:, j] = np.log(values / np.median(values[np.isfinite(values)]))
    logs[~np.isfinite(logs)] = np.nan
    return np.array([np.median(row[np.isfinite(row)]) if np.isfinite(row).any() else np.nan
                     for row in logs])


def odd_processes(per_process: list[dict[Key, Series]]) -> list[tuple[int, float]]:
    """The positions of the processes far off their job's others, with their level (a
    factor over the median of the processes kept: what FAR is judged against)."""
    flags, above = _rule(levels(per_process))
    return [(int(i), float(math.exp(above[0, i]))) for i in np.flatnonzero(flags[0])]
