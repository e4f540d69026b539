"""The command line: parses arguments and delegates; user errors end in one line and exit 2.

Commands import what they use when they run, so that `--help` answers at once.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpuoverhead import __version__, interrupts
from gpuoverhead.errors import OutputClosed, UserError, out_of_memory
from gpuoverhead.gpu.adapters import BACKENDS
from gpuoverhead.options import (
    AdapterOption,
    AffinityOption,
    BenchmarkOption,
    BrowserOption,
    ElementsOption,
    HistoryOutputOption,
    ImplementationOption,
    OutOption,
    PathsArgument,
    PlotsOption,
    ProcessesOption,
    QuickOption,
    ReportOutputOption,
    SuiteOption,
)
from gpuoverhead.resources import DEFAULT_SUITE, suite_path
from gpuoverhead.whole_files import whole_stdout

if TYPE_CHECKING:
    from gpuoverhead.run.plan import RunOptions
    from gpuoverhead.run.runner import RunResult

app = typer.Typer(
    add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,  # plain click help: it answers without importing rich
    help="Measure what one GPU dispatch really costs (naive vs sequential, per encoding).",
)

#: When this command started: a run's time limit counts from here (its imports included).
STARTED = time.monotonic()
EXIT_USER, EXIT_FAILED = 2, 1
BackendOption = Annotated[str | None, typer.Option(
    help=f"Adapter backend: {', '.join(BACKENDS)}.")]

def _version(value: bool) -> None:
    if value:
        typer.echo(f"gpuoverhead {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True,
        help="Print the version and exit.")] = False) -> None:
    """Measure what one GPU dispatch really costs (naive vs sequential, per encoding)."""


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn a UserError into one line on stderr and exit code 2."""
    try:
        yield
    except UserError as exc:
        from gpuoverhead.present.console import err, literal

        err.print(f"[red]error:[/red] {literal(exc)}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USER) from None


#: Ctrl-C, SIGTERM and a hang-up stop a command cleanly (see interrupts.py).
_install_interrupts = interrupts.install


def _measure(options: RunOptions, affinity: str | None) -> RunResult:
    """One run with progress on stderr, on the CPUs asked for (else those run/cpus.py
    chooses); a user error ends it in one line."""
    from gpuoverhead.present.progress import RichReporter
    from gpuoverhead.run import cpus
    from gpuoverhead.run.environment import address_space_problem
    from gpuoverhead.run.runner import run as run_plan

    with user_errors(), RichReporter() as reporter, cpus.restored():
        if problem := address_space_problem():
            raise UserError(problem)
        options.affinity = affinity
        return run_plan(options, reporter)


@app.command()
def run(
    suite: SuiteOption = DEFAULT_SUITE,
    backend: BackendOption = None,
    adapter: AdapterOption = None,
    implementation: ImplementationOption = "all",
    out: OutOption = Path("runs"),
    quick: QuickOption = False,
    processes: ProcessesOption = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the interleaving order.")] = None,
    run_id: Annotated[str | None, typer.Option(help="Name of the run folder.")] = None,
    force: Annotated[bool, typer.Option(help="Overwrite an existing run folder.")] = False,
    outside_shaders: Annotated[bool, typer.Option(
        help="Allow kernel paths outside the suite's folder.")] = False,
    stall_timeout: Annotated[float, typer.Option(
        help="Stop a benchmark whose worker finishes no round for this many seconds "
             "(a hung GPU wait).")] = 300.0,
    time_limit: Annotated[float | None, typer.Option(
        help="Seconds the whole run may take, instead of the suite's time_limit_s "
             "(0: none; each group then takes its budget_s per case).")] = None,
    browser: BrowserOption = None,
    affinity: AffinityOption = None,
) -> None:
    """Measure naive and sequential dispatch overhead and write FOLDER/<run_id>/ (--out)."""
    from gpuoverhead.drivers import registry
    from gpuoverhead.present import console
    from gpuoverhead.run.plan import RunOptions

    _install_interrupts(deferred=True)
    with user_errors():
        names = registry.parse(implementation)
    result = _measure(RunOptions(
        suite=suite, out_root=out, backend=backend, adapter=adapter, implementations=names,
        quick=quick, processes=processes, seed=seed, run_id=run_id, force=force,
        outside_shaders=outside_shaders, stall_timeout_s=stall_timeout,
        time_limit_s=time_limit, browser=browser, started=STARTED), affinity)
    console.print_summary(result.summary)
    for line in result.record.precision:  # what limited precision (run/precision.py)
        console.err.print(f"precision: {console.literal(line)}", highlight=False)
    console.show_warnings(console.run_warnings(result.record.warnings))
    console.show_errors(result.record.errors)
    console.err.print(f"{result.record.status} in {result.seconds:.0f} s: results in "
                      f"{console.literal(result.folder)}", highlight=False)
    if result.record.status == "interrupted":
        raise typer.Exit(interrupts.exit_code())
    if result.failed:
        raise typer.Exit(EXIT_FAILED)


@app.command()
def show(folder: Annotated[Path, typer.Argument(help="A run folder (runs/<run_id>).")]) -> None:
    """Print the summary table of a finished run."""
    from gpuoverhead.present import console
    from gpuoverhead.results import read

    with user_errors():
        if not (folder / "run.json").is_file() and (runs := read.runs_in(folder)) is not None:
            console.print_table(console.frame_table(runs,
                                                    f"Runs in {folder} (show one of them)"))
            return
        found = read.load(folder)
    console.print_run(found)


@app.command()
def report(
    paths: PathsArgument, benchmark: BenchmarkOption = None, elements: ElementsOption = None,
    output: ReportOutputOption = None, plots: PlotsOption = None,
) -> None:
    """Per-vendor tables from result sets, each run counted once (never into a run folder)."""
    from gpuoverhead.present import console, render
    from gpuoverhead.present import report as reporting
    from gpuoverhead.results import read

    notes: list[str] = []
    with user_errors():
        reporting.check_outputs(output or [], [plots] if plots is not None else [])
        sets = read.load_all(paths, notes)
        console.show_warnings(notes)
        table = reporting.build(sets, benchmark, elements)
        console.print_report(table, sets)
        written = render.publish(table, sets, output or [], plots, published := [])
    console.show_warnings(table.left_out + list(dict.fromkeys(published)))
    for path in written:
        console.err.print(f"wrote {path}", highlight=False)


@app.command()
def history(
    paths: PathsArgument, benchmark: BenchmarkOption = None, elements: ElementsOption = None,
    output: HistoryOutputOption = None,
) -> None:
    """Per headline estimate, the runs in time order with their intervals (drift over runs)."""
    from gpuoverhead.present import history as past

    with user_errors():
        past.show(paths, benchmark, elements, output or [])


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
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (docs/schema.md).")
                       ] = False,
    run_to_run: Annotated[float | None, typer.Option(
        "--allowance", help="How far in percent two runs here differ when nothing changed: "
        "no change within it is called (default: what selftest --back-to-back found here "
        "for this suite in the last day, else 0).")] = None,
) -> None:
    """Per estimate: NEW/BASE with a CI, a rank test on the raw samples, and a verdict."""
    from gpuoverhead.present import allowance, console
    from gpuoverhead.present import compare as comparing
    from gpuoverhead.results import read

    with user_errors():
        comparing.check_thresholds(threshold, fail_above)
        runs = read.load(base), read.load(new)
        allowed, source = allowance.chosen(*runs, run_to_run)
        table = comparing.compare(*runs, threshold / 100, allowed)
    if source:
        console.err.print(console.literal(
            f"judged with this machine's run-to-run allowance, ±{allowed:.1%} (selftest "
            f"--back-to-back, {source}; --allowance 0: without)"), highlight=False)
    console.show_warnings(comparing.differences(*runs))
    comparing.show(table, "json" if as_json else "markdown" if markdown else "table", runs,
                   threshold / 100)
    if fail_above is not None:
        worse = comparing.regressions(table, fail_above / 100)
        if len(worse):
            console.err.print(f"{len(worse)} estimates got slower by more than {fail_above}%",
                              highlight=False)
            raise typer.Exit(EXIT_FAILED)


