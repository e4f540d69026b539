"""Which Chromium flags give WebGPU the GPU on this machine (issue 44; docs/browser-gpu.md).

Each flag set in turn, in a fresh browser bounded in time: the tool's page served over
http://127.0.0.1, `requestAdapter({powerPreference: 'high-performance'})` asked, chrome://gpu's
feature states read over the DevTools protocol. One line a set: the flags, the environment it
changes, the adapter (vendor, architecture, device, description) or why none, chrome://gpu's
word, and the tail of the browser's stderr where no GPU came.

    python3 benchmarks/gpu_machine/chromium_gpu_probe.py --browser /tmp/gpuo-chromium/chromium \
        --out DIR

Writes DIR/probe.txt (the lines, also printed), DIR/probe.json (every answer), DIR/machine.txt
(the GPU, the Vulkan loader, the driver's instance extensions), DIR/NN-NAME.log (each
browser's stderr) and, where a set got a GPU, DIR/winner.env (the variables that make the tool
use it: `source` it before `gpuoverhead`). Exits 0 where a set got a hardware adapter, 1
where none did, 2 on a usage error. GPUOVERHEAD_SURFACE_LAYER=0 starts a browser without the
surface layer that the tool builds and enables where ANGLE runs on Vulkan
(gpuoverhead/browser/surface.py); GPUOVERHEAD_SYSTEM_VULKAN is read by the wrapper that
benchmarks/gpu_machine/chromium_unpack.sh writes.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpuoverhead.browser import adapter, launcher, server  # noqa: E402
from gpuoverhead.errors import UserError  # noqa: E402

NVIDIA_ICD = Path("/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json")
#: Chrome's guide for WebGPU in headless Chrome on an NVIDIA server (Colab, T4).
GUIDE = ("--use-angle=vulkan", "--enable-features=Vulkan", "--disable-vulkan-surface")
GPU = adapter.GPU_FLAGS
LAYER = {"GPUOVERHEAD_SURFACE_LAYER": "1"}
NO_LAYER = {"GPUOVERHEAD_SURFACE_LAYER": "0"}


def icd() -> dict[str, str]:
    """Only NVIDIA's driver in the loader's list, where the machine has it."""
    return {"VK_ICD_FILENAMES": str(NVIDIA_ICD), "VK_DRIVER_FILES": str(NVIDIA_ICD)} \
        if NVIDIA_ICD.is_file() else {}


def flag_sets() -> list[tuple[str, tuple[str, ...], dict[str, str]]]:
    """(name, flags, environment), the guide's set first. The layer (the tool's
    browser/surface_layer.c) lists VK_EXT_headless_surface, which ANGLE's Vulkan display in
    headless Chromium asks for and a display-less driver lacks."""
    return [
        ("guide", GUIDE, NO_LAYER),
        ("guide+blocklist", GPU, NO_LAYER),
        ("gpu+layer", GPU, LAYER),
        ("gpu+layer+icd", GPU, {**LAYER, **icd()}),
        ("gpu+layer+system-loader", GPU, {**LAYER, "GPUOVERHEAD_SYSTEM_VULKAN": "1"}),
        ("gpu+layer+native", (*GPU, "--use-vulkan=native", "--ozone-platform=headless",
                              "--enable-dawn-features=allow_unsafe_apis",
                              "--disable-dawn-features=adapter_blocklist"), LAYER),
        ("guide+icd", GUIDE, {**NO_LAYER, **icd()}),
        ("gl-disabled", ("--use-gl=disabled", "--enable-features=Vulkan",
                         "--disable-vulkan-surface", "--ignore-gpu-blocklist"),
         {**NO_LAYER, **icd()}),
        ("gl-swiftshader", ("--use-gl=angle", "--use-angle=swiftshader",
                            "--enable-unsafe-swiftshader", "--enable-features=Vulkan",
                            "--disable-vulkan-surface", "--ignore-gpu-blocklist"), NO_LAYER),
        ("default", (), NO_LAYER),
    ]


def one(browser: str, flags: list[str], wait_s: float, log: Path) -> dict[str, Any]:
    """In a child process: what a fresh browser's page gets under `flags`."""
    out: dict[str, Any] = {"flags": launcher.flags(flags)}
    started = time.monotonic()
    try:
        with server.serve() as url, launcher.Browser(browser, flags, wait_s + 10,
                                                     keep_log=log) as b:
            out["version"] = b.version()
            try:
                tab = b.open(url + "index.html")
                out["info"] = tab.evaluate(f"gpuo.info({wait_s * 1000:.0f})")
            except UserError as exc:
                out["info"] = {"error": str(exc)}
            out["status"] = adapter.gpu_status(b)
    except UserError as exc:
        out["info"] = {"error": str(exc)}
    out["seconds"] = round(time.monotonic() - started, 1)
    return out


def attempt(browser: str, name: str, flags: tuple[str, ...], env: dict[str, str],
            wait_s: float, log: Path) -> dict[str, Any]:
    """One set in a child process, killed with its browser past its time."""
    spec = json.dumps({"browser": browser, "flags": list(flags), "wait_s": wait_s,
                       "log": str(log)})
    child = subprocess.Popen([sys.executable, __file__, "--one", spec], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True,
                             env={**os.environ, **env})
    try:
        text, _ = child.communicate(timeout=wait_s + 30)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # the browser dies with it (PR_SET_PDEATHSIG)
        text, _ = child.communicate()
        return {"name": name, "env": env, "flags": list(flags),
                "info": {"error": f"no answer in {wait_s + 30:g} s: killed"}}
    lines = [line for line in text.splitlines() if line.startswith("{")]
    found = json.loads(lines[-1]) if lines else {"info": {"error": text.strip()[-300:]}}
    return {"name": name, "env": env, **found}


