"""The held-out catalogue's cases that need an adapter or the browser (the others:
tests/unit/test_hostile_heldout.py): Mesa's shader cache through a real lavapipe dispatch,
and the browser's page token and profile as another local user sees them (`nobody`, as
conftest.as_another_user acts)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, as_another_user

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
