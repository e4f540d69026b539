"""Renderings of a Report: terminal (rich), Markdown, CSV and one self-contained HTML page."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd
from rich.table import Table

from gpuoverhead import metrics
from gpuoverhead.errors import UserError
from gpuoverhead.present import format as fmt
from gpuoverhead.present.report import ROW_KEYS, Report

SUFFIXES = (".md", ".csv", ".html")


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
    table = Table(title=title(report).replace("`", ""))
    table.add_column("")
    for row in frame.itertuples(index=False):
        table.add_column(f"{row.adapter}\n{row.backend}, {row.implementation}", justify="right")
    for column in ["vendor", "runs"] + [f.label for f in report.figures] + ["notes"]:
        table.add_row(column, *map(str, frame[column]))
    return table


def footnotes(report: Report) -> list[str]:
    return [f"{i}. {note}" for i, note in enumerate(report.notes, 1)]


def markdown(report: Report) -> str:
    body = display_frame(report).to_markdown(index=False)
    notes = "\n".join(footnotes(report))
    return f"{title(report)}\n\n{body}\n" + (f"\nNotes:\n\n{notes}\n" if notes else "")


def csv(report: Report) -> str:
    """The numbers as they are (ns, not µs), each figure's columns named with its unit."""
    names = {f"{f.label}{part}": f"{f.label}{part} ({metrics.of(f.metric).unit})"
             for f in report.figures for part in ("", " low", " high")}
    return report.table.rename(columns=names).to_csv(index=False)


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 14px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; }
th { background: #f0f0f0; } td:nth-child(-n+4) { text-align: left; }
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
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>gpuoverhead report"
            f"</title><style>{_STYLE}</style></head><body><h1>gpuoverhead report</h1>"
            f"<p>{heading}</p>{table}<ol id='notes'>{notes}</ol>{figures}</body></html>\n")


def write(path: Path, text: str) -> None:
    """Write one output file (its format was checked by `publish` before anything ran)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None


def publish(report: Report, sets: list, outputs: list[Path], plots_dir: Path | None
            ) -> list[Path]:
    """Write each output (format by suffix) and the plots; returns what was written."""
    from gpuoverhead.drivers import host
    from gpuoverhead.present import plots
    from gpuoverhead.present.report import merged_summary

    for path in outputs:
        if path.suffix not in SUFFIXES:
            raise UserError(f"{path}: unknown report format; use one of {', '.join(SUFFIXES)}")
    figures = {}
    if plots_dir is not None or any(p.suffix == ".html" for p in outputs):
        every = merged_summary(sets)
        every = every[every.benchmark == report.benchmark]
        summary = every[every.elements == report.elements]
        candidates = {
            "cost_decomposition": ("Per-dispatch cost split into native API and Python time, "
                                   "per encoding; dashed: GPU time per dispatch",
                                   plots.decomposition(summary)),
            "wall_vs_n": ("Wall time against N per encoding: medians, fitted line and its 95% "
                          "CI band", plots.wall_vs_n(sets, report.benchmark, report.elements)),
            "crossover": ("Time per step against H, one line per implementation's form, the "
                          "CPU's dashed: where they cross, the GPU starts to win",
                          plots.crossover(every, host.IMPLEMENTATIONS)),
        }
        figures = {name: pair for name, pair in candidates.items() if pair[1] is not None}
    written: list[Path] = []
    renderers = {".md": lambda: markdown(report), ".csv": lambda: csv(report),
                 ".html": lambda: html_page(report, {caption: plots.png_base64(fig)
                                                     for caption, fig in figures.values()})}
    for path in outputs:
        write(path, renderers[path.suffix]())
        written.append(path)
    if plots_dir is not None:
        for name, (_, fig) in figures.items():
            try:
                written += plots.save(fig, plots_dir, name)
            except OSError as exc:
                raise UserError(f"cannot write plots to {plots_dir}: {exc.strerror or exc}"
                                ) from None
    return written
