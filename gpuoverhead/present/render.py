"""Renderings of a Report: terminal (rich), Markdown, CSV and one self-contained HTML page."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from rich.table import Table

from gpuoverhead import metrics
from gpuoverhead.errors import UserError
from gpuoverhead.present import format as fmt
from gpuoverhead.present import glossary
from gpuoverhead.present.report import ROW_KEYS, Report, row_notes
from gpuoverhead.results.write import inert_text
from gpuoverhead.whole_files import atomic

#: Output formats by how a file's name ends (the longest that fits): Markdown, CSV, HTML,
#: Bencher Metric Format, github-action-benchmark's arrays.
SUFFIXES = (".md", ".csv", ".html", ".ghab.json", ".json")


def output_format(path: Path) -> str:
    """The suffix of SUFFIXES that names `path`'s format; a UserError listing them if none."""
    found = next((s for s in SUFFIXES if path.name.endswith(s)), None)
    if found is None:
        raise UserError(f"{path}: unknown report format; use one of {', '.join(SUFFIXES)}")
    return found


def display_frame(report: Report) -> pd.DataFrame:
    """The table as strings: one column per figure, value with its CI."""
    t = report.table
    out = t[ROW_KEYS + ["runs"]].copy()
    for f in report.figures:
        hint = metrics.of(f.metric).hint
        out[f.label] = [fmt.with_ci(v, lo, hi, hint, level) for v, lo, hi, level in
                        zip(t[f.label], t[f"{f.label} low"], t[f"{f.label} high"],
                            t[f"{f.label} level"], strict=True)]
    out["notes"] = t["notes"]
    return out


def title(report: Report) -> str:
    return (f"Dispatch overhead per vendor: benchmark `{report.benchmark}` at "
            f"{report.elements:,} elements (µs per op unless marked x; estimate [95% interval])"
            if report.figures and report.figures[0].methodology != "fusion" else
            f"Fusion per vendor: benchmark `{report.benchmark}`"
            + (f" at {report.elements:,} elements" if report.elements else "")
            + " (unfused / fused, one unit of work with the wait amortized; "
              "estimate [95% interval])")


def terminal(report: Report) -> Table:
    """Transposed for the terminal: one column per adapter and implementation, so that the
    table fits a narrow window whatever the number of figures."""
    frame = display_frame(report)
    table = Table(title=fmt.literal(title(report).replace("`", "")))
    table.add_column("")
    for row in frame.itertuples(index=False):  # names from result files: text, not markup
        table.add_column(fmt.literal(f"{row.adapter}\n{row.backend}, {row.implementation}",
                                 newlines=True), justify="right")
    for column in ["vendor", "runs"] + [f.label for f in report.figures] + ["notes"]:
        table.add_row(fmt.literal(column), *map(fmt.literal, frame[column]))
    table.caption, table.caption_justify = words(report), "left"
    return table


def words(report: Report) -> str:
    """What the table's rows that a newcomer could not place mean (present/glossary.py)."""
    return glossary.caption(f.label for f in report.figures)


def footnotes(report: Report) -> list[str]:
    return [f"{i}. {note}" for i, note in enumerate(report.notes, 1)]


def sources_frame(report: Report) -> pd.DataFrame:
    """Where the rows came from, one line per run: when, where, on what, with what."""
    return pd.DataFrame([{
        "run": s.run_id, "started": s.started, "finished": f"{s.finished} ({s.status})",
        "host": s.host, "processes": s.processes,
        "time limit": "none" if s.time_limit_s is None else f"{s.time_limit_s:g} s",
        "adapters and drivers": "; ".join(s.adapters), "versions": ", ".join(s.packages),
    } for s in report.sources])


def markdown(report: Report) -> str:
    """The table, its footnotes, the runs it came from and each run's warnings (every
    string from a result file as text: format.markdown_text)."""
    body = fmt.markdown_table(display_frame(report))
    notes = "\n".join(map(fmt.markdown_text, footnotes(report)))
    runs = fmt.markdown_table(sources_frame(report))
    warned = "".join(f"\nWarnings of run {fmt.markdown_text(s.run_id)}:\n\n"
                     + "".join(f"- {fmt.markdown_text(w)}\n" for w in s.warnings)
                     for s in report.sources if s.warnings)
    said = "".join(f"\n- {w}" for w in words(report).splitlines())
    return (f"Runs:\n\n{runs}\n\n{fmt.printable(title(report))}\n\n{body}\n"
            + (said and f"{said}\n")
            + (f"\nNotes:\n\n{notes}\n" if notes else "") + warned)


