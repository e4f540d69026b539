"""Progress while a run works: one bar per job, time spent against its budget, the worst CI.

It goes to stderr so that stdout holds only results; rich drops the live display when
stderr is not a terminal.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from gpuoverhead.present.console import err
from gpuoverhead.run.budget import Budget
from gpuoverhead.suite.model import Group


class RichReporter:
    """Shows one progress bar per group: time spent against its budget, and the worst CI."""

    def __init__(self) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(), console=err, transient=False,
        )
        self._task: Any = None

    def __enter__(self) -> RichReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def group_started(self, group: Group, index: int, total: int, budget: Budget,
                      implementation: str) -> None:
        self._progress.start()  # only now: errors before the first group print cleanly
        self._processes = budget.processes
        self._task = self._progress.add_task(
            f"[{index + 1}/{total}] {group.id} {implementation}", total=budget.group_s,
            info="warming up")

    def round_done(self, process: int, rounds: int, elapsed_s: float, budget_s: float) -> None:
        done = process * budget_s + min(elapsed_s, budget_s)
        self._progress.update(self._task, completed=done,
                              info=f"process {process + 1}/{self._processes}, {rounds} rounds")

    def group_done(self, group: Group, summary: pd.DataFrame | None, error: str | None) -> None:
        task = self._progress.tasks[-1]
        if error:
            self._progress.update(self._task, info="[red]output check failed")
        else:
            head = summary[summary["metric"].isin(("latency_ns", "per_dispatch_ns"))
                           & summary["process"].isna()]
            info = f"{head['rel_ci'].max():.1%} worst CI, {head['stop'].iat[0]}"
            self._progress.update(self._task, completed=task.total, info=info)
