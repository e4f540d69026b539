"""Each encoding that records large command buffers has a device of its own, so that its
state (every later submit on a device costs more after one encoder of 1024 passes) never
reaches the cases of another encoding."""

from __future__ import annotations

from conftest import CONFIGS, read_run

from gpuoverhead.drivers.webgpu import device_sets
from gpuoverhead.suite.expand import load_suite


def test_the_full_suite_s_submit_cases_never_share_a_device_with_large_encoders():
    groups = [g for g in load_suite(CONFIGS / "full.yaml").groups if g.fusion is None]
    assert groups
    for group in groups:
        sets = [{(c.methodology, c.encoding) for c in cases}
                for cases in device_sets(group.cases)]
        assert sum(map(len, device_sets(group.cases))) == len(group.cases)
        small = next(s for s in sets if ("sequential", "submit") in s)
        assert ("naive", "submit") in small
        assert not {("sequential", "pass"), ("sequential", "dispatch")} & small
        assert sorted(sorted(s) for s in sets if s is not small) == [
            [("sequential", "dispatch")], [("sequential", "pass")]]


def test_each_worker_of_a_kernel_group_used_a_device_per_large_encoding(ci_run):
    """configs/ci.yaml asks for every encoding: the small encoders' device, one for `pass`,
    one for `dispatch` (the reference loop's native cases too); a workload keeps one."""
    _, folder = ci_run
    _, _, info = read_run(folder)
    devices = {(b["benchmark"], b["implementation"]): {p["devices"] for p in b["processes"]}
               for b in info["benchmarks"] if b["processes"] and "devices" in b["processes"][0]}
    assert devices == {("empty", "wgpu-native"): {3}, ("empty", "wgpu-native reference"): {3},
                       ("add_one", "wgpu-native"): {3},
                       ("add_one", "wgpu-native reference"): {3}}
