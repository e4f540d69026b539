"""A held-out catalogue for issue 53's security fixes (items 1, 2, 3, 6, 10, 12): the same
causes as test_hostile_cache_folder.py, test_private.py and tests/gpu/test_hostile_cache.py
and test_hostile_browser.py, tried with fixtures those do not use, as an attacker and as a
careless user would.

The other user acts as `nobody` (conftest.as_another_user: a forked child that takes that
uid), in a folder every user may write (`shared`, mode 1777 under /tmp); where this process
cannot take another uid, those cases skip and say why. What must hold: one line and exit 2
for bad input, nothing finished lost, no traceback, nothing loaded, believed or written on
another user's behalf.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import in_process

from gpuoverhead.browser import launcher
from gpuoverhead.browser.adapter import GPU_FLAGS_VAR

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")


# -- stale browser profiles: names that anyone may give a folder in /tmp ------------------

#: Folder names another user plants beside the tool's profiles (`gpuoverhead-chromium-<pid>-`
#: and mkdtemp's part): a process id past any pid_t, digits that are not ASCII (int() takes
#: Arabic-Indic ones and refuses a superscript), no id, no dash.
PLANTED_PROFILE_NAMES = {
    "twenty digits": "99999999999999999999-x",
    "past a pid_t": "2147483648-x",
    "a superscript digit": "2\u00b2-x",
    "Arabic-Indic digits": "\u0661\u0662\u0663-x",
    "no id": "-x",
    "no dash": "12345",
    "a sign": "+5-x",
}


@pytest.mark.parametrize("name", PLANTED_PROFILE_NAMES)
def test_hostile_stale_profile_sweep_with_names_of_another_users(name, tmp_path):
    """A folder named `gpuoverhead-chromium-99999999999999999999-x` (anyone may make one in
    /tmp) had ended every browser start, `gpuoverhead adapters` and each worker's, in
    os.kill's OverflowError traceback; `gpuoverhead-chromium-2²-x` in int()'s ValueError.
    The sweep passes over both, ours or not, and still removes this user's stale profile."""
    planted = tmp_path / f"{launcher.PROFILE}{PLANTED_PROFILE_NAMES[name]}"
    planted.mkdir(mode=0o700)
    dead = _a_dead_process()
    stale = tmp_path / f"{launcher.PROFILE}{dead}-stale"
    stale.mkdir(mode=0o700)
    assert launcher.sweep_profiles(str(tmp_path)) == [str(stale)]
    assert planted.is_dir()


def _a_dead_process() -> int:
    """The id of a process that has ended."""
    import subprocess

    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# -- the browser's flags from the environment --------------------------------------------

@pytest.mark.parametrize(("variable", "value"), [
    (launcher.EXTRA_FLAGS, "-remote-debugging-port=0"),
    (launcher.EXTRA_FLAGS, "--headless=new -remote-debugging-address=0.0.0.0"),
    (GPU_FLAGS_VAR, "--use-angle=vulkan -remote-debugging-port=9222"),
])
def test_hostile_chromium_flags_that_open_devtools_with_one_dash(monkeypatch, tmp_path,
                                                                 variable, value):
    """Chromium takes a switch after `-` as after `--` on POSIX: `-remote-debugging-port=0`
    opened DevTools on 127.0.0.1 to every local user beside the pipe (seen with Chromium
    156), past the check of `--remote-debugging-port`. One line, exit 2, nothing written."""
    monkeypatch.setenv(variable, value)
    result = in_process("run", "--suite", "ci", "--implementation", "chromium",
                        "--browser", sys.executable, "--out", str(tmp_path / "o"))
    line = result.stderr.strip()
    assert result.returncode == 2 and "\n" not in line, result.stderr
    assert variable in line and "every local user" in line, line
    assert not (tmp_path / "o").exists()
