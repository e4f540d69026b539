"""tables: the summary's rows from combine's estimates, on synthetic series."""

from types import SimpleNamespace

import numpy as np

from gpuoverhead.analysis.combine import combine
from gpuoverhead.analysis.samples import GroupSamples
from gpuoverhead.analysis.series import Key, Series
from gpuoverhead.cases import DECODE_KERNEL, Case
from gpuoverhead.records import AdapterInfo
from gpuoverhead.results.tables import summary_table

CASE = Case("decode", DECODE_KERNEL, 896, 64, "fusion", "pass", "wait", (1, 16))
ADAPTER = AdapterInfo("wgpu-native", "vulkan", "cpu", "mesa", 0, "lavapipe", "", True)
#: What summary_table reads of a group.
GROUP = SimpleNamespace(sampling=SimpleNamespace(target_rel_ci=0.02), regime="back to back")


def _series(median: float) -> Series:
    values = median + np.arange(-4.0, 5.0)
    return Series(values, np.arange(values.size, dtype=float), values.size, None)


def test_a_process_without_a_slope_gives_no_row_and_is_not_counted_in_the_combined():
    """A decode case's slope found in the first of two processes only (the shared CI run on
    a busy machine): its estimate is over one process, its combined row says 1 with that
    process's rounds, and only that process has a row of it; a figure both gave counts 2."""
    both, one = Key(CASE, "gpu_ns", "ns", "slope"), Key(CASE, "per_unit_ns", "ns", "slope")
    per_process = [{both: _series(1000.0), one: _series(2000.0)}, {both: _series(1100.0)}]
    rows = combine(per_process, np.random.default_rng(0))
    runs = [GroupSamples((CASE,), rounds=9, warmup_rounds=2, stop="budget"),
            GroupSamples((CASE,), rounds=7, warmup_rounds=3, stop="limit")]
    table = summary_table("r", ADAPTER, GROUP, rows, runs, [0, 1], None)
    combined = table[table.process.isna()].set_index("metric")
    assert combined.loc["per_unit_ns", "processes"] == 1
    assert combined.loc["per_unit_ns", "rounds"] == 9
    assert combined.loc["per_unit_ns", "stop"] == "budget"
    assert combined.loc["tokens_per_s", "processes"] == 1  # its transform, over the same
    assert combined.loc["gpu_ns", "processes"] == 2 and combined.loc["gpu_ns", "rounds"] == 16
    own = table[table.process.notna()]
    assert sorted(own.process[own.metric == "per_unit_ns"]) == [0]
    assert sorted(own.process[own.metric == "gpu_ns"]) == [0, 1]
    assert (own.processes == 1).all()
