"""The browser driver: WebGPU in a headless Chromium (gpuoverhead/browser), a fresh browser
and page per worker process.

The page runs the wrapper layer only (the JS API: what a web app pays, binding and browser
together; nothing below it can be told apart from a page), in the naive, sequential (the
per-dispatch bind group twins included) and GPU-timestamp cases of a kernel group. Its N
sweep is the suite's, scaled so the largest N is at least MIN_LARGEST_N: a browser's
completion (`onSubmittedWorkDone`) costs milliseconds, and a short sweep's slope would be
that floor's noise.

The fusion patterns of PATTERNS run in the page too: their workload builds its Work through
a `PageContext` exactly as natively, which records the buffers, pipelines, bind groups and
staged reads (the readback workload's units, `PageStaged`) as data; the page replays each
case's units in the native `dispatch` encoding (one pass, one submit), or its staged
reads, and the workload's numpy checks read the buffers (or the last read) back. Their N
sweep is the suite's, as natively: one sweep on every side, whose points on a completion
floor the slope leaves out (analysis/floor.py). Their per-unit time, synced time and GPU
time over wgpu-native's and Dawn's are the browser tax (`browser_tax`,
`browser_tax_synced`, `browser_tax_gpu`: run/finish.py).
"""

from __future__ import annotations

import base64
import copy
import json
import math
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from gpuoverhead.browser import adapter as choice
from gpuoverhead.browser import launcher, server
from gpuoverhead.browser.adapter import describe
from gpuoverhead.browser.cdp import BrowserError, Page
from gpuoverhead.cases import BIND_PER_DISPATCH, TIMESTAMPS, Case, Group, Kernel, Suite
from gpuoverhead.drivers.base import (
    Job,
    Offer,
    Prepared,
    Request,
    adapter_notes,
    without_timestamps,
)
from gpuoverhead.errors import IntegrityError, UserError
from gpuoverhead.gpu.targets import grid_for
from gpuoverhead.records import AdapterInfo, LeftOut, SelfTimed
from gpuoverhead.workloads import registry as workloads
from gpuoverhead.workloads.work import Step, Work, verify_outputs

FAMILY = "chromium"
IMPLEMENTATIONS = (FAMILY,)
COMPARED = True
#: The implementations whose per-unit time of a fusion pattern this one's is divided by: the
#: browser tax (`browser_tax`, run/finish.py), over each native WebGPU, not only the first.
TAX_OVER = ("wgpu-native", "dawn")
#: The fusion patterns the page runs (their Work uses only what PageContext records).
PATTERNS = ("chain", "loop", "population", "readback")

MIN_LARGEST_N = 512
#: The share of a process's budget one sample may take before the probe cuts a sweep (5%
#: elsewhere, run/budget.py): a fresh page's first samples carry the completion floor's
#: noise and one-time costs, and extrapolated from them a `submit` sample at N = 512 (40 ms
#: on SwiftShader) looked 150-250 ms long; at 5% and at 20% three of five processes were cut
#: to N = 2 and 32, the noise the longer sweep is there to avoid.
SAMPLE_SHARE = 0.5
#: performance.now() steps coarser than this (µs) make a warning: the page is not isolated.
FINE_TIMER_US = 20.0


def offers(request: Request, notes: list[str]) -> list[Offer]:
    """The adapter a fresh browser offers, where a Chromium runs here (asked by name: else an
    error; with `all`, a note). A software adapter where the suite or the environment asks
    for hardware is refused the same way (browser/adapter.py)."""
    tried: list[str] = []
    try:
        executable = launcher.find(request.browser)
        info, details = adapter(executable, tried)
        who = choice.required(request.suite.browser_adapter)
        if who and info.is_software:
            raise BrowserError(choice.refusal(info.device, who))
    except UserError as exc:
        if request.named:
            raise
        notes += tried
        notes.append(LeftOut(FAMILY, str(exc).removeprefix(f"{FAMILY} "),
                             f"chromium skipped: {exc}"))
        return []
    notes += tried + warnings(info, details) + adapter_notes(info)
    return [Offer(info, details, settings={"browser": executable,
                                           "flags": details["browser_flag_set_flags"]})]


