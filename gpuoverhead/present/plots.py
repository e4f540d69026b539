"""Figures for reports (matplotlib, headless): where the cost goes, how wall time grows with N,
and where the GPU's per-step time crosses the CPU's.

Each function returns a matplotlib Figure; `save` writes PNG and SVG, `png_base64` embeds it
in the self-contained HTML page.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
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


def saver(fig: Figure, path: Path) -> Callable[[Path], None]:
    """What writes `fig` in the format `path` names, to whatever file it is given (the
    temporary file of an atomic write, whose name names no format)."""
    return lambda tmp: fig.savefig(tmp, dpi=120, format=path.suffix[1:])


def png_base64(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
