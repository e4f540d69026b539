"""How far is the decode step from the memory floor? (issue 27, first part)

On the best adapter that wgpu-native (and Dawn, where `wgpudawn` imports) finds, builds the
decode engines of gpuoverhead/workloads/decode.py for Qwen2.5-0.5B and 1.5B (f32, random
weights), and for caches of 128 and 2048, unfused and fused, runs `--steps` steps in one
compute pass, timed by timestamp queries at the pass's start and end (and by the wall
clock from submit to the end of the work, one wait), and prints per implementation, shape,
cache and form: GPU ms per token, bytes read per token (every weight once, norms, biases,
the KV cache) and GPU time as a multiple of the memory floor (bytes / `--bandwidth`, and
bytes / the read bandwidth of a stream kernel on the same device: workloads/read_floor.py). Both
caches run on one upload of the weights (Engine.at): the cache of 128 attends to the first
128 positions of the 2048 one (and writes its token at 128, so it runs second). The logits
of both are checked against the numpy step, so a fast kernel is also a right one.

`--loop` adds, per form, the token loop's tokens/s (synced: the token id read back every
step; pipelined: every 16; one pass and one submit a step) and CPU per token, its tokens
checked against numpy's greedy loop at the weights' own cache. `--kernels` adds, per shape
and cache, the GPU time of each fused kernel of the first
layer and of one LM-head chunk, each repeated in a pass (what one dispatch costs, its gap
after the one before included), and an empty dispatch; `--sweep` times the fused step of
the first shape, every matrix-vector part main's, at each matrix-vector workgroup size and
loads per lane. The fused kernels' variants side by side:
benchmarks/investigations/decode_kernels.py. The device gets the adapter's largest storage
binding and buffer (the LM head in as few chunks as they allow) and its subgroups where
offered (the suite's fused step sums by them: workloads/decode_choices). `--tiny`: the
hidden-128 model, a few steps (for lavapipe). Run from the repository root:

    python benchmarks/investigations/decode_floor.py --bandwidth 3350 --json OUT.json
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from time import perf_counter, perf_counter_ns
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpuoverhead.cases import READBACK_EVERY  # noqa: E402
from gpuoverhead.drivers.webgpu import BINDINGS  # noqa: E402
from gpuoverhead.gpu import adapters  # noqa: E402
from gpuoverhead.gpu.pass_timer import PassTimer, timed_pass  # noqa: E402
from gpuoverhead.gpu.wait import waiter  # noqa: E402
from gpuoverhead.suite.shaders import fusion_kernel  # noqa: E402
from gpuoverhead.workloads import decode, read_floor  # noqa: E402
from gpuoverhead.workloads.decode_choices import MATVEC_PARTS, Matvec  # noqa: E402
from gpuoverhead.workloads.decode_model import (  # noqa: E402
    MODELS,
    TOKEN,
    TOLERANCE,
    Greedy,
    Weights,
    bytes_per_token,
    reference,
)
from gpuoverhead.workloads.work import Context, encoded, read_loop  # noqa: E402

FORMS = ("unfused", "fused")
#: The fused kernels of a layer, in order, and the layer's weight each reads (None: none).
FUSED = (("qkv_rope", "wqkv"), ("attn_part", None), ("attn_out", "wo"), ("gate_up", "wgu"),
         ("matvec_add", "wdown"))


@dataclass
class Group:
    """What Context needs of a group: the kernel."""

    kernel: Any


def open_device(binding: Any, wanted: tuple[str, ...] = ()
                ) -> tuple[Any, Any, PassTimer | None, float, dict]:
    """The binding's best adapter's device (timestamps and the `wanted` features where
    offered), its timer, tick."""
    found = adapters.discover([binding])[0]
    if not found:
        raise RuntimeError(f"{binding.name} offers no adapter here")
    best = found[0]
    stamps = "timestamp-query" in best.adapter.features
    wide = {k: best.adapter.limits[k] for k in adapters.BUFFER_LIMITS}  # the LM head's chunks
    features = [f for f in ("timestamp-query", *wanted) if f in best.adapter.features]
    device, notes = binding.request_device(best.adapter, features, wide)
    timer = PassTimer(device) if stamps else None
    tick = binding.tick_ns(device.queue) if stamps else 1.0
    return device, best, timer, tick, {"adapter": best.info.label, **notes}


def run_shape(device: Any, timer: PassTimer | None, tick: float, weights: Weights,
              expected: dict[int, np.ndarray], args: argparse.Namespace, base: dict
              ) -> list[dict]:
    """Every cache and form of one shape on one device: a record each."""
    ctx = Context(device, Group(fusion_kernel("decode")))
    engine, wait, rows = decode.Engine(ctx, weights), waiter(device), []
    greedy = Greedy(weights, expected[weights.cache])  # numpy's tokens, shared by the forms
    for cache in args.caches:
        at = engine.at(cache)
        for form in FORMS:
            count = ctx.buffer(np.zeros(1, np.uint32))
            segments, logits = at.steps(form, count)
            sequence = sum(segments, ())
            timed_pass(device, sequence, 2, None, tick, wait)  # warm: pipelines, caches
            gpu, wall = timed_pass(device, sequence, args.steps, timer, tick, wait)
            done = int(np.frombuffer(device.queue.read_buffer(count), np.uint32)[0])
            rows.append(record(base, weights, cache, form, gpu, wall, args, len(sequence),
                               done == args.steps + 2,
                               check(ctx, logits, expected[cache])))
            print(line(rows[-1]), flush=True)
            if args.loop:
                rows[-1].update(token_loop_figures(device, at, form, args,
                                                   greedy if cache == weights.cache else None))
                print(loop_line(rows[-1]), flush=True)
        if args.kernels:
            rows += kernel_rows(device, timer, tick, at, wait, base, weights, cache)
    if args.sweep and weights.shape.hidden == args.shapes[0]:
        rows += sweep(device, timer, tick, engine.at(min(args.caches)), wait, base, weights,
                      args)
    return rows


def at_cache(weights: Weights, cache: int) -> Weights:
    """The weights as an engine's `at(cache)` sees them: the first cache + 1 positions of
    every layer's caches (the numpy step of that view is its reference)."""
    keep = (cache + 1) * weights.shape.kv_size
    layers = [{**layer, "kcache": layer["kcache"][:keep], "vcache": layer["vcache"][:keep]}
              for layer in weights.layers]
    return Weights(weights.shape, cache, layers, weights.final_norm, weights.head)


