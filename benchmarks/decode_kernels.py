"""Which fused decode kernels come closest to the memory floor? (issue 57)

On the best adapter of wgpu-native (and of Dawn, where `wgpudawn` imports), builds the fused
decode step of Qwen2.5-0.5B and 1.5B (f32, random weights, a KV cache of 128 positions)
under each kernel variant of VARIANTS (workloads/decode.Kernels; a variant whose feature the
device lacks is left out and said so), checks each one's logits against the numpy step and
its step count, and times its GPU time a token with timestamp queries around one pass of
`--steps` steps: `--rounds` rounds, each timing every variant of the shape once in a
rotating order, the median over rounds (with the least and the most). In the same process,
on the same device: the read floor (the bytes a step must read over the read bandwidth of a
stream kernel) and the GPU's own time per dispatch in one pass (the step's `count` kernel),
both as the suite's decode workers measure them (workloads/read_floor.py), so each row
splits a token into the floor, its dispatches times that time, and the rest, the kernels'
excess. Where the
device writes timestamps inside a pass (wgpu-native's timestamp-query-inside-passes), one
more pass per variant with a timestamp after every dispatch gives each kernel's GPU time a
token (the `kernel` lines and table). Starts no new shape or variant past `--budget`
seconds, and says what it left out. Writes table.txt and decode_kernels.json under OUT.
Run from the repository root:

    python benchmarks/decode_kernels.py OUT                 # a GPU: 0.5B and 1.5B
    python benchmarks/decode_kernels.py OUT --tiny          # the hidden-128 model (lavapipe)
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
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
from gpuoverhead.suite.shaders import atomic_kernel, fusion_kernel  # noqa: E402
from gpuoverhead.workloads import read_floor  # noqa: E402
from gpuoverhead.workloads.decode import Engine, Kernels  # noqa: E402
from gpuoverhead.workloads.decode_model import MODELS, Weights, bytes_per_token, reference  # noqa: E402
from gpuoverhead.workloads.work import Context  # noqa: E402

#: The variants, each what it changes from "main" (today's kernels): the LM head four rows
#: a lane group with its normed vector made once per workgroup; Q/K/V and gate/up so too;
#: both; the MLP in one dispatch with float atomics (4 dispatches a layer); the attention
#: and output projection in one dispatch with float atomics (4 a layer); both of those
#: with head4 and layer4 (3 a layer), and head4, layer4 and the atomic MLP (4 a layer).
VARIANTS = {"main": Kernels(), "head4": Kernels(head4=True), "layer4": Kernels(layer4=True),
            "head4+layer4": Kernels(head4=True, layer4=True),
            "atomic-mlp": Kernels(atomic_mlp=True), "attn-wo": Kernels(attn_wo=True),
            "fewest": Kernels(head4=True, layer4=True, atomic_mlp=True, attn_wo=True),
            "all": Kernels(head4=True, layer4=True, atomic_mlp=True)}
ATOMIC = "shader-float32-atomic"
INSIDE = "timestamp-query-inside-passes"
#: Timestamps a query set holds at most (WebGPU's limit).
MOST_QUERIES = 4096


@dataclass
class Built:
    """One variant's step on a device: its dispatches, counter, whether its logits matched."""

    name: str
    sequence: tuple
    count: Any
    logits_ok: bool | None
    times: list[float]


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for table.txt and decode_kernels.json")
    parser.add_argument("--tiny", action="store_true", help="the hidden-128 model (lavapipe)")
    parser.add_argument("--cache", type=int, default=128, help="KV cache positions (128)")
    parser.add_argument("--steps", type=int, help="steps a timed pass (64; tiny: 8)")
    parser.add_argument("--rounds", type=int, help="rounds over the variants (8; tiny: 3)")
    parser.add_argument("--budget", type=float, default=90.0,
                        help="seconds after which no new shape or variant starts (90; the "
                             "variants built by then still take their rounds: at 1.5B, 8 x 8 "
                             "passes of 64 steps of about 2.5 ms, 10 s on an H200)")
    parser.add_argument("--implementations", default="wgpu-native,dawn")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated, of {', '.join(VARIANTS)}")
    args = parser.parse_args()
    args.shapes = [128] if args.tiny else [896, 1536]
    args.steps = args.steps or (8 if args.tiny else 64)
    args.rounds = args.rounds or (3 if args.tiny else 8)
    if bad := [v for v in args.variants.split(",") if v not in VARIANTS]:
        parser.error(f"unknown variant {bad[0]!r}; known: {', '.join(VARIANTS)}")
    return args


def per_dispatch_ns(binding_name: str, device: Any, sequence: tuple, steps: int, tick: float,
                    wait: Any) -> np.ndarray:
    """GPU ns of each dispatch of `steps` steps in one pass, from a timestamp before the
    first and after every dispatch (wgpu-native's write_timestamp inside a pass): an array
    of steps x dispatches a step."""
    from wgpu.backends.wgpu_native.extras import write_timestamp

    assert binding_name == "wgpu-native", binding_name
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


def build(ctx: Context, engine: Engine, name: str, kernels: Kernels, atomic_ctx: Context | None,
          expected: np.ndarray, tick: float, wait: Any) -> Built:
    """The variant's fused step on the engine's device, run twice and its logits checked."""
    atomic = kernels.atomic_mlp or kernels.attn_wo
    tuned = engine.tuned(kernels, ctx=atomic_ctx if atomic else ctx)
    count = ctx.buffer(np.zeros(1, np.uint32))
    segments, logits = tuned.steps("fused", count)
    sequence = sum(segments, ())
    timed_pass(ctx.device, sequence, 2, None, tick, wait)  # warm: pipelines, caches
    return Built(name, sequence, count, check(ctx, logits, expected), [])


