"""Which fused decode kernels come closest to the memory floor? (issue 57)

On the best adapter of wgpu-native (and of Dawn, where `wgpudawn` imports), for Qwen2.5-0.5B
and 1.5B (f32, random weights, a KV cache of 128 positions), in two parts:

1. Each part of the fused step (PARTS: Q/K/V, the attention with the output projection,
   gate/up, down, the LM head) under each of its alternatives (SWEEP: the suite's kernels and
   the streamed kernels of workloads/decode_choices.Stream in several shapes and attention
   splits). The step built with one alternative (the other parts main's) has its logits
   checked against the numpy step; then that part's dispatches alone, every layer's in step
   order (each after the one before, as in the step), are timed in one pass of about
   `--part-dispatches` dispatches, PASSES passes, the median: the part's GPU µs a layer (the
   head's: a token), its gap after the dispatch before included, beside the bytes the part
   must read over the read bandwidth. Each part's fastest checked alternative is its pick.
2. Whole steps (VARIANTS, and `tuned`: every part's pick): logits and step count checked,
   GPU time a token from timestamps around a pass of `--steps` steps, `--rounds` rounds that
   time every variant once in a rotating order, the median (with the least and the most). On
   the same device: the read floor (the bytes a step must read over the read bandwidth of a
   stream kernel) and the GPU's own time per dispatch in one pass, as the suite's decode
   workers measure them (workloads/read_floor.py), so each row splits a token into the floor,
   its dispatches times that time, and the rest, the kernels' excess. Where the device
   writes timestamps inside a pass (wgpu-native's timestamp-query-inside-passes), one more
   pass per variant with a timestamp after every dispatch gives each kernel's GPU time a
   token (stamping costs each dispatch a few µs: compare those within a pass, not with 1).

Starts no new shape, part alternative or variant past `--budget` seconds, and says what it
left out. Writes table.txt and decode_kernels.json under OUT. From the repository root:

    python benchmarks/decode_kernels.py OUT                 # a GPU: 0.5B and 1.5B
    python benchmarks/decode_kernels.py OUT --tiny          # the hidden-128 model (lavapipe)
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from decode_floor import Group, check, open_device  # noqa: E402

from gpuoverhead.drivers.webgpu import BINDINGS  # noqa: E402
from gpuoverhead.gpu.pass_timer import timed_pass  # noqa: E402
from gpuoverhead.gpu.targets import binding_of  # noqa: E402
from gpuoverhead.gpu.wait import waiter  # noqa: E402
from gpuoverhead.suite.shaders import fusion_kernel  # noqa: E402
from gpuoverhead.workloads import read_floor  # noqa: E402
from gpuoverhead.workloads.decode import Engine  # noqa: E402
from gpuoverhead.workloads.decode_choices import Kernels, Stream  # noqa: E402
from gpuoverhead.workloads.decode_model import (  # noqa: E402
    MODELS,
    Shape,
    Weights,
    attention_block,
    bytes_per_token,
    reference,
)
from gpuoverhead.workloads.work import Context  # noqa: E402

S = Stream
#: Whole steps beside `tuned`: the first GPU call's kernels (main), its fastest (head4, the
#: suite's DEFAULT until this picks another), and one fixed choice of streamed kernels.
VARIANTS = {"main": Kernels(), "head4": Kernels(head4=True),
            "stream": Kernels(qkv=S(32, 1, 64), attention_workgroups=42, attn_out=S(64, 4),
                              gate_up=S(32, 1, 256, 32), down=S(128, 2, 256, 32),
                              head=S(32, 4, 256, 32))}
#: The parts of a step and their kernels (entry points), by which a built step's dispatches
#: of one part are found.
PARTS = {"qkv": ("qkv_rope", "qkv_rope4", "qkv_s"),
         "attn": ("attn_part", "attn_part_wide", "attn_out", "attn_out_s"),
         "gate_up": ("gate_up", "gate_up4", "gate_up_s"), "down": ("matvec_add", "down_s"),
         "head": ("norm_matvec", "norm_matvec4", "head_s")}
#: Each part's alternatives (Stream's defaults: 32 lanes, 1 row, 256 threads, 16 loads):
#: lanes a row from 16 to 256, 1 to 4 rows (pairs) a lane group, workgroups of 64 to 256,
#: 16 or 32 weight loads in flight a lane, the normed vector per lane or per workgroup; the
#: attention split into 1, 2, 3, 5 or 9 blocks of the cache (attention_workgroups 0, 28, 42,
#: 70, 128 at both models' heads) with main's attn_out or a streamed one.
SWEEP: dict[str, list[dict[str, Any]]] = {
    "qkv": [{}] + [{"qkv": s} for s in (
        S(32, 1, 64), S(32, 1, 64, 32), S(32, 2, 64, 32), S(64, 1, 64), S(64, 1, 128),
        S(16, 1, 64, 32), S(32, 1, 256), S(32, 1, 256, 16, True), S(128, 1, 128))],
    "attn": [{"attention_workgroups": w} | ({"attn_out": s} if s else {}) for w, s in (
        (128, None), (128, S(64, 4)), (128, S(32, 2)), (128, S(128, 4)), (70, None),
        (70, S(64, 4)), (42, None), (42, S(64, 4)), (42, S(64, 4, 256, 32)), (42, S(32, 2)),
        (28, None), (28, S(64, 4)), (0, None), (0, S(64, 4)), (0, S(64, 4, 256, 32)),
        (0, S(32, 1, 64)))],
    "gate_up": [{}] + [{"gate_up": s} for s in (
        S(32, 1), S(32, 1, 256, 32), S(32, 2, 256, 32), S(64, 1), S(64, 2), S(16, 1, 256, 32),
        S(32, 1, 128), S(32, 1, 64), S(128, 1), S(32, 2, 256, 16, True),
        S(64, 2, 256, 16, True))],
    "down": [{}] + [{"down": s} for s in (
        S(256, 1), S(128, 1), S(128, 2, 256, 32), S(64, 2, 256, 32), S(64, 4, 256, 32),
        S(256, 2, 256, 32), S(128, 1, 128), S(64, 1, 64, 32), S(32, 1, 128, 32))],
    "head": [{}, {"head4": True}] + [{"head": s} for s in (
        S(32, 4), S(32, 4, 256, 32), S(32, 2), S(32, 4, 256, 16, True),
        S(64, 4, 256, 16, True), S(16, 4, 256, 32))]}
#: Timed passes of a part (the median counts).
PASSES = 3
INSIDE = "timestamp-query-inside-passes"
#: Timestamps a query set holds at most (WebGPU's limit).
MOST_QUERIES = 4096


@dataclass
class Built:
    """One variant's step on a device: its dispatches, counter, whether its logits matched."""

    name: str
    kernels: Kernels
    sequence: tuple
    count: Any
    logits_ok: bool | None
    times: list[float] = field(default_factory=list)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for table.txt and decode_kernels.json")
    parser.add_argument("--tiny", action="store_true", help="the hidden-128 model (lavapipe)")
    parser.add_argument("--cache", type=int, default=128, help="KV cache positions (128)")
    parser.add_argument("--steps", type=int, help="steps a timed pass (48; tiny: 4)")
    parser.add_argument("--rounds", type=int, help="rounds over the variants (6; tiny: 2)")
    parser.add_argument("--part-dispatches", type=int, default=96,
                        help="dispatches a timed pass of one part, about (96; the head: 8)")
    parser.add_argument("--budget", type=float, default=75.0,
                        help="seconds after which no new shape, alternative or variant starts "
                             "(75; what has started still finishes: on an H200 the whole run "
                             "about 60 s, the last 1.5B device about 15)")
    parser.add_argument("--implementations", default="wgpu-native,dawn")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"parts swept, comma-separated, of {', '.join(PARTS)} (none: '')")
    args = parser.parse_args()
    args.shapes = [128] if args.tiny else [896, 1536]
    args.steps = args.steps or (4 if args.tiny else 48)
    args.rounds = args.rounds or (2 if args.tiny else 6)
    args.parts = [p for p in args.parts.split(",") if p]
    if bad := [p for p in args.parts if p not in PARTS]:
        parser.error(f"unknown part {bad[0]!r}; known: {', '.join(PARTS)}")
    return args


