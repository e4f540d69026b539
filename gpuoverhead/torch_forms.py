"""The PyTorch forms a case can name (its `implementation`) and the device torch finds: what
the torch driver and the workloads' PyTorch builds share, kept apart from both so neither
imports the other."""

from __future__ import annotations

EAGER, GRAPH, COMPILE = "torch-eager", "torch-cudagraph", "torch-compile"
#: Eager on the CPU whatever device torch's best is: the reference a GPU has to beat
#: (measured by the `host` driver, drivers/host.py).
CPU = "torch-cpu"
#: The forms that run a workload's ops one by one as they are called.
EAGERLY = (EAGER, CPU)
#: The family name `--implementation` takes for all three.
FAMILY = "torch"


def device_name() -> str:
    """The device torch finds: cuda, else mps, else cpu."""
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"