def token_loop_figures(device: Any, engine: Any, form: str, args: argparse.Namespace,
                       greedy: Greedy | None) -> dict:
    """Tokens/s of the token loop (workloads/work.read_loop), each step one pass and one
    submit: synced (the token read back after every step) and pipelined (every
    READBACK_EVERY steps), `--steps` steps each after 4 to warm; the token after them
    against numpy's greedy loop where it is known (None: not checked)."""
    ctx = engine.ctx
    count = ctx.buffer(np.zeros(1, np.uint32))
    token = ctx.buffer(np.array([TOKEN], np.uint32))
    sequence = sum(engine.steps(form, count, token)[0], ())

    def step() -> None:
        device.queue.submit([encoded(device, sequence).finish()])

    read = ctx.reader(token, np.uint32)
    figures: dict[str, Any] = {}
    for name, every in (("synced", 1), ("pipelined", READBACK_EVERY)):
        ctx.queue.write_buffer(token, 0, np.array([TOKEN], np.uint32))
        op = read_loop(step, (lambda: device.queue.read_buffer(token), every))
        op(4)
        start = perf_counter_ns()
        end = op(args.steps)[0]
        wall = perf_counter_ns() - start
        want = None if greedy is None else greedy.after(4 + args.steps)
        figures.update({f"{name}_tokens_per_s": args.steps * 1e9 / wall,
                        f"{name}_cpu_ms_per_token": (end - start) / args.steps / 1e6,
                        f"{name}_tokens_match_numpy": None if want is None
                        else int(read()[0]) == want})
    return figures


def loop_line(r: dict) -> str:
    def ok(name: str) -> str:
        return {None: "", True: " tokens ok", False: " TOKENS WRONG"}[
            r[f"{name}_tokens_match_numpy"]]

    return "    token loop: " + "  ".join(
        f"{name} {r[f'{name}_tokens_per_s']:7.1f} tokens/s (CPU "
        f"{r[f'{name}_cpu_ms_per_token']:.3f} ms/token){ok(name)}"
        for name in ("synced", "pipelined"))


def check(ctx: Context, logits: Any, expected: np.ndarray | None) -> bool | None:
    if expected is None:
        return None
    got = ctx.reader(logits, np.float32)()
    return bool(np.allclose(got, expected, rtol=TOLERANCE,
                            atol=TOLERANCE / 10 * np.abs(expected).max()))


