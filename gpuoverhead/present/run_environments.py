"""What differs between the environments of two runs, one line each: everything a run.json
records that can move a figure (each implementation's version, the browser and its flags,
the driver and backend; the Python packages, in one line; the CPU, Python, the OS; the
regime the summary was measured in), so that `compare` never lets a change of environment
pass for one of the code. The adapters themselves are compare's own line
(present/compare.py), the paths of libraries are left out (a path moves nothing), and what
only one run records is not compared.
"""

from __future__ import annotations

from typing import Any

from gpuoverhead.errors import at_most, listed, shortened
from gpuoverhead.results.read import ResultSet

#: Characters of one aspect that a line echoes (a browser's flags, a CPU's name), and the
#: lines, or packages in the packages' line, said before "and N more": what a run.json from
#: elsewhere makes a line say is bounded (errors.py), far above what a real run records.
SAID, FEW = 200, 20


def differences(base: ResultSet, new: ResultSet) -> list[str]:
    """A line per aspect of the environment in which the two runs differ (the packages in
    one line, those that differ)."""
    before, after = recorded(base), recorded(new)
    changed = [f"{shortened(aspect)}: {shortened(before[aspect], SAID)} vs "
               f"{shortened(value, SAID)}" for aspect, value in after.items()
               if aspect in before and before[aspect] != value]
    packages = [_packages(base), _packages(new)]
    changed += [f"the Python packages: {listed(moved, FEW)}"] if (moved := [
        f"{shortened(name)} {shortened(was)} vs {shortened(now)}"
        for name, now in packages[1].items()
        if (was := packages[0].get(name)) is not None and was != now]) else []
    return at_most([f"the runs differ in {line} (a figure can move with it, not only with "
                    "the code)" for line in changed], "differences of environment", FEW)


def recorded(rs: ResultSet) -> dict[str, str]:
    """Each aspect of a run's environment that its run.json (or summary) records, as text."""
    info = rs.info
    found: dict[str, str] = {}
    for adapter in info.get("adapters", []):
        if isinstance(adapter, dict):
            found |= _adapter(adapter)
    host = info.get("host") if isinstance(info.get("host"), dict) else {}
    found |= {"the CPU": _joined(host.get("cpu"), host.get("cpu_count") and
                                 f"({host['cpu_count']} CPUs)"),
              "Python": _joined(host.get("python_implementation"), host.get("python")),
              "the OS": _joined(host.get("platform")) or _joined(host.get("os"),
                                                                host.get("os_release"))}
    if "regime" in rs.summary:
        found["the regime measured in"] = ", ".join(sorted(
            {str(r) for r in rs.summary["regime"].dropna() if str(r)}))
    return {aspect: text for aspect, text in found.items() if text}


def _adapter(adapter: dict[str, Any]) -> dict[str, str]:
    """One implementation's aspects: its version, browser and flags, driver and backend."""
    name = adapter.get("implementation", "?")
    versions = adapter.get("implementation_versions")
    browser = adapter.get("browser_version") or ""
    driver = str(adapter.get("driver") or "").removeprefix(browser).strip("; ")
    flags = adapter.get("browser_flag_set_flags")
    return {
        f"{name}'s version": _joined(versions.get("package"), versions.get("package_version"),
                                     versions.get("native_version") and
                                     f"(native {versions['native_version']})")
        if isinstance(versions, dict) else "",
        f"{name}'s browser": browser,
        f"{name}'s browser flags": " ".join(map(str, flags)) or "none"
        if isinstance(flags, list) else "",
        f"{name}'s driver": driver,
        f"{name}'s backend": str(adapter.get("backend") or ""),
    }


def _packages(rs: ResultSet) -> dict[str, str]:
    packages = rs.info.get("packages")
    return {str(k): str(v) for k, v in packages.items() if v} if isinstance(packages, dict) \
        else {}


def _joined(*parts: Any) -> str:
    return " ".join(str(p) for p in parts if p)
