"""launcher: a browser's process group is over once nothing in it runs (Linux's /proc)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from gpuoverhead.browser.launcher import _running_in_group

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="Linux's /proc")


def test_a_group_whose_killed_processes_wait_as_zombies_runs_no_more():
    """A leader and its child (as the browser and its renderer): running until killed;
    once killed, the orphaned child is a zombie until the init process collects it (a
    container's did so every 2 s): nothing of the group runs then."""
    leader = subprocess.Popen([sys.executable, "-c", "import subprocess, time; "
                               "subprocess.Popen(['sleep', '60']); print(flush=True); "
                               "time.sleep(60)"], stdout=subprocess.PIPE,
                              start_new_session=True)
    try:
        leader.stdout.readline()  # its child started
        assert _running_in_group(leader.pid)
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
        end = time.monotonic() + 2.0
        while _running_in_group(leader.pid) and time.monotonic() < end:
            time.sleep(0.01)  # SIGKILL takes effect within a few ms
        assert not _running_in_group(leader.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
        leader.stdout.close()
