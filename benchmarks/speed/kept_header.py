"""What the kept C header (gpu/kept_header.py) saves a process, and what reading it safely
costs: the CPU time (user + system) of a fresh process that imports wgpu-native's binding
as a run's parent and each worker do (gpu/bindings.py), with the parse kept in a private
cache folder (`kept`) and with none to take (`parsed`: an empty cache folder each time),
in alternating pairs. With `--against ROOT`, a third form: the package of another checkout
(`ROOT`, e.g. one at the previous commit) with its parse kept, alternating with the other
two, so that a change to how the header is kept is measured beside this one.

Run from the repository root: `python benchmarks/speed/kept_header.py [--pairs 8] [--against ROOT]`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMPORT = ("from gpuoverhead.drivers import webgpu; "
          "webgpu.binding('wgpu-native').backend()")


def cpu_s(package_root: Path, cache: Path) -> float:
    """User plus system CPU seconds of one fresh process that imports the binding."""
    env = {**os.environ, "PYTHONPATH": str(package_root), "XDG_CACHE_HOME": str(cache)}
    proc = subprocess.Popen([sys.executable, "-c", IMPORT], env=env, cwd=package_root)
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the import failed"
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--against", type=Path, help="another checkout's root")
    args = parser.parse_args()
    forms = {"kept": ROOT, "parsed": ROOT} | ({"kept (against)": args.against}
                                              if args.against else {})
    times: dict[str, list[float]] = {name: [] for name in forms}
    with tempfile.TemporaryDirectory() as folder:
        warm = {name: Path(folder) / name.replace(" ", "-") for name in forms}
        for name, root in forms.items():  # a first import keeps the parse
            if name != "parsed":
                cpu_s(root, warm[name])
        for i in range(args.pairs):
            order = list(forms) if i % 2 == 0 else list(reversed(forms))
            for name in order:
                cache = warm[name]
                if name == "parsed":
                    shutil.rmtree(cache, ignore_errors=True)
                    cache.mkdir(mode=0o700)
                times[name].append(cpu_s(forms[name], cache))
    for name, seconds in times.items():
        print(f"{name:>15}: median {statistics.median(seconds):.3f} CPU-s "
              f"(min {min(seconds):.3f}, max {max(seconds):.3f}, {len(seconds)} processes)")
    if args.against:
        diffs = [a - b for a, b in zip(times["kept"], times["kept (against)"], strict=True)]
        print(f"kept - kept (against), paired: median {statistics.median(diffs) * 1e3:+.1f} ms")
    diffs = [a - b for a, b in zip(times["parsed"], times["kept"], strict=True)]
    print(f"parsed - kept, paired: median {statistics.median(diffs) * 1e3:+.1f} ms "
          "(what the kept header saves a process)")


if __name__ == "__main__":
    main()
