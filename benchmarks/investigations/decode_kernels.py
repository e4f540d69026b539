"""How close does the fused decode step come to its memory floor, and where does the rest of
a token's GPU time go? (issue 57)

On the best adapter of wgpu-native (and of Dawn, where `wgpudawn` imports), for Qwen2.5-0.5B
and 1.5B (f32, random weights, a KV cache of 128), the fused step under each of `variants`:
the suite's own (workloads/decode_choices: `subgroups`, each model's, as the device runs it;
`tuned` in the tables of rounds 2 and 3, the suite's step before; round 3's best; at 1.5B
since round 6 the `ticket` attention) and the same with `early=True` (the loads that a
row's sums are added to issued before its dot products; not the suite's, since on Dawn
at 1.5B it lost phase 1 in rounds 4-6). With `--attentions` (round 6's)
also the suite's with the other of its attention's blocks combined once a head by the
head's last block to finish (decode_choices.ATTENTIONS `ticket`: attn_part_ticket, then
o_proj as a plain matrix-vector product with 1.5B's lanes: `ticket+out=sg-l16`) and
inside the output projection (`split`). With `--grids` (round 6's: the MLP in one dispatch
lost or drew at every count) the grid-barrier probe below and (grid_variants) the
suite's with its MLP in one dispatch of resident workgroups (`grid=132`) at each count of
`--resident` the probe passed at. (Each whole layer in one dispatch, `layer_grid=N`, gave
wrong logits on wgpu-native at every count and on both at 528 and 1056, and was slower
where right: removed, in the history at commit 83d609a.) With `--aheads`
(round 5's, which lost) also `ticket` under each o_proj that sums by subgroups and each
load ahead (decode_choices.AHEADS: workgroups of attn_part, attn_out and down of their own
that read gate/up's first rows or the next layer's Q/K/V into the L2 cache while the kernel
they ride on leaves memory idle: `ahead=gu8+8`). With `--swaps` (round 3's
set) also `main` (the first fused engine's kernels) and the suite's with one matrix-vector
part (Q/K/V, gate/up, down) swapped for each of its other alternatives
(decode_choices.MATVECS: `gate_up=sg-l16`; those summing by subgroup shuffles only where the
device has subgroups, which the device is asked for); with `--heads` (round 4's, which lost)
the `head` attentions (`head`, a workgroup a query head, `head-d16` and `head-d8`, 16 or 8
of its dimensions a workgroup, each with its output projection under each alternative:
`head+out=sg`). Each built, its logits checked against numpy after each of `--checks`
single steps (a race between the workgroups of attn_part_ticket would spoil some of them)
and its step count, then its GPU time a token from timestamps around a pass of `--steps`
steps, `--rounds` rounds that time every variant once in a rotating order, the median (with the
least and the most): phase 1. Where a part's (or the attention's) fastest checked
alternative beat the suite's step's median, `best` (every such part's fastest in one step)
and a fresh build of the suite's step are timed in `--rounds` rounds of their own (phase 2:
the rounds that picked do not judge the pick); table.txt says per implementation and model
what `best` took and how it compares.
Between building and timing, on the same device, as the suite's decode workers measure them
(workloads/read_floor.py): the read floor (the bytes a step must read over the read
bandwidth of a stream kernel, which first streams for 0.3 s to bring the clocks up) and
the GPU's own time per dispatch in one pass right after it, on clocks as warm as the
timed steps'; so each row splits a token into the floor, its dispatches times that time,
and the rest, the kernels' excess. (Measured before the weights' upload instead, which
leaves the GPU idle for seconds at 1.5B, a dispatch read 4.6-4.9 µs there against 1.6-1.7
at 0.5B, and the first timed round 2x the others: results/h200/decode-kernels.) Where the
device writes timestamps inside a pass (wgpu-native's timestamp-query-inside-passes), one
more pass per variant with a timestamp after every dispatch gives each kernel's GPU time a
token (a stamp costs each dispatch about 5 µs on the H200: compare kernels within a pass,
not with the totals above).
With `--grids`, once a device, with the first model (round 5, approach B's building block:
a persistent kernel whose stages a grid-wide barrier separates): `barrier_probe`, for each
workgroup count of `--resident` (those the device runs at once: nothing in WebGPU says how
many), whether
every workgroup passed grid_sync's barriers and read what the others wrote before them at
fresh addresses (stale reads at an address written every round said apart: round 5's H200
had them, L1 not coherent between SMs), and then a barrier's GPU µs against a boundary
between dispatches.

Starts no new shape or variant past `--budget` seconds, and says what it left out. Writes
table.txt and decode_kernels.json under OUT. From the repository root:

    python benchmarks/investigations/decode_kernels.py OUT          # a GPU: 0.5B and 1.5B
    python benchmarks/investigations/decode_kernels.py OUT --tiny   # the hidden-128 model
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from decode_floor import Group, check, open_device  # noqa: E402

from gpuoverhead.drivers.webgpu import BINDINGS  # noqa: E402
from gpuoverhead.errors import UserError  # noqa: E402
from gpuoverhead.gpu.pass_timer import timed_pass  # noqa: E402
from gpuoverhead.gpu.targets import binding_of, grid_for  # noqa: E402
from gpuoverhead.gpu.wait import waiter  # noqa: E402
from gpuoverhead.suite.shaders import fusion_kernel  # noqa: E402
from gpuoverhead.workloads import read_floor  # noqa: E402
from gpuoverhead.workloads.decode import SUBGROUP_FEATURES, Engine  # noqa: E402
from gpuoverhead.workloads.decode_choices import (  # noqa: E402
    AHEADS,
    ALL_MATVECS,
    ATTENTIONS,
    DEFAULT_NAME,
    HEAD_DIMS,
    MATVEC_FIELDS,
    MATVEC_PARTS,
    MATVECS,
    PROJECTED,
    Kernels,
    as_run,
    default,
)
from gpuoverhead.workloads.decode_model import (  # noqa: E402
    DECODE_WG,
    MODELS,
    Shape,
    Weights,
    bytes_per_token,
    reference,
)
from gpuoverhead.workloads.work import Context  # noqa: E402

INSIDE = "timestamp-query-inside-passes"
#: The grid-barrier probe: rounds of grid_sync a dispatch (two barriers each), threads a
#: workgroup (mlp_grid's, DECODE_WG: its verdict decides which `grid=N` are built), and
#: passes of each form timed.
PROBE_ROUNDS, PROBE_WG, PROBE_PASSES = 32, DECODE_WG, 7
#: Timestamps a query set holds at most (WebGPU's limit).
MOST_QUERIES = 4096


def variants(tuned: Kernels, subgroups: bool = True, swaps: bool = False,
             heads: bool = False, aheads: bool = False, attentions: bool = False
             ) -> dict[str, tuple[str, Kernels]]:
    """The whole steps timed, by name, each with the part it swaps (picks): the suite's
    (DEFAULT_NAME: the engine's, as its device runs them), and with `early` the other way.
    With `attentions` (round 6; `aheads` and `heads` too) also the other attention of
    `split` and `ticket` (the part `attention`), `ticket` with 1.5B's choice of o_proj's
    lanes (`ticket+out=sg-l16`; at 1.5B, whose step it is, `split`). With `aheads` (round
    5) also `ticket` with each other o_proj that sums by
    subgroups where the device has them, and the suite's with each load ahead
    (decode_choices.AHEADS: `ahead=gu8+8`), the part `ahead`. With `swaps` (round 3) also
    the first fused engine's kernels (`main`) and the suite's with one matrix-vector part
    swapped for each of its other alternatives (`gate_up=sg-l16`: decode_choices.MATVECS);
    with `heads` (round 4) the `head` attentions (ATTENTIONS), each with its output
    projection under each alternative (`head+out=sg`: `main` is `sg` through workgroup
    memory; without subgroups `main` alone), all the part `attention` (the output
    projection `out` is a part of its own where the suite's attention is a `head` one).
    (The MLP in one dispatch: grid_variants.)"""
    out = {"main": ("", Kernels()), DEFAULT_NAME: ("", tuned)} if swaps else \
        {DEFAULT_NAME: ("", tuned)}
    parts = MATVEC_FIELDS if tuned.attention in PROJECTED else MATVEC_PARTS
    for part in parts if swaps else ():
        out |= {f"{part}={name}": (part, replace(tuned, **{part: name})) for name in MATVECS
                if name != getattr(tuned, part)}
    every = [n for n in MATVECS if MATVECS[n].subgroups == subgroups]
    chosen = as_run(default(MODELS[1536]), subgroups).out  # the ticket's o_proj at 1.5B
    others = attentions or heads or aheads
    for other in (a for a in ATTENTIONS if others and a != tuned.attention
                  and (heads or a not in HEAD_DIMS)):
        if other not in PROJECTED:
            out[other] = ("attention", replace(tuned, attention=other, out=Kernels().out))
            continue
        outs = every if (heads and other in HEAD_DIMS) or aheads else [chosen]
        out |= {f"{other}+out={name}": ("attention", replace(tuned, attention=other, out=name))
                for name in outs}
    if aheads and tuned.attention not in HEAD_DIMS:  # the loads ahead ride on attn_part
        out |= {f"ahead={name}": ("ahead", replace(tuned, ahead=name)) for name in AHEADS
                if name != tuned.ahead}
    out[f"early={not tuned.early}"] = ("early", replace(tuned, early=not tuned.early))
    return out


def grid_variants(tuned: Kernels, counts: tuple[int, ...]) -> dict[str, tuple[str, Kernels]]:
    """(Approach B, `--grids`) the suite's step with its MLP in one dispatch of each of
    `counts` workgroups (Kernels.grid: mlp_grid, `grid=132`), the part `grid`: at the counts
    the barrier probe passed at on this device, so that a grid whose workgroups are not all
    resident (each of its barriers then waits SPIN loads and gives up) is not timed where
    the probe saw it. Passing the probe proves no more than that: on the H200 it passed at
    1056, where `grid=1056` took 18.6 ms a 0.5B token and gave wrong 1.5B logits (the
    logits check leaves those out)."""
    return {f"grid={n}": ("grid", replace(tuned, grid=n)) for n in counts}


def needs_subgroups(kernels: Kernels) -> bool:
    return any(ALL_MATVECS[getattr(kernels, part)].subgroups for part in MATVEC_FIELDS)


@dataclass
class Built:
    """One variant's step on a device: its dispatches, counter, whether its logits matched,
    its GPU ns a token in each round, and the steps its counter holds once timed."""

    name: str
    kernels: Kernels
    sequence: tuple
    count: Any
    logits_ok: bool | None
    phase: int = 1
    part: str = ""
    times: list[float] = field(default_factory=list)
    done: int = 0
    warm: int = 2

    def median(self) -> float:
        return float(np.median(self.times))

    def checked(self, steps: int) -> bool:
        """Its logits matched numpy (or were not checked) and its counter holds every step
        run: 2 to warm, one a check (build), then the timed ones."""
        return self.logits_ok is not False and self.done == self.warm + len(self.times) * steps


def picks(built: list[Built], steps: int) -> dict[str, Any]:
    """Per part (a matrix-vector part, or the attention with its output projection), the
    alternative whose step (the suite's with that part swapped) had the lowest median of
    the checked ones, where that is below the suite's own step's median: the Kernels fields
    it changes, those of `best`."""
    ok = [b for b in built if b.checked(steps)]
    tuned = next((b for b in ok if b.name == DEFAULT_NAME), None)
    out: dict[str, Any] = {}
    for part in dict.fromkeys(b.part for b in ok if b.part) if tuned else ():
        mine = [b for b in ok if b.part == part]
        if (fastest := min(mine, key=Built.median)).median() < tuned.median():
            out |= changed(tuned.kernels, fastest.kernels)
    return out


def changed(base: Kernels, other: Kernels) -> dict[str, Any]:
    """The Kernels fields in which `other` differs from `base`."""
    mine = asdict(base)
    return {k: v for k, v in asdict(other).items() if mine[k] != v}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for table.txt and decode_kernels.json")
    parser.add_argument("--tiny", action="store_true", help="the hidden-128 model (lavapipe)")
    parser.add_argument("--cache", type=int, default=128, help="KV cache positions (128)")
    parser.add_argument("--steps", type=int, help="steps a timed pass (48; tiny: 4)")
    parser.add_argument("--rounds", type=int, help="rounds over the variants (8; tiny: 2)")
    parser.add_argument("--budget", type=float, default=180.0,
                        help="seconds after which no new shape or variant starts (180; what "
                             "has started still finishes: on an H200 round 3's 11 variants "
                             "and 2 a shape took 89 s in all; round 4's 12 and 2 about as "
                             "long, with --swaps 21 and 2 about 160; round 5's 11 and 2 "
                             "89 s; round 6's 7 and 2 with --attentions --grids 65 s, "
                             "with --resident 528,1056 89 s)")
    parser.add_argument("--swaps", action="store_true",
                        help="also round 3's variants: `main` and the suite's step with one "
                             "matrix-vector part swapped for each of its alternatives")
    parser.add_argument("--aheads", action="store_true",
                        help="also round 5's variants: the loads ahead, and the ticket "
                             "attention under each output projection")
    parser.add_argument("--attentions", action="store_true",
                        help="also round 6's: the suite's step with its other attention "
                             "(`ticket+out=sg-l16` at 0.5B, `split` at 1.5B)")
    parser.add_argument("--grids", action="store_true",
                        help="also round 6's: the grid-barrier probe at each count of "
                             "--resident and, at those it passed, the MLP in one dispatch "
                             "(`grid=N`)")
    parser.add_argument("--heads", action="store_true",
                        help="also round 4's variants: the head attentions, each with its "
                             "output projection under each alternative")
    parser.add_argument("--checks", type=int,
                        help="steps after the warm-up whose logits are each checked against "
                             "numpy (16; tiny: 4)")
    parser.add_argument("--resident", default="",
                        help="with --grids, workgroup counts (comma-separated) that the "
                             "device runs at once: the grid-barrier probe's (barrier_probe, "
                             "on the first model's device) and the MLP's in one dispatch "
                             "(`grid=N`) (132,264: the H200's SMs, once and twice; tiny: 1)")
    parser.add_argument("--implementations", default="wgpu-native,dawn")
    args = parser.parse_args()
    args.shapes = [128] if args.tiny else [896, 1536]
    args.steps = args.steps or (4 if args.tiny else 48)
    args.rounds = args.rounds or (2 if args.tiny else 8)
    args.checks = args.checks or (4 if args.tiny else 16)
    args.resident = [int(n) for n in (args.resident or ("1" if args.tiny else "132,264"))
                     .split(",") if int(n) > 0] if args.grids else []
    return args


def per_dispatch_ns(device: Any, sequence: tuple, steps: int, tick: float, wait: Any
                    ) -> np.ndarray:
    """GPU ns of each dispatch of `steps` steps in one pass, from a timestamp before the
    first and after every dispatch (wgpu-native's write_timestamp inside a pass): an array
    of steps x dispatches a step."""
    from wgpu.backends.wgpu_native.extras import write_timestamp

    api = binding_of(device)
    count = len(sequence) * steps + 1
    queries = device.create_query_set(type=api.QueryType.timestamp, count=count)
    resolved = device.create_buffer(size=8 * count, usage=api.BufferUsage.QUERY_RESOLVE
                                    | api.BufferUsage.COPY_SRC)
    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    write_timestamp(compute, queries, 0)
    for i in range(steps * len(sequence)):
        pipeline, bind_group, x, y = sequence[i % len(sequence)]
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(x, y, 1)
        write_timestamp(compute, queries, i + 1)
    compute.end()
    encoder.resolve_query_set(queries, 0, count, resolved, 0)
    device.queue.submit([encoder.finish()])
    wait()
    ticks = np.frombuffer(device.queue.read_buffer(resolved), np.uint64).astype(np.int64)
    return (np.diff(ticks) * tick).reshape(steps, len(sequence))


def kernel_bytes(s: Shape, cache: int) -> dict[str, int]:
    """Bytes each fused kernel must read a token (decode_model.bytes_per_token's, split:
    they add up to it)."""
    h, q, kv, f, n = s.hidden, s.q_size, s.kv_size, s.mlp, s.layers
    head, cached = 4 * (s.vocab * h + h), 4 * n * 2 * (cache + 1) * kv
    return {"copy": 4 * h, "qkv_rope": 4 * n * ((q + 2 * kv) * h + h + q + 2 * kv),
            "attn_part": cached, "attn_head": cached, "attn_out": 4 * n * h * q,
            "o_proj": 4 * n * h * q,
            "gate_up": 4 * n * (2 * f * h + h), "matvec_add": 4 * n * f * h,
            "mlp_grid": 4 * n * (3 * f * h + h),
            "norm_matvec": head, "norm_matvec4": head, "count": 0}


def kernel_split(names: list[str], times: np.ndarray, floor_bytes: dict[str, int],
                 read_gb_s: float, stamp_ns: float) -> dict[str, dict]:
    """Per kernel (entry point): dispatches a token, GPU µs a token (each step's sum over
    that kernel's dispatches, the median over steps), the same less its dispatches' stamps
    (`stamp_ns` each; None where that or what it leaves is not above zero, as noise makes
    it on a CPU adapter), and its read floor in µs."""
    out = {}
    for name in dict.fromkeys(names):
        mine = [i for i, n in enumerate(names) if n == name]
        us = float(np.median(times[:, mine].sum(axis=1))) / 1e3
        less = us - len(mine) * stamp_ns / 1e3
        out[name] = {"dispatches": len(mine), "us_per_token": us,
                     "us_less_stamps": less if stamp_ns > 0 and less > 0 else None,
                     "floor_us": floor_bytes[kernel_of(name)] / read_gb_s / 1e3}
    return out


def barrier_probe(ctx: Context, counts: list[int], timer: Any, tick: float, wait: Any
                  ) -> list[dict]:
    """Per workgroup count (`counts`: each one the device is taken to run at once), what a
    grid-wide barrier (fusion_decode.wgsl's grid_barrier) costs against a boundary between
    dispatches: one dispatch of grid_sync's PROBE_ROUNDS rounds (two barriers each, each
    after a value written for the next workgroup) against a pass of as many dispatches of
    a round without barriers, one after another as the step's kernels, GPU µs a barrier and
    a boundary, the median of PROBE_PASSES passes of each, taken in turn. First one
    dispatch whose counters say whether every workgroup passed every barrier (none gave up
    waiting: all resident) and read the values written before it, at fresh addresses and at
    one written every round. It passes where every arrival came, none gave up and no read
    at a fresh address was stale, and only then is timed (its counters read again after the
    timed passes: one that gave up then fails it). Stale reads at the address written every
    round (round 5 on the H200: NVIDIA's L1 is not kept coherent between SMs, so a
    workgroup can read its own copy of a line it read before) are said apart: a grid kernel
    must never read, after a barrier, a line that a workgroup could have cached earlier in
    the dispatch (mlp_grid reads only such fresh addresses). A deadlock cannot hang the
    device: a workgroup gives up after SPIN loads and counts it."""
    out = []
    for n in counts:
        tickets = ctx.buffer(np.zeros(4, np.uint32))
        buffers = {3: ctx.buffer(np.zeros(PROBE_ROUNDS * n, np.float32)),
                   4: ctx.buffer(np.zeros(n, np.float32)), 13: tickets}
        sync = ctx.step(ctx.pipeline("grid_sync", WG=PROBE_WG, ROUNDS=PROBE_ROUNDS), buffers,
                        grid_for(n, 1))
        bare = ctx.step(ctx.pipeline("grid_sync", WG=PROBE_WG, ROUNDS=1, BARRIERS=0),
                        {**buffers, 13: ctx.buffer(np.zeros(4, np.uint32))}, grid_for(n, 1))
        timed_pass(ctx.device, (sync,), 1, None, tick, wait)
        first = np.frombuffer(ctx.device.queue.read_buffer(tickets), np.uint32).tolist()
        barriers = 2 * PROBE_ROUNDS
        row = {"workgroups": n, "threads": PROBE_WG, "barriers_a_dispatch": barriers,
               "passed": first[0] == barriers * n and first[1:3] == [0, 0],
               "same_address_coherent": first[3] == 0, "counters_first": first}
        times: dict[str, list[float]] = {"barrier": [], "boundary": []}
        for _ in range(PROBE_PASSES if row["passed"] else 0):
            times["barrier"].append(timed_pass(ctx.device, (sync,), 1, timer, tick, wait)[0]
                                    / barriers)
            times["boundary"].append(timed_pass(ctx.device, (bare,), barriers, timer, tick,
                                                wait)[0] / barriers)
        if times["barrier"]:
            row |= {f"{k}_us": float(np.median(v)) / 1e3 for k, v in times.items()}
            row |= {f"{k}_us_rounds": [t / 1e3 for t in v] for k, v in times.items()}
            after = np.frombuffer(ctx.device.queue.read_buffer(tickets), np.uint32).tolist()
            row["counters_after"] = after
            row["passed"] = after[1:3] == [0, 0]  # none gave up while timed: all resident
        out.append(row)
    return out


def probe_line(r: dict) -> str:
    """A probe record as a line: its counters (the verdict: every arrival, none gave up,
    no stale read at a fresh address; stale reads at one address said apart, as what a
    kernel must not do), and µs a barrier against a boundary."""
    c = r["counters_first"]
    head = (f"grid barrier, {r['workgroups']} workgroups of {r['threads']}: "
            f"{'passed' if r['passed'] else 'FAILED'} (arrivals {c[0]} of "
            f"{r['barriers_a_dispatch'] * r['workgroups']}, gave up {c[1]}, stale reads "
            f"fresh {c[2]}); same-address reads stale {c[3]} of "
            f"{r['barriers_a_dispatch'] // 2 * r['workgroups']}"
            + (" (none)" if r["same_address_coherent"] else
               " (a workgroup may read its own cached copy of an address another wrote in "
               "the dispatch: a grid kernel reads only addresses fresh to the dispatch)"))
    if "barrier_us" not in r:
        return head + "; not timed"
    a = r["counters_after"]
    return (head + f"; a barrier {r['barrier_us']:.2f} µs [{min(r['barrier_us_rounds']):.2f}-"
            f"{max(r['barrier_us_rounds']):.2f}] against a boundary {r['boundary_us']:.2f} µs "
            f"[{min(r['boundary_us_rounds']):.2f}-{max(r['boundary_us_rounds']):.2f}] "
            f"({r['barrier_us'] / r['boundary_us']:.2f}x); after the timed passes gave up "
            f"{a[1]}, stale reads fresh {a[2]} same-address {a[3]}")


def kernel_of(entry_point: str) -> str:
    """The kernel an entry point runs (kernel_bytes' key): less `_sg` (its sums by
    subgroups), `_ahead` (with workgroups that load ahead) and `_ticket` (attn_part with its
    combine)."""
    return entry_point.removesuffix("_sg").removesuffix("_ahead").removesuffix("_ticket")


def entry(dispatch: tuple) -> str:
    return dispatch[0].label.split(":")[-1]


def build(ctx: Context, engine: Engine, name: str, kernels: Kernels, expected: np.ndarray,
          tick: float, wait: Any, checks: int, phase: int = 1, part: str = "") -> Built:
    """The step with `kernels` on the engine's device, run twice, then `checks` times more
    in a pass of its own with its logits checked after each (a race between workgroups,
    attn_part_ticket's, would show in some of them)."""
    count = ctx.buffer(np.zeros(1, np.uint32))
    segments, logits = engine.tuned(kernels).steps("fused", count)
    sequence = sum(segments, ())
    timed_pass(ctx.device, sequence, 2, None, tick, wait)  # warm: pipelines, caches
    ok = True
    for _ in range(checks):
        timed_pass(ctx.device, sequence, 1, None, tick, wait)
        ok = check(ctx, logits, expected) and ok
    return Built(name, kernels, sequence, count, ok, phase, part, warm=2 + checks)


def time_rounds(device: Any, built: list[Built], args: argparse.Namespace, timer: Any,
                tick: float, wait: Any) -> None:
    """`args.rounds` rounds that time every step once, in a rotating order; then each
    counter read."""
    for r in range(args.rounds):
        for b in built[r % len(built):] + built[:r % len(built)]:
            b.times.append(timed_pass(device, b.sequence, args.steps, timer, tick, wait)[0]
                           / args.steps)
    for b in built:
        b.done = int(np.frombuffer(device.queue.read_buffer(b.count), np.uint32)[0])


def run_shape(binding_name: str, device: Any, timer: Any, tick: float, software: bool,
              weights: Weights, expected: np.ndarray, info: dict, args: argparse.Namespace,
              deadline: float, notes: list[str], probes: list[dict]
              ) -> tuple[list[dict], list[dict]]:
    """One shape on one device: every variant built and checked; the read floor and the
    GPU's time per dispatch; the variants timed in interleaved rounds (phase 1); then, where
    some part's alternative beat the suite's step, `best` (each part's fastest) built and
    timed against a fresh build of the suite's step in rounds of their own (phase 2, so the
    rounds that picked do not judge); a record per step, and per step its kernels' where
    timestamps inside a pass exist."""
    wait, features, where = waiter(device), device.features, f"{binding_name} {weights.shape.name}"
    ctx = Context(device, Group(fusion_kernel("decode")))
    engine = Engine(ctx, weights)
    built = build_all(ctx, engine, variants(engine.kernels, engine.sg_ctx is not None,
                                            args.swaps, args.heads, args.aheads,
                                            args.attentions),
                      expected, tick, wait, args, deadline, notes, where)
    read_gb_s = read_floor.read_gb_s(ctx, tick, wait, software)
    empty_ns = read_floor.dispatch_gpu_ns(ctx, tick, wait)
    base = {"implementation": binding_name, **info, "read_gb_s": read_gb_s,
            "empty_dispatch_us": empty_ns / 1e3, "subgroups": engine.sg_ctx is not None}
    print(f"{where}: {info['adapter']}, a stream reads {read_gb_s:.1f} GB/s, a dispatch "
          f"{empty_ns / 1e3:.2f} µs, timestamps inside passes: {INSIDE in features}, "
          f"subgroups: {engine.sg_ctx is not None}", flush=True)
    if weights.shape == MODELS[args.shapes[0]]:  # the probe once a device: the first model's
        for r in barrier_probe(ctx, args.resident, timer, tick, wait):
            probes.append({"implementation": binding_name, "adapter": info["adapter"], **r})
            print(f"{binding_name}: {probe_line(probes[-1])}", flush=True)
    passed = tuple(p["workgroups"] for p in probes
                   if p["implementation"] == binding_name and p["passed"])
    notes += [f"{where}: grid={n} left out (the barrier probe did not pass at {n} workgroups)"
              for n in args.resident if n not in passed]
    built += build_all(ctx, engine, grid_variants(engine.kernels, passed), expected, tick, wait,
                       args, deadline, notes, where)
    for b in [b for b in built if b.logits_ok is False]:
        built.remove(b)
        notes.append(f"{where}: {b.name} not timed (its logits did not match numpy in every "
                     f"one of {args.checks} steps)")
        print(notes[-1], flush=True)
    time_rounds(device, built, args, timer, tick, wait)
    chosen = picks(built, args.steps)
    if chosen and perf_counter() <= deadline:
        tuned = engine.kernels
        confirm = [build(ctx, engine, DEFAULT_NAME, tuned, expected, tick, wait, args.checks,
                         2),
                   build(ctx, engine, "best", replace(tuned, **chosen), expected, tick, wait,
                         args.checks, 2)]
        time_rounds(device, confirm, args, timer, tick, wait)
        built += confirm
    elif chosen:
        notes.append(f"{where}: best ({chosen}) left out (past the {args.budget:.0f} s "
                     "budget)")
    rows, kernel_rows = [], []
    for b in built:
        rows.append(record(base, weights, b, args))
        print(line(rows[-1]), flush=True)
        if INSIDE in features and binding_name == "wgpu-native":
            kernel_rows.append(stamped(device, b, weights, base, read_gb_s, args.steps, tick,
                                       wait))
            rows[-1]["stamped_ms_per_token"] = kernel_rows[-1]["stamped_ms_per_token"]
            print(f"    {kernel_cell(kernel_rows[-1])}", flush=True)
    return rows, kernel_rows


def build_all(ctx: Context, engine: Engine, named: dict[str, tuple[str, Kernels]],
              expected: np.ndarray, tick: float, wait: Any, args: argparse.Namespace,
              deadline: float, notes: list[str], where: str) -> list[Built]:
    """Each of `named` built and checked (build), or a note why not: past the budget, no
    subgroups, a pipeline the device's compiler refused."""
    built = []
    for name, (part, kernels) in named.items():
        if perf_counter() > deadline:
            notes.append(f"{where}: {name} left out (past the {args.budget:.0f} s budget)")
        elif needs_subgroups(kernels) and engine.sg_ctx is None:
            notes.append(f"{where}: {name} left out (the device has no subgroups)")
        else:
            try:
                built.append(build(ctx, engine, name, kernels, expected, tick, wait,
                                   args.checks, part=part))
            except UserError as exc:  # a pipeline this device's compiler refused
                notes.append(f"{where}: {name} left out ({exc})")
                print(notes[-1], flush=True)
    return built


def record(base: dict, weights: Weights, b: Built, args: argparse.Namespace) -> dict:
    """One timed step's record: its GPU time a token, the read floor, its dispatches times
    the GPU's time per dispatch, and the rest."""
    read = bytes_per_token(weights.shape, weights.cache)
    floor_ns = read / base["read_gb_s"]
    gpu, dispatches = b.median(), len(b.sequence)
    empty_ns = base["empty_dispatch_us"] * 1e3
    return {**base, "shape": weights.shape.name, "cache": weights.cache, "variant": b.name,
            "phase": b.phase, "kernels": asdict(b.kernels), "dispatches_per_token": dispatches,
            "steps": args.steps, "rounds": args.rounds, "gpu_ms_per_token": gpu / 1e6,
            "gpu_ms_per_token_rounds": [t / 1e6 for t in b.times],
            "bytes_per_token": read, "read_floor_ms": floor_ns / 1e6,
            "floor_multiple_read": gpu / floor_ns, "dispatch_ms": dispatches * empty_ns / 1e6,
            "excess_ms": (gpu - floor_ns - dispatches * empty_ns) / 1e6,
            "logits_match_numpy": b.logits_ok,
            "steps_counted": b.done == b.warm + len(b.times) * args.steps,
            "steps_checked": b.warm - 2}


def stamped(device: Any, b: Built, weights: Weights, base: dict, read_gb_s: float,
            steps: int, tick: float, wait: Any) -> dict:
    """Its kernels' GPU time a token from a pass with a timestamp after every dispatch."""
    dispatches = len(b.sequence)
    times = per_dispatch_ns(device, b.sequence, min(steps, (MOST_QUERIES - 1) // dispatches),
                            tick, wait)
    total = float(np.median(times.sum(axis=1)))
    stamp_ns = (total - b.median()) / dispatches  # what a stamp adds to a dispatch
    split = kernel_split([entry(d) for d in b.sequence], times,
                         kernel_bytes(weights.shape, weights.cache), read_gb_s, stamp_ns)
    return {**base, "shape": weights.shape.name, "variant": b.name, "phase": b.phase,
            "stamped_ms_per_token": total / 1e6, "stamp_us": stamp_ns / 1e3, "kernels": split}


def line(r: dict) -> str:
    ok = {None: "", True: " logits ok", False: " LOGITS WRONG"}[r["logits_match_numpy"]]
    ok += "" if r["steps_counted"] else " STEPS MISSING"
    times = r["gpu_ms_per_token_rounds"]
    return (f"{r['implementation']:12} {r['shape']:13} {r['variant']:14} {r['phase']} "
            f"{r['dispatches_per_token']:4} dispatches  GPU {r['gpu_ms_per_token']:7.3f} ms "
            f"[{min(times):.3f}-{max(times):.3f}]  floor {r['read_floor_ms']:6.3f} ms  "
            f"{r['floor_multiple_read']:5.2f}x  dispatches {r['dispatch_ms']:6.3f}  "
            f"excess {r['excess_ms']:6.3f}{ok}")


def table(rows: list[dict], kernel_rows: list[dict]) -> str:
    """The whole steps, then (where measured) each kernel's µs a token per variant, as
    markdown."""
    out = ["| implementation | model | variant | phase | dispatches | GPU ms/token "
           "[least-most] | read floor ms | multiple | dispatch ms | excess ms | checked |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        t = r["gpu_ms_per_token_rounds"]
        ok = r["logits_match_numpy"] is not False and r["steps_counted"]
        out.append(f"| {r['implementation']} | {r['shape']} | {r['variant']} | {r['phase']} | "
                   f"{r['dispatches_per_token']} | {r['gpu_ms_per_token']:.3f} "
                   f"[{min(t):.3f}-{max(t):.3f}] | {r['read_floor_ms']:.3f} | "
                   f"{r['floor_multiple_read']:.2f}x | {r['dispatch_ms']:.3f} | "
                   f"{r['excess_ms']:.3f} | {'yes' if ok else 'NO'} |")
    out += ["", "Phase 2 (each part's fastest checked alternative of phase 1, where faster "
            f"than {DEFAULT_NAME}, as one step, against a fresh build of {DEFAULT_NAME}, in "
            "rounds of their own):", "", *verdicts(rows)]
    if kernel_rows:
        out += ["", "Timestamps after every dispatch (one pass): per kernel its dispatches a "
                "token, µs a token stamped, the same less what a stamp adds to a dispatch "
                "(the stamped pass less the step's GPU time above, over its dispatches: "
                "the row `all`), and its read floor (the bytes it must read over the read "
                "bandwidth).", "",
                "| implementation | model | variant | kernel | dispatches | stamped µs | "
                "a stamp µs | less stamps µs | floor µs | multiple |",
                "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        steps = {(r["implementation"], r["shape"], r["variant"], r["phase"]): r for r in rows}
        for k in kernel_rows:
            r = steps[k["implementation"], k["shape"], k["variant"], k["phase"]]
            out.append(f"| {k['implementation']} | {k['shape']} | {k['variant']} | all | "
                       f"{r['dispatches_per_token']} | {1e3 * k['stamped_ms_per_token']:.1f} | "
                       f"{k['stamp_us']:.2f} | {1e3 * r['gpu_ms_per_token']:.1f} | "
                       f"{1e3 * r['read_floor_ms']:.1f} | {r['floor_multiple_read']:.2f}x |")
            out += [f"| | | | {name} | {f['dispatches']} | {f['us_per_token']:.1f} | | "
                    + ("n/a | " if f["us_less_stamps"] is None else
                       f"{f['us_less_stamps']:.1f} | ") + f"{f['floor_us']:.1f} | "
                    + (f"{f['us_less_stamps'] / f['floor_us']:.2f}x |"
                       if f["floor_us"] and f["us_less_stamps"] is not None else " |")
                    for name, f in k["kernels"].items()]
    return "\n".join(out) + "\n"


def verdicts(rows: list[dict]) -> list[str]:
    """A line per implementation and model: what `best` took and its phase-2 GPU time
    against the suite's step's, and whether every round of it was below every one of
    those."""
    out = []
    for where in dict.fromkeys((r["implementation"], r["shape"]) for r in rows):
        mine = {(r["variant"], r["phase"]): r for r in rows
                if (r["implementation"], r["shape"]) == where}
        best, tuned = mine.get(("best", 2)), mine.get((DEFAULT_NAME, 2))
        if best is None or tuned is None:
            out.append(f"- {' '.join(where)}: no phase 2 (no part's alternative beat "
                       f"{DEFAULT_NAME} in phase 1, or past the budget: the notes say)")
            continue
        b, t = best["gpu_ms_per_token_rounds"], tuned["gpu_ms_per_token_rounds"]
        took = ", ".join(f"{k} {v}" for k, v in best["kernels"].items()
                         if v != tuned["kernels"][k])
        ok = all(r["logits_match_numpy"] is not False and r["steps_counted"]
                 for r in (best, tuned))
        out.append(f"- {' '.join(where)}: best ({took}) {best['gpu_ms_per_token']:.3f} "
                   f"[{min(b):.3f}-{max(b):.3f}] ms a token against {DEFAULT_NAME}'s "
                   f"{tuned['gpu_ms_per_token']:.3f} [{min(t):.3f}-{max(t):.3f}]: "
                   f"{best['gpu_ms_per_token'] / tuned['gpu_ms_per_token']:.3f}x, "
                   f"{best['floor_multiple_read']:.2f}x the read floor; every round below "
                   f"every one of {DEFAULT_NAME}'s: {'yes' if max(b) < min(t) else 'no'}; "
                   f"checked: {'yes' if ok else 'NO'}")
    return out


def kernel_cell(k: dict) -> str:
    return ", ".join(f"{name} {f['dispatches']}x {f['us_per_token']:.1f}"
                     for name, f in k["kernels"].items())


def run_device(binding: Any, weights: Weights, expected: np.ndarray, args: argparse.Namespace,
               deadline: float, notes: list[str], probes: list[dict]) -> tuple[list, list]:
    """One shape on a device of its own from the binding's best adapter (run_shape)."""
    try:
        device, best, timer, tick, info = open_device(binding, (INSIDE, *SUBGROUP_FEATURES))
    except RuntimeError as exc:
        notes.append(str(exc))
        print(exc, flush=True)
        return [], []
    try:
        if timer is None:
            notes.append(f"{binding.name}: no timestamp queries, nothing timed")
            return [], []
        return run_shape(binding.name, device, timer, tick, best.info.is_software, weights,
                         expected, info, args, deadline, notes, probes)
    finally:
        device.destroy()


def main() -> None:
    args, start = arguments(), perf_counter()
    deadline = start + args.budget
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    kernel_rows: list[dict] = []
    notes: list[str] = []
    probes: list[dict] = []
    with ThreadPoolExecutor() as pool:  # numpy draws and multiplies without the GIL
        weights = dict(zip(args.shapes, pool.map(lambda h: Weights.of(MODELS[h], args.cache),
                                                 args.shapes), strict=True))
        models = {h: (w, e) for h, w, e in zip(args.shapes, weights.values(),
                                               pool.map(reference, weights.values()), strict=True)}
    print(f"weights and numpy logits in {perf_counter() - start:.1f} s", flush=True)
    bindings = [b for b in BINDINGS if b.name in args.implementations.split(",")]
    for b in bindings:
        if (missing := b.missing()) is not None:
            notes.append(missing)
            print(missing, flush=True)
    bindings = [b for b in bindings if b.missing() is None]
    for hidden in args.shapes:  # the smaller model first in every implementation
        for binding in bindings:
            if perf_counter() > deadline:
                notes.append(f"{binding.name} {MODELS[hidden].name}: left out (past the "
                             f"{args.budget:.0f} s budget)")
                continue
            more_rows, more_kernels = run_device(binding, *models[hidden], args, deadline,
                                                 notes, probes)
            rows += more_rows
            kernel_rows += more_kernels
            write(args, rows, kernel_rows, notes, probes, perf_counter() - start)  # if cut
            gc.collect()
    text = write(args, rows, kernel_rows, notes, probes, perf_counter() - start)
    print("\n" + text + "\n".join(notes))
    print(f"done in {perf_counter() - start:.1f} s")


def write(args: argparse.Namespace, rows: list[dict], kernel_rows: list[dict],
          notes: list[str], probes: list[dict], seconds: float) -> str:
    """table.txt and decode_kernels.json under OUT as they stand (after each device, so
    that a run cut off by its caller's timeout keeps what it finished); the table."""
    text = table(rows, kernel_rows)
    if probes:
        text += ("\nA grid-wide barrier against a boundary between dispatches (barrier_probe: "
                 f"{PROBE_ROUNDS} rounds of two barriers in one dispatch against as many "
                 f"dispatches, median of {PROBE_PASSES} passes [least-most]):\n\n"
                 + "".join(f"- {p['implementation']}: {probe_line(p)}\n" for p in probes))
    (args.out / "table.txt").write_text(text + "".join(f"\n{n}" for n in notes) + "\n")
    (args.out / "decode_kernels.json").write_text(json.dumps(
        {"argv": sys.argv, "steps": args.steps, "rounds": args.rounds, "cache": args.cache,
         "records": rows, "kernels": kernel_rows, "probes": probes, "notes": notes,
         "seconds": seconds},
        indent=1))
    return text


if __name__ == "__main__":
    main()
