"""The command line: parses arguments and delegates; user errors end in one line and exit 2."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer

from gpuoverhead import adapters, console, runner
from gpuoverhead.errors import UserError
from gpuoverhead.resources import DEFAULT_SUITE
from gpuoverhead.suite import load_suite, suite_problems
from gpuoverhead.writers import read_summary

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


def _terminate_as_interrupt() -> Callable[..., None]:
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt
    return handler


@app.command()
def run(
    suite: Annotated[Path, typer.Option(help="Suite YAML file.")] = DEFAULT_SUITE,
    backend: Annotated[str | None, typer.Option(
        help=f"Adapter backend: {', '.join(adapters.BACKENDS)}.")] = None,
    adapter: Annotated[str | None, typer.Option(
        help="Pick the adapter whose device name contains this (case-insensitive).")] = None,
    out: Annotated[Path, typer.Option(help="Folder that receives <run_id>/.")] = Path("results"),
    quick: Annotated[bool, typer.Option(help="Smoke run: tiny budget, one process.")] = False,
    processes: Annotated[int, typer.Option(
        help="Fresh worker processes per benchmark, one after another.")] = 3,
    seed: Annotated[int | None, typer.Option(help="Seed of the interleaving order.")] = None,
    run_id: Annotated[str | None, typer.Option(help="Name of the run folder.")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing run folder.")] = False,
) -> None:
    """Measure naive and sequential dispatch overhead and write results/<run_id>/."""
    signal.signal(signal.SIGTERM, _terminate_as_interrupt())
    options = runner.RunOptions(suite=suite, out_root=out, backend=backend, adapter=adapter,
                                quick=quick, processes=processes, seed=seed, run_id=run_id,
                                force=force)
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
        summary = read_summary(folder)
    _print_summary(summary)


def _print_summary(summary: pd.DataFrame) -> None:
    if summary.empty:
        return
    console.out.print(console.summary_grid(summary))
    breakdown = console.breakdown_grid(summary)
    if breakdown is not None:
        console.out.print(breakdown)


@app.command("adapters")
def list_adapters(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List every adapter the installed implementations see, best first."""
    found = adapters.discover()
    if not found:
        with user_errors():
            raise UserError(adapters.NO_ADAPTER)
    if as_json:
        print(json.dumps([{**f.info.__dict__, **f.details()} for f in found], indent=2))
    else:
        console.out.print(console.adapters_table(found))


@app.command()
def validate(file: Annotated[Path, typer.Argument(help="Suite YAML file.")]) -> None:
    """Check a suite and explain every problem with file, line and key."""
    problems = suite_problems(file)
    for problem in problems:
        console.err.print(problem, highlight=False, soft_wrap=True)
    if problems:
        raise typer.Exit(EXIT_USER)
    with user_errors():
        suite = load_suite(file)
    cases = sum(len(g.cases) for g in suite.groups)
    console.out.print(f"{file}: ok: {len(suite.groups)} groups, {cases} cases", highlight=False)


def main() -> None:
    app()
