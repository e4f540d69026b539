"""The command line: parses arguments and delegates; user errors end in one line and exit 2."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer

from gpuoverhead import (
    adapters,
    console,
    estimates,
    implementations,
    report_formats,
    results,
    runinfo,
    runner,
)
from gpuoverhead import compare as comparing
from gpuoverhead import report as reporting
from gpuoverhead.errors import UserError
from gpuoverhead.resources import DEFAULT_SUITE
from gpuoverhead.suite import load_suite, suite_problems

app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    help="Measure what one GPU dispatch really costs (naive vs sequential, per encoding).",
)

EXIT_USER = 2
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn a UserError into one line on stderr and exit code 2."""
    try:
        yield
    except UserError as exc:
        console.err.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USER) from None


def _install_interrupts() -> None:
    """The first SIGINT or SIGTERM stops the run cleanly (a KeyboardInterrupt: the runner
    writes what it finished); a second one exits at once. Result files are replaced
    atomically, so exiting mid-write leaves the previous complete file, never half of one."""
    def second(signum: int, frame: object) -> None:
        os.write(2, b"\ninterrupted again: exiting at once\n")
        os._exit(EXIT_INTERRUPTED)

    def first(signum: int, frame: object) -> None:
        signal.signal(signal.SIGINT, second)
        signal.signal(signal.SIGTERM, second)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, first)
    signal.signal(signal.SIGTERM, first)


