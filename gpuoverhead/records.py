"""Records that every floor of the house shares, with no imports of the package.

What an adapter is in the schema's words, the names of the calls a breakdown times, and
the sample that times itself (a browser page): defined here, on the ground floor, so that
no module has to import upwards to reach them.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Names of the timed parts of one `submit` operation, in order (breakdown methodology).
CALLS = ("create_encoder", "begin_pass", "set_pipeline", "set_bind_group", "dispatch",
         "end_pass", "finish", "submit", "wait", "release")


#: Data-sheet memory bandwidth (GB/s) by a part of the device's name, first match: what
#: a decode step's memory floor divides its bytes by (the GPUs this project is lent).
MEMORY_BANDWIDTH_GB_S = (("H100 80GB HBM3", 3350.0), ("H100 PCIe", 2000.0),
                         ("H100 NVL", 3900.0), ("H200", 4800.0))

#: A worker's note (run.json) of the read bandwidth its stream kernel measured, GB/s
#: (workloads/read_floor.py): the memory floor as the adapter reaches it.
READ_GB_S = "read_gb_s"
#: Beside it, the GPU's own time per dispatch in one pass (ns) that the worker measured,
#: and the dispatches a unit of each GPU-time case issues (by case id): what a decode
#: token's GPU time is taken apart with.
GPU_PER_DISPATCH_NS, DISPATCHES_PER_UNIT = "gpu_per_dispatch_ns", "dispatches_per_unit"


@dataclass(frozen=True)
class AdapterInfo:
    """What the schema records about an adapter (the `adapter`, `vendor`, ... columns)."""

    implementation: str
    backend: str
    adapter_type: str
    vendor: str
    vendor_id: int
    device: str
    driver: str
    timestamps: bool

    @property
    def label(self) -> str:
        return f"{self.device} ({self.backend}, {self.adapter_type}, {self.implementation})"

    @property
    def bandwidth_gb_s(self) -> float | None:
        """The device's memory bandwidth by its maker's data sheet (MEMORY_BANDWIDTH_GB_S),
        or None where the table does not know it (a CPU adapter's is the host's, shared)."""
        name = self.device.lower()
        return next((bw for part, bw in MEMORY_BANDWIDTH_GB_S if part.lower() in name), None)

    @property
    def is_software(self) -> bool:
        return self.adapter_type == "CPU"

    @property
    def is_virtual(self) -> bool:
        """A GPU of a virtual machine (macOS runners' 'Apple Paravirtual device')."""
        return self.adapter_type == "VirtualGPU" or "paravirtual" in self.device.lower()


@dataclass(frozen=True)
class SelfTimed:
    """What an op returns that times itself: a browser page, where the DevTools round trip
    around the call is not what the case names. Its wall ns; its issue ns (from its start to
    the clock read before its wait) where the case has one; its GPU ns where it has one."""

    wall_ns: int
    issue_ns: int | None = None
    gpu_ns: int | None = None

    def parts(self, start_ns: int) -> tuple[int, ...] | None:
        """The parts a Python op of the same case returns (see methods/)."""
        if self.gpu_ns is not None:
            return (0, self.gpu_ns)
        return (start_ns + self.issue_ns,) if self.issue_ns is not None else None


class Note(str):
    """A warning: the string is what run.json keeps, in full (column names and all); `plain`
    is what the terminal says of it at the end of a run, in a user's words, with `{subject}`
    where its `subject` goes; notes of one `kind` and wording are said in one line, their
    subjects joined (`plural`: that line's wording for several). `plain` None: the terminal
    says nothing of it at the end, the run's first lines having said it."""

    kind: str
    plain: str | None
    plural: str | None
    subject: str

    def __new__(cls, text: str, kind: str, plain: str | None, plural: str | None = None,
                subject: str = "") -> Note:
        note = super().__new__(cls, text)
        note.kind, note.plain, note.plural, note.subject = kind, plain, plural, subject
        return note

    def __reduce__(self) -> tuple:
        return (Note, (str(self), self.kind, self.plain, self.plural, self.subject))


class LeftOut(Note):
    """A note that an implementation that could be measured is not, with why in a few words
    (`reason`): the run says these in its first lines (run/plan.py), not again at its end."""

    implementation: str
    reason: str

    def __new__(cls, implementation: str, reason: str, text: str | None = None) -> LeftOut:
        note = super().__new__(cls, text or f"{implementation} left out: {reason}", "left out",
                               None)
        note.implementation, note.reason = implementation, reason
        return note

    def __reduce__(self) -> tuple:
        return (LeftOut, (self.implementation, self.reason, str(self)))
