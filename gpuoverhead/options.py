"""The command line's options that several commands share, with their help texts: what each
takes (a FOLDER for `run --out`, a FILE for `report -o` and `history -o`) said in one place."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpuoverhead.resources import CONFIGS_DIR, suite_path

# Options that `run` and `selftest` share.
SuiteOption = Annotated[Path, typer.Option(
    help="Suite YAML file, or a shipped suite's name: "
         f"{', '.join(sorted(p.stem for p in CONFIGS_DIR.glob('*.yaml')))}.",
    callback=suite_path)]
AdapterOption = Annotated[str | None, typer.Option(
    help="Pick the adapter whose device name contains this (case-insensitive).")]
ImplementationOption = Annotated[str, typer.Option(
    help="What to measure: an implementation or a family of them (`gpuoverhead adapters` "
         "names them), several joined by commas, or all that are installed.")]
BrowserOption = Annotated[str | None, typer.Option(
    help="The Chromium (or Chrome) that `chromium` starts; default: the first one found.")]
ProcessesOption = Annotated[int | None, typer.Option(
    help="Fresh worker processes per benchmark, one after another (default: the suite's "
         "`processes`, 3 where it names none; under a --time-limit longer than the suite's, "
         "that many per suite limit's worth).")]
OutOption = Annotated[Path, typer.Option("--out", metavar="FOLDER", help=(
    "Folder that receives the run as FOLDER/<run_id>/ (made if missing; a folder, not a file)."))]
AffinityOption = Annotated[str | None, typer.Option(
    help="CPUs the run and its workers may use, e.g. 2-5 or 2,3 (Linux; default: any).")]
# Options that `report` and `history` share.
PathsArgument = Annotated[list[str], typer.Argument(help="Result folders, files or globs.")]
BenchmarkOption = Annotated[str | None, typer.Option(
    help="Benchmark to tabulate (default: empty, else the first).")]
ElementsOption = Annotated[int | None, typer.Option(
    help="Its element count (default: the smallest measured).")]
QuickOption = Annotated[bool, typer.Option(
    help="Smoke run: tiny budget, one process; a suite with no time limit gets one, said at "
         "the start.")]
ReportOutputOption = Annotated[list[Path] | None, typer.Option(
    "--output", "-o", metavar="FILE",
    help="File to write the table to, in the format its name ends in: .md, .csv, .html, .json "
         "(Bencher Metric Format) or .ghab.json (github-action-benchmark); repeatable.")]
PlotsOption = Annotated[Path | None, typer.Option(
    metavar="FOLDER", help="Folder to write the plots into (PNG, SVG; made if missing).")]
HistoryOutputOption = Annotated[list[Path] | None, typer.Option(
    "--output", "-o", metavar="FILE",
    help="File to write: the tables (.md), the points (.csv) or the plot (.png, .svg), by the "
         "name's ending; repeatable.")]
