"""Which flags the browser starts with and how the adapter its page got is worded (issue 44):
the GPU set and the default, the environment's choice, a software adapter told from a GPU,
and a suite's `browser_adapter`. The browser itself: tests/gpu/test_chromium_gpu.py."""

from __future__ import annotations

import pytest
from conftest import write_suite

from gpuoverhead.browser import adapter as choice
from gpuoverhead.errors import UserError
from gpuoverhead.suite.expand import load_suite, suite_problems

#: What an H100's page said through Chromium (the shape gpuo.info() returns).
NVIDIA = {"vendor": "nvidia", "architecture": "hopper", "device": "0x2330",
          "description": "NVIDIA H100 80GB HBM3", "driver": "NVIDIA 580.95", "backend": "vulkan",
          "type": "discrete GPU", "isFallbackAdapter": False, "features": ["timestamp-query"],
          "crossOriginIsolated": True, "timerResolutionUs": 5.0, "userAgent": "HeadlessChrome"}
SWIFTSHADER = {**NVIDIA, "vendor": "google", "architecture": "swiftshader", "device": "0xc0de",
               "description": "SwiftShader Device (Subzero)", "type": "CPU",
               "isFallbackAdapter": True}


def test_the_mode_comes_from_the_environment_and_a_wrong_one_is_one_line(monkeypatch):
    monkeypatch.delenv(choice.MODE_VAR, raising=False)
    assert choice.mode() == "auto"
    monkeypatch.setenv(choice.MODE_VAR, "Hardware")
    assert choice.mode() == "hardware"
    monkeypatch.setenv(choice.MODE_VAR, "gpu")
    with pytest.raises(UserError, match=r"GPUOVERHEAD_CHROMIUM_ADAPTER='gpu': expected one of "
                                        r"auto, hardware, software$"):
        choice.mode()


def test_flag_sets_in_each_mode(monkeypatch):
    monkeypatch.delenv(choice.GPU_FLAGS_VAR, raising=False)
    assert choice.flag_sets("software") == [("default", ())]
    assert choice.flag_sets("hardware") == [("gpu", choice.GPU_FLAGS)]
    assert "--disable-vulkan-surface" in choice.GPU_FLAGS
    auto = choice.flag_sets("auto")
    assert auto[-1] == ("default", ()) and len(auto) == (2 if choice.has_gpu_device() else 1)
    monkeypatch.setenv(choice.GPU_FLAGS_VAR, "--enable-features=Vulkan --use-gl=disabled")
    assert choice.flag_sets("hardware") == [("gpu", ("--enable-features=Vulkan",
                                                      "--use-gl=disabled"))]


def test_software_adapters_are_told_from_gpus():
    assert not choice.is_software(NVIDIA)
    assert choice.is_software(SWIFTSHADER)
    assert choice.is_software({**NVIDIA, "description": "llvmpipe (LLVM 15)", "type": ""})
    assert choice.Answer("gpu", (), SWIFTSHADER, "v").summary() == \
        "SwiftShader Device (Subzero), a CPU (software) adapter"
    assert choice.Answer("gpu", (), {"error": "requestAdapter() returned null"}, "v"
                         ).summary() == "no adapter (requestAdapter() returned null)"


def test_the_details_say_which_adapter_the_page_got_under_which_flags():
    found = choice.Answer("gpu", choice.GPU_FLAGS, NVIDIA, "HeadlessChrome/153",
                          {"webgpu": "enabled", "vulkan": "enabled_on"})
    info, details = choice.describe(NVIDIA, "HeadlessChrome/153", "/tmp/chromium", found)
    assert (info.adapter_type, info.vendor, info.device) == ("DiscreteGPU", "nvidia",
                                                             "NVIDIA H100 80GB HBM3")
    assert details["browser_flag_set"] == "gpu"
    assert details["browser_flag_set_flags"] == list(choice.GPU_FLAGS)
    assert set(choice.GPU_FLAGS) <= set(details["browser_flags"])
    assert details["page_adapter"]["software"] is False
    assert details["page_adapter"]["architecture"] == "hopper"
    assert details["gpu_status"]["webgpu"] == "enabled"
    info, details = choice.describe(SWIFTSHADER, "HeadlessChrome/153", "/tmp/chromium")
    assert info.adapter_type == "CPU" and details["page_adapter"]["software"] is True
    assert details["browser_flag_set"] == "default"


def test_who_asks_for_hardware_and_the_refusal_line(monkeypatch):
    monkeypatch.delenv(choice.MODE_VAR, raising=False)
    assert choice.required("any") is None
    assert choice.required("hardware") == "the suite (browser_adapter: hardware)"
    monkeypatch.setenv(choice.MODE_VAR, "hardware")
    assert choice.required("any") == "GPUOVERHEAD_CHROMIUM_ADAPTER=hardware"
    line = choice.refusal("SwiftShader Device (Subzero)", "the suite (browser_adapter: hardware)")
    assert "\n" not in line and "not a GPU" in line and "docs/browser-gpu.md" in line


def test_a_suite_can_ask_for_a_hardware_browser_adapter(tmp_path):
    body = "benchmarks:\n  - {name: e, kernel: empty}\n"
    assert load_suite(write_suite(tmp_path, body)).browser_adapter == "any"
    hard = write_suite(tmp_path, "browser_adapter: hardware\n" + body, "hard.yaml")
    assert load_suite(hard).browser_adapter == "hardware"
    wrong = write_suite(tmp_path, "browser_adapter: gpu\n" + body, "wrong.yaml")
    problems = suite_problems(wrong)
    assert len(problems) == 1 and "wrong.yaml:1: browser_adapter" in problems[0], problems
