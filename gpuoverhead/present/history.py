"""One benchmark's headline estimates over many runs, in the order the runs started: what
asv and github-action-benchmark plot over commits, here over runs, so that drift across
driver or package versions shows (compare judges two runs; this shows them all).

Per headline figure (report.FIGURES whose metric is in metrics.HEADLINE; a fusion
benchmark's speedups, which have none), one line per adapter, backend and implementation:
each run's estimate with its interval, as tables and as a plot with interval bars.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuoverhead import metrics
from gpuoverhead.errors import UserError
from gpuoverhead.present import format as fmt
from gpuoverhead.present.report import ROW_KEYS, Figure, figures_of, left_out, pick, select
from gpuoverhead.results.read import UNFINISHED, ResultSet
from gpuoverhead.results.write import inert_text

if TYPE_CHECKING:
    import matplotlib.figure

#: Output formats by suffix: the tables (Markdown), the points (CSV), the plot.
SUFFIXES = (".md", ".csv", ".png", ".svg")
#: Most runs labelled under a panel of the plot (their labels would overlap beyond it).
MAX_LABELS = 30
#: Most runs a table on the terminal shows, the latest (thousands took minutes to draw).
MAX_SHOWN = 50


@dataclass
class History:
    """The points of one benchmark's figures over runs, in long form: a table, a CSV and a
    plot are each one view of them."""

    benchmark: str
    elements: int
    figures: list[Figure]
    #: One row per figure, row key and run: `position` (the run's place in time order),
    #: `run`, `started`, `status` (run.json's), `value`, `low`, `high`, `level`.
    points: pd.DataFrame
    #: A line per run read that gave no point (report.left_out).
    left_out: list[str] = field(default_factory=list)


def _started(rs: ResultSet) -> datetime:
    """When the run started (its run.json, UTC where it names no zone), for the order; a
    run that does not say comes first."""
    try:
        found = datetime.fromisoformat(str(rs.info.get("started")))
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def build(sets: list[ResultSet], benchmark: str | None = None, elements: int | None = None
          ) -> History:
    bench, size, rows = select(sets, benchmark, elements)
    masks: dict = {}  # pick's comparisons of these rows, each made once
    figures = figures_of(rows, masks)
    figures = [f for f in figures if f.metric in metrics.HEADLINE] or figures
    if not figures:
        raise UserError(f"benchmark {bench!r} has no figure a report or history shows")
    order = sorted(rows["result_set"].unique(), key=lambda i: _started(sets[i]))
    runs = pd.DataFrame({
        "result_set": order, "position": range(len(order)),
        "run": [str(sets[i].info.get("run_id", sets[i].folder.name)) for i in order],
        "started": [str(sets[i].info.get("started", "?")) for i in order],
        "status": [str(sets[i].info.get("status")) for i in order]})
    found = []  # each figure over all runs at once: a selection per run took minutes
    for f, figure in enumerate(figures):
        hit = pick(rows, figure, masks).groupby(["result_set", *ROW_KEYS], sort=True).agg(
            value=("value", "median"), low=("ci_low", "min"), high=("ci_high", "max"),
            level=("ci_level", "min"))
        found.append(hit.reset_index().assign(figure=figure.label, order=f))
    points = pd.concat(found, ignore_index=True).merge(runs, on="result_set")
    points = points.sort_values(["position", "order", *ROW_KEYS], kind="stable")
    columns = ["figure", *ROW_KEYS, "position", "run", "started", "status", "value", "low",
               "high", "level"]
    return History(bench, size, figures, points[columns].reset_index(drop=True),
                   left_out(sets, bench, size, rows))


def _line(key: tuple) -> str:
    vendor, adapter, backend, implementation = key
    return f"{implementation} ({backend}, {adapter})"


def _run(point: Any) -> str:
    """A run as its table row and plot label name it: marked where it did not finish."""
    return f"{point.run} (unfinished)" if point.status in UNFINISHED else point.run


def frames(history: History) -> dict[str, pd.DataFrame]:
    """Per figure, a table of strings: one row per run in time order, one column per
    adapter, backend and implementation (estimate [interval])."""
    out = {}
    for figure in history.figures:
        hint = metrics.of(figure.metric).hint
        mine = history.points[history.points["figure"] == figure.label]
        cells = {(p.position, _line(tuple(getattr(p, k) for k in ROW_KEYS))):
                 fmt.with_ci(p.value, p.low, p.high, hint, p.level)
                 for p in mine.itertuples(index=False)}
        lines = list(dict.fromkeys(line for _, line in sorted(cells, key=lambda c: c[1])))
        runs = mine[["position", "run", "started", "status"]].drop_duplicates().sort_values(
            "position")
        out[figure.label] = pd.DataFrame([
            {"run": _run(r), "started": r.started,
             **{line: cells.get((r.position, line), "—") for line in lines}}
            for r in runs.itertuples(index=False)])
    return out


def title(history: History, figure: str) -> str:
    unit = "µs per op" if metrics.of(next(
        f.metric for f in history.figures if f.label == figure)).hint == "time" else "x"
    return (f"History of `{history.benchmark}` at {history.elements:,} elements: {figure} "
            f"({unit}; estimate [95% interval]), runs in the order they started")


def markdown(history: History) -> str:
    return "".join(f"{fmt.printable(title(history, label))}\n\n"
                   f"{fmt.markdown_table(frame)}\n\n" for label, frame in frames(history).items())


def check_suffixes(outputs: list[Path]) -> None:
    """A UserError listing the formats, before anything is read, for an unknown suffix."""
    for path in outputs:
        if path.suffix not in SUFFIXES:
            raise UserError(f"{path}: unknown history format; use one of {', '.join(SUFFIXES)}")


def write(history: History, outputs: list[Path]) -> list[Path]:
    """Each output by its suffix; returns what was written."""
    from gpuoverhead.present import plots, render

    figure = plot(history) if any(p.suffix in (".png", ".svg") for p in outputs) else None
    for path in outputs:
        if path.suffix in (".png", ".svg"):
            render.save(path, plots.saver(figure, path))
        else:
            render.write(path, markdown(history) if path.suffix == ".md"
                         else inert_text(history.points).to_csv(index=False))
    if figure is not None:
        plots.plt.close(figure)
    return outputs


def plot(history: History) -> matplotlib.figure.Figure:
    """One panel per figure: each line an implementation over the runs in time order, its
    bars the intervals (a bound below zero drawn to the panel's floor)."""
    from matplotlib.ticker import FormatStrFormatter, FuncFormatter

    from gpuoverhead.present.plots import plt

    count = len(history.figures)
    cols = min(count, 2)
    fig, axes = plt.subplots((count + cols - 1) // cols, cols, squeeze=False,
                             layout="constrained",
                             figsize=(7.5 * cols, 4.2 * ((count + cols - 1) // cols) + 1))
    runs = history.points[["position", "run", "started", "status"]].drop_duplicates(
        ).sort_values("position")
    keys = list(dict.fromkeys(map(tuple, history.points[ROW_KEYS].to_numpy())))
    for ax, figure in zip(axes.ravel(), history.figures, strict=False):
        time = metrics.of(figure.metric).hint == "time"
        scale = 1e3 if time else 1.0
        mine = history.points[history.points["figure"] == figure.label]
        for j, key in enumerate(keys):  # C0, C1, ...: a line's colour in every panel
            line = mine[(mine[ROW_KEYS] == pd.Series(key, index=ROW_KEYS)).all(axis=1)]
            if line.empty:
                continue
            v = line["value"].to_numpy() / scale
            lo = np.maximum(line["low"].to_numpy() / scale, 0)
            hi = line["high"].to_numpy() / scale
            ax.errorbar(line["position"], v, yerr=[np.maximum(v - lo, 0), np.maximum(hi - v, 0)],
                        color=f"C{j % 10}", marker="o", markersize=4, capsize=3, linewidth=1,
                        label=_line(key))
        ax.set_yscale("log", nonpositive="clip")
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))  # 10, not 10^1
        ax.yaxis.set_minor_formatter(FuncFormatter(  # 20 and 50 labelled, not 20 to 90
            lambda v, _: f"{v:g}" if f"{v:g}"[0] in "25" else ""))
        ax.set_title(figure.label, fontsize=10)
        ax.set_ylabel("µs per op" if time else metrics.of(figure.metric).unit)
        step = -(-len(runs) // MAX_LABELS)  # every step-th run labelled: they do not overlap
        labelled = runs.iloc[::step]
        ax.set_xticks(labelled["position"], [f"{_run(r)}\n{r.started[:16]}" for r in
                                             labelled.itertuples(index=False)],
                      rotation=60, ha="right", fontsize=6)
        if step > 1:
            ax.set_xlabel(f"{len(runs):,} runs; every {step}th labelled", fontsize=8)
        ax.grid(True, which="both", alpha=0.25)
    for ax in axes.ravel()[count:]:
        ax.set_visible(False)
    shown = {label: handle for ax in axes.ravel()
             for handle, label in zip(*ax.get_legend_handles_labels(), strict=True)}
    fig.legend(shown.values(), shown.keys(), loc="outside lower center", ncol=2, fontsize=8)
    fig.suptitle(f"{history.benchmark} at {history.elements:,} elements: estimates and 95% "
                 "intervals per run, in the order the runs started", fontsize=11)
    return fig


def show(paths: list[str], benchmark: str | None, elements: int | None,
         outputs: list[Path]) -> None:
    """`gpuoverhead history`: read the runs (each once), print a table per figure, write
    the outputs; nothing is written into a run folder."""
    from gpuoverhead.present import console
    from gpuoverhead.present.report import check_outputs
    from gpuoverhead.results import read

    check_suffixes(outputs)
    check_outputs(outputs, [])
    notes: list[str] = []
    sets = read.load_all(paths, notes)
    console.show_warnings(notes)
    history = build(sets, benchmark, elements)
    console.show_warnings(history.left_out)
    for label, frame in frames(history).items():
        more = (f" (the last {MAX_SHOWN} of {len(frame):,} runs; -o FILE.md or FILE.csv holds "
                "them all)") if len(frame) > MAX_SHOWN else ""
        console.print_table(console.frame_table(frame.tail(MAX_SHOWN),
                                                title(history, label).replace("`", "") + more))
    for path in write(history, outputs):
        console.err.print(f"wrote {path}", highlight=False)
