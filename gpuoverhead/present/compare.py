"""Compare two runs estimate by estimate: ratio with a CI, a rank test on the raw samples,
and a verdict a CI job can act on.

- ratio = NEW / BASE, with a 95% CI (`analysis.runs.runs_ratio`): where both runs have two to five
  processes, the ratio of the geometric means of their process estimates with Welch's t
  interval on logs; otherwise the ratio of the estimates, their CIs combined on the log
  scale (delta method);
- p = of no change, by the test behind the interval, where both runs have two or more
  processes: their process values are the units (Welch's t on logs for two to five,
  exact Mann-Whitney for six or more), since a pool of samples ignores that they share
  their process's offset and an A/A then finds changes (16 in one of 666 estimates on
  lavapipe, 5 this way); otherwise Mann-Whitney U on the raw samples behind the estimate
  (as asv and google-benchmark do), where there are such (latencies, calls, the largest N
  of a sequential case, GPU times); a derived figure of one process a run (api, python,
  inflation, ...) is judged on the CI alone;
- verdict: `slower`/`faster` when the ratio CI excludes 1, the change is at least the
  threshold, and p < alpha (where there is a p); otherwise `same` when the ratio is within
  twice the threshold and its CI rules out changes beyond RESOLVABLE (x1.5 either way), and
  `unsure` when not (a change the runs are too noisy to confirm or rule out). Which way is
  worse comes from each row's `better` (gpuoverhead/metrics.py): a time that rose is
  `slower`, a rate or speedup that rose is `better` (and one that fell `worse`); a figure
  with no better direction (inflation, a share) is `higher`/`lower`. The CIs of runs with
  several processes include the variation between processes, which keeps an A/A
  comparison from calling noise a change;
- an estimate the two runs measured in CPU states that differ where both name one (one
  run kept a state, the other the other one or both) is judged in a state both measured
  with enough processes (the headline's or `states.parquet`'s figures; the base's kept
  state first; present/in_state.py), said in `regimes` ("compared in the fast state:
  base slow, new both"); it is `unsure` whatever its ratio where they share no state, or
  measured another submission regime, with both regimes said: a ratio of two states'
  levels is no change (two plain runs on the H200 each took PyTorch's figures from
  another state and compared them 0.71x).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gpuoverhead.analysis import modes
from gpuoverhead.analysis.runs import combined_ratio, runs_p, runs_ratio
from gpuoverhead.analysis.stats import CONFIDENCE, Interval
from gpuoverhead.errors import UserError, listed
from gpuoverhead.metrics import HEADLINE
from gpuoverhead.present import format as fmt
from gpuoverhead.present import glossary, run_environments
from gpuoverhead.present.in_state import FIGURES, IN_STATE, by_key, in_states, sides_of
from gpuoverhead.results.read import ResultSet, check_units, unfinished

#: A ratio CI wider than this factor either way leaves a comparison `unsure`.
RESOLVABLE = 1.5
#: Checks of the method itself (≈0 by construction), not performance: never compared.
DIAGNOSTICS = ("closure_ns", "ffi_check_ns", "error", "skipped")
KEY = ["implementation", "benchmark", "elements", "case", "metric", "call"]
ALPHA = 0.01
RAW_COLUMNS = ["implementation", "case", "call", "phase", "process", "n_dispatches",
                "wall_ns", "gpu_ns"]


@dataclass(frozen=True)
class _Measured:
    """One run's measured samples indexed once (pyarrow `take`s per estimate cost seconds)."""

    frame: pd.DataFrame
    cases: dict[tuple, np.ndarray]
    calls: dict[tuple, np.ndarray]
    wall: np.ndarray
    process: np.ndarray


def _measured(samples: pd.DataFrame) -> _Measured:
    measured = samples[samples["phase"] == "measure"]
    return _Measured(measured[list(modes.BEHIND)].astype({"call": object}),
                     measured.groupby(["implementation", "case"]).indices,
                     measured.groupby(["implementation", "case", "call"]).indices,
                     measured["wall_ns"].to_numpy(float), measured["process"].to_numpy())


