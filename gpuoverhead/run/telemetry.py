"""The GPU's own state around a worker's sampling, from NVIDIA's NVML (`nvidia-ml-py`, the
`telemetry` extra): SM and memory clocks, temperature, power, the reasons clocks are held
down, and the board's energy counter.

A slow run on a throttled or down-clocked GPU looks like overhead; with these readings
before and after each worker's sampling run.json shows whether the clocks moved or a
throttle reason was set while its samples were taken, and the energy counter gives joules
per unit of work (a decode step's token) for the process's sampling as a whole. NVML is
read outside every timed call. Where it is missing (no package, no NVIDIA driver, another
vendor) a worker records why, never an error.
"""

from __future__ import annotations

from typing import Any

#: Reasons that say nothing about a slow measurement: an idle GPU, clocks an admin set,
#: the display's clock.
_BENIGN = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x100: "display_clock"}
_REASONS = {0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x10: "sync_boost",
            0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
            0x80: "hw_power_brake_slowdown", 0x200: "board_limit", 0x400: "reliability"}
#: A change of SM clock between the readings larger than this share is worth a warning.
CLOCK_CHANGE = 0.05


class Telemetry:
    """The NVML handle of the GPU the adapter names: none for another adapter on an NVIDIA
    machine (lavapipe, a browser's SwiftShader, the CPU), whose samples the GPU's state
    says nothing about."""

    def __init__(self, device: str) -> None:
        import pynvml

        pynvml.nvmlInit()
        self.nvml = pynvml
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i)
                   for i in range(pynvml.nvmlDeviceGetCount())]
        named = [h for h in handles if _text(pynvml.nvmlDeviceGetName(h)) in device]
        if not named:
            raise LookupError(f"NVML has no GPU named like {device!r}")
        self.handle = named[0]

    def energy_j(self) -> float:
        """The board's energy counter (J); NVMLError where the board has none."""
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1000

    def read(self) -> dict[str, Any]:
        """The GPU's state now; a reading NVML does not offer on this board is left out."""
        nvml, h = self.nvml, self.handle
        found: dict[str, Any] = {}
        for key, call in (
                ("sm_clock_mhz", lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)),
                ("mem_clock_mhz", lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM)),
                ("temperature_c", lambda: nvml.nvmlDeviceGetTemperature(
                    h, nvml.NVML_TEMPERATURE_GPU)),
                ("power_w", lambda: nvml.nvmlDeviceGetPowerUsage(h) / 1000),
                ("energy_j", self.energy_j),
                ("throttle", lambda: reasons(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)))):
            try:
                found[key] = call()
            except nvml.NVMLError:
                continue
        return found


def _text(name: Any) -> str:
    return name.decode() if isinstance(name, bytes) else str(name)


def reasons(mask: int) -> list[str]:
    """The throttle reasons set in NVML's mask, by name (the benign ones too)."""
    return [name for bit, name in {**_BENIGN, **_REASONS}.items() if mask & bit]


def open_for(device: str) -> tuple[Telemetry | None, str | None]:
    """NVML for the adapter named `device`, or None and why not."""
    try:
        return Telemetry(device), None
    except ImportError:
        return None, "no GPU telemetry: nvidia-ml-py is not installed (pip install " \
                     "'gpuoverhead[telemetry]')"
    except Exception as exc:  # NVMLError, no driver: a note, never an error
        return None, f"no GPU telemetry: {type(exc).__name__}: {str(exc)[:200]}"


def summary(before: dict[str, Any], after: dict[str, Any], units: int,
            by_case: dict[str, tuple[float, int]] | None = None) -> dict[str, Any]:
    """run.json's record of a worker's sampling: the readings, the energy it took and per
    unit of work (`units`: dispatches, or a fusion case's units such as tokens), and where
    the counter was read around each sample (`by_case`: joules and units per case id),
    per unit of each case."""
    out: dict[str, Any] = {"before": before, "after": after}
    if "energy_j" in before and "energy_j" in after:
        out["energy_j"] = round(after["energy_j"] - before["energy_j"], 3)
        if units:
            out["energy_per_unit_j"] = out["energy_j"] / units
    if by_case:
        out["energy_per_unit_j_by_case"] = {case: j / n for case, (j, n) in by_case.items() if n}
    return out


def per_sample(gpu: Telemetry | None, fusion: bool) -> Any:
    """The energy counter to read around each sample, or None: only for a fusion workload's
    units (milliseconds: a decode step, a recurrent step), whose energy per unit is a
    figure of its own, and only where the board has the counter. A kernel group's samples
    of microseconds get no extra driver call between them."""
    if gpu is None or not fusion:
        return None
    try:
        gpu.energy_j()
    except gpu.nvml.NVMLError:
        return None
    return gpu.energy_j


def warning(record: dict[str, Any]) -> str | None:
    """What in a worker's readings makes its samples suspect: the SM clock fell by more than
    CLOCK_CHANGE, or a throttle reason other than a benign one was set; None if nothing.
    A clock that rose is an idle GPU boosting under the first samples (345-420 MHz before,
    1980 after, on the H100 before every decode worker), which warm-up is there for."""
    before, after = record.get("before", {}), record.get("after", {})
    said = []
    was, now = before.get("sm_clock_mhz"), after.get("sm_clock_mhz")
    if was and now is not None and now < (1 - CLOCK_CHANGE) * was:
        said.append(f"SM clock {was} -> {now} MHz")
    set_ = sorted({r for r in before.get("throttle", []) + after.get("throttle", [])
                   if r not in _BENIGN.values()})
    if set_:
        said.append(f"throttled ({', '.join(set_)})")
    return "; ".join(said) or None
