"""Hostile inputs, fourth round (issue 42): huge numbers, deep nesting, NUL bytes, misleading
messages, partial outputs, runs left out or read from leftovers, sweeps that cannot run.

Each ends in one clear line naming the file, option or value, exit 2, no traceback and no
partial file. The result sets are copies of a committed run (no measuring needed).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT, cli_commands, in_process, without_bytecode_writes, write_suite

#: A committed run of the default suite: its run.json and tables are what a copy damages.
COMMITTED = ROOT / "results" / "h100" / "default"
GOOD = "benchmarks:\n  - {name: a, kernel: empty}\n"
HUGE = "9" * 5000


def _assert_one_clear_line(proc, expected: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert expected in proc.stderr, proc.stderr


def _run(to: Path, samples: bool = False, source: Path = COMMITTED) -> Path:
    """A copy of a committed run (with its samples where `compare` reads them)."""
    to.mkdir(parents=True)
    for name in ("run.json", "summary.parquet") + (("samples.parquet",) if samples else ()):
        shutil.copy(source / name, to / name)
    return to


def _with_run_json(folder: Path, text: str) -> Path:
    (folder / "run.json").write_text(text)
    return folder


#: Suites whose numbers or characters Python or YAML cannot read.
HUGE_SUITES = {
    "decimal elements": (f"benchmarks:\n  - {{name: a, kernel: empty, elements: {HUGE}}}\n",
                         "suite.yaml:2: benchmarks[0].elements: an integer of 5,000 "
                         "characters"),
    "hex workgroup size": (f"benchmarks:\n  - {{name: a, kernel: empty, workgroup_size: "
                           f"0x{'f' * 5000}}}\n",
                           "suite.yaml:2: benchmarks[0].workgroup_size: an integer of 5,002"),
    "hex elements": (f"benchmarks:\n  - {{name: a, kernel: empty, elements: 0x{'f' * 5000}}}\n",
                     "suite.yaml:2: benchmarks[0].elements: an integer of 5,002"),
    "decimal key": (f"benchmarks:\n  - name: a\n    kernel: empty\n    ? {HUGE}\n    : 1\n",
                    "suite.yaml:4: benchmarks[0]: an integer of 5,000"),
    "NUL byte": ("benchmarks:\n  - {name: a,\0 kernel: empty}\n",
                 "suite.yaml:2: not valid YAML: character U+0000"),
}


@pytest.mark.parametrize("name", HUGE_SUITES)
def test_hostile_suite_python_or_yaml_cannot_read(tmp_path, name):
    """Issue 42.1 and 42.3: a 5,000-digit number (Python reads at most 4,300 digits; a hex
    one it reads, but cannot print in a message) and a NUL byte ended in tracebacks."""
    text, expected = HUGE_SUITES[name]
    suite = write_suite(tmp_path, text)
    _assert_one_clear_line(in_process("validate", "--no-compile", str(suite)), expected)
    out = tmp_path / "out"
    _assert_one_clear_line(in_process("run", "--suite", str(suite), "--out", str(out)),
                           expected)
    assert not out.exists()


@pytest.mark.parametrize("command", ["show", "report", "compare"])
def test_hostile_run_json_with_a_5000_digit_number(tmp_path, command):
    """Issue 42.1: Python's limit on the digits of an int read from text."""
    bad = _run(tmp_path / "bad", samples=True)
    info = (bad / "run.json").read_text()
    _with_run_json(bad, info.replace('"seed": ', f'"huge": {HUGE}, "seed": ', 1))
    args = ["compare", str(_run(tmp_path / "good", samples=True)), str(bad)] \
        if command == "compare" else [command, str(bad)]
    _assert_one_clear_line(in_process(*args),
                           "run.json: cannot read: a number of more than 4,300 digits")


@pytest.mark.parametrize("command", ["show", "report"])
def test_hostile_run_json_nested_200000_deep(tmp_path, command):
    """Issue 42.2: a RecursionError from the JSON parser."""
    bad = _with_run_json(_run(tmp_path / "bad"), "[" * 200_000)
    _assert_one_clear_line(in_process(command, str(bad)),
                           "run.json: cannot read: lists or objects nested too deep")


