"""Which WebGPU adapter a page gets, and under which flags.

Headless Chromium on Linux hands WebGPU a GPU only when its compositor and GL run on that
GPU's Vulkan driver: where GL falls back to SwiftShader, Chromium marks WebGPU "software" and
offers only the SwiftShader adapter. A server driver with no display (NVIDIA's) has no
window-surface extension for Chromium's Vulkan instance, hence `--disable-vulkan-surface`
(Chrome's own guide for headless WebGPU on NVIDIA servers). So on Linux the GPU flag set is
tried first and the tool's default flags (SwiftShader in headless Chromium) after it.
`GPUOVERHEAD_CHROMIUM_ADAPTER` chooses: `auto` (that order), `hardware` (the GPU set only;
a software adapter is refused), `software` (the default flags only). docs/browser-gpu.md
says what was seen on a GPU server.
"""

from __future__ import annotations

import contextlib
import glob
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from gpuoverhead.browser import launcher, seen, server, surface
from gpuoverhead.browser.cdp import BrowserError
from gpuoverhead.errors import UserError
from gpuoverhead.records import AdapterInfo

MODE_VAR = "GPUOVERHEAD_CHROMIUM_ADAPTER"
MODES = ("auto", "hardware", "software")
#: Skia and ANGLE on Vulkan, no Vulkan window surface, the GPU blocklist ignored (a server
#: GPU is not on Chrome's list of tested ones).
GPU_FLAGS = ("--enable-features=Vulkan", "--use-angle=vulkan", "--disable-vulkan-surface",
             "--ignore-gpu-blocklist")
#: Replaces GPU_FLAGS (benchmarks/gpu_machine/chromium_gpu_probe.py prints the set that worked).
GPU_FLAGS_VAR = "GPUOVERHEAD_CHROMIUM_GPU_FLAGS"
#: Seconds the page waits for requestAdapter() and the protocol for any answer, when asking:
#: a GPU process that failed to start can leave both unanswered.
WAIT_S = 15.0
CALL_S = 45.0
#: chrome://gpu's feature states kept in run.json (`gpu_status`).
STATUS_KEYS = ("webgpu", "vulkan", "gpu_compositing", "webgl")
_TYPES = {"discrete gpu": "DiscreteGPU", "integrated gpu": "IntegratedGPU", "cpu": "CPU"}


@dataclass(frozen=True)
class Answer:
    """What a page said under one flag set: gpuo.info() (an `error` where it got no
    adapter), the browser's version, and chrome://gpu's state where the browser told it."""

    set_name: str
    flags: tuple[str, ...]
    info: dict[str, Any]
    version: str
    status: dict[str, Any] = field(default_factory=dict)

    @property
    def software(self) -> bool:
        return is_software(self.info)

    def summary(self) -> str:
        if "error" in self.info:
            return f"no adapter ({self.info['error']})"
        name = self.info.get("description") or self.info.get("device") or "an adapter"
        kind = "a CPU (software) adapter" if self.software else (self.info.get("type") or "GPU")
        return f"{name}, {kind}"


def mode() -> str:
    """The adapter mode from the environment; a UserError names the values it takes."""
    value = os.environ.get(MODE_VAR, "auto").strip().lower() or "auto"
    if value not in MODES:
        raise UserError(f"{MODE_VAR}={value!r}: expected one of {', '.join(MODES)}")
    return value


def gpu_flags() -> tuple[str, ...]:
    return tuple(launcher.environment_flags(GPU_FLAGS_VAR)) or GPU_FLAGS


def flag_sets(chosen: str) -> list[tuple[str, tuple[str, ...]]]:
    """The flag sets to try, in order, as (name, flags): the GPU set (where asked for, or on
    Linux with a GPU's device node), then the default (no flags of its own)."""
    gpu, default = ("gpu", gpu_flags()), ("default", ())
    if chosen == "software":
        return [default]
    if chosen == "hardware":
        return [gpu]
    return [gpu, default] if has_gpu_device() else [default]


def has_gpu_device() -> bool:
    """A Linux machine with a GPU's device node (NVIDIA's, or a DRM render node): elsewhere
    the GPU set finds no GPU and costs a browser start, up to WAIT_S where the page's
    requestAdapter() never answers (Debian's Chromium on lavapipe, the CI machine)."""
    if not sys.platform.startswith("linux"):
        return False
    return any(glob.glob(p) for p in ("/dev/nvidia[0-9]*", "/dev/dri/renderD*"))


def is_software(info: dict[str, Any]) -> bool:
    """A CPU implementation (SwiftShader, llvmpipe), however the page words it."""
    words = f"{info.get('architecture', '')} {info.get('description', '')}".lower()
    return bool(info.get("isFallbackAdapter")) or info.get("type", "").lower() == "cpu" \
        or "swiftshader" in words or "llvmpipe" in words


