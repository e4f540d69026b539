"""Packaging: `python -m build` makes an sdist and a wheel that carry the shaders, suites
and the browser's page, and the wheel installed in a fresh virtual environment runs `gpuoverhead run
--quick` on this machine's adapter, from outside the source tree."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, measuring_first, only_run_folder, read_run

pytest.importorskip("build")
pytest.importorskip("hatchling")  # built here, not in an isolated environment per build


def _venv_bin(venv: Path, name: str) -> Path:
    return venv / ("Scripts" if os.name == "nt" else "bin") / name


def _venv_seeing_these_packages(venv: Path) -> Path:
    """A fresh venv whose own packages come first, then those of the interpreter running the
    tests, through a .pth file: `--system-site-packages` alone would give the base
    interpreter's, which lack the dependencies when the tests run in a venv of their own
    (the README's `pip install ".[test]" && pytest` in one). No pip of its own (faster):
    `python -m pip` finds this one's and installs into the fresh venv."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    purelib = subprocess.run([str(_venv_bin(venv, "python")), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=60).stdout
    ours = site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE
                                     else [])
    Path(purelib.strip(), "_these_packages.pth").write_text(
        "".join(f"{d}\n" for d in ours if os.path.isdir(d)))
    return venv


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_runs_quick(tmp_path):
    dist = tmp_path / "dist"
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                           str(dist), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    wheel = next(dist.glob("gpuoverhead-*.whl"))
    sdist = next(dist.glob("gpuoverhead-*.tar.gz"))
    shipped = {p.name for p in (ROOT / "shaders").glob("*.wgsl")} | \
        {p.name for p in (ROOT / "configs").glob("*.yaml")}
    in_wheel = {Path(n).name for n in zipfile.ZipFile(wheel).namelist()
                if "/shaders/" in n or "/configs/" in n}
    with tarfile.open(sdist) as tar:
        in_sdist = {Path(n).name for n in tar.getnames() if "/shaders/" in n or "/configs/" in n}
    assert shipped <= in_wheel and shipped <= in_sdist
    page = {"gpuoverhead/browser/page/index.html", "gpuoverhead/browser/page/runner.js"}
    assert page <= set(zipfile.ZipFile(wheel).namelist())  # the browser's page

    # The wheel alone in a fresh venv that sees this interpreter's packages: what is tested
    # is the wheel (code, shaders, suites, entry point), not a download of its dependencies
    # (`pip install .` in .ci/run resolves those).
    venv = _venv_seeing_these_packages(tmp_path / "venv")
    pip = subprocess.run([str(_venv_bin(venv, "python")), "-m", "pip", "install", "-q",
                          "--no-deps", "--ignore-installed", str(wheel)],
                         capture_output=True, text=True, timeout=900)
    assert pip.returncode == 0, pip.stderr[-3000:]
    out = tmp_path / "out"
    run = subprocess.run([str(_venv_bin(venv, "gpuoverhead")), "run", "--quick",
                          "--implementation", "wgpu-native", "--out", str(out)],
                         capture_output=True, text=True, timeout=900, cwd=tmp_path,
                         env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                         preexec_fn=measuring_first)  # first in line, as the other runs
    assert run.returncode == 0, run.stderr[-3000:]
    _, summary, info = read_run(only_run_folder(out))
    assert info["status"] == "complete"
    assert info["suite"]["path"].startswith(str(venv))  # the suite packed in the wheel
    assert (summary.metric == "per_dispatch_ns").any()
