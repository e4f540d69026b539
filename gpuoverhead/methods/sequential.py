"""Sequential: N operations issued back to back, one wait at the end.

Per-dispatch cost is the slope of wall time against N (see `stats.theil_sen`). Encodings:
- `submit`: each operation has its own encoder, compute pass and submit;
- `pass`: one encoder holding N compute passes, one submit;
- `dispatch`: one compute pass holding N operations, one submit.
Pipeline and bind group are set for every dispatch in every encoding, as a real workload
whose dispatches differ would do, so encodings differ only in encoder, pass and submit calls.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuoverhead.suite import Case
from gpuoverhead.sync import wait_idle
from gpuoverhead.workload import Target


def submit_each(t: Target, n: int) -> None:
    device, queue, pipeline, bind_group = t.device, t.queue, t.pipeline, t.bind_group
    x, y = t.grid
    for _ in range(n):
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(x, y, 1)
        compute.end()
        queue.submit([encoder.finish()])


def pass_each(t: Target, n: int) -> None:
    pipeline, bind_group, (x, y) = t.pipeline, t.bind_group, t.grid
    encoder = t.device.create_command_encoder()
    for _ in range(n):
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(x, y, 1)
        compute.end()
    t.queue.submit([encoder.finish()])


def one_pass(t: Target, n: int) -> None:
    pipeline, bind_group, (x, y) = t.pipeline, t.bind_group, t.grid
    encoder = t.device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    for _ in range(n):
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(x, y, 1)
    compute.end()
    t.queue.submit([encoder.finish()])


ISSUERS: dict[str, Callable[[Target, int], None]] = {
    "submit": submit_each,
    "pass": pass_each,
    "dispatch": one_pass,
}


def operation(target: Target, case: Case) -> Callable[[int], None]:
    issue, device = ISSUERS[case.encoding], target.device

    def op(n: int) -> None:
        issue(target, n)
        wait_idle(device)

    return op