@app.command()
def selftest(
    suite: SuiteOption = DEFAULT_SUITE,
    backend: BackendOption = None,
    adapter: AdapterOption = None,
    processes: Annotated[int | None, typer.Option(
        help="Worker processes per job in each half (the suite's `processes`, at least 6: "
             "from six on the comparison is the Hodges-Lehmann shift's, which one odd process "
             "does not move; --back-to-back: a plain run's).")] = None,
    implementation: ImplementationOption = "all",
    out: OutOption = Path("runs"),
    threshold: Annotated[float, typer.Option(help="As for compare, in percent.")] = 5.0,
    affinity: AffinityOption = None,
    back_to_back: Annotated[bool, typer.Option(
        "--back-to-back", help="Two plain runs one after the other instead of halves that "
        "take turns: how far two runs here differ (at least 90% must be `same`); the "
        "run-to-run allowance found is kept a day, and compare allows it.")] = False,
) -> None:
    """A/A test: the same suite measured twice, interleaved, and compared; at least 95% of
    the headline estimates must be `same`. Each process is as long as a plain run's: six a
    half take twice a plain run's time where it has six, four times where it has three."""
    from gpuoverhead.drivers import registry
    from gpuoverhead.present import allowance, console
    from gpuoverhead.present import compare as comparing
    from gpuoverhead.results import read
    from gpuoverhead.run.environment import new_run_id
    from gpuoverhead.run.plan import RunOptions

    _install_interrupts(deferred=True)
    with user_errors():
        names = registry.parse(implementation)
        comparing.check_thresholds(threshold, None)
    def options(**more: object) -> RunOptions:
        return RunOptions(suite=suite, out_root=out, backend=backend, adapter=adapter,
                          implementations=names, **more)

    run_id = f"selftest-{new_run_id()}"
    made = [_measure(options(processes=processes, run_id=f"{run_id}-{half}"), affinity)
            for half in "ab"] if back_to_back else [_measure(options(
                processes=processes, run_id=run_id, halves=True), affinity)]
    runs = [f for result in made for f in result.folders]
    if any(r.record.status == "interrupted" for r in made):  # a verdict would mislead
        console.err.print(f"interrupted in {sum(r.seconds for r in made):.0f} s: no A/A verdict;"
                          f" what was measured is kept in {', '.join(map(str, runs))}")
        raise typer.Exit(interrupts.exit_code())
    with user_errors():
        sets = read.load(runs[0]), read.load(runs[1])
        table = comparing.compare(*sets, threshold / 100)
    comparing.show(table)
    for line in comparing.aa_lines(table):
        console.out.print(line, highlight=False)
    console.out.print(f"({runs[0].name} vs {runs[1].name}, " + (
        "one run after the other)" if back_to_back else
        "processes of one run in turn, a b b a)"), highlight=False)
    if back_to_back:
        console.out.print(allowance.kept_from(table, sets[1]), highlight=False)
    passed, said = comparing.aa_verdict(table, made[0].record.processes, comparing.B2B_PASS
                                        if back_to_back else comparing.AA_PASS)
    console.out.print(said, highlight=False)
    if not passed:
        raise typer.Exit(EXIT_FAILED)


