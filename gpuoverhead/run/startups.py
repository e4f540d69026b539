"""What a worker's start-up cost on this machine in earlier runs: the schedule's first guess.

Under a time limit the run is planned before anything is measured, from what each job's
worker is expected to take beyond its sampling (import, device, pipelines, a model's
weights, torch.compile). A driver's hint is one number for every machine (the H100 VM's, a
few seconds), which on lavapipe is 3-5x what a worker takes: a limit that holds the run was
refused, and pass 0 divided its time as if the processes to come were that dear. So each
run records, per host, adapter and job, the start-ups it measured, in the user's cache
folder beside the C loop; a later run expects the median of the last few. The file is a
guess and nothing else: unreadable, damaged or unwritable, it is ignored (said where it
is damaged or not this user's own).
"""

from __future__ import annotations

import contextlib
import json
import platform
import statistics
from pathlib import Path

from gpuoverhead.drivers.base import Job
from gpuoverhead.gpu import private
from gpuoverhead.gpu.cache_folder import cache_dir, note
from gpuoverhead.whole_files import atomic

#: Start-ups kept per job (the newest).
KEEP = 5
FILE = "startups.json"
#: The longest start-up believed (an hour: torch.compile of a large model takes minutes).
MAX_STARTUP_S = 3600.0
#: A larger file is not one this module wrote (a few hundred bytes a job): it is not read.
MAX_BYTES = 4 << 20


def key(job: Job) -> str:
    """A job as this file knows it: the host, the adapter and the job's group and label."""
    return f"{platform.node()}|{job.adapter.label}|{job.group.id} {job.label}"


def _path() -> Path:
    return cache_dir() / FILE


def load() -> dict[str, list[float]]:
    """Start-ups recorded so far, by `key`; empty where there are none or the file is off:
    not this user's own and private (gpu/private.py: a FIFO, a link, another's), too long,
    not JSON, not as `save` writes it (said)."""
    try:
        path = _path()
    except OSError:  # no private cache folder (gpu/cache_folder.py said why)
        return {}
    try:
        text = private.read(path, MAX_BYTES)  # a FIFO would block the read: refused
    except private.NotPrivate as exc:
        note(f"{exc.reason}: the start-ups recorded there are not read")
        return {}
    except OSError:
        return {}
    try:
        found = json.loads(text) if len(text) <= MAX_BYTES else None
    except (ValueError, RecursionError):
        found = None
    if not isinstance(found, dict):
        note(f"{path} is damaged: the start-ups recorded there are not read")
        return {}
    return {k: [float(x) for x in v if _plausible(x)]
            for k, v in found.items() if isinstance(k, str) and isinstance(v, list)}


def _plausible(x: object) -> bool:
    """Whether `x` can be a start-up in seconds (compared before any float(): an integer of
    400 digits overflows one)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and 0 <= x <= MAX_STARTUP_S


def expected(recorded: dict[str, list[float]], job: Job) -> float | None:
    """The start-up expected of `job`'s workers from earlier runs, or None."""
    seen = recorded.get(key(job))
    return statistics.median(seen) if seen else None


def save(recorded: dict[str, list[float]], measured: dict[str, list[float]]) -> None:
    """Add this run's start-ups (by `key`) to those recorded, keeping the newest KEEP of
    each, and write the file atomically; a folder that cannot be written is let be."""
    merged = dict(recorded)
    for k, seconds in measured.items():
        merged[k] = (merged.get(k, []) + seconds)[-KEEP:]
    with contextlib.suppress(OSError):
        blob = json.dumps(merged, indent=0, sort_keys=True).encode()
        atomic(_path(), lambda p: private.write(p, blob))
