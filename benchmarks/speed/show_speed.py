"""Benchmark (run by hand, not collected by pytest): `show` over every committed result set,
as the CLI runs it in one process (its imports and click command warmed by a first call, not
counted), the rendered tables discarded. Prints each set's CPU seconds and the sum. Another
version of the package: run it with that checkout first on PYTHONPATH, alternating with
this one.

    python benchmarks/speed/show_speed.py [RESULTS_FOLDER]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from gpuoverhead.cli import app


def main() -> None:
    root = (Path(sys.argv[1]) if len(sys.argv) > 1
            else Path(__file__).resolve().parents[2] / "results")
    folders = sorted(p.parent for p in root.rglob("run.json"))
    runner = CliRunner()
    runner.invoke(app, ["show", str(folders[0])])
    total = 0.0
    for folder in folders:
        start = time.process_time()
        shown = runner.invoke(app, ["show", str(folder)], env={"COLUMNS": "200"})
        took = time.process_time() - start
        if shown.exit_code != 0:
            raise SystemExit(f"show {folder} failed: {shown.output[-2000:]}")
        total += took
        print(f"{folder.relative_to(root)}: {took:.3f} CPU-s")
    print(f"all {len(folders)}: {total:.2f} CPU-s")


if __name__ == "__main__":
    main()
