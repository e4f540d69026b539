"""What the host does beside a run, every 0.25 s until stopped: CPU time by kind (steal is
what a VM's hypervisor took), context switches and interrupts, from /proc/stat (Linux).
Run it in the background next to `gpuoverhead run`, then line its epoch times up with the
samples' `elapsed_ns` from run.json's `started` to see what the host did in a slow window.

    python benchmarks/host_monitor.py > host.csv &  ...  kill %1
"""

from __future__ import annotations

import sys
import time

FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def read() -> dict[str, int]:
    found: dict[str, int] = {}
    with open("/proc/stat") as stat:
        for line in stat:
            name, *values = line.split()
            if name == "cpu":
                found.update(zip(FIELDS, map(int, values[:len(FIELDS)]), strict=True))
            elif name in ("ctxt", "intr", "procs_running"):
                found[name] = int(values[0])
    return found


def main(period_s: float = 0.25) -> None:
    print("epoch_s," + ",".join((*FIELDS, "ctxt", "intr", "procs_running")), flush=True)
    before = read()
    while True:
        time.sleep(period_s)
        now = read()
        deltas = [now[k] - before[k] for k in (*FIELDS, "ctxt", "intr")]
        print(f"{time.time():.3f}," + ",".join(map(str, deltas)) + f",{now['procs_running']}",
              flush=True)
        before = now


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 0.25)