def gpu_status(browser: launcher.Browser) -> dict[str, Any]:
    """chrome://gpu in brief (feature states, GL renderer, Skia's backend), or {} where the
    browser does not say: it explains an adapter that is SwiftShader or missing."""
    with contextlib.suppress(Exception):
        assert browser.connection is not None
        gpu = browser.connection.call("SystemInfo.getInfo")["gpu"]
        states, aux = gpu.get("featureStatus", {}), gpu.get("auxAttributes", {})
        devices = gpu.get("devices") or [{}]
        return {**{k: states.get(k) for k in STATUS_KEYS},
                "gl_renderer": devices[0].get("deviceString", ""),
                "gl_implementation": aux.get("glImplementationParts", ""),
                "skia_backend": aux.get("skiaBackendType", "")}
    return {}


def ask(executable: str, name: str, flags: tuple[str, ...], keep: bool = True,
        keep_errors: bool = False) -> Answer:
    """What a page gets under `flags`: as kept from the last day (browser/seen.py), else from
    a browser started to ask (kept where `keep`; a page with no adapter only where
    `keep_errors`: a set passed over is not asked again each run, a last one is)."""
    kept = seen.get(executable, flags) if keep else None
    if kept is not None:
        return Answer(name, flags, kept["info"], kept["version"], kept["status"])
    with server.serve() as url, launcher.Browser(executable, flags, CALL_S) as browser:
        tab = browser.open(url + "index.html")
        info = tab.evaluate(f"gpuo.info({WAIT_S * 1000:.0f})")
        answer = Answer(name, flags, info, browser.version(), gpu_status(browser))
    if keep and (keep_errors or "error" not in info):
        seen.put(executable, {"info": answer.info, "version": answer.version,
                              "status": answer.status}, flags)
    return answer


def choose(executable: str, chosen: str) -> tuple[Answer, list[str]]:
    """The first flag set whose page gets a hardware adapter, else the default set's answer
    (the one CI's figures come from), else the first that got any adapter; and a note for
    each set passed over. Where none got an adapter, the last answer (its `error`)."""
    answers, notes, sets = [], [], flag_sets(chosen)
    for i, (name, flags) in enumerate(sets):
        try:
            answer = ask(executable, name, flags, keep_errors=i < len(sets) - 1)
        except UserError as exc:  # a browser that fails under one set may start under another
            answer = Answer(name, flags, {"error": str(exc)}, "")
        if "error" not in answer.info and not answer.software:
            return answer, notes
        answers.append(answer)
    found = [a for a in answers if "error" not in a.info]
    best = next((a for a in found if a.set_name == "default"), found[0] if found else answers[-1])
    for other in answers:
        if other is not best:
            notes.append(f"chromium: with its {other.set_name} flags "
                          f"({' '.join(other.flags) or 'none'}) the page got {other.summary()}"
                          f"{_why(other)}")
    return best, notes


def _why(answer: Answer) -> str:
    status = answer.status
    if not status:
        return ""
    return (f"; chrome://gpu: webgpu {status.get('webgpu')}, vulkan {status.get('vulkan')}, "
            f"GL {status.get('gl_renderer') or status.get('gl_implementation') or 'none'}")


def required(suite_wants: str) -> str | None:
    """Who asks for a hardware adapter (the suite, the environment), or None."""
    if suite_wants == "hardware":
        return "the suite (browser_adapter: hardware)"
    return f"{MODE_VAR}=hardware" if mode() == "hardware" else None


def refusal(device: str, who: str) -> str:
    """The line that says a software adapter does not stand in for a GPU."""
    return (f"the page got {device}, a CPU (software) adapter, not a GPU, and {who} asks for "
            "a hardware one (docs/browser-gpu.md: Chromium on a GPU server)")


def describe(info: dict[str, Any], version: str, executable: str,
             found: Answer | None = None) -> tuple[AdapterInfo, dict[str, Any]]:
    """`gpuo.info()`'s answer in the schema's words; a BrowserError where it has no adapter.
    Its details say which adapter the page got, under which flags, and chrome://gpu's word."""
    if "error" in info:
        raise BrowserError(f"{executable}: {info['error']}")
    device = info["description"] or info["device"] or "WebGPU adapter"
    software = is_software(info)
    kind = "CPU" if software else _TYPES.get(info["type"].lower(), "Unknown")
    found_info = AdapterInfo("chromium", info["backend"] or "unknown", kind,
                             (info["vendor"] or "unknown").lower(), 0, device,
                             f"{version}; {info['driver']}".strip("; "),
                             "timestamp-query" in info["features"])
    chosen = found.flags if found else ()
    details = {"browser": executable, "browser_version": version,
               "browser_flags": launcher.flags(chosen),
               "surface_layer": surface.state(launcher.flags(chosen)), "browser_flag_set":
               found.set_name if found else "default", "browser_flag_set_flags": list(chosen),
               "page_adapter": {k: info.get(k, "") for k in (
                   "vendor", "architecture", "device", "description", "type")} | {
                   "software": software}, "gpu_status": found.status if found else {},
               "cross_origin_isolated": info["crossOriginIsolated"], "timer_resolution_us":
               round(info["timerResolutionUs"], 3), "fallback_adapter": info["isFallbackAdapter"],
               "user_agent": info["userAgent"], "features": info["features"]}
    return found_info, details
