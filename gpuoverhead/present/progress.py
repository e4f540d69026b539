"""Progress while a run works: one bar per job, time spent against its budget, the worst CI.

It goes to stderr so that stdout holds only results; rich drops the live display when
stderr is not a terminal.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from gpuoverhead.present.console import err, literal


class RichReporter:
    """One progress bar per benchmark: time spent against its budget, then the worst CI."""

    def __init__(self) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(), console=err, transient=False, disable=not err.is_terminal,
        )
        self._task: Any = None

    def __enter__(self) -> RichReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def run_started(self, lines: list[str]) -> None:
        """The run's first lines, whose suite name, adapters and folder are the user's
        words: printed as they are, never as markup or control characters."""
        for line in lines:
            err.print(literal(line), highlight=False, soft_wrap=True)

    def benchmark_started(self, label: str, index: int, total: int, seconds: float) -> None:
        if not err.is_terminal:  # no live bar on a pipe: one line per benchmark instead
            err.print(literal(f"[{index + 1}/{total}] {label}: about {seconds:.0f} s of "
                              "sampling"), highlight=False, soft_wrap=True)
        self._progress.start()  # only now: errors before the first benchmark print cleanly
        self._task = self._progress.add_task(literal(f"[{index + 1}/{total}] {label}"),
                                             total=seconds, info="warming up")

    def progress(self, done_s: float, info: str) -> None:
        self._progress.update(self._task, completed=done_s, info=info)

    def benchmark_done(self, label: str, summary: pd.DataFrame | None, errors: list[str]
                       ) -> None:
        task = self._progress.tasks[-1]
        if not err.is_terminal:
            err.print(literal(f"  {label}: {len(errors)} failed" if errors
                              else f"  {label}: done"), highlight=False, soft_wrap=True)
        if errors:
            first = errors[0].splitlines()[0]
            self._progress.update(self._task,
                                  info=f"[red]{len(errors)} failed: {literal(first[:60])}")
            return
        head = summary[summary["metric"].isin(("latency_ns", "per_dispatch_ns"))
                       & summary["process"].isna()] if summary is not None else None
        info = "done" if head is None or head.empty else \
            f"{head['rel_ci'].max():.1%} worst CI, {','.join(sorted(set(head['stop'])))}"
        self._progress.update(self._task, completed=task.total, info=info)
