"""cli.main as a process ends: what the command made is frozen for the garbage collector, so
that the interpreter's end does not look for reference cycles among it (~0.2 CPU-s of a
run's parent, pandas' and numpy's objects), and the atexit handlers still run."""

from __future__ import annotations

import subprocess
import sys
import textwrap


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
