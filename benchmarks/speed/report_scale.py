"""Benchmark (run by hand, not collected by pytest): `gpuoverhead report` over result sets
holding one million sample rows in all. Prints wall time and peak memory; the targets are
under 5 s and under 1 GiB.

    python benchmarks/speed/report_scale.py [RUN_FOLDER]

RUN_FOLDER is any real run (default: the first under results/); its samples are repeated,
and its folder copied, until the copies hold 1,000,000 sample rows.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROWS = 1_000_000


def main() -> None:
    root = Path(__file__).resolve().parents[2]
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else sorted(
        p.parent for p in (root / "results").rglob("run.json"))[0]
    samples = pd.read_parquet(source / "samples.parquet")
    with tempfile.TemporaryDirectory() as tmp:
        sets = Path(tmp) / "sets"
        copies = 10
        per_copy = ROWS // copies
        big = pd.concat([samples] * (per_copy // len(samples) + 1), ignore_index=True)[:per_copy]
        for i in range(copies):
            folder = sets / f"run-{i}"
            shutil.copytree(source, folder)
            # A vendor of its own per copy: every copy is a row of the table and a panel of
            # the wall-vs-N plot, so the report reads every one of the million rows.
            big.assign(vendor=f"vendor-{i}").to_parquet(folder / "samples.parquet", index=False)
            summary = pd.read_parquet(folder / "summary.parquet").assign(vendor=f"vendor-{i}")
            summary.to_parquet(folder / "summary.parquet", index=False)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "gpuoverhead", "report", str(sets), "-o",
                               str(Path(tmp) / "report.html"), "-o", str(Path(tmp) / "r.md")],
                              capture_output=True, text=True, cwd=root)
        elapsed = time.perf_counter() - start
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    assert proc.returncode == 0, proc.stderr
    print(f"report over {copies} result sets, {copies * per_copy:,} sample rows: "
          f"{elapsed:.2f} s wall, {peak_mib:.0f} MiB peak RSS (targets: < 5 s, < 1024 MiB)")


if __name__ == "__main__":
    main()
