"""What a driver is, and the records it exchanges with the rest of the house: the request
of a run, the adapters it offers, its jobs, and what a worker samples.

A driver is a module (drivers/webgpu.py, chromium.py, pytorch.py) that offers adapters for
a run, says which of a suite group's cases it runs on one, and prepares a worker's timed
operations; `registry` chooses among them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from gpuoverhead.cases import TIMESTAMPS, Case, Group, Suite
from gpuoverhead.records import AdapterInfo, Note


@dataclass(frozen=True)
class Request:
    """What a run asks of a driver."""

    suite: Suite
    backend: str | None = None
    adapter: str | None = None
    browser: str | None = None
    #: The implementation names asked of this driver; None: all of its own (`all`). A driver
    #: whose names were asked for fails where it cannot run; with `all` it adds a note.
    names: tuple[str, ...] | None = None

    @property
    def named(self) -> bool:
        return self.names is not None


@dataclass(frozen=True)
class Offer:
    """An adapter a driver measures on: its description, what run.json keeps of it, the
    device limits a suite needs of it, and what a worker needs to find it again."""

    info: AdapterInfo
    details: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, int] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Job:
    """A suite group as one driver measures it on one adapter. A `reference` job is the
    reference loop of the job before it (drivers/webgpu.py)."""

    group: Group
    offer: Offer
    driver: str
    reference: bool = False

    @property
    def adapter(self) -> AdapterInfo:
        return self.offer.info

    @property
    def label(self) -> str:
        return self.adapter.implementation + (" reference" if self.reference else "")


@dataclass
class Prepared:
    """What a worker samples: the group as it runs here, each case's timed op, the output
    check after sampling (returns notes on what it could not check), ns per GPU timer tick
    (None: no GPU timer), and notes for run.json."""

    group: Group
    ops: dict[Case, Callable[[int], Any]]
    verify: Callable[[dict[Case, int]], list[str] | None]
    tick_ns: float | None = None
    notes: dict[str, Any] = field(default_factory=dict)


class Driver(Protocol):
    """What the rest of the house knows of an implementation family."""

    #: The family's name (`--implementation` takes it for all of its implementations).
    FAMILY: str
    #: The implementation names it measures (each also taken by `--implementation`).
    IMPLEMENTATIONS: tuple[str, ...]
    #: Whether its implementations are compared with the other families' (paired ratios).
    COMPARED: bool
    #: The implementations its per-unit times are divided by as a tax (`browser_tax`).
    TAX_OVER: tuple[str, ...]
    #: The share of a process's budget one sample may take (None: the default).
    SAMPLE_SHARE: float | None

    def offers(self, request: Request, notes: list[str]) -> list[Offer]: ...
    def jobs(self, group: Group, offer: Offer, notes: list[str]) -> list[Job]: ...
    def prepare(self, job: Job, rng: np.random.Generator
                ) -> AbstractContextManager[Prepared]: ...
    def setup_hint_s(self, job: Job) -> float: ...
    def listing(self, browser: str | None, notes: list[str]) -> list[Offer]: ...
    def libraries(self) -> dict[str, Any]: ...
    def compile_kernels(self, suite: Suite) -> str | None: ...


def without_timestamps(group: Group) -> Group:
    """The group less its GPU-timestamp cases, for an adapter without timestamp queries."""
    return replace(group, cases=tuple(c for c in group.cases if c.sync != TIMESTAMPS))


def adapter_notes(info: AdapterInfo) -> list[str]:
    """What makes an adapter's figures describe something other than a GPU on its own."""
    notes: list[str] = []
    if info.is_software:
        notes.append(Note(f"{info.device} is a CPU (software) adapter: its figures describe a "
                          "driver running on the CPU, not a GPU", "software",
                          "{subject} is a CPU (software) adapter: its figures describe a "
                          "driver running on the CPU, not a GPU",
                          "{subject} are CPU (software) adapters: their figures describe "
                          "drivers running on the CPU, not GPUs", info.device))
    if info.is_virtual:
        notes.append(Note(f"{info.device} is the GPU of a virtual machine: its timings describe "
                          "the hypervisor's path as well, not a GPU on its own", "virtual",
                          "{subject} is the GPU of a virtual machine: its timings describe "
                          "the hypervisor's path as well, not a GPU on its own",
                          "{subject} are GPUs of a virtual machine: their timings describe "
                          "the hypervisor's path as well, not GPUs on their own", info.device))
    return notes
