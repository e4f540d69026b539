"""Figures for reports (matplotlib, headless): where the cost goes, how wall time grows with N,
where the GPU's per-step time crosses the CPU's, and a cadence's level over process age.

Each function returns a matplotlib Figure; `save` writes PNG and SVG, `png_base64` embeds it
in the self-contained HTML page.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
#: Text is text: a label from a result file (an adapter's name, a run id) with two `$` would
#: otherwise be read as mathtext, and `$\x$` ended the plot in a ValueError.
matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from gpuoverhead.encodings import NAMES as ENCODINGS  # noqa: E402
from gpuoverhead.errors import UserError, shortened  # noqa: E402
from gpuoverhead.present.report import APART, ROW_KEYS  # noqa: E402
from gpuoverhead.results.read import ResultSet  # noqa: E402


def _label(key: tuple) -> str:
    vendor, adapter, backend, implementation = key
    return f"{adapter} ({backend}, {implementation})"


def _colors(n: int) -> list:
    return [plt.get_cmap("tab10")(i % 10) for i in range(n)]


def decomposition(summary: pd.DataFrame) -> Figure | None:
    """Per adapter, one bar per encoding: native API cost with the Python cost stacked on it,
    each with its interval, beside the CPU cost measured through the wrapper (a diamond with
    its interval: api + python is derived round by round, so it need not add up to it), and
    the GPU's own time per dispatch as a marker."""
    rows = summary[summary["metric"].isin(["api_ns", "python_ns", "gpu_ns"])
                   | ((summary["metric"] == "cpu_per_dispatch_ns")
                      & (summary["layer"] == "wrapper") & ~summary["variant"].isin(APART))]
    split = rows[rows["metric"] != "cpu_per_dispatch_ns"]  # PyTorch has a CPU cost, no split
    if split.empty:
        return None
    keys = list(dict.fromkeys(map(tuple, split[ROW_KEYS].to_numpy())))
    fig, ax = plt.subplots(figsize=(max(6.0, 2.2 * len(keys) + 2), 4.2))
    width = 0.8 / len(ENCODINGS)
    for k, key in enumerate(keys):
        mine = rows[(rows[ROW_KEYS] == pd.Series(key, index=ROW_KEYS)).all(axis=1)]

        def value(metric: str, encoding: str, m: pd.DataFrame = mine) -> np.ndarray:
            """Estimate and the bar's reach below and above it (µs; a bound below zero
            reaches to 0; none where the estimate lies beyond its bound, as a difference
            below zero, or the median of three outside their t interval, can), zeros where
            it was not measured."""
            hit = m[(m.metric == metric) & (m.encoding == encoding)]
            if not len(hit):
                return np.zeros(3)
            v = float(np.median(hit.value)) / 1e3
            reach = [v - max(hit.ci_low.min() / 1e3, 0), hit.ci_high.max() / 1e3 - v]
            return np.array([v, *np.maximum(reach, 0)])

        for e, (encoding, color) in enumerate(zip(ENCODINGS, _colors(3), strict=True)):
            x = k + (e - 1) * width
            api, python = value("api_ns", encoding), value("python_ns", encoding)
            bars = {"capsize": 2, "ecolor": "#444", "error_kw": {"linewidth": 0.8}}
            ax.bar(x, api[0], width, color=color, yerr=api[1:, None], **bars,
                   label=f"{encoding}: API" if k == 0 else None)
            ax.bar(x, python[0], width, bottom=api[0], color=color, alpha=0.45, hatch="//",
                   yerr=python[1:, None], **bars,
                   label=f"{encoding}: Python" if k == 0 else None)
            cpu = value("cpu_per_dispatch_ns", encoding)
            if cpu[0]:
                ax.errorbar(x + width / 4, cpu[0], yerr=cpu[1:, None], fmt="D", color="black",
                            markersize=4, capsize=2, linewidth=0.8,
                            label="CPU measured (wrapper)" if k == 0 and e == 0 else None)
        gpu = value("gpu_ns", "dispatch")[0]
        if gpu:
            ax.plot([k - 0.45, k + 0.45], [gpu, gpu], color="black", linestyle="--",
                    label="GPU per dispatch" if k == 0 else None)
    ax.set_xticks(range(len(keys)), [_label(k).replace(" (", "\n(") for k in keys], fontsize=8)
    ax.set_ylabel("µs per dispatch")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