def jobs(group: Group, offer: Offer, notes: list[str]) -> list[Job]:
    """The group's cases a page runs, where it has any."""
    mine = cases(group)
    if not mine:
        return []
    page_group = replace(group, cases=mine)
    return [Job(page_group if offer.info.timestamps else without_timestamps(page_group),
                offer, FAMILY)]


@contextmanager
def prepare(job: Job, rng: Any) -> Iterator[Prepared]:
    """In the worker: a fresh browser and page, the cases timed in it. A stop from the
    parent (SIGTERM) ends the browser too (see browser/launcher.py)."""
    signal.signal(signal.SIGTERM, _interrupted)
    timestamps = any(c.sync == TIMESTAMPS for c in job.group.cases)
    settings = job.offer.settings
    with page(settings["browser"], job.group.kernel.source, settings.get("flags", ())) as (_, tab):
        ops, verify, timed = workload_operations(job.group, tab, rng) \
            if job.group.fusion is not None else operations(job.group, tab)
        if timestamps and not timed:
            raise UserError(f"{job.adapter.label}: the page got no timestamp-query feature")
        # The page returns GPU times in ns: one "tick" is one ns.
        yield Prepared(job.group, ops, verify, 1.0 if timed else None)


def setup_hint_s(job: Job) -> float:
    """Start-up expected of a worker before one ran: a fresh browser and page."""
    return 4.5


def listing(browser: str | None, notes: list[str]) -> list[Offer]:
    """The adapter a Chromium offers (`gpuoverhead adapters`), or a note why none."""
    tried: list[str] = []
    try:
        info, details = adapter(launcher.find(browser), tried)
    except UserError as exc:
        notes += [*tried, f"chromium: {exc}"]
        return []
    notes += tried + warnings(info, details) + adapter_notes(info)
    return [Offer(info, details)]


def libraries() -> dict[str, Any]:
    return {}


def compile_kernels(suite: Suite) -> None:
    """A page compiles its kernel when a worker opens it."""
    return None


def _interrupted(*_: Any) -> None:
    raise KeyboardInterrupt


def cases(group: Group) -> tuple[Case, ...]:
    """The group's cases a page runs: a fusion pattern's in the `dispatch` encoding, with
    the suite's N sweep as every implementation has it; a kernel's with the browser's (the
    suite's scaled to MIN_LARGEST_N)."""
    if group.fusion is not None:
        return tuple(c for c in group.cases if group.fusion in PATTERNS
                     and c.encoding == "dispatch" and c.implementation is None)
    kept = [c for c in group.cases if c.layer == "wrapper" and c.methodology in (
        "naive", "sequential")]
    return tuple(replace(c, n_values=scaled(c.n_values)) if c.methodology == "sequential"
                 else c for c in kept)


def scaled(n_values: tuple[int, ...]) -> tuple[int, ...]:
    factor = math.ceil(MIN_LARGEST_N / max(n_values))
    return tuple(n * factor for n in n_values)


@contextmanager
def page(executable: str, kernel_source: str = "", flags: Sequence[str] = ()
         ) -> Iterator[tuple[launcher.Browser, Page]]:
    """A fresh browser (with a flag set's `flags`) with the runner's page open (closed, with
    its server, on exit)."""
    with server.serve(kernel_source) as url, launcher.Browser(executable, flags) as browser:
        yield browser, browser.open(url + "index.html")


def adapter(executable: str, notes: list[str] | None = None
            ) -> tuple[AdapterInfo, dict[str, Any]]:
    """The adapter the browser offers under the first flag set that gets a GPU, else its
    default flags (browser/adapter.py), in the schema's words, and what run.json keeps of
    the browser; a note in `notes` for each flag set passed over."""
    chosen = choice.mode()
    launcher.flags(choice.gpu_flags())  # the environment's flags parse, or one line says not
    found, tried = choice.choose(executable, chosen)
    if notes is not None:
        notes += tried
    return describe(found.info, found.version, executable, found)