def test_hostile_report_of_a_tree_too_large_to_search(tmp_path, monkeypatch):
    """Issue 42.1: `report /` walked the whole filesystem for 32 s (and then read a run.json
    it should not have). The search stops at a bound and says what to name instead."""
    from gpuoverhead.results import read

    monkeypatch.setattr(read, "MAX_SEARCHED", 20)
    for i in range(30):
        (tmp_path / f"d{i}").mkdir()
    _assert_one_clear_line(in_process("report", str(tmp_path)),
                           f"{tmp_path}: more than 20 folders to search for runs; name the "
                           "run folders")


def test_hostile_leftover_of_an_interrupted_force_is_no_run(tmp_path):
    """Issue 42.14: `run --force` writes into `.<run>.<pid>.new` beside the run; an
    interrupted one leaves it. `show` of the parent listed it, and `report` read the run
    from it (the same run id, first in sorted order) instead of from the run's folder."""
    g1 = _run(tmp_path / "good" / "g1")
    leftover = _run(tmp_path / "good" / ".g1.4242.new")
    summary = pd.read_parquet(leftover / "summary.parquet")
    summary[["value", "ci_low", "ci_high"]] *= 1000
    summary.to_parquet(leftover / "summary.parquet")
    shown = in_process("show", str(tmp_path / "good"))
    assert shown.returncode == 0, shown.stderr
    assert "g1" in shown.stdout and ".new" not in shown.stdout
    outputs = [tmp_path / "all.csv", tmp_path / "g1.csv"]
    for path, arg in zip(outputs, [tmp_path / "good", g1], strict=True):
        proc = in_process("report", str(arg), "-o", str(path))
        assert proc.returncode == 0, proc.stderr
        assert "folders" not in proc.stderr  # no "run ... is in 2 folders" note
    assert outputs[0].read_text() == outputs[1].read_text()


#: Suites that validated or misled: a float YAML 1.1 reads as text, sweeps that cannot run.
MISLEADING_SUITES = {
    "exponent without a dot": ("time_limit_s: 1e-300\n" + GOOD,
                               "suite.yaml:1: time_limit_s: Value error, '1e-300' is text to "
                               "YAML 1.1 (an exponent needs a dot and a sign): write 1.0e-300"),
    "exponent without a sign": ("defaults: {budget_s: 2.5E3}\n" + GOOD,
                                "suite.yaml:1: defaults.budget_s: Value error, '2.5E3' is text "
                                "to YAML 1.1 (an exponent needs a dot and a sign): write "
                                "2.5e+3"),
    "time limit too short for anything": ("time_limit_s: 1.0e-300\n" + GOOD,
                                          "suite.yaml:1: time_limit_s: Input should be greater "
                                          "than or equal to 1"),
    "K of ten million": ("benchmarks:\n  - {name: a, fusion: chain, k_sweep: [1, 10000000]}\n",
                         "suite.yaml:2: benchmarks[0].k_sweep[1]: Input should be less than "
                         "or equal to 1048576"),
    "K of 10^6000": (f"benchmarks:\n  - {{name: a, fusion: loop, elements: 256, k_sweep: "
                     f"[1, 1{'0' * 6000}]}}\n",
                     "suite.yaml:2: benchmarks[0].k_sweep[1]: an integer of 6,001 characters"),
    "K times N": ("benchmarks:\n  - {name: a, fusion: loop, elements: 256, k_sweep: [200000], "
                  "n_sweep: [1, 8]}\n",
                  "suite.yaml:2: benchmarks[0].k_sweep: K = 200000 dispatches a unit times "
                  "N = 8 units a sample is 1,600,000, over the 1,048,576"),
    "matmul over one binding": ("benchmarks:\n  - {name: a, fusion: matmul, k_sweep: [64, "
                                "8192]}\n",
                                "suite.yaml:2: benchmarks[0].k_sweep: a matmul of size 8192 "
                                "holds 268,435,456 bytes, over the 134,217,728 of one binding: "
                                "at most 5792"),
}


@pytest.mark.parametrize("name", MISLEADING_SUITES)
def test_hostile_suite_that_validated_or_misled(tmp_path, name):
    """Issue 42.12 and 42.15: `1e-300` was "Input should be a valid number" (YAML 1.1 reads
    it as text); K of 10^7 validated, and the run stopped at its time limit."""
    text, expected = MISLEADING_SUITES[name]
    suite = write_suite(tmp_path, text)
    _assert_one_clear_line(in_process("validate", "--no-compile", str(suite)), expected)


