"""Adapters described from the info dicts that wgpu-native reports on each runner system."""

from __future__ import annotations

from gpuoverhead.gpu.adapters import describe_info

WARP_GPU = {"vendor": "", "device": "Microsoft Basic Render Driver", "vendor_id": 0x1414,
            "device_id": 0x8C, "adapter_type": "IntegratedGPU", "backend_type": "D3D12",
            "description": ""}
WARP_CPU = {**WARP_GPU, "adapter_type": "CPU"}
APPLE_VM = {"vendor": "", "device": "Apple Paravirtual device", "vendor_id": 0,
            "device_id": 0, "adapter_type": "IntegratedGPU", "backend_type": "Metal",
            "description": ""}
APPLE_M = {**APPLE_VM, "device": "Apple M2 Pro"}
NVIDIA = {"vendor": "NVIDIA", "device": "NVIDIA H100 80GB HBM3", "vendor_id": 0x10DE,
          "device_id": 0x2330, "adapter_type": "DiscreteGPU", "backend_type": "Vulkan",
          "description": "580.159.04"}


def test_warp_is_a_software_adapter_however_it_is_listed():
    gpu = describe_info(WARP_GPU, False, "wgpu-native")
    cpu = describe_info(WARP_CPU, False, "wgpu-native")
    assert gpu.is_software and cpu.is_software and gpu.vendor == "microsoft"
    assert gpu == cpu  # the two entries describe one adapter, and discovery keeps one


def test_apple_on_metal_is_apple_and_its_vm_gpu_is_virtual():
    vm = describe_info(APPLE_VM, True, "wgpu-native")
    m2 = describe_info(APPLE_M, True, "wgpu-native")
    assert vm.vendor == m2.vendor == "apple" and vm.vendor_id == 0x106B
    assert vm.is_virtual and not m2.is_virtual and not m2.is_software


def test_a_discrete_gpu_stays_one():
    nv = describe_info(NVIDIA, True, "wgpu-native")
    assert (nv.vendor, nv.backend, nv.adapter_type) == ("nvidia", "vulkan", "DiscreteGPU")
    assert not nv.is_software and not nv.is_virtual


def test_the_memory_bandwidth_is_known_for_the_lent_gpus_only():
    """A decode step's memory floor divides by the data sheet's bandwidth; a CPU adapter
    (lavapipe) has none, so its floor multiple is left out rather than guessed."""
    assert describe_info(NVIDIA, True, "wgpu-native").bandwidth_gb_s == 3350.0
    assert describe_info({**NVIDIA, "device": "NVIDIA H200"}, True, "dawn").bandwidth_gb_s \
        == 4800.0
    assert describe_info(WARP_CPU, False, "wgpu-native").bandwidth_gb_s is None