def csv(report: Report) -> str:
    """The numbers as they are (ns, not µs; bounds as stored, below zero too), each
    figure's columns named with its unit, and each row's footnotes as text (text cells
    `inert`: a device name from another machine's result set is no formula)."""
    names = {f"{f.label}{part}": f"{f.label}{part} ({metrics.of(f.metric).unit})"
             for f in report.figures for part in ("", " low", " high")}
    texts = [" | ".join(row_notes(report, i)) for i in range(len(report.table))]
    return inert_text(report.table.assign(**{"note texts": texts}).rename(columns=names)
                      ).to_csv(index=False)


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
th { background: #f0f0f0; } td:nth-child(-n+4) { text-align: left; }
#runs td, #runs th { text-align: left; font-size: 12px; }
.warnings { font-size: 13px; color: #7a4b00; }
figure { margin: 2em 0; } figcaption { font-size: 13px; color: #555; }
img { max-width: 100%; height: auto; }
"""


def html_page(report: Report, images: dict[str, str]) -> str:
    """A page with no outside references: the table, its notes, and the plots inlined."""
    table = display_frame(report).to_html(index=False, escape=True, border=0,
                                          table_id="overhead")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in report.notes)
    figures = "".join(
        f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        for caption, data in images.items())
    heading = html.escape(title(report).replace("`", ""))
    runs = sources_frame(report).to_html(index=False, escape=True, border=0, table_id="runs")
    warned = "".join(
        f"<h3>Warnings of run {html.escape(s.run_id)}</h3><ul class='warnings'>"
        + "".join(f"<li>{html.escape(w)}</li>" for w in s.warnings) + "</ul>"
        for s in report.sources if s.warnings)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>gpuoverhead report"
            f"</title><style>{_STYLE}</style></head><body><h1>gpuoverhead report</h1>"
            f"<h2>Runs</h2>{runs}<p>{heading}</p>{table}"
            + "".join(f"<p class='words'>{html.escape(w)}</p>" for w in words(report).splitlines())
            + f"<ol id='notes'>{notes}</ol>"
            f"{warned}{figures}</body></html>\n")


def save(path: Path, write: Callable[[Path], None]) -> None:
    """One output file, its folder made, written whole or not at all (whole_files.atomic:
    a full disk or `ulimit -f` leaves no truncated file); a UserError where it cannot be."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic(path, write)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None


def write(path: Path, text: str) -> None:
    """Write one text output (its format was checked by `publish` before anything ran)."""
    save(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def publish(report: Report, sets: list, outputs: list[Path], plots_dir: Path | None,
            notes: list[str]) -> list[Path]:
    """Write each output (format by suffix) and the plots; returns what was written, and
    adds to `notes` what the JSON formats could not hold as stored (a negative bound)."""
    from gpuoverhead.drivers import host
    from gpuoverhead.present import export, plots
    from gpuoverhead.present.report import merged_summary

    formats = [output_format(path) for path in outputs]
    figures = {}
    if plots_dir is not None or ".html" in formats:
        every = merged_summary(sets)
        every = every[every.benchmark == report.benchmark]
        summary = every[every.elements == report.elements]
        # The cadence plot first: a run.json whose levels are not as a run writes them ends
        # the report in one line before the other plots are drawn (seconds of matplotlib).
        cadence = plots.cadence_levels(sets, report.benchmark)
        candidates = {
            "cost_decomposition": ("Per-dispatch cost split into native API and Python time, "
                                   "per encoding; dashed: GPU time per dispatch",
                                   plots.decomposition(summary)),
            "wall_vs_n": ("Wall time against N per encoding: medians, fitted line and its 95% "
                          "CI band", plots.wall_vs_n(sets, report.benchmark, report.elements)),
            "crossover": ("Time per step against H, one line per implementation's form, the "
                          "CPU's dashed: where they cross, the GPU starts to win",
                          plots.crossover(every, host.IMPLEMENTATIONS)),
            "cadence_levels": ("Wall time per op of a burst over each process's age, per gap: "
                               "where the level settled (dashed)", cadence),
        }
        figures = {name: pair for name, pair in candidates.items() if pair[1] is not None}
    written: list[Path] = []
    renderers = {".md": lambda: markdown(report), ".csv": lambda: csv(report),
                 ".html": lambda: html_page(report, {caption: plots.png_base64(fig)
                                                     for caption, fig in figures.values()}),
                 ".json": lambda: export.dumps(export.bencher(report, notes)),
                 ".ghab.json": lambda: export.dumps(export.ghab(report, notes))}
    for path, suffix in zip(outputs, formats, strict=True):
        write(path, renderers[suffix]())
        written.append(path)
    if plots_dir is not None:
        for name, (_, fig) in figures.items():
            for path in (plots_dir / f"{name}.png", plots_dir / f"{name}.svg"):
                save(path, plots.saver(fig, path))
                written.append(path)
    return written