def warnings(info: AdapterInfo, details: dict[str, Any]) -> list[str]:
    """What makes the browser's figures weaker: a coarse clock, a page not isolated."""
    out = []
    if details["timer_resolution_us"] > FINE_TIMER_US or not details["cross_origin_isolated"]:
        out.append(f"{info.label}: performance.now() steps in "
                   f"{details['timer_resolution_us']:g} µs (cross-origin isolated: "
                   f"{details['cross_origin_isolated']}): short samples are coarse")
    return out


def operations(group: Group, tab: Page) -> tuple[dict[Case, Callable[[int], Any]],
                                                 Callable[[dict[Case, int]], None], bool]:
    """Each case's op (a sample timed in the page), the output check, and whether the page
    got GPU timestamps."""
    specs = [{"methodology": c.methodology, "encoding": c.encoding, "sync": c.sync,
              "freshBindGroup": c.variant == BIND_PER_DISPATCH} for c in group.cases]
    spec = {"shader": "kernel.wgsl", "elements": group.elements, "cases": specs,
            "workgroupSize": group.workgroup_size,
            "grid": list(grid_for(group.elements, group.workgroup_size)),
            "timestamps": any(c.sync == TIMESTAMPS for c in group.cases)}
    ready = tab.evaluate(f"gpuo.setup({json.dumps(spec)})")
    ops = {case: _op(tab, i, case) for i, case in enumerate(group.cases)}

    def verify(counts: dict[Case, int]) -> None:
        found = tab.evaluate("gpuo.outputs()")
        _device_errors(group, found["errors"])
        for (case, got), count in zip(zip(group.cases, found["values"], strict=True),
                                      (counts[c] for c in group.cases), strict=True):
            rest = count if group.kernel.writes == "all" else 0
            want = [count, rest, rest] if group.elements > 1 else [count] * 3
            if got != want:
                raise IntegrityError(
                    f"{case.id} (chromium): output check failed: expected first, least and "
                    f"largest other value {want} after {count} dispatches, found {got}")

    return ops, verify, bool(ready["timestamps"])


def _device_errors(group: Group, errors: list[str]) -> None:
    if errors:
        raise IntegrityError(f"{group.id} (chromium): the device reported {errors[0]}")


class PageContext:
    """The Context a workload builds its Work with (workloads/work.py), as data for the page:
    a buffer, pipeline or bind group is its index in the plan `gpuo.load` takes; reads and
    writes go to the page."""

    def __init__(self, tab: Page) -> None:
        self.tab = tab
        self.buffers: list[dict[str, Any]] = []
        self.pipelines: dict[tuple[int, str, tuple[tuple[str, int], ...]], int] = {}
        self.bind_groups: list[tuple[int, list[tuple[int, int]]]] = []
        #: Kernels beside the page's own (module 0), and the staged reads (PageStaged).
        self.modules: list[str] = []
        self.hosts: list[dict[str, Any]] = []
        self.module = 0

    def pipeline(self, entry: str, **constants: int) -> int:
        return self.pipelines.setdefault((self.module, entry, tuple(sorted(constants.items()))),
                                         len(self.pipelines))

    def with_kernel(self, kernel: Kernel) -> PageContext:
        other = copy.copy(self)  # the same lists: one plan
        self.modules.append(kernel.source)
        other.module = len(self.modules)
        return other

    def submit(self, steps: tuple[Step, ...]) -> None:
        self.tab.evaluate(f"gpuo.submit({json.dumps([list(s) for s in steps])})")

    def staged(self, src: int, size: int, steps: tuple[Step, ...] = (), argmax: bool = False
               ) -> PageStaged:
        self.hosts.append({"src": src, "size": size, "steps": [list(s) for s in steps],
                           "argmax": argmax})
        return PageStaged(self.tab, len(self.hosts) - 1)

    def buffer(self, data: np.ndarray, uniform: bool = False) -> int:
        self.buffers.append({"data": _b64(data), "uniform": uniform})
        return len(self.buffers) - 1

    def step(self, pipeline: int, buffers: dict[int, int], grid: tuple[int, int]) -> Step:
        self.bind_groups.append((pipeline, sorted(buffers.items())))
        return pipeline, len(self.bind_groups) - 1, grid[0], grid[1]

    def reader(self, buf: int, dtype: type, offset: int = 0, count: int | None = None
               ) -> Callable[[], np.ndarray]:
        def read() -> np.ndarray:
            raw = base64.b64decode(self.tab.evaluate(f"gpuo.read({buf})"))
            return np.frombuffer(raw, dtype=dtype)[offset:][:count]
        return read

    def writer(self, buf: int, data: np.ndarray) -> Callable[[], None]:
        call = f"gpuo.write({buf}, {json.dumps(_b64(data))})"
        return lambda: self.tab.evaluate(call)

    def plan(self, works: dict[Case, Work], timestamps: bool) -> dict[str, Any]:
        """What `gpuo.load` builds: the objects recorded, each case's unit sequences."""
        return {"shader": "kernel.wgsl", "timestamps": timestamps, "buffers": self.buffers,
                "modules": self.modules, "hosts": self.hosts,
                "pipelines": [[entry, dict(constants), m]
                              for m, entry, constants in self.pipelines],
                "bindGroups": self.bind_groups,
                "cases": [{"sequences": [list(map(list, s)) for s in work.sequences],
                           "timestamps": case.sync == TIMESTAMPS,
                           "host": getattr(work.host, "index", None)}
                          for case, work in works.items()]}


