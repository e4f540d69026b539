"""What the terminal shows of results: the summary grids, adapters, warnings (stdout/stderr)."""

from __future__ import annotations

import copy
import dataclasses
import math
import sys
from typing import Any

import pandas as pd
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from gpuoverhead import encodings
from gpuoverhead.cases import (
    BIND_PER_DISPATCH,
    CADENCE,
)
from gpuoverhead.present import format as fmt
from gpuoverhead.present import glossary, workload_grids
from gpuoverhead.present.cadence_grid import cadence_grid
from gpuoverhead.present.format import literal
from gpuoverhead.present.note_words import run_warnings as run_warnings  # the run's last lines
from gpuoverhead.records import AdapterInfo
from gpuoverhead.results.columns import ERROR, SKIPPED
from gpuoverhead.results.read import ResultSet, unfinished

# Piped output keeps whole lines: rich would cut tables to 80 columns.
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

#: Rows of the summary per group: (label, methodology, encoding, sync, layer, metric, call).
_ROWS = [("naive", "naive", "submit", "wait", "wrapper", "latency_ns", ""),
         ("naive readback", "naive", "submit", "readback", "wrapper", "latency_ns", "")]
for _encoding in encodings.NAMES:
    _ROWS += [(f"{_encoding} wall", "sequential", _encoding, "wait", "wrapper",
               "per_dispatch_ns", ""),
              ("  cpu", "sequential", _encoding, "wait", "wrapper", "cpu_per_dispatch_ns", ""),
              ("    api", "sequential", _encoding, "wait", "wrapper", "api_ns", ""),
              ("    python", "sequential", _encoding, "wait", "wrapper", "python_ns", ""),
              ("    api/ref.", "sequential", _encoding, "wait", "native", "reference_ratio",
               "cpu_per_dispatch_ns")]
_ROWS += [("gpu", "sequential", "dispatch", "timestamps", "wrapper", "gpu_ns", ""),
          ("fixed wait", "sequential", "submit", "wait", "wrapper", "fixed_ns", ""),
          ("naive/submit", "sequential", "submit", "wait", "wrapper", "inflation", ""),
          ("naive/dispatch", "sequential", "dispatch", "wait", "wrapper", "inflation", "")]


#: Columns of the summary grid left out first where it is wider than the terminal.
SUMMARY_OPTIONAL = ("rounds", "bound", "±")


def print_table(table: Table, optional: tuple[str, ...] = (), to: Console | None = None
                ) -> None:
    """`table` on the terminal (`to`, stdout's by default), never with a word or number cut
    short (at 80 columns an interval read `206.2–249…`, at 30 every number `…`): each column
    at least as wide as its longest word, the rest of the width shared out; where those do
    not fit, the `optional` columns are left out, in their order, until they do (a line
    says which), and where even then they do not, each row is shown as a list."""
    to = to or out
    wide = to.options.update_width(1 << 16)
    ranges = [(max(m.minimum for m in found), max(m.maximum for m in found)) for found in (
        [Measurement.get(to, wide, cell) for cell in (column.header, *column.cells)]
        for column in table.columns)]
    dropped: list[str] = []
    for name in (None, *optional):
        if name is not None:
            dropped.append(name)
        kept = [i for i, c in enumerate(table.columns) if c.header not in dropped]
        fitted = _fitted(table, kept, [ranges[i] for i in kept], to.width)
        if fitted is not None:
            to.print(fitted)
            if dropped:
                to.print(f"(left out to fit {to.width} columns: {', '.join(dropped)})",
                         highlight=False)
            return
    to.print(f"(wider than {to.width} columns: each row as a list)", highlight=False)
    if table.title:
        to.print(table.title, overflow="fold", highlight=False)
    lines, width = [], to.width  # printed at once: a print each took most of a list's time
    for row in zip(*(column.cells for column in table.columns), strict=True):
        lines.append(Text())
        for column, cell in zip(table.columns, row, strict=True):
            if not str(cell):
                continue
            line = to.render_str(f"{column.header}: {cell}", highlight=False)
            if line.cell_len > width:  # a value too long for it on a line of its own
                line = to.render_str(f"{column.header}:\n{cell}", highlight=False)
            lines.append(line)
    if lines:
        to.print(Text("\n").join(lines), overflow="fold", highlight=False)
    if table.caption:
        to.print(table.caption, overflow="fold", highlight=False)