def _raw(samples: _Measured, row: dict) -> pd.Series | None:
    """The raw samples an estimate summarizes, or None for derived estimates."""
    at = samples.cases.get((row["implementation"], row["case"]))  # no take for a derived one
    return None if at is None or row["metric"] not in modes.RAW else modes.behind(
        samples.frame.iloc[at], row["metric"], row["call"])


def _modes(samples: _Measured, row: dict) -> str:
    """An estimate's two modes as said (modes.of_estimate), or empty."""
    call = "" if row["metric"] == "latency_ns" else row["call"]
    at = samples.calls.get((row["implementation"], row["case"], call))
    return "" if at is None or row["metric"] not in modes.PER_SAMPLE else \
        modes.of_estimate(samples.wall[at], samples.process[at])


def _one_sided(base: dict, new: dict) -> str:
    """Where one run's figure compared (its headline's or a CPU state's: in_state.FIGURES)
    was a trimmed mean for samples in two modes within its processes (analysis/modes.py)
    and the other's a median, that said: a mean against a median is no change, so the row
    is `unsure`; empty where both runs used one estimator."""
    mean = [side.get("estimator") == modes.MEAN for side in (base, new)]
    if mean[0] == mean[1]:
        return ""
    side, said = ("base", base) if mean[0] else ("new", new)
    return (f"two modes in {side} only ({said.get('modes') or '?'}): its trimmed mean "
            "against the other's median")


def _raw_p(raw_b: pd.Series | None, raw_n: pd.Series | None) -> float:
    """p of no change by Mann-Whitney on the raw samples behind an estimate where there are
    such (runs of one process), else nan."""
    if raw_b is not None and raw_n is not None and len(raw_b) and len(raw_n):
        from scipy import stats as sps  # here: a self-test imports this before it measures
        return float(sps.mannwhitneyu(raw_b.to_numpy(), raw_n.to_numpy(),
                                      alternative="two-sided").pvalue)
    return math.nan


def _between_runs(pairs: list[tuple[np.ndarray | None, np.ndarray | None]],
                  ) -> list[tuple[float, float, float, float] | None]:
    """Ratio, its interval and p of each estimate whose runs both have two or more process
    values (`runs_ratio`, `runs_p`), judged together by process counts; None elsewhere."""
    found = np.full((4, len(pairs)), math.nan)
    counts: dict[tuple[int, int], list[int]] = {}
    for i, (b, n) in enumerate(pairs):
        if b is not None and n is not None and min(len(b), len(n)) >= 2:
            counts.setdefault((len(b), len(n)), []).append(i)
    for rows in counts.values():
        b, n = (np.array([pairs[i][side] for i in rows]) for side in (0, 1))
        ratio = runs_ratio(b, n)
        found[:, rows] = ratio.value, ratio.low, ratio.high, runs_p(b, n)
    judged = {i for rows in counts.values() for i in rows}
    return [tuple(map(float, found[:, i])) if i in judged else None
            for i in range(len(pairs))]


def _combined(b: dict[str, float], n: dict[str, float]) -> tuple[float, float, float]:
    """NEW / BASE of two estimates from their own intervals (`combined_ratio`)."""
    found = combined_ratio(*(Interval(*(np.array([x[k]]) for k in ("value", "ci_low",
                                                                    "ci_high")),
                                      CONFIDENCE, "") for x in (b, n)))
    return float(found.value[0]), float(found.low[0]), float(found.high[0])


#: Verdicts of a significant rise and fall, by the row's `better`.
_WORDS = {"lower": ("slower", "faster"), "higher": ("better", "worse"),
          "none": ("higher", "lower")}
#: The verdicts that count as a regression (`--fail-above`).
WORSE = ("slower", "worse")


def verdict(ratio: float, low: float, high: float, p: float, threshold: float,
            better: str = "lower", allowance: float = 0.0) -> str:
    """A change where the interval lies beyond 1 and beyond the run-to-run `allowance` band
    (present/allowance.py: how far two runs here differ when nothing changed), by at least
    the threshold; `same` within twice the threshold and the allowance, resolvably."""
    if not math.isfinite(ratio):
        return "unsure"
    beyond = low > 1 + allowance or high < 1 / (1 + allowance)
    significant = beyond and not (math.isfinite(p) and p >= ALPHA)
    if significant and abs(ratio - 1) >= threshold:
        rise, fall = _WORDS.get(better, _WORDS["none"])
        return rise if ratio > 1 else fall
    if abs(ratio - 1) < 2 * threshold + allowance and low >= 1 / RESOLVABLE \
            and high <= RESOLVABLE:
        return "same"
    return "unsure"


