"""The environment a run was made in, for run.json: host, packages, native library, adapters."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from gpuoverhead import __version__
from gpuoverhead.drivers import registry
from gpuoverhead.errors import UserError
from gpuoverhead.results.columns import RunRecord

_PACKAGES = ("wgpu", "numpy", "pandas", "pyarrow", "scipy", "pydantic", "pyyaml", "typer", "rich")


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id() -> str:
    """Sortable and unique enough for one machine: UTC time plus 4 random hex digits."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + os.urandom(2).hex()


def _cpu_model() -> str:
    """The CPU's marketing name: /proc/cpuinfo on Linux, sysctl on macOS ('arm' otherwise),
    the registry on Windows ('Intel64 Family 6 ...' otherwise)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    if sys.platform == "darwin":
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            name = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"],
                                  capture_output=True, text=True, timeout=10).stdout.strip()
            if name:
                return name
    if sys.platform == "win32":
        with contextlib.suppress(OSError, ImportError):
            import winreg

            key = winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE,
                                 r"HARDWARE\DESCRIPTION\System\CentralProcessor\0")
            return str(winreg.QueryValueEx(key, "ProcessorNameString")[0]).strip()
    return platform.processor() or platform.machine()


def clocks() -> dict[str, dict[str, Any]]:
    """The clocks a run reads and how finely they tick (Windows' time.time_ns ticks in
    15.6 ms on Python 3.11/3.12, its perf_counter in 100 ns)."""
    return {name: {"implementation": info.implementation, "resolution_ns":
                   round(info.resolution * 1e9, 3), "monotonic": info.monotonic}
            for name in ("perf_counter", "time")
            for info in [time.get_clock_info(name)]}


#: A perf_counter this coarse quantizes the per-call breakdown (calls of 1-5 µs, and a
#: clock cost measured as 0 or one tick): Windows' 100 ns, Apple silicon's 41.7 ns.
COARSE_CLOCK_NS = 40.0


def clock_warnings(found: dict[str, dict[str, Any]]) -> list[str]:
    step = found["perf_counter"]["resolution_ns"]
    return [f"perf_counter ticks in {step:g} ns here: per-call breakdown figures of a few "
            "µs are quantized to that step"] if step >= COARSE_CLOCK_NS else []


def host() -> dict[str, Any]:
    return {
        "os": platform.system(),
        "os_release": platform.release(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "clocks": clocks(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
    }


def packages() -> dict[str, str | None]:
    found: dict[str, str | None] = {"gpuoverhead": __version__}
    for name in _PACKAGES:
        try:
            found[name] = version(metadata.distribution(name))
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def version(dist: metadata.Distribution) -> str | None:
    """`dist.version`, as importlib.metadata parses it from the metadata's headers alone
    (`_Headers`): numpy's, pandas' and scipy's hold their READMEs after them, and parsing
    the whole of the nine packages' took 10-13 ms of every run's parent."""
    return _Headers(dist).version


class _Headers(metadata.Distribution):
    """A distribution whose metadata files end where their headers do (at the first blank
    line, which ends an email's headers: what comes after is its body)."""

    def __init__(self, dist: metadata.Distribution) -> None:
        self._dist = dist

    def read_text(self, filename: str) -> str | None:
        text = self._dist.read_text(filename)
        end = text.find("\n\n") if text else -1
        return text if end < 0 else text[:end + 2]

    def locate_file(self, path: Any) -> Any:
        return self._dist.locate_file(path)


def native_libraries() -> dict[str, Any]:
    """Each driver's native libraries as loaded (version, path)."""
    return {k: v for d in registry.drivers() for k, v in d.libraries().items()}


def record(run_id: str, argv: list[str], suite_path: Path, suite_name: str, sha256: str,
           seed: int, processes: int) -> RunRecord:
    """A run's record as it starts: how it was asked for and the machine it runs on."""
    return RunRecord(run_id=run_id, argv=argv, seed=seed, started=now_iso(),
                     suite={"path": str(suite_path), "name": suite_name, "sha256": sha256},
                     host=host(), packages=packages(), native=native_libraries(),
                     processes=processes)


#: Address space that the GPU drivers and the analysis need at least. Measured on lavapipe
#: with `ulimit -v`: at 1 GiB a run crashes in the driver (SIGSEGV), at 1.2-1.5 GiB a device
#: or an array cannot be had, at 2 GiB the ci suite runs.
MIN_ADDRESS_SPACE = 2 << 30


def address_space_problem() -> str | None:
    """Why this process's address-space limit cannot hold a run, or None (no limit, or
    enough; Windows has no such limit)."""
    try:
        import resource
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft >= MIN_ADDRESS_SPACE:
        return None
    return (f"the address-space limit (ulimit -v) is {soft / 2**30:.2f} GiB; the GPU drivers "
            f"and the analysis need at least {MIN_ADDRESS_SPACE >> 30} GiB (below it a driver "
            f"can crash the run): raise the limit or lift it")


#: An --affinity part: a CPU number or a range of them, in ASCII digits (str.isdigit takes
#: '²', which int() refuses); no CPU number has more than 18 digits.
_CPUS = re.compile(r"([0-9]{1,18})(?:-([0-9]{1,18}))?")


def parse_cpus(spec: str) -> set[int]:
    """The CPUs that an --affinity value names ('2-5', '2,3,8'), each one this process may
    run on, else a UserError. A range is checked before its set is built: '0-200000000'
    took 15 s and then all memory."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") \
        else set(range(os.cpu_count() or 1))
    top = max(allowed)
    cpus: set[int] = set()
    for part in spec.split(","):
        found = _CPUS.fullmatch(part.strip())
        first, last = (int(found[1]), int(found[2] or found[1])) if found else (0, -1)
        if last < first:
            raise UserError(f"--affinity takes CPU numbers and ranges such as 2-5,8, "
                            f"not {spec!r}")
        named = range(first, min(last, top + 1) + 1)  # at most one past the highest allowed
        outside = first if first > top else next((c for c in named if c not in allowed), None)
        if outside is not None:
            raise UserError(f"--affinity {spec}: CPU {outside} is not one this process may run "
                            f"on ({len(allowed)} CPUs: {min(allowed)}-{top})")
        cpus.update(named)
    return cpus


def pin(spec: str | None) -> None:
    """Keep this process, and the worker processes it starts (they inherit the mask), on the
    CPUs that `spec` names ('2-5', '2,3,8'; Linux). On the H100 VM one vCPU made every
    `submit` 3.5x slower while a worker ran on it; pinning leaves such a CPU out."""
    if spec is None:
        return
    if not hasattr(os, "sched_setaffinity"):
        raise UserError("--affinity needs sched_setaffinity (Linux); this OS has none")
    os.sched_setaffinity(0, parse_cpus(spec))
