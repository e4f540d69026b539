"""Fusion: N units of the same work, unfused (K dispatches each) or fused (one), in one
compute pass, one submit and one wait, through the implementation's Python API.

The slope of wall time against N is the cost of one unit with the wait amortized (an engine
that syncs once per many layers); the samples at N = 1 are what a unit costs when it is
synced on its own. Their ratios between the unfused and the fused form are the fusion
speedups (estimates.py). A `timestamps` twin times the same pass on the GPU instead.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns
from typing import Any

from gpuoverhead.gpu.fusion_patterns import Work
from gpuoverhead.gpu.methods.timestamps import PassTimer


def operation(work: Work, device: Any, wait: Callable[[], None], timestamps: bool
              ) -> Callable[[int], object]:
    queue = device.queue
    sequences, done = work.sequences, work.units_done
    period = len(sequences)

    def encode(compute: Any, n: int) -> None:
        """Units done .. done + n, each its dispatches. One call per op: it adds to the
        intercept of the fit, not to the per-unit slope."""
        u = done[0]
        for i in range(u, u + n):
            for pipeline, bind_group, x, y in sequences[i % period]:
                compute.set_pipeline(pipeline)
                compute.set_bind_group(0, bind_group)
                compute.dispatch_workgroups(x, y, 1)
        compute.end()
        done[0] = u + n

    if not timestamps:
        def op(n: int) -> tuple[int]:
            encoder = device.create_command_encoder()
            encode(encoder.begin_compute_pass(), n)
            queue.submit([encoder.finish()])
            issued = perf_counter_ns()
            wait()
            return (issued,)

        return op

    timer = PassTimer(device)

    def timed(n: int) -> tuple[int, int]:
        encoder = device.create_command_encoder()
        encode(encoder.begin_compute_pass(timestamp_writes=timer.writes), n)
        timer.resolve(encoder)
        queue.submit([encoder.finish()])
        return timer.read(queue)

    return timed