def test_hostile_shipped_suites_stay_valid():
    """The bounds refuse no shipped suite (fusion.yaml's loop asks 10,000 steps x 8)."""
    for suite in sorted((ROOT / "configs").glob("*.yaml")):
        proc = in_process("validate", "--no-compile", str(suite))
        assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("kind", ["FIFO", "link to /dev/zero"])
@pytest.mark.parametrize("command", ["show", "report"])
def test_hostile_summary_that_is_not_a_regular_file(tmp_path, kind, command):
    """Issue 42.12: a FIFO or a symlink to /dev/zero as summary.parquet was "no such file"."""
    bad = _run(tmp_path / "bad")
    (bad / "summary.parquet").unlink()
    if kind == "FIFO":
        os.mkfifo(bad / "summary.parquet")
    else:
        (bad / "summary.parquet").symlink_to("/dev/zero")
    said = "a FIFO" if kind == "FIFO" else "a character device"
    _assert_one_clear_line(in_process(command, str(bad)),
                           f"summary.parquet: cannot read: not a regular file but {said}")


@pytest.mark.parametrize("args", [("report", "-o", "afile/x.json"),
                                  ("report", "--plots", "afile/plots"),
                                  ("history", "-o", "afile/deeper/x.png")])
def test_hostile_output_under_a_file(tmp_path, monkeypatch, args):
    """Issue 42.12: `report -o afile/x.json`, `afile` a file, said "File exists" (after
    printing the table); it names `afile` as what is not a folder, before reading a run."""
    run = _run(tmp_path / "runs" / "g1")
    monkeypatch.chdir(tmp_path)
    Path("afile").write_text("mine\n")
    command, option, path = args
    proc = in_process(command, str(run), option, path)
    _assert_one_clear_line(proc, f"{path}: afile is not a folder")
    assert proc.stdout == "" and Path("afile").read_text() == "mine\n"


def _limited_to_1_kib() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


#: The outputs of `report` checked under `ulimit -f 1`.
OUTPUTS = ["x.json", "x.html", "x.md", "plots"]


@pytest.mark.slow
def test_hostile_output_larger_than_ulimit_f_leaves_no_partial_file(tmp_path):
    """Issue 42.13: under `ulimit -f 1` the report's JSON was left truncated at 1,024 bytes.
    Every output (JSON, HTML, Markdown, plots) is written beside its name and moved over it
    once whole: each report ends in one line, exit 2, and leaves no file. The four in one
    child process under the limit (conftest.cli_commands: the four child processes cost
    11 CPU-s), of a committed decode run: each of its outputs is over the limit (the least,
    its JSON, 1,167 bytes) and its report and plots take 2 CPU-s, the default run's 3.3."""
    run = _run(tmp_path / "runs" / "g1", samples=True,  # the plots read samples
               source=ROOT / "results" / "h100" / "decode")
    outs = [tmp_path / f"out-{i}" for i in range(len(OUTPUTS))]
    commands = []
    for output, out in zip(OUTPUTS, outs, strict=True):
        out.mkdir()
        option = "--plots" if output == "plots" else "-o"
        commands.append(["report", str(run), option, str(out / output)])
    ended = cli_commands(*commands, preexec_fn=_limited_to_1_kib, env=without_bytecode_writes())
    for output, out, report in zip(OUTPUTS, outs, ended, strict=True):
        _assert_one_clear_line(report, "File too large")
        assert [p for p in out.rglob("*") if p.is_file()] == [], output


def test_hostile_history_says_which_runs_it_left_out(tmp_path):
    """Issue 42.14: `history good/g1 good/ciq` showed only ciq (the default benchmark is
    `empty`, which g1 did not measure) and did not say so; `report` neither."""
    g1 = _run(tmp_path / "good" / "g1")
    summary = pd.read_parquet(g1 / "summary.parquet").assign(benchmark="a")
    summary.to_parquet(g1 / "summary.parquet")
    info = json.loads((g1 / "run.json").read_text())
    (g1 / "run.json").write_text(json.dumps({**info, "run_id": "g1"}))
    ciq = _run(tmp_path / "good" / "ciq")
    said = (f"warning: run g1 ({g1}) is left out of 'empty' at 1 elements: it has no benchmark "
            "'empty', only 'a' (--benchmark)")
    for command in ("history", "report"):
        proc = in_process(command, str(g1), str(ciq))
        assert proc.returncode == 0, proc.stderr
        assert said in " ".join(proc.stderr.split()), proc.stderr