def compare(base: ResultSet, new: ResultSet, threshold: float = 0.05,
            allowance: float = 0.0) -> pd.DataFrame:
    """One row per estimate present in both runs (in the same units), judged with the
    run-to-run `allowance` (a fraction; `verdict`)."""
    check_units(pd.concat([base.summary[["metric", "unit"]], new.summary[["metric", "unit"]]]),
                Path(f"{base.folder} and {new.folder}"))
    judged = [rs.summary.loc[~rs.summary["metric"].isin(DIAGNOSTICS), rs.summary.columns.isin(
        [*KEY, "unit", "hint", "better", "regime", *FIGURES])] for rs in (base, new)]
    joined = judged[0].merge(judged[1], on=KEY, suffixes=("_base", "_new"))
    if joined.empty:
        raise UserError(f"{base.folder} and {new.folder} have no estimate in common (other "
                        "benchmarks, implementations, or a run that finished nothing)")
    base_samples, new_samples = (_measured(rs.samples(RAW_COLUMNS)) for rs in (base, new))
    base_values, new_values = by_key(base.per_process, KEY), by_key(new.per_process, KEY)
    records = joined.to_dict("records")  # dicts of the columns read (a Series: 1 s a 1,000)
    keys = [tuple(r[k] for k in KEY) for r in records]
    beside = in_states(base, KEY), in_states(new, KEY)
    sides = [sides_of(r, k, (base_values.get(k), new_values.get(k)), beside)
             for r, k in zip(records, keys, strict=True)]
    paired = _between_runs([(s.base_values, s.new_values) for s in sides])
    rows = []
    for r, s, by_processes in zip(records, sides, paired, strict=True):
        b, n = s.base, s.new
        if by_processes is None:  # not two process values a run
            ratio, low, high = _combined(b, n)
            p = _raw_p(_raw(base_samples, r), _raw(new_samples, r)) if s.state is None \
                else math.nan  # the raw samples hold both states' rounds
        else:
            ratio, low, high, p = by_processes
        rows.append({**{k: r[k] for k in KEY}, "unit": r["unit_base"],
                     "hint": r["hint_base"], "better": r["better_base"],
                     "base": b["value"], "new": n["value"], "ratio": ratio,
                     "ratio_low": low, "ratio_high": high, "p_value": p,
                     "spread": np.fmax(b["rel_spread_between"], n["rel_spread_between"]),
                     "modes": _one_sided(b, n) or _modes(base_samples, r)
                     or _modes(new_samples, r),
                     "regimes": s.regimes,
                     "verdict": verdict(ratio, low, high, p, threshold, r["better_base"],
                                        allowance)
                     if s.comparable and not _one_sided(b, n) else "unsure"})
    return pd.DataFrame(rows)


def stopped(base: ResultSet, new: ResultSet) -> str | None:
    """Which of the two runs did not finish (results/read.unfinished), or None: what marks
    the comparison's table."""
    sides = [side for side, rs in (("BASE", base), ("NEW", new)) if unfinished(rs)]
    return f"{' and '.join(sides)} did not finish: only what it finished is compared" \
        if sides else None


def differences(base: ResultSet, new: ResultSet) -> list[str]:
    """What makes two runs less comparable than they look: a run that did not finish,
    another suite, another adapter, any other change of environment
    (present/run_environments.py)."""
    found = [f"{side}: {line}" for side, rs in (("BASE", base), ("NEW", new))
             if (line := unfinished(rs))]
    suites = [rs.info.get("suite", {}).get("sha256") for rs in (base, new)]
    if suites[0] != suites[1]:
        found.append("the runs measured different suites (their sha256 differ): only the "
                     "estimates they share are compared")
    devices = [sorted({a.get("device", "?") for a in rs.info.get("adapters", [])})
               for rs in (base, new)]
    if devices[0] != devices[1]:
        found.append(f"the runs measured different adapters ({listed(devices[0])} vs "
                     f"{listed(devices[1])}): a ratio between them is not a regression")
    return found + run_environments.differences(base, new)


