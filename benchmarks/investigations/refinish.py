"""Make a run's estimates again from its stored samples with this tree's rules
(gpuoverhead/run/refinish.py), into a new folder whose run.json says so (`refinished`: from
which run, by which commit and rules); nothing is measured. Then print, old against new,
the median and widest headline half-width, the headline rows with no interval, and the
processes left out of the estimates.

Run from the repository root:
`python benchmarks/investigations/refinish.py RUN_FOLDER NEW_FOLDER [RUN_FOLDER NEW_FOLDER ...]`
(a suite is found by the path run.json names, else by its name in configs/ or
benchmarks/suites/, and must have the sha256 the run recorded).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from gpuoverhead.analysis.series import STOP_METRICS
from gpuoverhead.errors import UserError
from gpuoverhead.resources import CONFIGS_DIR
from gpuoverhead.run import refinish

ROOT = Path(__file__).resolve().parents[2]
#: The rules of this tree's finish that differ from what a run of 2026-11-29 wrote.
RULES = ("CPU states (run/cpu_split.py, analysis/states.py): a job's figures come from the "
         "rounds of the slow state unless under SLOW_KEPT_FROM (20%) of its benchmark's "
         "rounds met it, only where the state moves one of its headline figures "
         "(states.moves: the rounds a split drops against those it keeps, within processes, "
         ">= 2% and p < 0.01) and drift.LEAST_T (3) processes have min_rounds rounds in it "
         "(a process with fewer is then left out), else from every round. Life "
         "(run/finish.py): a process still moving in its last third is left out only where "
         "as many others remain as the job's interval needs (drift.enough: 3, or 6 with order "
         "statistics). States beside (run/cpu_split.py `beside`): where the state moves a "
         "job's figures, its estimates in each other state that drift.LEAST_T processes "
         "measured with min_rounds rounds go to states.parquet, and compare judges two runs "
         "whose states differ in one both measured. Two modes (analysis/combine.py): a "
         "latency whose samples fall in two modes within its processes is each process's 5% "
         "trimmed mean, not its median.")


def commit() -> str:
    """This tree's commit, `-dirty` where it has changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              check=False).stdout.strip()
    return git("rev-parse", "HEAD") + ("-dirty" if git("status", "--porcelain", "--",
                                                         "gpuoverhead") else "")


def headline(folder: Path, info: dict) -> str:
    """Median and widest headline half-width, rows without an interval, processes left out."""
    s = pd.read_parquet(folder / "summary.parquet")
    s = s[s["process"].isna() & s["metric"].isin(STOP_METRICS) & s["value"].notna()]
    half = ((s["ci_high"] - s["ci_low"]) / 2 / s["value"]).to_numpy(dtype=float)
    shown = half[np.isfinite(half)]
    out = sum(1 for b in info.get("benchmarks", []) for p in b.get("processes", [])
              if "left_out" in p)
    return (f"median ±{np.median(shown):.1%}, widest ±{shown.max():.1%}, "
            f"{int((~np.isfinite(half)).sum())} of {len(half)} with no interval, "
            f"{out} processes left out" if shown.size else "no headline interval")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="RUN_FOLDER NEW_FOLDER pairs")
    args = parser.parse_args()
    if len(args.folders) % 2:
        print("error: give folders in pairs: RUN_FOLDER NEW_FOLDER", file=sys.stderr)
        return 2
    why = {"by": "benchmarks/investigations/refinish.py", "commit": commit(), "rules": RULES,
           "at": datetime.now(UTC).isoformat(timespec="seconds")}
    for source, target in zip(args.folders[::2], args.folders[1::2], strict=True):
        try:
            stored = refinish.read(source, [CONFIGS_DIR, ROOT / "benchmarks" / "suites"])
            out = refinish.refinish(stored, target, {
                **why, "from": {"folder": str(source), "run_id": stored.info["run_id"]}})
        except UserError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"{source} -> {target}\n  was: {headline(source, stored.info)}\n"
              f"  now: {headline(target, out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
