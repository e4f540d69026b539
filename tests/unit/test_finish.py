"""run/finish.py: a job the time limit left out is skipped, not failed."""

from __future__ import annotations

import numpy as np
from test_startups import plan  # noqa: F401  (the fixture: a plan of a driver with no GPU)

from gpuoverhead.run.finish import finish
from gpuoverhead.run.worker import Outcome


def test_a_job_no_process_of_which_ran_is_skipped_by_the_time_limit_not_failed(plan):  # noqa: F811
    job = plan.benchmarks[0][0]
    why = "not started: 2.0 s were left before the run's deadline"
    found = finish("r", [job], [[Outcome(0, cut=True, error=why)]], np.random.default_rng(0), 0)
    assert found.skipped == [f"{job.group.id} ({job.label})"] and not found.errors
    assert found.entries[0]["status"] == "skipped (time limit)"
    row = found.summaries[0].iloc[0]
    assert row["metric"] == "skipped" and row["estimator"] == why and np.isnan(row["value"])


def test_a_job_whose_process_failed_its_check_is_an_error(plan):  # noqa: F811
    job = plan.benchmarks[0][0]
    found = finish("r", [job], [[Outcome(0, error="output check failed")]],
                   np.random.default_rng(0), 0)
    assert not found.skipped and found.errors and found.entries[0]["status"] == "failed"