def regressions(table: pd.DataFrame, fail_above: float) -> pd.DataFrame:
    """Estimates that got significantly worse (slower, or a rate that fell) by more than
    `fail_above` (a fraction of the better value)."""
    change = np.where(table["verdict"] == "worse", 1 / table["ratio"], table["ratio"]) - 1
    return table[table["verdict"].isin(WORSE) & (change > fail_above)]


def check_thresholds(threshold: float, fail_above: float | None) -> None:
    """A UserError for a threshold that would turn every verdict or the gate off (NaN,
    infinite or negative)."""
    for name, pct in (("--threshold", threshold), ("--fail-above", fail_above)):
        if pct is not None and not (math.isfinite(pct) and pct >= 0):
            raise UserError(f"{name} must be a finite percentage of 0 or more, not {pct}")


def display(table: pd.DataFrame) -> pd.DataFrame:
    """The comparison as strings, for the terminal or Markdown."""
    return pd.DataFrame({
        "implementation": table["implementation"], "case": table["case"],
        "metric": table["metric"], "call": table["call"],
        "base": [fmt.shown(v, h) for v, h in zip(table["base"], table["hint"], strict=True)],
        "new": [fmt.shown(v, h) for v, h in zip(table["new"], table["hint"], strict=True)],
        "new/base [95% CI]": [
            fmt.ratio_with_ci(r, lo, hi)
            for r, lo, hi in zip(table["ratio"], table["ratio_low"], table["ratio_high"],
                                 strict=True)],
        "p": ["—" if not math.isfinite(p) else f"{p:.2g}" for p in table["p_value"]],
        "verdict": table["verdict"],
    })


def show(table: pd.DataFrame, form: str = "table",
         runs: tuple[ResultSet, ResultSet] | None = None, threshold: float = 0.05) -> None:
    """The comparison on stdout: as JSON (docs/schema.md; naming `runs` and the
    `threshold` it was judged with), or as Markdown or a terminal table followed by its
    verdict counts."""
    from gpuoverhead.present import console, export

    if form == "json" and runs is not None:
        print(export.dumps(export.comparison(table, str(runs[0].folder), str(runs[1].folder),
                                             threshold, differences(*runs))), end="")
        return
    shown = display(table)
    mark = stopped(*runs) if runs is not None else None
    words = glossary.caption(table["metric"], "every metric: docs/schema.md")
    if form == "markdown":
        print(fmt.markdown_table(shown) + (f"\n\n{mark}" if mark else "") + "\n"
              + "".join(f"\n- {w}" for w in words.splitlines()) + "\n")
    else:
        grid = console.frame_table(shown, "NEW vs BASE")
        grid.caption = "\n".join(filter(None, (mark, words)))
        grid.caption_justify = "left"
        console.print_table(grid, ("p", "call"))
    console.out.print(verdict_counts(table), highlight=False)


def verdict_counts(table: pd.DataFrame) -> str:
    return ", ".join(f"{n} {v}" for v, n in table["verdict"].value_counts().items())


#: A run's processes whose medians range over more than this share of its estimate
#: (`rel_spread_between`) leave an A/A `unsure` on the machine's account.
SPREAD = 0.25