def record(base: dict, weights: Weights, cache: int, form: str, gpu: float | None,
           wall: float, args: argparse.Namespace, dispatches: int, counted: bool,
           logits_ok: bool | None) -> dict:
    read = bytes_per_token(weights.shape, cache)
    floor_ms = read / (args.bandwidth * 1e9) * 1e3
    gpu_ms = None if gpu is None else gpu / args.steps / 1e6
    return {**base, "shape": weights.shape.name, "hidden": weights.shape.hidden,
            "cache": cache, "form": form, "steps": args.steps,
            "dispatches_per_token": dispatches, "gpu_ms_per_token": gpu_ms,
            "wall_ms_per_token": wall / args.steps / 1e6, "bytes_per_token": read,
            "floor_ms": floor_ms,
            "floor_multiple": None if gpu_ms is None else gpu_ms / floor_ms,
            "read_floor_ms": None if not base["read_gb_s"] else read / base["read_gb_s"] / 1e6,
            "floor_multiple_read": None if gpu_ms is None or not base["read_gb_s"]
            else gpu_ms / (read / base["read_gb_s"] / 1e6),
            "steps_counted": counted, "logits_match_numpy": logits_ok}


def line(r: dict) -> str:
    gpu = "  —  " if r["gpu_ms_per_token"] is None else f"{r['gpu_ms_per_token']:7.3f}"
    multiple = "—" if r["floor_multiple"] is None else f"{r['floor_multiple']:5.2f}x"
    if r["floor_multiple_read"] is not None:
        multiple += f" ({r['floor_multiple_read']:5.2f}x the stream's)"
    ok = {None: "", True: " logits ok", False: " LOGITS WRONG"}[r["logits_match_numpy"]]
    ok += "" if r["steps_counted"] else " STEPS MISSING"
    return (f"{r['implementation']:12} {r['shape']:13} cache {r['cache']:5} {r['form']:8} "
            f"GPU {gpu} ms/token  wall {r['wall_ms_per_token']:7.3f}  "
            f"{r['bytes_per_token'] / 1e9:6.3f} GB  floor {r['floor_ms']:6.3f} ms  "
            f"{multiple}  {r['dispatches_per_token']} dispatches{ok}")