def label(changes: dict[str, Any], shape: Shape, cache: int) -> str:
    """An alternative's name: main's kernels, head4, or each Stream as lanes x rows / threads,
    loads (+ shared); the attention's blocks of the cache (nb)."""
    words = []
    if "attention_workgroups" in changes:
        block = attention_block(shape, cache, changes["attention_workgroups"])
        words.append(f"nb{-(-(cache + 1) // block)}")
    words += ["head4" for k in changes if k == "head4"]
    for s in (v for v in changes.values() if isinstance(v, Stream)):
        words.append(f"s{s.lanes}x{s.rows}/{s.wg} l{s.loads}{' shared' if s.shared else ''}")
    if not any(isinstance(v, Stream) or k == "head4" for k, v in changes.items()):
        words.append("main")
    return " ".join(words)


def part_bytes(s: Shape, cache: int, part: str) -> int:
    """Bytes a part must read at least: a layer's (the head's: a token's)."""
    h, q, kv, f = s.hidden, s.q_size, s.kv_size, s.mlp
    return 4 * {"qkv": (q + 2 * kv) * (h + 1) + h, "attn": h * q + 2 * (cache + 1) * kv + q,
                "gate_up": 2 * f * h + h, "down": h * f + f, "head": s.vocab * h + h}[part]


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