def aa_lines(table: pd.DataFrame) -> list[str]:
    """What an A/A comparison says: the share of `same` over all estimates and over the
    headline ones, and of the headline ones not `same`, how many were called a change, and
    of those left unsure how many had samples in two modes that split the processes'
    medians (`modes`), how many others had processes in either run spread over SPREAD of
    the estimate (the machine, which more processes average), and how many neither."""
    lines = []
    for label, headline_only in (("all", False), ("headline (latency, per dispatch)", True)):
        share, count = share_same(table, headline_only)
        lines.append(f"A/A, {label}: {share:.1%} of {count} estimates are 'same'")
    changed, apart, split, spread, unsure = _not_same(table)
    parts = []
    if len(changed):
        first = changed.iloc[0]
        ratio = fmt.ratio_with_ci(first["ratio"], first["ratio_low"], first["ratio_high"])
        parts.append(f"{len(changed)} were called a change (e.g. {first['implementation']} "
                     f"{first['case']} {first['metric']} {first['verdict']}, {ratio})")
    if len(apart):
        first = apart.iloc[0]
        parts.append(f"{len(apart)} were unsure as the runs measured them in different "
                     f"regimes (e.g. {first['implementation']} {first['case']} "
                     f"{first['metric']}: {first['regimes']})")
    if len(split):
        first = split.iloc[0]
        parts.append(f"{len(split)} were unsure with samples in two modes (e.g. "
                     f"{first['implementation']} {first['case']}: {first['modes']})")
    if len(spread):
        parts.append(f"{len(spread)} were unsure with processes whose medians ranged over "
                     f"{SPREAD:.0%} of the estimate in one run or both (rel_spread_between): "
                     "the machine's spread, which more processes (--processes) average out")
    if len(unsure):
        parts.append(f"{len(unsure)} were unsure with neither: a ratio too far off 1, or an "
                     f"interval wider than x{RESOLVABLE}, for 'same'")
    if parts:
        count = len(changed) + len(apart) + len(split) + len(spread) + len(unsure)
        lines.append(f"of the {count} headline estimates not 'same', " + "; ".join(parts))
    return lines


def _not_same(table: pd.DataFrame) -> tuple[pd.DataFrame, ...]:
    """The headline estimates not `same`, apart: called a change; else (unsure) measured in
    different regimes; else in two modes; else with processes spread over SPREAD; else
    neither."""
    other = table[table["metric"].isin(HEADLINE) & (table["verdict"] != "same")]
    changed, rest = other[other["verdict"] != "unsure"], other[other["verdict"] == "unsure"]
    kept = (rest["regimes"] == "") | rest["regimes"].str.startswith(IN_STATE)
    apart, rest = rest[~kept], rest[kept]
    split, rest = rest[rest["modes"] != ""], rest[rest["modes"] == ""]
    return (changed, apart, split, rest[rest["spread"] > SPREAD],
            rest[~(rest["spread"] > SPREAD)])


#: The share of the headline estimates an A/A must find `same` (`selftest` exits 1 under),
#: and its back-to-back form (two runs one after the other, each with its own minutes).
AA_PASS = 0.95
B2B_PASS = 0.90


def aa_verdict(table: pd.DataFrame, processes: int, passing: float = AA_PASS
               ) -> tuple[bool, str]:
    """Whether an A/A of `processes` a half passed (`passing` of its headline estimates
    `same`), and one line that says so and, where it failed, what would pass it."""
    share, count = share_same(table, True)
    if not count:
        return False, "A/A failed: the halves share no headline estimate to judge"
    same, need = round(share * count), math.ceil(passing * count - 1e-9)
    said = f"{same} of {count} headline estimates are 'same' ({share:.1%})"
    if same >= need:
        return True, f"A/A passed: {said}, at least the {passing:.0%} it asks"
    changed, apart, split, spread, unsure = _not_same(table)
    ways = []
    # A latency in two modes is each process's trimmed mean (analysis/modes.py), which more
    # processes narrow as they do a median of processes that differ.
    left = " or ".join((["the machine's spread or noise"] if len(spread) or len(unsure)
                        else []) + (["two modes"] if len(split) else []))
    if left:
        ways.append(f"more processes a half narrow those {left} left unsure (--processes "
                    f"{2 * processes}, about twice the time)")
    if len(apart):
        ways.append(f"the {len(apart)} measured in different regimes are judged where "
                    "both runs measured one CPU state with enough processes (run.json's "
                    "cpu_states: a job whose processes met a state too rarely has no "
                    "figures of it)")
    if len(changed):
        ways.append(f"the {len(changed)} called a change are, in an A/A, the machine or "
                    "chance: again on a quieter machine (nothing else running, or "
                    "--affinity on CPUs left alone)")
    return False, (f"A/A failed: {said}, under the {passing:.0%} it asks ({need} of {count}); "
                   + "; ".join(ways))


def share_same(table: pd.DataFrame, headline_only: bool) -> tuple[float, int]:
    """The share of (headline) estimates judged `same`, and how many were judged."""
    rows = table[table["metric"].isin(HEADLINE)] if headline_only else table
    return (float((rows["verdict"] == "same").mean()) if len(rows) else 0.0), len(rows)