def line(i: int, total: int, result: dict[str, Any], log: Path) -> str:
    info, status = result["info"], result.get("status") or {}
    env = " ".join(f"{k}={v}" for k, v in result["env"].items()) or "-"
    flags = " ".join(result.get("flags_set", [])) or "-"
    if "error" in info:
        got = f"NO ADAPTER: {info['error']}"
    else:
        kind = "SOFTWARE" if adapter.is_software(info) else "HARDWARE"
        got = (f"{kind}: {info.get('description') or info.get('device')} (vendor "
               f"{info.get('vendor')}, architecture {info.get('architecture')}, device "
               f"{info.get('device')}, type {info.get('type')}, backend {info.get('backend')})")
    gpu = (f"chrome://gpu: webgpu {status.get('webgpu')}, vulkan {status.get('vulkan')}, "
           f"GL {status.get('gl_implementation') or '?'} {status.get('gl_renderer') or ''}"
           if status else "chrome://gpu: no answer")
    text = (f"[{i}/{total}] {result['name']} ({result.get('seconds', '?')} s) flags: {flags} | "
            f"env: {env} | {got} | {gpu}")
    if "error" in info or adapter.is_software(info):
        tail = [t for t in _tail(log, 40) if "ERROR" in t or "Warning" in t or "ERR:" in t][-4:]
        text += "".join(f"\n      stderr: {t[:300]}" for t in tail)
    return text


def _tail(log: Path, n: int) -> list[str]:
    try:
        return log.read_text(errors="replace").splitlines()[-n:]
    except OSError:
        return []


def machine(out: Path) -> None:
    """What the browser has to work with: the GPU, the loaders, NVIDIA's instance
    extensions (VK_EXT_headless_surface is the one in question)."""
    parts = []
    for command in (["nvidia-smi", "-L"], ["sh", "-c", "ldconfig -p | grep -i vulkan"],
                    ["sh", "-c", f"cat {NVIDIA_ICD} 2>&1; ls /dev/nvidia* /dev/dri 2>&1"]):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=20)
            parts.append(f"$ {' '.join(command)}\n{done.stdout}{done.stderr}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            parts.append(f"$ {' '.join(command)}\n{exc}")
    for label, env in (("all drivers", {}), ("NVIDIA's only", icd())):
        done = subprocess.run([sys.executable, __file__, "--extensions"], capture_output=True,
                              text=True, timeout=60, env={**os.environ, **env})
        parts.append(f"instance extensions, {label}: {done.stdout.strip()}{done.stderr[-300:]}")
    offered = "VK_EXT_headless_surface" in parts[-1].split(":", 1)[1]
    parts.append(f"VK_EXT_headless_surface offered without the layer: {offered}")
    (out / "machine.txt").write_text("\n".join(parts) + "\n")
    print(parts[-1])


def extensions() -> str:
    """The instance extensions the system's Vulkan loader offers (ctypes, no package)."""
    import ctypes

    class Props(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char * 256), ("spec", ctypes.c_uint32)]

    try:
        vk = ctypes.CDLL("libvulkan.so.1")
    except OSError as exc:
        return f"no libvulkan.so.1: {exc}"
    count = ctypes.c_uint32(0)
    vk.vkEnumerateInstanceExtensionProperties(None, ctypes.byref(count), None)
    props = (Props * count.value)()
    vk.vkEnumerateInstanceExtensionProperties(None, ctypes.byref(count), props)
    return " ".join(sorted(p.name.decode() for p in props))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browser", default="/tmp/gpuo-chromium/chromium")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--wait", type=float, default=15.0,
                        help="seconds the page waits for requestAdapter() (default 15)")
    parser.add_argument("--only", default="", help="comma-separated set names")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--extensions", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.extensions:
        print(extensions())
        return 0
    if args.one:
        spec = json.loads(args.one)
        print(json.dumps(one(spec["browser"], spec["flags"], spec["wait_s"], Path(spec["log"]))))
        return 0
    if args.out is None:
        parser.error("--out DIR is required")
    try:
        browser = launcher.find(args.browser)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sets = flag_sets()
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {name for name, _, _ in sets}
        if unknown:
            print(f"error: --only {', '.join(sorted(unknown))}: unknown set; known: "
                  f"{', '.join(n for n, _, _ in sets)}", file=sys.stderr)
            return 2
        sets = [s for s in sets if s[0] in wanted]
    args.out.mkdir(parents=True, exist_ok=True)
    machine(args.out)
    results, lines = [], []
    for i, (name, flags, env) in enumerate(sets, 1):
        log = args.out / f"{i:02d}-{name}.log"
        result = {**attempt(browser, name, flags, env, args.wait, log), "flags_set": list(flags)}
        results.append(result)
        lines.append(line(i, len(sets), result, log))
        print(lines[-1], flush=True)
    (args.out / "probe.txt").write_text("\n".join(lines) + "\n")
    (args.out / "probe.json").write_text(json.dumps(results, indent=1))
    return winner(results, args.out)


def winner(results: list[dict[str, Any]], out: Path) -> int:
    """The first set that got a hardware adapter, as the variables that make the tool use
    it (DIR/winner.env); 1 where none did."""
    good = next((r for r in results if "error" not in r["info"]
                 and not adapter.is_software(r["info"])), None)
    if good is None:
        print("no flag set got a hardware adapter: see the stderr lines above and "
              "docs/browser-gpu.md")
        return 1
    env = {**good["env"], adapter.MODE_VAR: "hardware",
           adapter.GPU_FLAGS_VAR: " ".join(good["flags_set"])}
    text = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
    (out / "winner.env").write_text(text)
    print(f"hardware adapter with set {good['name']!r}; for the tool:\n{text}", end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