def wall_vs_n(sets: list[ResultSet], benchmark: str, elements: int) -> Figure | None:
    """One panel per encoding: median wall time against N for each adapter and
    implementation (its first run), with the fitted line and the band of its 95% CI."""
    shown: dict[tuple, ResultSet] = {}
    for rs in sets:
        s = rs.summary
        here = (s.benchmark == benchmark) & (s.elements == elements)
        if (here & (s.methodology == "sequential")).any():  # fusion benchmarks have no N-plot
            shown.setdefault(tuple(s[ROW_KEYS].iloc[0]), rs)
    if not shown:
        return None
    fig, axes = plt.subplots(1, len(ENCODINGS), figsize=(13, 4.2), sharey=True)
    columns = ["benchmark", "elements", "methodology", "encoding", "sync", "layer", "phase",
               "n_dispatches", "wall_ns"]
    filters = [("benchmark", "==", benchmark), ("elements", "==", elements),
               ("methodology", "==", "sequential"), ("sync", "==", "wait"),
               ("layer", "==", "wrapper"), ("phase", "==", "measure")]
    for (key, rs), color in zip(shown.items(), _colors(len(shown)), strict=True):
        samples = rs.samples(columns, filters)
        fits = rs.summary[(rs.summary.benchmark == benchmark) & (rs.summary.elements == elements)
                          & (rs.summary.layer == "wrapper") & (rs.summary.sync == "wait")]
        for ax, encoding in zip(axes, ENCODINGS, strict=True):
            med = samples[samples.encoding == encoding].groupby("n_dispatches")["wall_ns"].median()
            if med.empty:
                continue
            n = med.index.to_numpy(dtype=float)
            ax.plot(n, med.to_numpy() / 1e3, "o", color=color, markersize=4, label=_label(key))
            slope = fits[(fits.encoding == encoding) & (fits.metric == "per_dispatch_ns")]
            fixed = fits[(fits.encoding == encoding) & (fits.metric == "fixed_ns")]
            if len(slope) and len(fixed):
                grid = np.geomspace(n.min(), n.max(), 40)
                b, a = slope.iloc[0], fixed.iloc[0].value
                ax.plot(grid, (a + b.value * grid) / 1e3, color=color, linewidth=1)
                ax.fill_between(grid, (a + b.ci_low * grid) / 1e3, (a + b.ci_high * grid) / 1e3,
                                color=color, alpha=0.2)
    for ax, encoding in zip(axes, ENCODINGS, strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"encoding: {encoding}", fontsize=10)
        ax.set_xlabel("N (dispatches per sample)")
    axes[0].set_ylabel("wall time, µs")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


#: The CPU implementations' lines: dark and dashed, told apart by shade and marker.
_CPU_STYLES = ({"color": "black", "linestyle": "--", "marker": "s", "linewidth": 2.0},
               {"color": "0.5", "linestyle": ":", "marker": "^", "linewidth": 2.0})


