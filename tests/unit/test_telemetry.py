"""GPU telemetry (run/telemetry.py) on a stand-in for NVML's Python module: which GPU is
read, what a worker records, and when its samples are flagged. No NVIDIA driver is here;
on the H100 the same code reads the real one (results/h100/decode-energy)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from gpuoverhead.run import telemetry


class _Error(Exception):
    pass


def _nvml(clocks: list[int], throttle: int = 0x1, energy: bool = True) -> SimpleNamespace:
    """Two GPUs; the second, 'NVIDIA H100 80GB HBM3', reports `clocks` in turn."""
    state = {"reads": 0}

    def clock(handle, kind):
        assert handle == 1, "read the GPU named like the adapter"
        if kind == 2:
            return 2619
        state["reads"] += 1
        return clocks[min(state["reads"], len(clocks)) - 1]

    def total_energy(handle):
        if not energy:
            raise _Error("not supported")
        return 1_000_000 + 250_000 * state["reads"]  # mJ: 250 J a reading apart

    return SimpleNamespace(
        NVMLError=_Error, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2, NVML_TEMPERATURE_GPU=0,
        nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: [b"NVIDIA A100", b"NVIDIA H100 80GB HBM3"][h],
        nvmlDeviceGetClockInfo=clock, nvmlDeviceGetTemperature=lambda h, s: 41,
        nvmlDeviceGetPowerUsage=lambda h: 123_456, nvmlDeviceGetTotalEnergyConsumption=total_energy,
        nvmlDeviceGetCurrentClocksThrottleReasons=lambda h: throttle)


def _sampled(monkeypatch, nvml: SimpleNamespace, units: int = 1000) -> dict:
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    gpu, missing = telemetry.open_for("NVIDIA H100 80GB HBM3")
    assert missing is None
    return telemetry.summary(gpu.read(), gpu.read(), units)


def test_a_worker_records_the_named_gpu_before_and_after_and_its_energy(monkeypatch):
    record = _sampled(monkeypatch, _nvml([1980, 1980]))
    assert record["before"] == {"sm_clock_mhz": 1980, "mem_clock_mhz": 2619,
                                "temperature_c": 41, "power_w": 123.456,
                                "energy_j": 1250.0, "throttle": ["gpu_idle"]}
    assert record["energy_j"] == 250.0 and record["energy_per_unit_j"] == 0.25
    assert telemetry.warning(record) is None  # idle is no reason to doubt a sample


def test_moved_clocks_or_a_throttle_reason_flag_the_samples(monkeypatch):
    moved = _sampled(monkeypatch, _nvml([1980, 1755]))
    assert telemetry.warning(moved) == "SM clock 1980 -> 1755 MHz"
    boosted = _sampled(monkeypatch, _nvml([420, 1980]))  # idle before the first sample
    assert telemetry.warning(boosted) is None
    capped = _sampled(monkeypatch, _nvml([1980, 1980], throttle=0x1 | 0x4 | 0x40))
    assert telemetry.warning(capped) == "throttled (hw_thermal_slowdown, sw_power_cap)"


def test_a_reading_the_board_lacks_is_left_out_not_an_error(monkeypatch):
    record = _sampled(monkeypatch, _nvml([1980, 1980], energy=False))
    assert "energy_j" not in record["before"] and "energy_j" not in record


def test_no_nvml_is_a_note(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails as if not installed
    gpu, missing = telemetry.open_for("llvmpipe")
    assert gpu is None and "nvidia-ml-py is not installed" in missing

    def broken():
        raise _Error("Driver Not Loaded")

    monkeypatch.setitem(sys.modules, "pynvml", _nvml([1980]))  # a CPU adapter beside it
    gpu, missing = telemetry.open_for("llvmpipe (LLVM 15.0.6, 256 bits)")
    assert gpu is None and "no GPU named like 'llvmpipe" in missing
    monkeypatch.setitem(sys.modules, "pynvml", SimpleNamespace(nvmlInit=broken))
    gpu, missing = telemetry.open_for("llvmpipe")
    assert gpu is None and missing == "no GPU telemetry: _Error: Driver Not Loaded"


@pytest.mark.parametrize(("mask", "names"), [(0, []), (0x8, ["hw_slowdown"]),
                                              (0x102, ["applications_clocks_setting",
                                                       "display_clock"])])
def test_throttle_reasons_by_name(mask, names):
    assert telemetry.reasons(mask) == names


def test_per_sample_energy_only_for_fusion_units_where_the_board_counts(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _nvml([1980]))
    gpu, _ = telemetry.open_for("NVIDIA H100 80GB HBM3")
    assert telemetry.per_sample(gpu, fusion=False) is None
    assert telemetry.per_sample(None, fusion=True) is None
    assert telemetry.per_sample(gpu, fusion=True)() == 1000.0  # J, before any clock read
    monkeypatch.setitem(sys.modules, "pynvml", _nvml([1980], energy=False))
    gpu, _ = telemetry.open_for("NVIDIA H100 80GB HBM3")
    assert telemetry.per_sample(gpu, fusion=True) is None
    record = telemetry.summary({}, {}, 10, {"a": (3.0, 2), "b": (1.0, 0)})
    assert record["energy_per_unit_j_by_case"] == {"a": 1.5}  # a case of no units: none