@app.command()
def run(
    suite: Annotated[Path, typer.Option(help="Suite YAML file.")] = DEFAULT_SUITE,
    backend: Annotated[str | None, typer.Option(
        help=f"Adapter backend: {', '.join(adapters.BACKENDS)}.")] = None,
    adapter: Annotated[str | None, typer.Option(
        help="Pick the adapter whose device name contains this (case-insensitive).")] = None,
    implementation: Annotated[str, typer.Option(
        help="WebGPU implementation: wgpu-native, dawn, or all installed.")] = "all",
    out: Annotated[Path, typer.Option(help="Folder that receives <run_id>/.")] = Path("results"),
    quick: Annotated[bool, typer.Option(help="Smoke run: tiny budget, one process.")] = False,
    processes: Annotated[int, typer.Option(
        help="Fresh worker processes per benchmark, one after another.")] = 3,
    seed: Annotated[int | None, typer.Option(help="Seed of the interleaving order.")] = None,
    run_id: Annotated[str | None, typer.Option(help="Name of the run folder.")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing run folder.")] = False,
    outside_shaders: Annotated[bool, typer.Option(
        help="Allow kernel paths outside the suite's folder.")] = False,
    stall_timeout: Annotated[float, typer.Option(
        help="Stop a benchmark whose worker finishes no round for this many seconds "
             "(a hung GPU wait).")] = 300.0,
) -> None:
    """Measure naive and sequential dispatch overhead and write results/<run_id>/."""
    _install_interrupts()
    with user_errors():
        names = implementations.parse(implementation)
    options = runner.RunOptions(suite=suite, out_root=out, backend=backend, adapter=adapter,
                                implementations=names, quick=quick, processes=processes,
                                seed=seed, run_id=run_id, force=force,
                                outside_shaders=outside_shaders, stall_timeout_s=stall_timeout)
    with user_errors(), console.RichReporter() as reporter:
        result = runner.run(options, reporter)
    _print_summary(result.summary)
    console.show_warnings(result.info["warnings"])
    for error in result.info["errors"]:
        console.err.print(f"[red]error:[/red] {error}", highlight=False, soft_wrap=True)
    status = result.info["status"]
    console.err.print(f"{status}: results in {result.folder}", highlight=False)
    if status == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
    if result.failed:
        raise typer.Exit(EXIT_FAILED)


@app.command()
def show(folder: Annotated[Path, typer.Argument(help="A run folder (results/<run_id>).")]) -> None:
    """Print the summary table of a finished run."""
    with user_errors():
        summary = results.load(folder).summary
    _print_summary(summary)


def _print_summary(summary: pd.DataFrame) -> None:
    if summary.empty:
        return
    summary = summary[summary["metric"] != estimates.ERROR]  # errors are printed as such
    plain = summary[summary["methodology"] != "fusion"]
    if not plain.empty:
        console.out.print(console.summary_grid(plain))
    for extra in (console.implementations_grid(plain), console.breakdown_grid(plain),
                  console.fusion_grid(summary), console.crossover_grid(summary)):
        if extra is not None:
            console.out.print(extra)


@app.command()
def report(
    paths: Annotated[list[str], typer.Argument(help="Result folders, files or globs.")],
    benchmark: Annotated[str | None, typer.Option(
        help="Benchmark to tabulate (default: empty, else the first).")] = None,
    elements: Annotated[int | None, typer.Option(
        help="Its element count (default: the smallest measured).")] = None,
    output: Annotated[list[Path] | None, typer.Option(
        "--output", "-o", help="Write the table: .md, .csv or .html (repeatable).")] = None,
    plots: Annotated[Path | None, typer.Option(
        help="Folder for the plots as PNG and SVG.")] = None,
) -> None:
    """Per-vendor overhead tables from any number of result sets."""
    with user_errors():
        sets = results.load_all(paths)
        table = reporting.build(sets, benchmark, elements)
        console.out.print(report_formats.terminal(table))
        for note in report_formats.footnotes(table):
            console.out.print(note, highlight=False)
        written = report_formats.publish(table, sets, output or [], plots)
    for path in written:
        console.err.print(f"wrote {path}", highlight=False)


@app.command()
def compare(
    base: Annotated[Path, typer.Argument(help="The baseline run folder.")],
    new: Annotated[Path, typer.Argument(help="The run folder to judge.")],
    threshold: Annotated[float, typer.Option(
        help="Smallest change in percent that counts as faster or slower.")] = 5.0,
    fail_above: Annotated[float | None, typer.Option(
        help="Exit 1 when an estimate got significantly slower by more than this percent.")
    ] = None,
    markdown: Annotated[bool, typer.Option(help="Print Markdown instead of a table.")] = False,
) -> None:
    """Per estimate: NEW/BASE with a CI, a rank test on the raw samples, and a verdict."""
    with user_errors():
        table = comparing.compare(results.load(base), results.load(new), threshold / 100)
    _print_comparison(table, markdown)
    if fail_above is not None:
        worse = comparing.regressions(table, fail_above / 100)
        if len(worse):
            console.err.print(f"{len(worse)} estimates got slower by more than {fail_above}%",
                              highlight=False)
            raise typer.Exit(EXIT_FAILED)


def _print_comparison(table: pd.DataFrame, markdown: bool) -> None:
    shown = comparing.display(table)
    if markdown:
        print(shown.to_markdown(index=False))
    else:
        console.out.print(console.frame_table(shown, "NEW vs BASE"))
    counts = table["verdict"].value_counts()
    console.out.print(", ".join(f"{n} {v}" for v, n in counts.items()), highlight=False)


@app.command()
def selftest(
    suite: Annotated[Path, typer.Option(help="Suite YAML file.")] = DEFAULT_SUITE,
    backend: Annotated[str | None, typer.Option(help="Adapter backend.")] = None,
    adapter: Annotated[str | None, typer.Option(help="Adapter name substring.")] = None,
    processes: Annotated[int, typer.Option(help="Worker processes per run.")] = 3,
    implementation: Annotated[str, typer.Option(help="As for run.")] = "all",
    out: Annotated[Path, typer.Option(help="Folder that receives both runs.")] = Path("results"),
    threshold: Annotated[float, typer.Option(help="As for compare, in percent.")] = 5.0,
) -> None:
    """A/A test: run the same suite twice and compare; at least 95% must be `same`."""
    with user_errors():
        names = implementations.parse(implementation)
    runs = []
    for label in ("a", "b"):
        run_id = f"selftest-{runinfo.new_run_id()}-{label}"
        options = runner.RunOptions(suite=suite, out_root=out, backend=backend, adapter=adapter,
                                    implementations=names, processes=processes, run_id=run_id)
        with user_errors(), console.RichReporter() as reporter:
            runs.append(runner.run(options, reporter).folder)
    with user_errors():
        table = comparing.compare(results.load(runs[0]), results.load(runs[1]), threshold / 100)
    _print_comparison(table, False)
    headline = table[table["metric"].isin(comparing.HEADLINE)]
    for label, rows in (("all", table), ("headline (latency, per dispatch)", headline)):
        share = float((rows["verdict"] == "same").mean()) if len(rows) else 0.0
        console.out.print(f"A/A, {label}: {share:.1%} of {len(rows)} estimates are 'same'",
                          highlight=False)
    console.out.print(f"({runs[0].name} vs {runs[1].name}; the target is at least 95% of the "
                      "headline estimates)", highlight=False)
    if not len(headline) or (headline["verdict"] == "same").mean() < 0.95:
        raise typer.Exit(EXIT_FAILED)


@app.command("adapters")
def list_adapters(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List every adapter the installed implementations see, best first."""
    found, notes = adapters.discover()
    console.show_warnings(notes)
    if not found:
        with user_errors():
            raise UserError(adapters.NO_ADAPTER)
    if as_json:
        print(json.dumps([{**f.info.__dict__, **f.details()} for f in found], indent=2))
    else:
        console.out.print(console.adapters_table(found))


@app.command()
def validate(file: Annotated[Path, typer.Argument(help="Suite YAML file.")],
             outside_shaders: Annotated[bool, typer.Option(
                 help="Allow kernel paths outside the suite's folder.")] = False) -> None:
    """Check a suite and explain every problem with file, line and key."""
    problems = suite_problems(file, outside_shaders)
    for problem in problems:
        console.err.print(problem, highlight=False, soft_wrap=True)
    if problems:
        raise typer.Exit(EXIT_USER)
    with user_errors():
        suite = load_suite(file, outside_shaders)
    cases = sum(len(g.cases) for g in suite.groups)
    console.out.print(f"{file}: ok: {len(suite.groups)} groups, {cases} cases", highlight=False)


def main() -> None:
    app()
