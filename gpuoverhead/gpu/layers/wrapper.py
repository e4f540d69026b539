"""Layer `wrapper`: operations issued through the implementation's public Python API.

This is what a Python user pays: the binding's argument handling, error checks and object
lifetimes on top of the native calls. Per encoding (see methods/sequential.py):
`submit_each`, `pass_each` and `one_pass` issue `n` operations without waiting; their
`_fresh` twins create the bind group before each dispatch (from the same layout and buffer)
instead of reusing one. The twins are spelled out rather than made by a flag in one loop:
a test per dispatch would be time in the reused loops that they do not mean to measure.
"""

from __future__ import annotations

from time import perf_counter_ns

from gpuoverhead.gpu.targets import Target


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
    pipeline, bind_group = t.pipeline, t.bind_group
    x, y = t.grid
    encoder = t.device.create_command_encoder()
    for _ in range(n):
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(x, y, 1)
        compute.end()
    t.queue.submit([encoder.finish()])


def one_pass(t: Target, n: int) -> None:
    pipeline, bind_group = t.pipeline, t.bind_group
    x, y = t.grid
    encoder = t.device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    for _ in range(n):
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(x, y, 1)
    compute.end()
    t.queue.submit([encoder.finish()])


def submit_each_fresh(t: Target, n: int) -> None:
    device, queue, pipeline, create, bind = t.device, t.queue, t.pipeline, \
        t.device.create_bind_group, t.bind
    x, y = t.grid
    for _ in range(n):
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, create(**bind))
        compute.dispatch_workgroups(x, y, 1)
        compute.end()
        queue.submit([encoder.finish()])


def pass_each_fresh(t: Target, n: int) -> None:
    pipeline, create, bind = t.pipeline, t.device.create_bind_group, t.bind
    x, y = t.grid
    encoder = t.device.create_command_encoder()
    for _ in range(n):
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, create(**bind))
        compute.dispatch_workgroups(x, y, 1)
        compute.end()
    t.queue.submit([encoder.finish()])


def one_pass_fresh(t: Target, n: int) -> None:
    pipeline, create, bind = t.pipeline, t.device.create_bind_group, t.bind
    x, y = t.grid
    encoder = t.device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    for _ in range(n):
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, create(**bind))
        compute.dispatch_workgroups(x, y, 1)
    compute.end()
    t.queue.submit([encoder.finish()])


ISSUERS = {"submit": submit_each, "pass": pass_each, "dispatch": one_pass}
#: The loops that create the bind group per dispatch (the BIND_PER_DISPATCH variant).
FRESH_ISSUERS = {"submit": submit_each_fresh, "pass": pass_each_fresh,
                 "dispatch": one_pass_fresh}


def breakdown(t: Target) -> tuple[int, ...]:
    """One `submit` operation and its wait, each call timed in place (ns, timer cost included).

    `release` is dropping the pass, encoder and command buffer objects, which makes the
    binding release their native handles.
    """
    clock = perf_counter_ns
    device, queue, pipeline, bind_group = t.device, t.queue, t.pipeline, t.bind_group
    x, y = t.grid
    t0 = clock()
    encoder = device.create_command_encoder()
    t1 = clock()
    compute = encoder.begin_compute_pass()
    t2 = clock()
    compute.set_pipeline(pipeline)
    t3 = clock()
    compute.set_bind_group(0, bind_group)
    t4 = clock()
    compute.dispatch_workgroups(x, y, 1)
    t5 = clock()
    compute.end()
    t6 = clock()
    command_buffer = encoder.finish()
    t7 = clock()
    queue.submit([command_buffer])
    t8 = clock()
    t.wait()
    t9 = clock()
    del compute, encoder, command_buffer
    t10 = clock()
    return (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t8 - t7, t9 - t8,
            t10 - t9)
