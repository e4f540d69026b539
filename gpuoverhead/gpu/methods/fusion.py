"""Fusion: N units of the same work, unfused (K dispatches each) or fused (fewer), one wait
per N units, through the implementation's Python API.

The slope of wall time against N is the cost of one unit with the wait amortized (an engine
that syncs once per many layers); the samples at N = 1 are what a unit costs when it is
synced on its own. Their ratios between the unfused and the fused form are the fusion
speedups (analysis/series.py). A `timestamps` twin times the same pass on the GPU instead.

Encodings (the decode step offers all three; the other patterns `dispatch` only):
- `dispatch`: the N units in one compute pass, one submit;
- `pass`: a compute pass per segment of a unit (the decode step: per layer), one submit;
- `submit`: each dispatch its own command buffer, pass and submit, as a naive engine does.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns
from typing import Any

from gpuoverhead.gpu.fusion_patterns import Work
from gpuoverhead.gpu.methods.timestamps import PassTimer


def operation(work: Work, device: Any, wait: Callable[[], None], timestamps: bool,
              encoding: str = "dispatch") -> Callable[[int], object]:
    queue, one_pass = device.queue, _one_pass(work)
    if timestamps:
        timer = PassTimer(device)

        def timed(n: int) -> tuple[int, int]:
            encoder = device.create_command_encoder()
            one_pass(encoder.begin_compute_pass(timestamp_writes=timer.writes), n)
            timer.resolve(encoder)
            queue.submit([encoder.finish()])
            return timer.read(queue)

        return timed

    issue = _issuer(work, device, encoding, one_pass)

    def op(n: int) -> tuple[int]:
        issue(n)
        issued = perf_counter_ns()
        wait()
        return (issued,)

    return op


def _one_pass(work: Work) -> Callable[[Any, int], None]:
    sequences, done = work.sequences, work.units_done
    period = len(sequences)

    def one_pass(compute: Any, n: int) -> None:
        """Units done .. done + n, each its dispatches, in `compute`, which it ends. One call
        per op: it adds to the intercept of the fit, not to the per-unit slope."""
        u = done[0]
        for i in range(u, u + n):
            for pipeline, bind_group, x, y in sequences[i % period]:
                compute.set_pipeline(pipeline)
                compute.set_bind_group(0, bind_group)
                compute.dispatch_workgroups(x, y, 1)
        compute.end()
        done[0] = u + n

    return one_pass


def _issuer(work: Work, device: Any, encoding: str, one_pass: Callable[[Any, int], None]
            ) -> Callable[[int], None]:
    """Issues N units in `encoding`, submitted and not waited for."""
    queue, sequences, segmented, done = device.queue, work.sequences, work.segmented, \
        work.units_done
    period = len(sequences)

    def submit_each(n: int) -> None:
        u = done[0]
        for i in range(u, u + n):
            for pipeline, bind_group, x, y in sequences[i % period]:
                encoder = device.create_command_encoder()
                compute = encoder.begin_compute_pass()
                compute.set_pipeline(pipeline)
                compute.set_bind_group(0, bind_group)
                compute.dispatch_workgroups(x, y, 1)
                compute.end()
                queue.submit([encoder.finish()])
        done[0] = u + n

    def pass_per_segment(n: int) -> None:
        encoder, u = device.create_command_encoder(), done[0]
        for i in range(u, u + n):
            for segment in segmented[i % period]:
                compute = encoder.begin_compute_pass()
                for pipeline, bind_group, x, y in segment:
                    compute.set_pipeline(pipeline)
                    compute.set_bind_group(0, bind_group)
                    compute.dispatch_workgroups(x, y, 1)
                compute.end()
        queue.submit([encoder.finish()])
        done[0] = u + n

    def in_one_pass(n: int) -> None:
        encoder = device.create_command_encoder()
        one_pass(encoder.begin_compute_pass(), n)
        queue.submit([encoder.finish()])

    return {"submit": submit_each, "pass": pass_per_segment}.get(encoding, in_one_pass)