def kernel_split(names: list[str], times: np.ndarray) -> dict[str, dict]:
    """Per kernel (entry point): dispatches a token and GPU µs a token (each step's sum over
    that kernel's dispatches, the median over steps)."""
    out = {}
    for name in dict.fromkeys(names):
        mine = [i for i, n in enumerate(names) if n == name]
        out[name] = {"dispatches": len(mine),
                     "us_per_token": float(np.median(times[:, mine].sum(axis=1))) / 1e3}
    return out


def entry(dispatch: tuple) -> str:
    return dispatch[0].label.split(":")[-1]


def build(ctx: Context, engine: Engine, name: str, kernels: Kernels, expected: np.ndarray,
          tick: float, wait: Any) -> Built:
    """The step with `kernels` on the engine's device, run twice and its logits checked."""
    count = ctx.buffer(np.zeros(1, np.uint32))
    segments, logits = engine.tuned(kernels).steps("fused", count)
    sequence = sum(segments, ())
    timed_pass(ctx.device, sequence, 2, None, tick, wait)  # warm: pipelines, caches
    return Built(name, kernels, sequence, count, check(ctx, logits, expected))


def sweep(ctx: Context, engine: Engine, expected: np.ndarray, timer: Any, tick: float,
          wait: Any, base: dict, args: argparse.Namespace, deadline: float, notes: list[str]
          ) -> tuple[list[dict], Kernels, dict[str, str]]:
    """Every alternative of every swept part: a row each, and the step of each part's
    fastest checked alternative (main's where none was checked) with their names."""
    shape, cache = engine.w.shape, engine.cache
    rows: list[dict] = []
    picks: dict[str, tuple[float, str, dict]] = {}
    for part in args.parts:
        names = {label(changes, shape, cache): changes for changes in SWEEP[part]}
        for name, changes in names.items():  # (one of those the same on this shape)
            if perf_counter() > deadline:
                notes.append(f"{base['implementation']} {shape.name} {part}: {name} left out "
                             f"(past the {args.budget:.0f} s budget)")
                continue
            built = build(ctx, engine, name, replace(Kernels(), **changes), expected, tick,
                          wait)
            mine = tuple(d for d in built.sequence if entry(d) in PARTS[part])
            reps = max(1, (8 if part == "head" else args.part_dispatches) // len(mine))
            timed_pass(ctx.device, mine, 1, None, tick, wait)
            per = reps * (1 if part == "head" else shape.layers)
            times = [timed_pass(ctx.device, mine, reps, timer, tick, wait)[0] / per / 1e3
                     for _ in range(PASSES)]
            floor_us = part_bytes(shape, cache, part) / base["read_gb_s"] / 1e3
            rows.append({**base, "shape": shape.name, "part": part, "alternative": name,
                         "changes": {k: asdict(v) if isinstance(v, Stream) else v
                                     for k, v in changes.items()},
                         "dispatches": len(mine) // (1 if part == "head" else shape.layers),
                         "us": float(np.median(times)), "us_passes": times,
                         "floor_us": floor_us, "multiple": float(np.median(times)) / floor_us,
                         "logits_match_numpy": built.logits_ok})
            print(part_line(rows[-1]), flush=True)
            if built.logits_ok is not False and (part not in picks or
                                                 rows[-1]["us"] < picks[part][0]):
                picks[part] = (rows[-1]["us"], name, changes)
            del built, mine
    chosen = {part: name for part, (_, name, _) in picks.items()}
    for row in rows:
        row["pick"] = chosen.get(row["part"]) == row["alternative"]
    tuned = replace(Kernels(), **{k: v for _, _, c in picks.values() for k, v in c.items()})
    return rows, tuned, chosen


def part_line(r: dict) -> str:
    ok = {None: "", True: "", False: "  LOGITS WRONG"}[r["logits_match_numpy"]]
    t = r["us_passes"]
    return (f"  {r['implementation']:12} {r['shape']:13} {r['part']:8} {r['alternative']:30} "
            f"{r['us']:8.2f} µs [{min(t):.2f}-{max(t):.2f}]  floor {r['floor_us']:7.2f}  "
            f"{r['multiple']:5.2f}x{ok}")


def run_shape(binding_name: str, device: Any, timer: Any, tick: float, weights: Weights,
              expected: np.ndarray, base: dict, args: argparse.Namespace, deadline: float,
              notes: list[str]) -> tuple[list[dict], list[dict], list[dict], dict]:
    """One shape on one device: the parts swept, then every variant and `tuned` built and
    checked, timed in interleaved rounds; a record per variant, per part alternative, and
    per kernel where timestamps inside a pass exist, and the picks."""
    wait, features = waiter(device), device.features
    ctx = Context(device, Group(fusion_kernel("decode")))
    engine = Engine(ctx, weights)
    empty_ns = read_floor.dispatch_gpu_ns(ctx, tick, wait)
    parts, tuned, chosen = sweep(ctx, engine, expected, timer, tick, wait, base, args,
                                 deadline, notes)
    print(f"  tuned: {chosen}", flush=True)
    built = []
    for name, kernels in {**VARIANTS, **({"tuned": tuned} if chosen else {})}.items():
        if perf_counter() > deadline:
            notes.append(f"{binding_name} {weights.shape.name}: {name} left out (past the "
                         f"{args.budget:.0f} s budget)")
        else:
            built.append(build(ctx, engine, name, kernels, expected, tick, wait))
    for r in range(args.rounds):
        for b in built[r % len(built):] + built[:r % len(built)]:
            b.times.append(timed_pass(device, b.sequence, args.steps, timer, tick, wait)[0]
                           / args.steps)
    read = bytes_per_token(weights.shape, weights.cache)
    floor_ns = read / base["read_gb_s"]
    rows, kernel_rows = [], []
    for b in built:
        done = int(np.frombuffer(device.queue.read_buffer(b.count), np.uint32)[0])
        gpu, dispatches = float(np.median(b.times)), len(b.sequence)
        rows.append({**base, "shape": weights.shape.name, "cache": weights.cache,
                     "variant": b.name, "kernels": asdict(b.kernels),
                     "dispatches_per_token": dispatches, "steps": args.steps,
                     "rounds": args.rounds, "gpu_ms_per_token": gpu / 1e6,
                     "gpu_ms_per_token_rounds": [t / 1e6 for t in b.times],
                     "bytes_per_token": read, "read_floor_ms": floor_ns / 1e6,
                     "floor_multiple_read": gpu / floor_ns,
                     "empty_dispatch_us": empty_ns / 1e3,
                     "dispatch_ms": dispatches * empty_ns / 1e6,
                     "excess_ms": (gpu - floor_ns - dispatches * empty_ns) / 1e6,
                     "logits_match_numpy": b.logits_ok,
                     "steps_counted": done == 2 + args.rounds * args.steps})
        print(line(rows[-1]), flush=True)
        if INSIDE in features and binding_name == "wgpu-native":
            steps = min(args.steps, (MOST_QUERIES - 1) // dispatches)
            times = per_dispatch_ns(device, b.sequence, steps, tick, wait)
            split = kernel_split([entry(d) for d in b.sequence], times)
            total = float(np.median(times.sum(axis=1)))
            rows[-1]["stamped_ms_per_token"] = total / 1e6
            kernel_rows.append({**base, "shape": weights.shape.name, "variant": b.name,
                                "stamped_ms_per_token": total / 1e6, "kernels": split})
            print(f"    {kernel_cell(kernel_rows[-1])}", flush=True)
    pick = {"implementation": binding_name, "shape": weights.shape.name, "parts": chosen,
            "kernels": asdict(tuned)}
    return rows, parts, kernel_rows, pick


def line(r: dict) -> str:
    ok = {None: "", True: " logits ok", False: " LOGITS WRONG"}[r["logits_match_numpy"]]
    ok += "" if r["steps_counted"] else " STEPS MISSING"
    times = r["gpu_ms_per_token_rounds"]
    return (f"{r['implementation']:12} {r['shape']:13} {r['variant']:8} "
            f"{r['dispatches_per_token']:4} dispatches  GPU {r['gpu_ms_per_token']:7.3f} ms "
            f"[{min(times):.3f}-{max(times):.3f}]  floor {r['read_floor_ms']:6.3f} ms  "
            f"{r['floor_multiple_read']:5.2f}x  dispatches {r['dispatch_ms']:6.3f}  "
            f"excess {r['excess_ms']:6.3f}{ok}")


def table(rows: list[dict], parts: list[dict], kernel_rows: list[dict], picks: list[dict]
          ) -> str:
    """The whole steps, the tuned picks, each part's alternatives, then (where measured) each
    kernel's µs a token per variant, as markdown."""
    out = ["| implementation | model | variant | dispatches | GPU ms/token [least-most] | "
           "read floor ms | multiple | dispatch ms | excess ms | checked |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        t = r["gpu_ms_per_token_rounds"]
        ok = r["logits_match_numpy"] is not False and r["steps_counted"]
        out.append(f"| {r['implementation']} | {r['shape']} | {r['variant']} | "
                   f"{r['dispatches_per_token']} | {r['gpu_ms_per_token']:.3f} "
                   f"[{min(t):.3f}-{max(t):.3f}] | {r['read_floor_ms']:.3f} | "
                   f"{r['floor_multiple_read']:.2f}x | {r['dispatch_ms']:.3f} | "
                   f"{r['excess_ms']:.3f} | {'yes' if ok else 'NO'} |")
    out += ["", "tuned: each part's fastest checked alternative below.", ""]
    out += [f"- {p['implementation']} {p['shape']}: " + ", ".join(
        f"{k} {v}" for k, v in p["parts"].items()) for p in picks]
    out += ["", "Each part alone, its dispatches of every layer in one pass (the median of "
            f"{PASSES} passes): GPU µs a layer (the head: a token), its gap after the dispatch "
            "before included, against the bytes it must read over the read bandwidth.", "",
            "| implementation | model | part | alternative | dispatches | µs [least-most] | "
            "floor µs | multiple | checked | pick |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in parts:
        t = r["us_passes"]
        out.append(f"| {r['implementation']} | {r['shape']} | {r['part']} | "
                   f"{r['alternative']} | {r['dispatches']} | {r['us']:.2f} "
                   f"[{min(t):.2f}-{max(t):.2f}] | {r['floor_us']:.2f} | "
                   f"{r['multiple']:.2f}x | {'NO' if r['logits_match_numpy'] is False else 'yes'}"
                   f" | {'pick' if r.get('pick') else ''} |")
    if kernel_rows:
        out += ["", "Timestamps after every dispatch (one pass): ms a token in all, then per "
                "kernel its dispatches a token and µs a token.", "",
                "| implementation | model | variant | stamped ms/token | per kernel |",
                "| --- | --- | --- | ---: | --- |"]
        out += [f"| {k['implementation']} | {k['shape']} | {k['variant']} | "
                f"{k['stamped_ms_per_token']:.3f} | {kernel_cell(k)} |" for k in kernel_rows]
    return "\n".join(out) + "\n"


def kernel_cell(k: dict) -> str:
    return ", ".join(f"{name} {f['dispatches']}x {f['us_per_token']:.1f}"
                     for name, f in k["kernels"].items())


def run_device(binding: Any, weights: Weights, expected: np.ndarray, args: argparse.Namespace,
               deadline: float, notes: list[str]) -> tuple[list, list, list, list]:
    """One shape on a device of its own from the binding's best adapter: its read floor,
    then run_shape."""
    try:
        device, best, timer, tick, info = open_device(binding, (INSIDE,))
    except RuntimeError as exc:
        notes.append(str(exc))
        print(exc, flush=True)
        return [], [], [], []
    try:
        if timer is None:
            notes.append(f"{binding.name}: no timestamp queries, nothing timed")
            return [], [], [], []
        read_gb_s = read_floor.read_gb_s(Context(device, Group(fusion_kernel("decode"))), tick,
                                         waiter(device), best.info.is_software)
        base = {"implementation": binding.name, **info, "read_gb_s": read_gb_s}
        print(f"{binding.name} {weights.shape.name}: {info['adapter']}, a stream reads "
              f"{read_gb_s:.1f} GB/s, timestamps inside passes: {INSIDE in device.features}",
              flush=True)
        rows, parts, kernel_rows, pick = run_shape(binding.name, device, timer, tick, weights,
                                                   expected, base, args, deadline, notes)
        return rows, parts, kernel_rows, [pick]
    finally:
        device.destroy()


def main() -> None:
    args, start = arguments(), perf_counter()
    deadline = start + args.budget
    args.out.mkdir(parents=True, exist_ok=True)
    found: tuple[list, list, list, list] = ([], [], [], [])
    notes: list[str] = []
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
            for into, more in zip(found, run_device(binding, *models[hidden], args, deadline,
                                                    notes), strict=True):
                into += more
            gc.collect()
    rows, parts, kernel_rows, picks = found
    text = table(rows, parts, kernel_rows, picks)
    print("\n" + text + "\n".join(notes))
    seconds = perf_counter() - start
    print(f"done in {seconds:.1f} s")
    (args.out / "table.txt").write_text(text + "".join(f"\n{n}" for n in notes) + "\n")
    (args.out / "decode_kernels.json").write_text(json.dumps(
        {"argv": sys.argv, "steps": args.steps, "rounds": args.rounds, "cache": args.cache,
         "part_dispatches": args.part_dispatches, "passes": PASSES, "records": rows,
         "parts": parts, "picks": picks, "kernels": kernel_rows, "notes": notes,
         "seconds": seconds}, indent=1))


if __name__ == "__main__":
    main()