def kernel_rows(device: Any, timer: PassTimer | None, tick: float, engine: Any, wait: Any,
                base: dict, weights: Weights, cache: int) -> list[dict]:
    """GPU µs per dispatch of each fused kernel of layer 0, a head chunk and `count`,
    each repeated in one pass."""
    if timer is None:
        return []
    ctx = engine.ctx
    count = ctx.buffer(np.zeros(1, np.uint32))
    segments, _ = engine.steps("fused", count)
    layer0 = segments[0][1:]  # after the embedding copy
    kernels = [(name, engine.layers[0][w].size if w else 0, s)
               for (name, w), s in zip(FUSED, layer0, strict=True)]
    kernels += [("norm_matvec (head chunk)", engine.head[0].size, segments[-1][0]),
                ("count (empty)", 0, segments[-1][-1])]
    rows = []
    for name, size, step in kernels:
        reps = max(4, min(64, (4 << 30) // max(size, 1)))  # a whole head: 4 GiB a pass
        timed_pass(device, (step,), 4, None, tick, wait)
        gpu, _ = timed_pass(device, (step,), reps, timer, tick, wait)
        us = gpu / reps / 1e3
        rows.append({**base, "shape": weights.shape.name, "cache": cache, "kernel": name,
                     "gpu_us_per_dispatch": us, "weight_bytes": size,
                     "weight_gb_per_s": size / us / 1e3 if size else None})
        rate = f"  {size / us / 1e3:7.1f} GB/s" if size else ""
        print(f"    {base['implementation']:12} {weights.shape.name:13} cache {cache:5} "
              f"{name:26} {us:8.2f} µs{rate}", flush=True)
    return rows


def sweep(device: Any, timer: PassTimer | None, tick: float, engine: Any, wait: Any,
          base: dict, weights: Weights, args: argparse.Namespace) -> list[dict]:
    """The fused step, every matrix-vector part main's, at each matrix-vector workgroup size
    and loads per lane."""
    engine = engine.tuned(replace(engine.kernels, **dict.fromkeys(MATVEC_PARTS, "main")))
    rows, saved = [], (decode.MATVEC_WG, decode.ALL_MATVECS["main"])
    for wg in (64, 128, 256):
        for loads in (4, 8, 16):
            decode.MATVEC_WG, decode.ALL_MATVECS["main"] = wg, Matvec(lane_loads=loads)
            count = engine.ctx.buffer(np.zeros(1, np.uint32))
            sequence = sum(engine.steps("fused", count)[0], ())
            timed_pass(device, sequence, 2, None, tick, wait)
            gpu, _ = timed_pass(device, sequence, args.steps // 2, timer, tick, wait)
            ms = None if gpu is None else gpu / (args.steps // 2) / 1e6
            rows.append({**base, "shape": weights.shape.name, "cache": engine.cache,
                         "sweep_matvec_wg": wg, "sweep_lane_loads": loads,
                         "gpu_ms_per_token": ms})
            print(f"    sweep {base['implementation']:12} matvec WG {wg:3} loads/lane "
                  f"{loads:2}: {ms if ms is None else round(ms, 3)} ms/token", flush=True)
    decode.MATVEC_WG, decode.ALL_MATVECS["main"] = saved
    return rows


def summary(rows: list[dict]) -> list[str]:
    """The issue's two gates per implementation and shape (fused, f32)."""
    out = []
    fused = {(r["implementation"], r["shape"], r["cache"]): r
             for r in rows if r.get("form") == "fused" and r["gpu_ms_per_token"] is not None}
    for (impl, shape, cache), r in sorted(fused.items()):
        caches = [c for i, s, c in fused if (i, s) == (impl, shape)]
        if cache != min(caches):
            continue
        longest = max(caches)
        ratio = fused[(impl, shape, longest)]["gpu_ms_per_token"] / r["gpu_ms_per_token"]
        read = "" if r["floor_multiple_read"] is None else \
            f" ({r['floor_multiple_read']:.2f}x at the stream's {r['read_gb_s']:.0f} GB/s)"
        out.append(f"{impl:12} {shape:13} fused: {r['floor_multiple']:.2f}x the "
                   f"floor at cache {cache}{read} (goal <= 2.0), cache {longest} / {cache}: "
                   f"{ratio:.2f}x (goal <= 1.3)")
    return out


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bandwidth", type=float, default=3350.0,
                        help="memory bandwidth in GB/s (default 3350: an H100 SXM's HBM3)")
    parser.add_argument("--json", type=Path, help="write the records here")
    parser.add_argument("--tiny", action="store_true", help="the hidden-128 model, few steps")
    parser.add_argument("--steps", type=int, help="steps per pass (default 256; tiny: 16)")
    parser.add_argument("--implementations", default="wgpu-native,dawn")
    parser.add_argument("--kernels", action="store_true", help="per-kernel GPU times")
    parser.add_argument("--sweep", action="store_true", help="matvec workgroup sweep")
    parser.add_argument("--loop", action="store_true",
                        help="the token loop's tokens/s, synced and pipelined, per form")
    args = parser.parse_args()
    args.shapes = [128] if args.tiny else [896, 1536]
    args.caches = (2048, 128)  # the weights' own cache first: a shorter one overwrites it
    args.steps = args.steps or (16 if args.tiny else 256)
    return args


def main() -> None:
    args, start = arguments(), perf_counter()
    rows: list[dict] = []
    notes: list[str] = []
    with ThreadPoolExecutor() as pool:  # weights shared by implementations; numpy per cache
        weights = dict(zip(args.shapes, pool.map(lambda h: Weights.of(
            MODELS[h], max(args.caches)), args.shapes), strict=True))
        steps = {(h, c): pool.submit(reference, at_cache(weights[h], c))
                 for h in args.shapes for c in args.caches}
        models = {h: (weights[h], {c: steps[(h, c)].result() for c in args.caches})
                  for h in args.shapes}
    print(f"weights and numpy logits in {perf_counter() - start:.1f} s", flush=True)
    for binding in BINDINGS:
        if binding.name not in args.implementations.split(","):
            continue
        if (missing := binding.missing()) is not None:
            notes.append(missing)
            print(missing, flush=True)
            continue
        try:
            device, best, timer, tick, info = open_device(binding, tuple(decode.SUBGROUP_FEATURES))
        except RuntimeError as exc:
            notes.append(str(exc))
            print(exc, flush=True)
            continue
        read_gb_s = read_floor.read_gb_s(
            Context(device, Group(fusion_kernel("decode"))), tick, waiter(device),
            best.info.is_software) if timer else None
        base = {"implementation": binding.name, **info, "read_gb_s": read_gb_s}
        print(f"{binding.name}: {info['adapter']}, a stream reads "
              f"{read_gb_s or float('nan'):.0f} GB/s", flush=True)
        for hidden in args.shapes:
            rows += run_shape(device, timer, tick, *models[hidden], args, base)
            gc.collect()
        device.destroy()
    gates = summary(rows)
    print("\n".join(gates))
    print(f"done in {perf_counter() - start:.1f} s")
    if args.json:
        args.json.write_text(json.dumps({"bandwidth_gb_s": args.bandwidth, "steps": args.steps,
                                         "records": rows, "summary": gates, "notes": notes,
                                         "seconds": perf_counter() - start}, indent=1))


if __name__ == "__main__":
    main()
