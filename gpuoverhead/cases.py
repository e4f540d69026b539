"""The expanded suite: kernels, sampling settings, cases and the groups they are sampled in."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class Kernel:
    """A WGSL kernel and its output contract.

    `writes` says what each dispatch adds 1 to: `all` of the first `elements` u32 of
    binding 0, or only the `first` one. The shader declares it in a comment line
    `// gpuoverhead: writes=first` (default: all).
    """

    name: str
    path: Path
    source: str
    writes: Literal["all", "first"]


@dataclass(frozen=True)
class Sampling:
    """How long and how precisely a group is sampled."""

    #: Seconds per case, all processes together (the suite's `budget_s`; see run/budget.py).
    budget_per_case_s: float
    target_rel_ci: float
    min_rounds: int
    max_rounds: int
    warmup_max_rounds: int


#: Methodology of the case that times a trivial native call (the FFI floor of `raw`).
FFI_FLOOR = "ffi-floor"
#: Sync of the sequential case timed by GPU timestamp queries instead of the CPU clock.
TIMESTAMPS = "timestamps"
#: Variant of the cases of the reference loop: the native layer's sequential cases alone,
#: on a device with nothing else on it.
REFERENCE = "reference"
#: Variant of the sequential cases that create their bind group before each dispatch (the
#: suite's `bind_group: [reused, per_dispatch]`), as engines that allocate per op do; the
#: plain cases reuse one. The wrapper layer runs it, natively and in the page.
BIND_PER_DISPATCH = "bind_per_dispatch"
#: Methodology of fusion cases (fused vs unfused forms of the same work).
FUSION = "fusion"
#: Methodology of bursts issued at a cadence, each process at one gap (methods/cadence.py).
CADENCE = "cadence"
#: The submission regime of ops issued with no idle time between them.
BACK_TO_BACK = "back to back"
#: The decode step's kernel file (shaders/fusion_decode.wgsl), by its name in a Case.
DECODE_KERNEL = "fusion_decode"
#: Syncs of a host-read loop (methods/fusion.py; the decode step's token loop, the recurrent
#: step's `host_reads`): a value read back to the host after every step, or kept on the GPU
#: and read back every READBACK_EVERY steps; NEVER reads only after the loop's last step,
#: the same loop with no read to weigh the others against (the decode step has none).
SYNCED = "synced"
PIPELINED = "pipelined"
NEVER = "never"
TOKEN_LOOPS = (SYNCED, PIPELINED)
READ_LOOPS = (*TOKEN_LOOPS, NEVER)
#: Steps between the pipelined loop's reads (an engine streaming tokens in batches; the
#: loop's step count need not be a multiple).
READBACK_EVERY = 16
#: Variant of the recurrent step with every other stage on the host: the product on the
#: GPU, the pointwise ops in numpy, the state copied down and up each step (a SYNCED loop).
HYBRID = "hybrid"
#: Forms of the readback workload, each unit a host call that ends with its data in numpy
#: (workloads/readback.py): values read back; their argmax on the GPU and its 4 bytes read
#: back; all of them read back and their argmax taken on the CPU.
READ, GPU_ARGMAX, CPU_ARGMAX = "read", "argmax-gpu", "argmax-cpu"
HOST_UNITS = (READ, GPU_ARGMAX, CPU_ARGMAX)


@dataclass(frozen=True)
class Case:
    """One measured combination: methodology, encoding, completion sync and layer.

    A sequential case is a series over `n_values`; its samples carry their own N. `layer`
    says what drives the calls: the Python `wrapper`, the `raw` FFI or a `native` C loop.
    """

    benchmark: str
    kernel: str
    elements: int
    workgroup_size: int
    methodology: str
    encoding: str
    sync: str
    n_values: tuple[int, ...]
    layer: str = "wrapper"
    #: Set where the case names its own implementation (the PyTorch baselines).
    implementation: str | None = None
    #: Fusion: `unfused`, `fused`, (matmul) `single`, (recurrent) HYBRID or (readback) one
    #: of HOST_UNITS; the pattern's K, L or M is `k`.
    #: `reference`: a sequential case of the minimal reference loop (run/plan.py);
    #: BIND_PER_DISPATCH: a sequential case that creates its bind group per dispatch.
    variant: str = ""
    k: int = 0
    #: A cadence case's idle time between the end of one burst and the start of the next.
    gap_ms: float = 0.0

    def dispatches(self, n: int) -> int:
        """Dispatches one sample with N = n issues (the FFI floor issues none); a fusion
        case's N counts units of work, and so does its count."""
        return 0 if self.methodology == FFI_FLOOR else n

    @property
    def id(self) -> str:
        base = f"{self.benchmark}/elements={self.elements}/{self.methodology}"
        if self.methodology == FUSION:
            base = f"{base}/k={self.k}/{self.variant}"
            if self.kernel.startswith(DECODE_KERNEL) and self.sync != TIMESTAMPS:
                base = f"{base}/{self.encoding}"  # its encodings (methods/fusion.py)
            if self.sync in READ_LOOPS:
                base = f"{base}/{self.sync}"
            if self.sync == TIMESTAMPS:
                return f"{base}/gpu-timestamps"
            return f"{base}/{self.implementation}" if self.implementation else base
        if self.implementation:
            return f"{base}/{self.implementation}"
        if self.methodology == CADENCE:
            return f"{base}/gap={self.gap_ms:g}ms/{self.encoding}/{self.layer}"
        if self.methodology == "naive":
            return f"{base}/{self.sync}"
        if self.methodology == "sequential":
            driver = "gpu-timestamps" if self.sync == TIMESTAMPS else self.layer
            tail = f"/{self.variant}" if self.variant else ""
            return f"{base}/{self.encoding}/{driver}{tail}"
        return f"{base}/{self.layer}"


