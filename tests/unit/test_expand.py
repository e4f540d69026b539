"""A suite's problems (suite/expand.suite_problems), all of them in one pass: schema errors
do not hide what the other checks find."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import in_process

from gpuoverhead.suite.expand import load_suite, suite_problems

#: Schema errors (an unknown key in the defaults and in a benchmark, a methodology that does
#: not exist) beside the problems only the later checks find: a duplicate name, kernel files
#: that are not there (in a benchmark with a schema error of its own, and in a sound one),
#: the dependent loop's 256 cells.
SUITE = """\
defaults:
  n_sweep: [1, 16]
  budgt_s: 1.0
benchmarks:
  - name: a
    kernel: empty
    methodologies: [naive, sequentail]
  - name: a
    kernel: nothere.wgsl
  - name: cells
    fusion: loop
    elements: 512
  - name: b
    kernel: missing.wgsl
    bogus: 3
  - name: c
    kernel: gone.wgsl
    n_sweep: [1, 1]
"""


def _problems(tmp_path, text: str) -> list[str]:
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return [p.removeprefix(f"{path}:") for p in suite_problems(path)]


def test_schema_errors_and_every_other_problem_in_one_pass(tmp_path):
    found = _problems(tmp_path, SUITE)
    assert [p.split(": ")[0:2] for p in found] == [
        ["3", "defaults.budgt_s"], ["7", "benchmarks[0].methodologies[1]"],
        ["15", "benchmarks[3].bogus"], ["18", "benchmarks[4].n_sweep"],
        ["8", "benchmarks[1].name"], ["9", "benchmarks[1].kernel"],
        ["12", "benchmarks[2].elements"], ["14", "benchmarks[3].kernel"],
        ["17", "benchmarks[4].kernel"]], found
    assert "duplicate benchmark name 'a'" in found[4]
    assert "at most 256 elements" in found[6]


def test_a_benchmark_whose_settings_failed_is_checked_for_name_and_kernel_only(tmp_path):
    """A setting that failed the schema is left out, and a default in its place could raise
    a problem the author never wrote: an f16 decode step with `elements` misspelt as text
    would be checked as 1 element (not 896, 1536 or 128). Its name still counts, and so do
    the settings of the benchmarks it does not touch; a setting the defaults failed taints
    the benchmarks that take it, not those that give their own."""
    found = _problems(tmp_path, """\
defaults:
  k_sweep: 5
benchmarks:
  - {name: d, fusion: decode, elements: "896x"}
  - {name: d, fusion: loop, elements: 512}
  - {name: e, fusion: loop, elements: 512, k_sweep: [1, 2]}
""")
    assert [p.split(": ")[0:2] for p in found] == [
        ["2", "defaults.k_sweep"], ["4", "benchmarks[0].elements"],
        ["5", "benchmarks[1].name"], ["6", "benchmarks[2].elements"]], found


def test_a_sound_suite_has_no_problem(tmp_path):
    assert _problems(tmp_path, "benchmarks:\n  - {name: a, kernel: empty}\n") == []


ONE_BENCHMARK = "benchmarks:\n  - {name: a, kernel: empty}\n"


@pytest.mark.parametrize(("value", "said"), [
    ("0", "greater than or equal to 1"), ("21", "less than or equal to 20"),
    ("2.5", "a valid integer"), ("true", "a valid integer"), ('"6"', "a valid integer")])
def test_a_suites_processes_is_a_count_from_one_to_twenty(tmp_path, value, said):
    """`processes` (a plain run's worker processes per job) is a whole number up to
    MOST_PROCESSES; anything else is one line with its file, line and key."""
    found = _problems(tmp_path, f"processes: {value}\n{ONE_BENCHMARK}")
    assert len(found) == 1 and found[0].startswith("1: processes: ") and said in found[0], found


def test_hostile_a_run_of_a_suite_with_a_bad_processes_ends_in_one_line(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text(f"processes: 0\n{ONE_BENCHMARK}")
    for args in (("validate", str(path), "--no-compile"),
                 ("run", "--suite", str(path), "--out", str(tmp_path / "out"))):
        proc = in_process(*args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and lines[0].endswith(
            f"{path}:1: processes: Input should be greater than or equal to 1"), proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_suites_processes_is_read_and_three_where_it_names_none(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text(f"processes: 6\n{ONE_BENCHMARK}")
    assert load_suite(path).processes == 6
    path.write_text(ONE_BENCHMARK)
    assert load_suite(path).processes == 3
    assert load_suite(Path(__file__).parents[2] / "configs" / "default.yaml").processes == 6
