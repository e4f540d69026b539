"""The one way every measurement waits for the GPU to finish what was submitted.

wgpu 0.32.0's `queue.on_submitted_work_done_sync()` raises TypeError, so this blocks in
`wgpuDevicePoll(device, wait=true)`, which returns once all submitted work is done.
"""

from typing import Any


def wait_idle(device: Any) -> None:
    """Block until the GPU has finished all work submitted to `device`."""
    device._poll_wait()
