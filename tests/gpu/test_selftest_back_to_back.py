"""The A/A's back-to-back form (`selftest --back-to-back`): two plain runs one after the
other, compared; how far they differ is the machine's run-to-run allowance, kept for this
machine and suite, which `compare` then allows between runs of that suite and says so."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import BACKEND, aa_suite, in_process, write_suite

from gpuoverhead.present import compare as comparing
from gpuoverhead.results import read


@pytest.mark.slow
def test_two_runs_one_after_the_other_give_the_allowance_compare_uses(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    # One process a job (the suite's `processes`): the back-to-back form is two plain runs,
    # so it takes the suite's count, not the alternating form's six a half. (Two a job, as
    # before, cost two more workers' start-ups, ~3 CPU-s, and checked the same.)
    suite = write_suite(tmp_path, "processes: 1\n" + aa_suite("b2b", 20))
    proc = in_process("selftest", "--back-to-back", "--suite", str(suite), "--backend",
                      BACKEND, "--implementation", "wgpu-native", "--out", str(tmp_path / "out"))
    runs = sorted((tmp_path / "out").iterdir())
    assert [r.name[-2:] for r in runs] == ["-a", "-b"], proc.stderr
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    said = " ".join(proc.stdout.split("one run after the other)")[-1].split())
    assert said.startswith("run to run on this machine: ±"), proc.stdout
    verdict = said.split("compare allows it between runs of this suite here) ")[-1]
    assert verdict.startswith("A/A passed" if proc.returncode == 0 else "A/A failed")
    assert "the 90% it asks" in verdict
    # Its verdict and advice are those of the runs as they ran: without --processes each is a
    # plain run's processes (the advice once doubled 6, the alternating form's default).
    table = comparing.compare(read.load(runs[0]), read.load(runs[1]), 0.05)
    assert verdict == comparing.aa_verdict(table, 1, comparing.B2B_PASS)[1]
    # One run after the other, each a plain run of its own (its own process 0).
    infos = [json.loads((r / "run.json").read_text()) for r in runs]
    assert infos[0]["finished"] <= infos[1]["started"]
    for r in runs:
        processes = pd.read_parquet(r / "samples.parquet", columns=["process"])["process"]
        assert set(processes) == {0}
    # compare allows what the back-to-back form found, and says so; --allowance 0 does not.
    allowed = in_process("compare", str(runs[0]), str(runs[1]))
    assert allowed.returncode == 0 and "run-to-run allowance, ±" in allowed.stderr
    assert f"selftest --back-to-back, {runs[1].name}" in allowed.stderr
    plain = in_process("compare", str(runs[0]), str(runs[1]), "--allowance", "0")
    assert plain.returncode == 0 and "run-to-run allowance" not in plain.stderr
    refused = in_process("compare", str(runs[0]), str(runs[1]), "--allowance", "-1")
    assert refused.returncode == 2 and "--allowance must be" in refused.stderr