def run_shape(binding_name: str, device: Any, timer: Any, tick: float, weights: Weights,
              expected: np.ndarray, base: dict, args: argparse.Namespace, deadline: float,
              notes: list[str]) -> tuple[list[dict], list[dict]]:
    """Every variant of one shape: built and checked, then timed in interleaved rounds;
    a record per variant, and per kernel where timestamps inside a pass exist."""
    wait, features = waiter(device), device.features
    ctx = Context(device, Group(fusion_kernel("decode")))
    atomic_ctx = ctx.with_kernel(atomic_kernel(ctx.kernel)) if ATOMIC in features else None
    engine = Engine(ctx, weights)
    empty_ns = read_floor.dispatch_gpu_ns(ctx, tick, wait)
    built = []
    for name in args.variants.split(","):
        kernels = VARIANTS[name]
        if (kernels.atomic_mlp or kernels.attn_wo) and atomic_ctx is None:
            notes.append(f"{binding_name}: {name} left out (the device has no {ATOMIC})")
        elif perf_counter() > deadline:
            notes.append(f"{binding_name} {weights.shape.name}: {name} left out (past the "
                         f"{args.budget:.0f} s budget)")
        else:
            built.append(build(ctx, engine, name, kernels, atomic_ctx, expected, tick, wait))
    for r in range(args.rounds):
        for b in built[r % len(built):] + built[:r % len(built)]:
            b.times.append(timed_pass(device, b.sequence, args.steps, timer, tick, wait)[0]
                           / args.steps)
    read = bytes_per_token(weights.shape, weights.cache)
    floor_ns = read / base["read_gb_s"]
    rows, kernels_rows = [], []
    for b in built:
        done = int(np.frombuffer(device.queue.read_buffer(b.count), np.uint32)[0])
        gpu = float(np.median(b.times))
        dispatches = len(b.sequence)
        rows.append({**base, "shape": weights.shape.name, "cache": weights.cache,
                     "variant": b.name, "kernels": asdict(VARIANTS[b.name]),
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
            times = per_dispatch_ns(binding_name, device, b.sequence, steps, tick, wait)
            names = [p.label.split(":")[-1] for p, *_ in b.sequence]
            split = kernel_split(names, times)
            total = float(np.median(times.sum(axis=1)))
            rows[-1]["stamped_ms_per_token"] = total / 1e6
            kernels_rows.append({**base, "shape": weights.shape.name, "variant": b.name,
                                 "stamped_ms_per_token": total / 1e6, "kernels": split})
            print(f"    {kernel_cell(kernels_rows[-1])}", flush=True)
    return rows, kernels_rows


def line(r: dict) -> str:
    ok = {None: "", True: " logits ok", False: " LOGITS WRONG"}[r["logits_match_numpy"]]
    ok += "" if r["steps_counted"] else " STEPS MISSING"
    times = r["gpu_ms_per_token_rounds"]
    return (f"{r['implementation']:12} {r['shape']:13} {r['variant']:13} "
            f"{r['dispatches_per_token']:4} dispatches  GPU {r['gpu_ms_per_token']:7.3f} ms "
            f"[{min(times):.3f}-{max(times):.3f}]  floor {r['read_floor_ms']:6.3f} ms  "
            f"{r['floor_multiple_read']:5.2f}x  dispatches {r['dispatch_ms']:6.3f}  "
            f"excess {r['excess_ms']:6.3f}{ok}")


def table(rows: list[dict], kernel_rows: list[dict]) -> str:
    """The variants, then (where measured) each kernel's µs a token per variant, as markdown."""
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
               deadline: float, notes: list[str]) -> tuple[list[dict], list[dict]]:
    """One shape on a device of its own from the binding's best adapter: its read floor,
    then run_shape."""
    try:
        device, best, timer, tick, info = open_device(binding, (ATOMIC, INSIDE))
    except RuntimeError as exc:
        notes.append(str(exc))
        print(exc, flush=True)
        return [], []
    try:
        if timer is None:
            notes.append(f"{binding.name}: no timestamp queries, nothing timed")
            return [], []
        read_gb_s = read_floor.read_gb_s(Context(device, Group(fusion_kernel("decode"))), tick,
                                         waiter(device), best.info.is_software)
        base = {"implementation": binding.name, **info, "read_gb_s": read_gb_s}
        print(f"{binding.name} {weights.shape.name}: {info['adapter']}, a stream reads "
              f"{read_gb_s:.1f} GB/s, features: "
              f"{', '.join(f for f in (ATOMIC, INSIDE) if f in device.features) or 'neither'}",
              flush=True)
        return run_shape(binding.name, device, timer, tick, weights, expected, base, args,
                         deadline, notes)
    finally:
        device.destroy()


def main() -> None:
    args, start = arguments(), perf_counter()
    deadline = start + args.budget
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    kernel_rows: list[dict] = []
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
            more, split = run_device(binding, *models[hidden], args, deadline, notes)
            rows += more
            kernel_rows += split
            gc.collect()
    text = table(rows, kernel_rows)
    print("\n" + text + "\n".join(notes))
    seconds = perf_counter() - start
    print(f"done in {seconds:.1f} s")
    (args.out / "table.txt").write_text(text + "".join(f"\n{n}" for n in notes) + "\n")
    (args.out / "decode_kernels.json").write_text(json.dumps(
        {"argv": sys.argv, "steps": args.steps, "rounds": args.rounds, "cache": args.cache,
         "records": rows, "kernels": kernel_rows, "notes": notes, "seconds": seconds},
        indent=1))


if __name__ == "__main__":
    main()
