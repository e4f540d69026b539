"""What `compare` says of two runs' environments (present/run_environments.py): every recorded
difference that can move a figure in a line of its own, on a committed run and a copy of it
changed the way a reproduction elsewhere would be."""

from __future__ import annotations

import copy
from dataclasses import replace

from conftest import ROOT

from gpuoverhead.present import compare
from gpuoverhead.results import read

#: Chromium, wgpu-native and PyTorch on the 2-core machine's software adapters.
RUN = ROOT / "results/swiftshader/default"
PAIR = [ROOT / f"results/h200/regimes-check/selftest/{s}" for s in "ab"]


def _elsewhere(base: read.ResultSet) -> read.ResultSet:
    """The same run as a reproduction on another machine would record it."""
    info = copy.deepcopy(base.info)
    by_name = {a["implementation"]: a for a in info["adapters"]}
    chromium = by_name["chromium"]
    chromium["browser_version"] = "Chrome/150.0.7000.1"
    chromium["driver"] = "Chrome/150.0.7000.1; SwiftShader driver 5.0.0"  # the same driver
    chromium["browser_flag_set_flags"] = ["--enable-features=Vulkan"]
    by_name["wgpu-native"]["driver"] = "Mesa 24.2.8 (LLVM 19.1.7)"
    by_name["wgpu-native"]["backend"] = "opengl"
    by_name["wgpu-native"]["implementation_versions"]["native_version"] = "27.0.4.0"
    by_name["wgpu-native"]["implementation_versions"]["library"] = "/elsewhere/libwgpu.so"
    by_name["torch-eager"]["driver"] = "torch 2.11.0+cpu"
    info["packages"] |= {"numpy": "2.1.0", "scipy": "1.15.0"}
    info["host"] |= {"python": "3.12.3", "os_release": "6.8.0", "cpu": "Intel(R) Xeon(R)",
                     "platform": "Linux-6.8.0-x86_64-with-glibc2.39"}
    return replace(base, info=info)


def test_compare_says_each_difference_of_environment_in_a_line_of_its_own():
    """Issue 56: a reproduction on Chromium 150 against a set made on 156 said nothing."""
    base = read.load(RUN)
    for adapter in base.info["adapters"]:  # a set of today records the browser's flags
        if adapter["implementation"] == "chromium":
            adapter["browser_flag_set_flags"] = []
    said = compare.differences(base, _elsewhere(base))
    assert all(line.startswith("the runs differ in ") for line in said), said
    found = {line.removeprefix("the runs differ in ").split(": ")[0]: line for line in said}
    assert set(found) == {
        "chromium's browser", "chromium's browser flags", "wgpu-native's version",
        "wgpu-native's driver", "wgpu-native's backend", "torch-eager's driver",
        "the Python packages", "the CPU", "Python", "the OS"}, said
    assert "Chrome/156.0.8078.79 vs Chrome/150.0.7000.1" in found["chromium's browser"]
    assert "(native 29.0.1.1) vs wgpu 0.32.0 (native 27.0.4.0)" in found["wgpu-native's version"]
    assert "numpy 2.4.6 vs 2.1.0, scipy 1.17.1 vs 1.15.0" in found["the Python packages"]
    assert "pandas" not in found["the Python packages"]  # the same version in both
    assert "CPython 3.11.7 vs CPython 3.12.3" in found["Python"]


def test_runs_of_one_environment_differ_in_nothing_and_the_regime_counts_where_recorded():
    """An A/A pair (one machine, one session) has no line; a summary that records the
    regime its rows were measured in says where two runs' regimes differ."""
    a, b = (read.load(p) for p in PAIR)
    assert compare.differences(a, b) == []
    base = read.load(RUN)
    regime = [replace(base, summary=base.summary.assign(regime=r))
              for r in ("back-to-back", "cadence 16 ms")]
    assert compare.differences(*regime) == [
        "the runs differ in the regime measured in: back-to-back vs cadence 16 ms (a figure "
        "can move with it, not only with the code)"]
    assert compare.differences(regime[0], base) == []  # recorded by one run only