@dataclass(frozen=True)
class Group:
    """Cases of one benchmark at one element count, sampled interleaved round by round."""

    benchmark: str
    kernel: Kernel
    elements: int
    workgroup_size: int
    sampling: Sampling
    cases: tuple[Case, ...]
    #: Longest N-op chain handed to torch.compile in the PyTorch baseline (0: none).
    torch_compile_max_n: int = 64
    #: The fusion pattern of a fusion benchmark's group.
    fusion: str | None = None
    #: The decode step's weights: `f32`, or `f16` (read as f16, computed in f32).
    precision: str = "f32"
    #: States stepped side by side (the recurrent step's B; 1 elsewhere).
    batch: int = 1
    #: Seconds one torch.compile build may take before it is stopped and recorded as failed
    #: (workloads/torch_ops.deadline).
    compile_limit_s: float = 120.0
    #: A cadence group's idle ms between bursts (each gap a group, so its own processes).
    gap_ms: float | None = None

    @property
    def regime(self) -> str:
        """The submission regime its processes measure in: ops back to back (every other
        group's rounds follow each other with no idle time), or a cadence group's bursts,
        one after the other or with idle gaps between them."""
        if self.gap_ms is None:
            return BACK_TO_BACK
        return "bursts back to back" if self.gap_ms == 0 else f"bursts {self.gap_ms:g} ms apart"

    @property
    def id(self) -> str:
        if self.gap_ms is not None:
            return f"{self.benchmark}/elements={self.elements}/gap={self.gap_ms:g}ms"
        if self.fusion == "matmul":
            return f"{self.benchmark}/matmul"
        if self.fusion == "decode":  # a group per model and KV cache length
            return f"{self.benchmark}/elements={self.elements}/k={self.cases[0].k}"
        return f"{self.benchmark}/elements={self.elements}"


#: Worker processes per job of a plain run where the suite names none (`processes`).
DEFAULT_PROCESSES = 3
#: The most processes per job a suite may name or a time limit is spent on (pyperf's
#: default is 20).
MOST_PROCESSES = 20


@dataclass(frozen=True)
class Suite:
    path: Path
    name: str
    sha256: str
    groups: tuple[Group, ...]
    #: Seconds the whole run may take (None: each group its budget; see run/budget.py).
    time_limit_s: float | None = None
    #: Worker processes per job of a plain run, sharing each case's `budget_s` (run/plan.py
    #: `_counts`): a suite whose processes differ as a whole needs more of them.
    processes: int = DEFAULT_PROCESSES
    #: `hardware`: a browser's software adapter (SwiftShader) is refused (suite/schema.py).
    browser_adapter: str = "any"

