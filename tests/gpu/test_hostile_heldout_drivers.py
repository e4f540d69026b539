"""The held-out catalogue's cases that need an adapter or the browser (the others:
tests/unit/test_hostile_heldout.py): Mesa's shader cache through a real lavapipe dispatch,
and the browser's page token and profile as another local user sees them (`nobody`, as
conftest.as_another_user acts)."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT, as_another_user, browser_found

from gpuoverhead.browser import launcher
from gpuoverhead.drivers import chromium as page

BROWSER, needs_browser = browser_found()

#: cli.main, then one dispatch of a kernel on the Vulkan adapter (lavapipe here), then a wait
#: of up to 5 s for Mesa to write the compiled shader to its cache under XDG_CACHE_HOME.
DISPATCH = """
import os, time
from pathlib import Path
from gpuoverhead import cli

def dispatch():
    import numpy as np
    import wgpu

    device = wgpu.gpu.request_adapter_sync().request_device_sync()
    module = device.create_shader_module(code="@group(0) @binding(0) var<storage, "
        "read_write> b: array<f32>; @compute @workgroup_size(64) fn main(@builtin("
        "global_invocation_id) i: vec3<u32>) { b[i.x] = b[i.x] * 3.0 + 1.0; }")
    pipeline = device.create_compute_pipeline(layout="auto", compute={"module": module})
    data = device.create_buffer_with_data(data=np.ones(64, np.float32),
        usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0),
        entries=[{"binding": 0, "resource": {"buffer": data}}])
    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, group)
    compute.dispatch_workgroups(1)
    compute.end()
    device.queue.submit([encoder.finish()])
    assert np.frombuffer(device.queue.read_buffer(data), np.float32)[0] == 4.0
    home = Path(os.environ["XDG_CACHE_HOME"])
    end = time.monotonic() + 5
    while time.monotonic() < end and not any(
            p.is_file() and p.name != "index" for p in home.rglob("*")):
        time.sleep(0.05)

cli.app = dispatch
cli.main()
"""


def test_hostile_mesa_shader_cache_of_another_user_gets_no_shader(shared, tmp_path):
    """With XDG_CACHE_HOME shared, a `mesa_shader_cache` folder another user made there
    was where lavapipe kept (and looked up, and would run) each compiled shader as root:
    an ELF object behind a CRC. After cli.main Mesa keeps it in the tool's own private
    cache folder, and their folder gets nothing."""
    theirs = shared / "mesa_shader_cache"
    as_another_user(lambda: (theirs.mkdir(), theirs.chmod(0o777)))
    temp = tmp_path / "tmp"
    temp.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MESA_SHADER_CACHE")}
    proc = subprocess.run([sys.executable, "-c", DISPATCH], capture_output=True, text=True,
                          timeout=120, cwd=ROOT,
                          env={**env, "XDG_CACHE_HOME": str(shared), "TMPDIR": str(temp)})
    assert proc.returncode == 0, proc.stderr
    assert list(theirs.iterdir()) == [], "Mesa used the other user's folder"
    ours = shared / "gpuoverhead" / "mesa"
    kept = [p for p in ours.rglob("*") if p.is_file() and p.name != "index"]
    assert kept and all(os.lstat(p).st_uid == os.geteuid() for p in kept), kept
    assert "Mesa's shader cache is not private" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def _where_the_token_shows(token: str, folders: list[str]) -> str:
    """As another user: every process's command line and environment it may read, and every
    file it may read under `folders`, searched for `token`; the places, one a line."""
    found, needle = [], token.encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        for part in ("cmdline", "environ"):
            with contextlib.suppress(OSError):
                if needle in Path(f"/proc/{pid}/{part}").read_bytes():
                    found.append(f"/proc/{pid}/{part}")
    for folder in folders:
        for root, _, files in os.walk(folder):
            for name in files:
                with contextlib.suppress(OSError), open(os.path.join(root, name), "rb") as f:
                    if needle in f.read(1 << 24):
                        found.append(os.path.join(root, name))
    return "\n".join(found) or "nowhere"


@needs_browser
@pytest.mark.slow
def test_hostile_the_page_token_and_profile_as_another_user_sees_them(shared, monkeypatch):
    """The page server answers anyone with its token, so the token must show nowhere
    another user can read: no process's command line or environment, no file they may
    read in the temporary folder (one all may write, as /tmp) or /dev/shm (the browser's
    shared memory), where a file of the token's shows it (the control). The profile
    is 0700, and a --user-data-dir of theirs in GPUOVERHEAD_CHROMIUM_FLAGS is not the
    profile Chromium takes (the tool's comes last): their folder gets nothing."""
    theirs = shared / "their-profile"
    as_another_user(lambda: (theirs.mkdir(), theirs.chmod(0o777)))
    monkeypatch.setenv(launcher.EXTRA_FLAGS, f"--user-data-dir={theirs}")
    monkeypatch.setenv("TMPDIR", str(shared))  # shared as /tmp is: the browser's files there
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    with page.page(BROWSER) as (browser, tab):
        url = tab.evaluate("location.href")
        token = url.split("/")[3]
        assert len(token) >= 32 and tab.evaluate("1 + 1") == 2
        control = shared / "control"  # where the token shows: the search finds it
        control.write_text(url)
        control.chmod(0o644)
        folders = [str(shared), "/dev/shm"]
        answer = shared / "answer"
        as_another_user(lambda: answer.write_text(_where_the_token_shows(token, folders)))
        profile = os.lstat(browser.profile)
        assert any(Path(browser.profile).iterdir())  # the browser keeps its profile here
    assert answer.read_text() == str(control)
    assert profile.st_uid == os.geteuid() and stat.S_IMODE(profile.st_mode) == 0o700
    assert list(theirs.iterdir()) == []