class PageStaged:
    """work.Staged in the page: its units run there (`gpuo.reads`, timed in the page), what
    the last one got is read from there; `unit` only names it in the plan."""

    def __init__(self, tab: Page, index: int) -> None:
        self.tab, self.index = tab, index
        self.unit = self  # the Work's host: the plan's `host` is its index

    def result(self) -> np.ndarray:
        return np.frombuffer(base64.b64decode(self.tab.evaluate(f"gpuo.last({self.index})")),
                             np.uint32)

    def forget(self) -> None:
        self.tab.evaluate(f"gpuo.forget({self.index})")


def _b64(data: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(data).tobytes()).decode()


def workload_operations(group: Group, tab: Page, rng: np.random.Generator
                        ) -> tuple[dict[Case, Callable[[int], Any]],
                                   Callable[[dict[Case, int]], list[str]], bool]:
    """A fusion pattern's ops (units replayed in the page), its output check (the workload's
    numpy references, and fused against unfused, after sampling), and whether the page got
    GPU timestamps. Each case is checked with one unit before sampling, as natively."""
    ctx = PageContext(tab)
    works = workloads.WORKLOADS[group.fusion].webgpu(ctx, group, rng)  # type: ignore[index]
    timestamps = any(c.sync == TIMESTAMPS for c in group.cases)
    ready = tab.evaluate(f"gpuo.load({json.dumps(ctx.plan(works, timestamps))})")
    ops = {case: _replay(tab, i, case, work) for i, (case, work) in enumerate(works.items())}
    workloads.checked(works, lambda case, _: ops[case](1))

    def verify(counts: dict[Case, int]) -> list[str]:
        _device_errors(group, tab.evaluate("gpuo.errors"))
        return verify_outputs(works, counts)

    return ops, verify, bool(ready["timestamps"])


def _replay(tab: Page, index: int, case: Case, work: Work) -> Callable[[int], SelfTimed]:
    evaluate, timed, done = tab.evaluate, case.sync == TIMESTAMPS, work.units_done
    if work.host is not None:  # staged reads, timed in the page: no issue time of their own
        host = work.host.index  # type: ignore[attr-defined]
        return lambda n: SelfTimed(*evaluate(f"gpuo.reads({host}, {n})")[:2], None)

    def op(n: int) -> SelfTimed:
        wall, issue, gpu = evaluate(f"gpuo.replay({index}, {n}, {done[0]})")
        done[0] += n
        return SelfTimed(wall, issue, gpu if timed else None)

    return op


def _op(tab: Page, index: int, case: Case) -> Callable[[int], SelfTimed]:
    evaluate, naive, timed = tab.evaluate, case.methodology == "naive", case.sync == TIMESTAMPS

    def op(n: int) -> SelfTimed:
        wall, issue, gpu = evaluate(f"gpuo.run({index}, {n})")
        return SelfTimed(wall, None if naive else issue, gpu if timed else None)

    return op