@app.command("adapters")
def list_adapters(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    browser: BrowserOption = None,
) -> None:
    """List every adapter the installed implementations and a Chromium see, best first."""
    import json

    from gpuoverhead.drivers import registry
    from gpuoverhead.gpu import adapters
    from gpuoverhead.present import console

    notes: list[str] = []
    offers = [o for d in registry.drivers() for o in d.listing(browser, notes)]
    console.show_warnings(notes)
    if not offers:
        with user_errors():
            raise UserError(adapters.NO_ADAPTER)
    if as_json:
        print(json.dumps([{**o.info.__dict__, **o.details} for o in offers], indent=2))
    else:
        console.print_table(console.adapters_table([o.info for o in offers]))


@app.command()
def validate(file: Annotated[Path, typer.Argument(
                 help="Suite YAML file, or a shipped suite's name.", callback=suite_path)],
             outside_shaders: Annotated[bool, typer.Option(
                 help="Allow kernel paths outside the suite's folder.")] = False,
             compile_shaders: Annotated[bool, typer.Option(
                 "--compile/--no-compile",
                 help="Compile the suite's kernels on the best adapter found.")] = True,
             ) -> None:
    """Check a suite and explain every problem with file, line and key."""
    from gpuoverhead.drivers import registry
    from gpuoverhead.suite.expand import checked_suite

    with user_errors():
        suite, problems = checked_suite(file, outside_shaders)
    for problem in problems:
        typer.echo(problem, err=True)
    if suite is None:
        raise typer.Exit(EXIT_USER)
    with user_errors():
        compiled = registry.compile_kernels(suite) if compile_shaders else \
            "shaders not compiled"
    cases = sum(len(g.cases) for g in suite.groups)
    typer.echo(f"{file}: ok: {len(suite.groups)} groups, {cases} cases; {compiled}")


def main() -> None:
    """The console script: output that a terminal or pipe cannot encode is replaced, not a
    crash; a full or closed stdout ends in one line; Mesa's drivers get a private runtime folder
    where none is set (else they print an error line per process) and a private shader cache."""
    gc.set_threshold(10_000, 10, 10)  # cycles looked for a seventh as often: ~0.07 CPU-s a run
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    if not os.environ.get("XDG_RUNTIME_DIR") and sys.platform.startswith("linux"):
        from gpuoverhead.gpu.cache_folder import runtime_dir

        with contextlib.suppress(OSError):  # another user's, refused: gpu/cache_folder.py
            if runtime := runtime_dir():
                os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    if sys.platform.startswith("linux"):  # llvmpipe runs the code it finds there
        from gpuoverhead.gpu.cache_folder import mesa_cache_env

        os.environ.update(mesa_cache_env())
    for name in ("stdout", "stderr"):  # a closed stream (`>&-`) drops what it would show
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
    _install_interrupts()  # from the first moment: a SIGTERM while starting exits 130 too
    try:
        with whole_stdout():  # a pipe whose reader leaves: said, not cut short in silence
            app()
    except KeyboardInterrupt:
        os._exit(interrupts.exit_code())
    except (MemoryError, ImportError, SystemError) as exc:
        if not out_of_memory(exc):
            raise
        with contextlib.suppress(OSError):
            os.write(2, f"error: out of memory{': ' + str(exc) if str(exc) else ''} (a "
                        f"memory limit such as ulimit -v, or the machine's)\n".encode())
        os._exit(EXIT_USER)
    except (OSError, OutputClosed) as exc:
        if isinstance(exc, OSError) and exc.errno not in (errno.EPIPE, errno.ENOSPC, errno.EIO):
            raise
        with contextlib.suppress(OSError):
            os.write(2, f"error: cannot write the output: {getattr(exc, 'strerror', exc)}\n"
                        .encode())
        os._exit(EXIT_FAILED)
    finally:  # done: the end of the process looks for no cycles among its objects (~0.2 CPU-s)
        gc.freeze()
