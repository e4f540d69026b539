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

A host-read loop (the decode step's token loop, syncs `synced` and `pipelined`; the
recurrent step's `host_reads`, also `never` and the hybrid form) is no slope: each sample is
a run of N steps, each issued in its encoding as it comes, a value read back after every
step, every few or only the last (workloads/work.read_loop); its figures are per token (per
step) of the run, and each read form's over the `never` form's is its slowdown.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns
from typing import Any

import numpy as np

from gpuoverhead.analysis import floor, off_floor
from gpuoverhead.analysis.samples import by_round
from gpuoverhead.analysis.series import Key, Out, Series, View, add_fits
from gpuoverhead.cases import (
    CPU_ARGMAX,
    DECODE_KERNEL,
    FUSION,
    GPU_ARGMAX,
    HOST_UNITS,
    HYBRID,
    NEVER,
    READ_LOOPS,
    TIMESTAMPS,
    TOKEN_LOOPS,
    Case,
)
from gpuoverhead.gpu.pass_timer import PassTimer
from gpuoverhead.workloads.work import Work, read_loop, units_op

#: Not a suite's methodology: a benchmark names a `fusion` workload instead of a kernel,
#: and the workload lays out its cases (workloads/groups.py).
SUITE_NAME = None


def cases(base: Case, cfg: dict[str, Any]) -> list[Case]:
    """None for a kernel benchmark."""
    return []


def claims(case: Case) -> bool:
    return case.methodology == FUSION


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

    if work.host is not None:  # a host call that ends with its data read: nothing to wait
        return units_op(work.host, lambda: None)
    issue = _issuer(work, device, encoding, one_pass)
    if work.readback is not None:  # a host-read loop: a step issued at a time
        return read_loop(lambda: issue(1), work.readback)

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


def series(view: View, index: int, case: Case, out: Out) -> None:
    """One unit of work per form: its slope (wait amortized, fitted through the N off its
    completion floor) and N=1 latency, or GPU time."""
    pos, walls, times = view.measured(index)
    n = view.n(index)
    round_times = by_round(times, n)[:, 0]
    if case.sync in READ_LOOPS:
        _token_series(view, index, case, out, pos, walls, round_times)
        return
    keep, estimator = np.ones(len(n), dtype=bool), "round-median theil-sen"
    issue_slope = None
    if case.sync == TIMESTAMPS:
        matrix = view.gpu(pos, index)
        if matrix is None:
            return
        metrics: tuple[str, ...] = ("gpu_ns", "gpu_fixed_ns")
    else:
        matrix, metrics = by_round(walls, n), ("per_unit_ns", "fixed_ns")
        if case.variant not in HOST_UNITS:  # a host unit's issue time is its wall
            issue = view.issue(pos, index)
            issue_slope = add_fits(out, case, n, issue, round_times, ("cpu_per_unit_ns",),
                                   "round-median theil-sen of issue time (clock read "
                                   "before the wait)")
            if n[0] == 1:
                keep, estimator = off_floor.fit(view, case, out, n, matrix, issue,
                                                 round_times), off_floor.OFF_FLOOR
    slope = add_fits(out, case, tuple(np.array(n)[keep]), matrix[:, keep], round_times,
                     metrics, estimator) if floor.fitted(keep) else None
    if case.sync == TIMESTAMPS and slope is not None:
        _floor_multiple(view, case, out, slope, round_times)
        _token_parts(view, case, out, slope, round_times)
    single = matrix[:, 0] if n[0] == 1 else None
    if single is not None and case.sync != TIMESTAMPS:
        out[Key(case, "latency_ns", "ns", "median of N=1 samples")] = Series(
            single, round_times, single.size)
    view.units[case] = (case, slope, single, round_times, issue_slope)


def _floor_multiple(view: View, case: Case, out: Out, slope: np.ndarray,
                    round_times: np.ndarray) -> None:
    """A decode step's GPU time per token over its memory floor (the bytes a step must read
    over a bandwidth): the data sheet's where the adapter's is known (`floor_multiple`),
    the worker's measured read stream where it ran one (`floor_multiple_read`)."""
    if not case.kernel.startswith(DECODE_KERNEL):
        return
    # imported where a decode step is: a kernel's worker (its precision checks read these
    # series) has no use for the model, whose import is ~5 ms of its CPU
    from gpuoverhead.workloads.decode_model import MODELS, bytes_per_token

    precision = "f16" if case.kernel.endswith("_f16") else "f32"
    needed = bytes_per_token(MODELS[case.elements], case.k, precision)
    whole = np.isfinite(slope)
    sheet = view.cal.bandwidth_gb_s
    for metric, bandwidth, source in (
            ("floor_multiple", sheet, f"{needed / sheet / 1e3:.1f} us at the data sheet's "
                                      f"{sheet:g} GB/s" if sheet else ""),
            # each worker measures its own: the key must not differ between processes
            ("floor_multiple_read", view.cal.read_gb_s, "the read bandwidth of a stream "
                                                        "kernel in each worker, run.json's "
                                                        "read_gb_s")):
        if bandwidth:
            out[Key(case, metric, "ratio", f"median GPU-time slope / memory floor "
                    f"({source})")] = Series(slope[whole] * bandwidth / needed,
                                             round_times[whole], int(whole.sum()))


def _token_parts(view: View, case: Case, out: Out, slope: np.ndarray,
                 round_times: np.ndarray) -> None:
    """A decode token's GPU time (the one-pass slope) taken apart, where its worker measured
    the floors (workloads/read_floor.py): `read_floor_ns`, the bytes a step must read over
    the worker's read bandwidth; `dispatch_gpu_ns`, the dispatches a token issues times the
    GPU's own time per dispatch in one pass; `kernel_excess_ns`, the rest, each round's
    slope less both. The first two are one measurement a worker: one value each, their
    interval over processes; the excess varies round by round, so with one process its
    interval is its rounds' and the parts add up to the GPU time exactly."""
    dispatches, per_dispatch = view.cal.dispatches.get(case.id), view.cal.gpu_per_dispatch_ns
    if not (view.cal.read_gb_s and dispatches and per_dispatch is not None
            and case.kernel.startswith(DECODE_KERNEL)):
        return
    from gpuoverhead.workloads.decode_model import MODELS, bytes_per_token  # as above

    precision = "f16" if case.kernel.endswith("_f16") else "f32"
    floor = bytes_per_token(MODELS[case.elements], case.k, precision) / view.cal.read_gb_s
    cost = dispatches * per_dispatch
    whole = np.isfinite(slope)
    if not whole.any():
        return
    once = round_times[whole][:1]  # each worker's keys must not differ: no figures in them
    out[Key(case, "read_floor_ns", "ns", "bytes a step must read / the read bandwidth of a "
            "stream kernel in each worker (run.json's read_gb_s), one value a worker")] = \
        Series(np.array([floor]), once, 1)
    out[Key(case, "dispatch_gpu_ns", "ns", "dispatches a step (run.json's dispatches_per_unit)"
            " x the GPU's own time per dispatch in one pass measured in each worker "
            "(gpu_per_dispatch_ns), one value a worker")] = Series(np.array([cost]), once, 1)
    out[Key(case, "kernel_excess_ns", "ns", "median of rounds' GPU-time slope - "
            "read_floor_ns - dispatch_gpu_ns")] = Series(slope[whole] - floor - cost,
                                                          round_times[whole], int(whole.sum()))


def _token_series(view: View, index: int, case: Case, out: Out, pos: np.ndarray,
                  walls: np.ndarray, round_times: np.ndarray) -> None:
    """A host-read loop's wall and CPU time per step (a decode step's: per token), each
    sample a run of N steps (the loop reads back after its last, so the wall is the steps'
    own, not a slope's)."""
    n = view.n(index)
    tokens = n[-1]
    wall = by_round(walls, n)[:, -1] / tokens
    cpu = view.issue(pos, index)[:, -1] / tokens
    whole = np.isfinite(wall)
    per = "token" if case.kernel.startswith(DECODE_KERNEL) else "step"
    for metric, values, what in ((f"{per}_ns", wall, "wall"),
                                 (f"cpu_per_{per}_ns", cpu, "wall less host reads")):
        out[Key(case, metric, "ns", f"median {what} / {per}s over runs of {tokens}")] = \
            Series(values[whole], round_times[whole], int(whole.sum()))
    view.units[case] = (case, wall[whole], None, round_times[whole], None)


#: Ratios of one form over another of the same K, sync and encoding, on the second form:
#: (numerator's variant, denominator's variant), then per ratio its metric, the sync of the
#: series it pairs, and which of their values. The fusion speedups: unfused over fused;
#: sampling's: all logits read back and their argmax taken on the CPU over the argmax on
#: the GPU and its 4 bytes read back, one unit each (N = 1: a sampled token's latency, and
#: a ratio of positive times, where a noisy slope's could cross zero).
_RATIOS = ((("unfused", "fused"),
            (("fusion_speedup", "wait", 1, "median unfused slope / median fused slope"),
             ("fusion_speedup_synced", "wait", 2,
              "median unfused / median fused wall at N=1"),
             ("fusion_gpu_speedup", TIMESTAMPS, 1,
              "median unfused / median fused GPU-time slope"))),
           ((CPU_ARGMAX, GPU_ARGMAX),
            (("cpu_over_gpu", "wait", 2, f"median {CPU_ARGMAX} / median {GPU_ARGMAX} wall "
              "at N=1"),)))


#: The wall figure a GPU share divides by, per sync: a slope, or a token loop's per token.
_WALLS = {"wait": "wall slope", **dict.fromkeys(READ_LOOPS, "wall per step of its loop")}


#: Per case: the case, its slopes (None where none was fitted), its N=1 values, its round
#: times and its issue slopes (where it has them), each per round.
Units = dict[Case, tuple[Case, np.ndarray | None, np.ndarray | None, np.ndarray,
                         np.ndarray | None]]


def _twin(units: Units, case: Case, **fields: Any) -> tuple | None:
    """The units of the case of the same K as `case` with these fields, if measured."""
    return next((u for c, u in units.items()
                 if c.k == case.k and all(getattr(c, f) == v for f, v in fields.items())),
                None)


def _ratios(out: dict[Key, Series], units: Units) -> None:
    """The _RATIOS (the fusion speedups on the fused case, sampling's on the GPU argmax),
    rounds paired for the CI; and each form's GPU share (GPU time of its one-pass
    timestamps twin over its wall slope)."""
    for (over, under), ratios in _RATIOS:
        for case, mine in units.items():
            other = _twin(units, case, variant=over, sync=case.sync, encoding=case.encoding)
            if case.variant != under or other is None:
                continue
            for metric, wanted, part, estimator in ratios:
                top, bottom = other[part], mine[part]
                if case.sync != wanted or top is None or bottom is None:
                    continue
                r = min(len(top), len(bottom))
                if r:
                    out[Key(case, metric, "ratio", estimator)] = Series(
                        top[:r], mine[3][:r], r, denominator=bottom[:r])
    for case, wall in units.items():
        gpu = _twin(units, case, variant=case.variant, implementation=case.implementation,
                   sync=TIMESTAMPS)
        if case.sync in _WALLS and gpu is not None and wall[1] is not None \
                and gpu[1] is not None and (r := min(len(wall[1]), len(gpu[1]))):
            out[Key(case, "gpu_share", "ratio", f"median GPU-time slope / median "
                    f"{_WALLS[case.sync]}")] = Series(gpu[1][:r], wall[3][:r], r,
                                                      denominator=wall[1][:r])
            _wait(out, case, wall, gpu[1])


def _wait(out: Out, case: Case, wall: tuple, gpu: np.ndarray) -> None:
    """What a unit's wall time holds beyond its issue time and its GPU time, round by round
    (`wait_per_unit_ns`): wall slope less issue slope less its timestamps twin's GPU slope,
    the wait that N units of one submit add per unit. A slope's parts: `gpu_ns` (the
    kernels), `cpu_per_unit_ns` (issuing them), this (waiting on them)."""
    issue = wall[4]
    if case.sync != "wait" or issue is None:
        return
    r = min(len(wall[1]), len(issue), len(gpu))
    found = (wall[1][:r] - issue[:r] - gpu[:r])
    whole = np.isfinite(found)
    if whole.any():
        out[Key(case, "wait_per_unit_ns", "ns", "wall slope less issue slope less the "
                "timestamps twin's GPU slope, per round")] = Series(
            found[whole], wall[3][:r][whole], int(whole.sum()))


def _slowdowns(out: Out, units: Units) -> None:
    """A host-read loop's wall per step over the same loop's with no read but the last (its
    `never` twin: same form, implementation and encoding), `sync_slowdown`; the hybrid
    step's over its all-GPU unfused twin's, `hybrid_slowdown`. Rounds paired for the CI, as
    the fusion speedups are."""
    for case, mine in units.items():
        if case.sync not in TOKEN_LOOPS:
            continue
        metric, variant = ("hybrid_slowdown", "unfused") if case.variant == HYBRID else \
            ("sync_slowdown", case.variant)
        never = _twin(units, case, variant=variant, implementation=case.implementation,
                      encoding=case.encoding, sync=NEVER)
        if never is not None and (r := min(len(mine[1]), len(never[1]))):
            out[Key(case, metric, "ratio", f"median wall per step / median of the {variant} "
                    f"{NEVER} loop's, rounds paired")] = Series(
                mine[1][:r], mine[3][:r], r, denominator=never[1][:r])


def derive(out: Out, view: View) -> None:
    _ratios(out, view.units)
    _slowdowns(out, view.units)