def _fitted(table: Table, kept: list[int], ranges: list[tuple[int, int]], width: int
            ) -> Table | None:
    """`table` with only its columns `kept`, each as wide as its longest word (`ranges`:
    each one's longest word and whole line; rich would cut words to fit, or give one
    column's width to another) and the room left shared in proportion to what each could
    use; None where their longest words do not fit `width`."""
    _, right, _, left = table.padding
    edges = (2 if table.box and table.show_edge else 0) + (len(kept) - 1 if table.box else 0)
    spare = width - edges - (left + right) * len(kept) - sum(low for low, _ in ranges)
    if spare < 0:
        return None
    wants = [high - low for low, high in ranges]
    shares = [spare * want // max(sum(wants), 1) for want in wants]
    found = copy.copy(table)
    found.columns = [dataclasses.replace(table.columns[k], _index=i, width=min(low + share, high))
                     for i, (k, (low, high), share) in enumerate(zip(kept, ranges, shares,
                                                                     strict=True))]
    return found


def summary_grid(summary: pd.DataFrame) -> Table:
    """Per group and implementation the headline figures: estimate, interval (its coverage
    where under 95%) and half-width relative to it.

    Per encoding: wall time per op (the throughput cost; `gpu-bound` where GPU time is most
    of it), CPU time per op (issue time, read before the wait), split into `api` (the
    native implementation) and `python` where the layers ran, and the native layer against
    the reference loop. `fixed wait` is the submit fit's intercept; `naive/*` are inflation
    ratios.
    """
    table = Table(title="Dispatch overhead per op (µs; ratios marked x): wall time, CPU "
                        "(issue) time, GPU time")
    for name, justify in (("benchmark", "left"), ("measure", "left"), ("estimate", "right"),
                          ("interval", "right"), ("±", "right"), ("bound", "left"),
                          ("rounds", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    shown: list[str] = []  # the measures shown, and `bound` where it says one: the caption
    combined = summary[summary["process"].isna()] if "process" in summary else summary
    combined = combined[combined["variant"].fillna("") == ""] if "variant" in combined \
        else combined
    keys = ["benchmark", "elements", "implementation"]
    combined = combined[[c for c in combined if c in _GRID_READS]]  # a row is a take a column
    hits = dict(iter(_summary_rows(combined).groupby(keys, sort=False)))
    for key, rows in combined.groupby(keys, sort=False):
        bench, elements, impl = key
        processes = int(rows["processes"].max()) if "processes" in rows else 1
        labels = [literal(bench), f"{elements:,} el.", literal(impl),
                  f"{processes} process{'es' if processes > 1 else ''}"]
        mine = hits.get(key)
        for _, r in () if mine is None else mine.iterrows():
            name = r["_name"]
            table.add_row(labels.pop(0) if labels else "", name, *_shown(r),
                          getattr(r, "bound", "") or "", str(r.rounds))
            shown += [name.strip(), *(["bound"] if getattr(r, "bound", "") else [])]
        table.add_section()
    table.caption, table.caption_justify = glossary.caption(shown), "left"
    return table


#: The columns the summary grid reads (its groups, _ROWS' keys, what a row shows).
_GRID_READS = {"benchmark", "elements", "implementation", "processes", "methodology",
               "encoding", "sync", "layer", "metric", "call", "value", "hint", "ci_low",
               "ci_high", "ci_level", "rel_ci", "bound", "rounds"}


def _summary_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The rows of `summary` that the summary grid shows, each in `_name` by its label of
    _ROWS, in _ROWS' order within a group and the first row where several match: found by
    one merge (selecting each of _ROWS in each group was half of `show`'s time)."""
    spec = ["methodology", "encoding", "sync", "layer", "metric", "call"]
    wanted = pd.DataFrame(_ROWS, columns=["_name", *spec]).reset_index(names="_order")
    keys = summary.reset_index(drop=True).astype({c: str for c in spec})  # a foreign set's
    found = keys.reset_index(names="_at").merge(wanted, on=spec)        # numbers match none
    return found.sort_values(["_order", "_at"], kind="stable").drop_duplicates(
        ["benchmark", "elements", "implementation", "_order"])


def _shown(r: pd.Series) -> tuple[str, str, str]:
    """Estimate, interval and half-width of a row; a ratio over a reference loop whose cost
    is below its sweep's resolution (written as +inf, no interval) is said to be that."""
    if r.metric == "reference_ratio" and not math.isfinite(r.value):
        return "ref. below resolution", "—", ""
    return fmt.value(r.value, r.hint), fmt.interval(r), fmt.relative(r)


def implementations_grid(summary: pd.DataFrame) -> Table | None:
    """Implementations side by side per group: naive latency and per-dispatch cost of each
    wrapper-layer case, with its ratio to the fastest way measured to do that work."""
    if "ratio_to_fastest" not in summary or summary["implementation"].nunique() < 2:
        return None
    rows = summary[summary["metric"].isin(("latency_ns", "per_dispatch_ns"))
                   & (summary["layer"] == "wrapper") & summary["process"].isna()
                   & (summary["methodology"] != "breakdown")]
    rows = rows[rows["variant"].fillna("") != BIND_PER_DISPATCH] if "variant" in rows else rows
    table = Table(title="Implementations side by side (µs; ratio to the fastest)")
    for name in ("benchmark", "measure", "implementation", "encoding", "median", "vs fastest"):
        table.add_column(name, justify="right" if name in ("median", "vs fastest") else "left")
    for (bench, elements), group in rows.groupby(["benchmark", "elements"], sort=False):
        label = literal(f"{bench} {elements:,} el.")
        for metric, title in (("latency_ns", "naive"), ("per_dispatch_ns", "per dispatch")):
            mine = group[(group.metric == metric) & (group.sync == "wait")]
            for r in mine.sort_values("value").itertuples():
                ratio = r.ratio_to_fastest
                table.add_row(label, title, literal(r.implementation), literal(r.encoding),
                              fmt.value(r.value, r.hint),
                              f"{ratio:.2f}x" if ratio == ratio else "≈0: fused")
                label, title = "", ""
        table.add_section()
    return table


def bind_group_grid(summary: pd.DataFrame) -> Table | None:
    """Per encoding where the per-dispatch bind group twin ran: CPU per op with the bind
    group created per dispatch, the difference to the reused one's and their ratio."""
    if "variant" not in summary:
        return None
    rows = summary[(summary["variant"] == BIND_PER_DISPATCH) & summary["process"].isna()]
    if rows.empty:
        return None
    table = Table(title="Bind group created per dispatch against one reused (CPU per op, µs)")
    for name in ("benchmark", "impl.", "encoding", "cpu", "bind group", "interval", "ratio",
                 "95% CI"):
        table.add_column(name, justify="left" if name in ("benchmark", "impl.", "encoding")
                         else "right")
    for (bench, elements, impl), part in rows.groupby(["benchmark", "elements",
                                                       "implementation"], sort=False):
        label = literal(f"{bench} {elements:,} el.")
        for _, one in part.groupby("encoding", sort=False):
            cpu, cost, ratio = (workload_grids.pick(one, BIND_PER_DISPATCH, metric) for metric
                                in ("cpu_per_dispatch_ns", "bind_group_ns", "bind_group_ratio"))
            table.add_row(label, literal(impl), literal(one.encoding.iloc[0]),
                          fmt.value(cpu.value, cpu.hint) if cpu is not None else "",
                          *((fmt.value(cost.value, cost.hint), fmt.interval(cost))
                            if cost is not None else ("", "")),
                          *workload_grids.ratio_cells(ratio))
            label, impl = "", ""
        table.add_section()
    return table


def print_report(table: Any, sets: list) -> None:
    """A report (present/report.py) in the terminal: its table, its footnotes, and each
    run's crossovers, read from that run's own ratios."""
    from gpuoverhead.present import render

    print_table(render.terminal(table))
    for note in render.footnotes(table):
        out.print(literal(note), highlight=False)
    for rs in sets:
        print_crossovers(rs.summary[rs.summary.benchmark == table.benchmark])


def print_crossovers(summary: pd.DataFrame) -> None:
    """Where each implementation's form starts to beat the CPU reference, one sentence each."""
    from gpuoverhead.analysis import crossover
    from gpuoverhead.drivers.registry import CPU_REFERENCE

    for row, c in crossover.lines(summary):
        out.print(literal(fmt.crossover(row, c, CPU_REFERENCE)), highlight=False)


def breakdown_grid(summary: pd.DataFrame) -> Table | None:
    """Per call of one `submit` operation, the median CPU time in each layer that ran."""
    calls = summary[(summary.metric == "call_ns")
                    & (summary["process"].isna() if "process" in summary else True)]
    if calls.empty:
        return None
    layers = list(dict.fromkeys(calls.layer))
    table = Table(title="Per-call breakdown of one submit op (µs, clock cost subtracted)")
    table.add_column("benchmark")
    table.add_column("call")
    for layer in layers:
        table.add_column(layer, justify="right")
    for (bench, elements), rows in calls.groupby(["benchmark", "elements"], sort=False):
        label = literal(f"{bench} {elements:,} el.")
        first = rows.dropna(subset=["layer"]).drop_duplicates(["call", "layer"])
        values = dict(zip(zip(first.call, first.layer, strict=True), first.value, strict=True))
        for call in rows.call.dropna().unique():
            cells = [fmt.value(values[call, lay], "time") if (call, lay) in values else "—"
                     for lay in layers]
            table.add_row(label, literal(call), *cells)
            label = ""
        table.add_section()
    return table


def frame_table(frame: pd.DataFrame, title: str) -> Table:
    """Any frame of strings as a table."""
    table = Table(title=literal(title))
    for column in frame.columns:
        table.add_column(literal(column))
    for row in frame.itertuples(index=False):
        table.add_row(*map(literal, row))
    return table


def adapters_table(found: list[AdapterInfo]) -> Table:
    table = Table(title="Adapters (best first)")
    for col in ("#", "implementation", "backend", "type", "vendor", "device", "driver",
                "timestamps"):
        table.add_column(col)
    for i, a in enumerate(found):
        table.add_row(str(i), *map(literal, (a.implementation, a.backend, a.adapter_type,
                                             a.vendor, a.device, a.driver)),
                      "yes" if a.timestamps else "no")
    return table


def print_run(found: ResultSet) -> None:
    """A run's grids (`show`), after a line where it did not finish (its grids then marked
    so) or finished no benchmark."""
    stopped = unfinished(found)
    show_warnings([stopped] if stopped else [])
    if found.summary.empty:
        err.print(literal(f"{found.folder}: no estimates (status {found.info.get('status')!r}):"
                          " the run finished no benchmark"), highlight=False)
    print_summary(found.summary, f"unfinished run (status {found.info['status']!r})"
                  if stopped else None)


def print_summary(summary: pd.DataFrame, caption: str | None = None) -> None:
    """Every grid that the estimates of a run fill (errors are printed as such, elsewhere;
    a torch.compile that failed is also a line of the compile grid), each with `caption`
    under it where given (a run that did not finish)."""
    if summary.empty:
        return
    # Text columns as Python objects: the grids select rows hundreds of times, and each
    # selection of pandas' Arrow-backed strings costs a pyarrow `take` per column (seconds
    # of `show` on a fusion set).
    summary = summary.astype({c: object for c, kind in summary.dtypes.items() if kind == "str"})
    builds = workload_grids.compile_grid(summary)  # a failed compile's row is its figure
    summary = summary[~summary["metric"].isin((ERROR, SKIPPED))]
    plain = summary[~summary["methodology"].isin(("fusion", CADENCE))]
    for table in (summary_grid(plain) if not plain.empty else None, implementations_grid(plain),
                  bind_group_grid(plain), breakdown_grid(plain), cadence_grid(summary),
                  *workload_grids.grids(summary), builds):
        if table is not None:
            if caption:  # above the grid's own glossary, where it has one
                table.caption = f"{caption}\n{table.caption}" if table.caption else caption
                table.caption_justify = "left"
            print_table(table, SUMMARY_OPTIONAL)
    print_crossovers(summary)


def show_errors(errors: list[str]) -> None:
    for e in errors:
        err.print(f"[red]error:[/red] {literal(e, newlines=True)}", highlight=False,
                  soft_wrap=True)


def show_warnings(warnings: list[str]) -> None:
    for w in warnings:
        err.print(f"[yellow]warning:[/yellow] {literal(w, newlines=True)}", highlight=False,
                  soft_wrap=True)
