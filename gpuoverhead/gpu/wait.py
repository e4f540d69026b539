"""The one way every measurement waits for the GPU to finish what was submitted.

`waiter(device)` is chosen once per device, outside any timed region:
- `device._poll_wait()`: wgpu-native blocks in `wgpuDevicePoll(wait=true)`; Dawn's binding
  waits for `onSubmittedWorkDone`. (wgpu 0.32.0's public `queue.on_submitted_work_done_sync()`
  raises TypeError, so it is not used directly.)
- where that raises TypeError, a map fence: copy 4 bytes into a mappable buffer and map it;
  the queue runs in order, so the map completes only after all earlier work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuoverhead.gpu.targets import binding_of

Wait = Callable[[], None]


def waiter(device: Any) -> Wait:
    """The completion wait for `device`; its `__name__` says which strategy it is."""
    try:
        device._poll_wait()
    except TypeError:
        return _map_fence(device)
    return device._poll_wait


def _map_fence(device: Any) -> Wait:
    api = binding_of(device)
    flags, mode = api.BufferUsage, api.MapMode.READ
    source = device.create_buffer(size=4, usage=flags.COPY_SRC)
    target = device.create_buffer(size=4, usage=flags.MAP_READ | flags.COPY_DST)
    queue = device.queue

    def map_fence() -> None:
        encoder = device.create_command_encoder()
        encoder.copy_buffer_to_buffer(source, 0, target, 0, 4)
        queue.submit([encoder.finish()])
        target.map_sync(mode)
        target.unmap()

    return map_fence
