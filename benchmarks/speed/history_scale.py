"""Benchmark (run by hand, not collected by pytest): `gpuoverhead history` over many runs.
Prints wall time, CPU time and peak memory of the command, and how many lines it printed.

    python benchmarks/speed/history_scale.py [RUNS] [RUN_FOLDER]

RUNS copies (default 2,000) of RUN_FOLDER's run.json and summary (default
results/h200/default), each with a run id and start time of its own, then `history` of
them all with a plot (-o FILE.png). Issue 53.8: 2,000 runs took 214 s before.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    root = Path(__file__).resolve().parents[2]
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    source = Path(sys.argv[2]) if len(sys.argv) > 2 else root / "results" / "h200" / "default"
    info = json.loads((source / "run.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        sets = Path(tmp) / "runs"
        for i in range(runs):
            folder = sets / f"run-{i:05d}"
            folder.mkdir(parents=True)
            shutil.copy(source / "summary.parquet", folder)
            info.update(run_id=f"run-{i:05d}", started=f"2026-{1 + i % 12:02d}-"
                        f"{1 + i // 12 % 28:02d}T{i // 336 % 24:02d}:{i % 60:02d}:00+00:00")
            (folder / "run.json").write_text(json.dumps(info))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "gpuoverhead", "history", str(sets), "-o",
                               str(Path(tmp) / "history.png")], capture_output=True, text=True,
                              cwd=root)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stderr
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"history over {runs:,} runs of {source.name}: {elapsed:.1f} s wall, {cpu:.1f} CPU-s, "
          f"{after.ru_maxrss / 1024:.0f} MiB peak RSS, {len(proc.stdout.splitlines())} lines "
          "printed")


if __name__ == "__main__":
    main()
