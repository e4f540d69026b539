"""The CLI as a process runs it: called in the tests' own process (conftest.in_process) it
answers as its console script does in a child (conftest.cli_commands, `main` as
`python -m gpuoverhead` runs it); and as a process ends, what the command made is frozen
for the garbage collector (the interpreter's end looks for no reference cycles among
it: ~0.2 CPU-s of a run's parent), the atexit handlers still running."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT, cli_commands, in_process

RESULTS = ROOT / "results"
DEFAULT = str(RESULTS / "h100" / "default")

#: Commands of each kind the tests read in their process: answers on stdout and stderr, tables
#: of committed sets, a suite, users' errors (one line, exit 2: a run's among them) and
#: click's usage errors (exit 2).
SAMPLE = [
    ["--version"],
    ["compare", "-h"],
    ["show", DEFAULT],
    ["show", str(RESULTS / "h100" / "crossover")],
    ["compare", DEFAULT, str(RESULTS / "h200" / "default"), "--markdown"],
    ["report", DEFAULT, str(ROOT / "tests" / "data" / "h100-negative-python")],
    ["validate", str(ROOT / "configs" / "ci.yaml"), "--no-compile"],
    ["show", "no/such/run"],
    ["run", "--backend", "glide", "--out", "no/such/folder"],
    ["compare", DEFAULT],
    ["report", DEFAULT, "--no-such-option"],
]


@pytest.mark.slow  # a child's start-up, pandas' and the renderers' imports: ~6 CPU-s alone
def test_in_process_answers_as_the_console_script_does(tmp_path, monkeypatch):
    """Each sample command's exit code, stdout and stderr the same in this process as in a
    child; and the commands leave this process's folder, environment and priority as they
    were."""
    monkeypatch.chdir(tmp_path)
    environment, priority = dict(os.environ), _priority()
    children = cli_commands(*SAMPLE)
    for args, child in zip(SAMPLE, children, strict=True):
        here = in_process(*args)
        assert (here.returncode, here.stdout, here.stderr) == (
            child.returncode, child.stdout, child.stderr), args
    assert {c.returncode for c in children} == {0, 2}  # the sample holds both endings
    assert os.getcwd() == str(tmp_path) and dict(os.environ) == environment
    assert _priority() == priority


def _priority() -> int | None:
    """This process's nice value (None where there is none: Windows)."""
    return os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else None



def test_a_command_s_objects_are_frozen_as_it_ends_and_atexit_still_runs():
    code = textwrap.dedent("""
        import atexit, gc
        from gpuoverhead import cli
        made = []
        def command():
            made.append([made])  # a reference cycle the command leaves behind
            raise SystemExit(3)
        cli.app = command
        atexit.register(lambda: print(gc.get_freeze_count() > 0, made != []))
        cli.main()
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert (proc.returncode, proc.stdout.split(), proc.stderr) == (3, ["True", "True"], "")
