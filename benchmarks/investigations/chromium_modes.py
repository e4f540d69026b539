"""Which of its two modes a Chromium sync lands in, by what came before it: the share of
naive `wait` samples under FAST_MS (0.4-0.9 ms on SwiftShader, against about 2.4 ms at the
GPU process's next poll), each sample one DevTools call of the page's own `gpuo.run`, as a
run takes them. First `empty` right after the device's setup, in buckets of BUCKET
samples with the seconds since setup; then `add_one` after a sample of 512 dispatches,
at once and 10, 30 and 60 ms later; then `add_one` alone (docs/methodology.md, `chromium`).

    python benchmarks/investigations/chromium_modes.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpuoverhead.browser.launcher import find  # noqa: E402
from gpuoverhead.drivers.chromium import page  # noqa: E402
from gpuoverhead.resources import SHADERS_DIR  # noqa: E402

FAST_MS = 1.2
BUCKET = 50
AFTER = 60  # samples a condition after heavier work
HEAVY_N = 512


def _spec(elements: int, grid: list[int]) -> str:
    return json.dumps({"shader": "kernel.wgsl", "timestamps": False, "workgroupSize": 64,
                       "elements": elements, "grid": grid,
                       "cases": [{"methodology": "naive", "sync": "wait"},
                                 {"methodology": "sequential", "encoding": "dispatch",
                                  "sync": "wait"}]})


def _fast(values_ns: list[float]) -> str:
    return f"{np.mean(np.array(values_ns) / 1e6 < FAST_MS):.0%} fast"


def after_setup(browser: str) -> None:
    with page(browser, (SHADERS_DIR / "empty.wgsl").read_text()) as (_, tab):
        tab.evaluate(f"gpuo.setup({_spec(1, [1, 1])})")
        start, times, walls = time.perf_counter(), [], []
        for _ in range(10 * BUCKET):
            walls.append(tab.evaluate("gpuo.run(0, 1)")[0])
            times.append(time.perf_counter() - start)
        for k in range(0, len(walls), BUCKET):
            print(f"empty, {times[k]:.2f}-{times[k + BUCKET - 1]:.2f} s after setup: "
                  f"{_fast(walls[k:k + BUCKET])}")


def after_heavy(browser: str) -> None:
    with page(browser, (SHADERS_DIR / "add_one.wgsl").read_text()) as (_, tab):
        tab.evaluate(f"gpuo.setup({_spec(4096, [64, 1])})")
        tab.evaluate(f"self.after = async (gap) => {{ await gpuo.run(1, {HEAVY_N}); await "
                     "new Promise((r) => setTimeout(r, gap)); return (await gpuo.run(0, 1))[0]; }")
        for gap in (0, 10, 30, 60):
            walls = [tab.evaluate(f"after({gap})") for _ in range(AFTER)]
            print(f"add_one, {gap} ms after {HEAVY_N} dispatches: {_fast(walls)}")
        walls = [tab.evaluate("gpuo.run(0, 1)")[0] for _ in range(AFTER)]
        print(f"add_one alone: {_fast(walls)}")


if __name__ == "__main__":
    found = find(None)
    after_setup(found)
    after_heavy(found)