def crossover(summary: pd.DataFrame, cpu: tuple[str, ...]) -> Figure | None:
    """Per-step time against H (log-log) for each implementation's form of the benchmarks
    with a CPU reference, with its 95% interval as bars; the CPU implementations (`cpu`)
    dashed in grey, so the crossover reads off where the lines cross. Several runs of one
    line: the median of their estimates and the span of their intervals."""
    ratios = summary[summary["metric"] == "cpu_ratio"]
    rows = summary[(summary["metric"] == "per_unit_ns") & summary["process"].isna()
                   & summary["benchmark"].isin(ratios["benchmark"])
                   & (summary["sync"] == "wait")]
    if rows.empty:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 5))
    lines = list(rows.groupby(["benchmark", "implementation", "variant", "k"], sort=False))
    several = rows["benchmark"].nunique() > 1
    for ((bench, impl, variant, k), line), color in zip(lines, _colors(len(lines)),
                                                         strict=True):
        per = line.groupby("elements").agg(value=("value", "median"), low=("ci_low", "min"),
                                           high=("ci_high", "max"))
        h, v = per.index.to_numpy(float), per["value"].to_numpy() / k / 1e3
        low = np.clip(per["low"].to_numpy() / k / 1e3, v * 1e-3, v)  # log axis: above zero
        high = np.maximum(per["high"].to_numpy() / k / 1e3, v)
        style = _CPU_STYLES[cpu.index(impl) % len(_CPU_STYLES)] if impl in cpu else \
            {"color": color, "linestyle": "-", "marker": "o", "linewidth": 1.3}
        ax.errorbar(h, v, yerr=[v - low, high - v], markersize=5, capsize=3, **style,
                    label=f"{impl} {variant}" + (" (CPU)" if impl in cpu else "")
                    + (f", {bench}" if several else ""))
    sizes = sorted(rows["elements"].unique())
    ax.set_xscale("log")
    ax.set_xticks(sizes, [str(h) for h in sizes])
    ax.minorticks_off()
    ax.set_yscale("log")
    ax.set_xlabel("H (hidden size)")
    ax.set_ylabel("time per step, µs (wait amortized)")
    ax.set_title(f"{', '.join(dict.fromkeys(rows['benchmark']))}: per-step time against H, "
                 "95% intervals", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


#: The figure of a cadence's level over a process's age (`cadence_levels`).
CADENCE_METRIC = "burst_per_op_ns"


def cadence_levels(sets: list[ResultSet], benchmark: str) -> Figure | None:
    """One panel per gap of a cadence (methods/cadence.py): each case's wall time per op of
    a burst over its process's age (run.json's `settling`: the median of each bin of the
    timeline), a thin line per process, and a dashed line where each case's level settled
    over processes (the median age; none where one process's was still moving as it
    ended)."""
    lines: dict[str, dict[str, list]] = {}  # gap -> "implementation case" -> processes
    for rs in sets:
        for gap, label, found in _levels(rs, benchmark):
            lines.setdefault(gap, {}).setdefault(label, []).append(found)
    if not lines:
        return None
    gaps = sorted(lines, key=lambda g: float(g.removesuffix("ms")))
    fig, axes = plt.subplots(1, len(gaps), figsize=(3.6 * len(gaps) + 1, 4.2), sharey=True,
                             squeeze=False)
    labels = sorted({label for by in lines.values() for label in by})
    colors = dict(zip(labels, _colors(len(labels)), strict=True))
    for ax, gap in zip(axes[0], gaps, strict=True):
        for label, found in sorted(lines[gap].items()):
            for i, one in enumerate(found):
                ax.plot(one["age_s"], one["level_us"], color=colors[label], linewidth=0.9,
                        alpha=0.8, label=label if i == 0 else None)
            if all(one["settled"] for one in found):
                ax.axvline(float(np.median([one["settled_s"] for one in found])),
                           color=colors[label], linestyle="--", linewidth=0.8)
        ax.set_title("back to back" if float(gap.removesuffix("ms")) == 0
                     else f"{gap.removesuffix('ms')} ms gaps", fontsize=10)
        ax.set_xlabel("process age, s")
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("wall time per op of a burst, µs")
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(f"{benchmark}: the level over each process's age (dashed: where it settled)",
                 fontsize=10)
    fig.tight_layout()
    return fig


#: A cadence case's level in run.json's `settling`: "<case>/gap=<ms>ms/<rest> <metric>",
#: the gap as cases.Case.id writes it (`:g`).
_LEVEL = re.compile(rf".*/gap=(?P<gap>\d+(?:\.\d+)?(?:e[+-]\d+)?ms)/(?P<rest>.+) {CADENCE_METRIC}")


def _levels(rs: ResultSet, benchmark: str) -> Iterator[tuple[str, str, dict]]:
    """(gap, "implementation case", record) of each cadence level of `benchmark` that
    run.json's `settling` holds; a UserError naming the file where one is not as
    run/finish.py writes it (a set from elsewhere ended the plot in a traceback)."""
    for job in rs.info.get("benchmarks", []):
        if job.get("benchmark") != benchmark:
            continue
        processes = job.get("processes", [])
        settlings = [p.get("settling", {}) if isinstance(p, dict) else None
                     for p in (processes if isinstance(processes, list) else [None])]
        for settling in settlings:
            whole = isinstance(settling, dict)  # else nothing in it is as a run writes it
            for name, found in settling.items() if whole else [("", None)]:
                if whole and not str(name).endswith(f" {CADENCE_METRIC}"):
                    continue
                hit = _LEVEL.fullmatch(str(name))
                if not (hit and isinstance(found, dict) and _level_record(found)):
                    raise UserError(f"{rs.folder / 'run.json'}: a process's settling record "
                                    f"{shortened(str(name))!r} of {shortened(benchmark)!r} is "
                                    "not as gpuoverhead writes it: not a gpuoverhead run record")
                yield hit["gap"], f"{job.get('implementation')} {hit['rest']}", found


def _level_record(found: dict) -> bool:
    """Whether a `settling` record holds what the plot draws: ages and levels (numbers, as
    many of each), whether and when it settled."""
    ages, levels = found.get("age_s"), found.get("level_us")
    return all(isinstance(v, list) and all(isinstance(x, int | float)
                                           and not isinstance(x, bool) for x in v)
               for v in (ages, levels)) and len(ages) == len(levels) \
        and isinstance(found.get("settled"), bool) \
        and isinstance(found.get("settled_s"), int | float)


def saver(fig: Figure, path: Path) -> Callable[[Path], None]:
    """What writes `fig` in the format `path` names, to whatever file it is given (the
    temporary file of an atomic write, whose name names no format)."""
    return lambda tmp: fig.savefig(tmp, dpi=120, format=path.suffix[1:])


def png_base64(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
