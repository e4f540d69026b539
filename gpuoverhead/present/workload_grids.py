"""The terminal's grids of the fusion workloads' estimates: speedups, the browser tax, the
token and host-read loops, a decode token's GPU time taken apart, readback and sampling,
the crossover, torch.compile's builds (console.print_summary prints them after the kernel
benchmarks' grids)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from rich.table import Table

from gpuoverhead.cases import GPU_ARGMAX, HOST_UNITS, HYBRID, NEVER, PIPELINED, SYNCED
from gpuoverhead.present import format as fmt
from gpuoverhead.results.columns import ERROR
from gpuoverhead.torch_forms import COMPILE

#: The columns these grids read: the fusion rows are taken with these alone, as each
#: selection and picked row of the grids costs a pandas take per column (a summary has 44).
_READ = ("benchmark", "elements", "implementation", "family", "k", "variant", "encoding",
         "sync", "call", "metric", "estimator", "value", "ci_low", "ci_high", "ci_level")


def _fusion_rows(summary: pd.DataFrame) -> pd.DataFrame:
    if "variant" not in summary:
        return summary.iloc[0:0]
    if "methodology" not in summary:  # these rows already (`grids` takes them once for all)
        return summary
    return summary.loc[(summary["methodology"] == "fusion") & summary["process"].isna(),
                       [c for c in _READ if c in summary]]


def pick(part: pd.DataFrame, variant: str, metric: str) -> Any:
    """The first row of `part` of this variant and metric, or None. Compared as numpy
    arrays: a boolean Series and the frame it selects cost about a millisecond each, and
    a fused suite's grids pick thousands of times (seconds of `show`)."""
    at = np.flatnonzero((part["variant"].to_numpy() == variant)
                        & (part["metric"].to_numpy() == metric))
    return part.iloc[at[0]] if at.size else None


def first_values(part: pd.DataFrame) -> dict[tuple[str, str], float]:
    """The value of the first row of `part` for each (sync, metric): a grid's cells looked up
    in a dict, not each selected by a boolean mask (a pandas take per column, about a
    millisecond a cell)."""
    found: dict[tuple[str, str], float] = {}
    for sync, metric, value in zip(part["sync"].to_numpy(), part["metric"].to_numpy(),
                                   part["value"].to_numpy(), strict=True):
        found.setdefault((sync, metric), value)
    return found


def ratio_cells(r: Any) -> list[str]:
    if r is None:
        return ["", ""]
    return [fmt.value(r.value, "ratio"),
            f"{fmt.value(r.ci_low, 'ratio')}–{fmt.value(r.ci_high, 'ratio')}"]


def fusion_grid(summary: pd.DataFrame) -> Table | None:
    """Per fusion case: one unit of work unfused and fused (slopes: the wait amortized), the
    speedup with its CI, and the speedups when each unit is synced and on the GPU."""
    rows = _fusion_rows(summary)
    rows = rows[rows.variant.isin(("fused", "unfused"))]
    if rows.empty:
        return None
    table = Table(title="Fusion: one unit of work (µs), unfused / fused speedups")
    for name in ("benchmark", "impl.", "k", "encoding", "unfused", "fused", "speedup",
                 "95% CI", "synced", "GPU"):
        table.add_column(name, justify="left" if name in ("benchmark", "impl.", "encoding")
                         else "right")
    for (bench, elements), group in rows.groupby(["benchmark", "elements"], sort=False):
        label = fmt.literal(f"{bench} {elements:,} el.")
        # A family's unfused and fused forms may be two implementations (PyTorch: eager,
        # and a CUDA graph or torch.compile). GPU time (a timestamps twin) is measured in
        # one encoding and shown with it.
        for (_, k, encoding), both in group.groupby(["family", "k", "encoding"], sort=False):
            unfused_rows = both[both.variant == "unfused"]
            fused_rows = both[both.variant == "fused"]
            # A row per fused form (PyTorch has two: a CUDA graph and torch.compile).
            for _, fused_part in (fused_rows.groupby("implementation", sort=False, dropna=False)
                                  if not fused_rows.empty else [(None, fused_rows)]):
                part = pd.concat([unfused_rows, fused_part])
                impl = " / ".join(dict.fromkeys(part["implementation"]))
                unfused, fused = (pick(part, v, "per_unit_ns") for v in ("unfused", "fused"))
                table.add_row(label, fmt.literal(impl), str(k), fmt.literal(encoding),
                              *(fmt.value(r.value, "time") if r is not None else "—"
                                for r in (unfused, fused)),
                              *ratio_cells(pick(part, "fused", "fusion_speedup")),
                              *(ratio_cells(pick(part, "fused", m))[0]
                                for m in ("fusion_speedup_synced", "fusion_gpu_speedup")))
                label = ""
        table.add_section()
    return table


def tax_grid(summary: pd.DataFrame) -> Table | None:
    """Per fusion case the browser ran and each native WebGPU implementation (the row's
    `call`): the page's time a unit over theirs with the wait amortized (`browser_tax`) and
    with each unit synced alone (`browser_tax_synced`), with the intervals over pairs, and
    its GPU time a unit over theirs (`browser_tax_gpu`: the kernels' compilers)."""
    rows = _fusion_rows(summary)
    taxes = rows[rows.metric == "browser_tax"] if not rows.empty else rows
    if taxes.empty:
        return None
    table = Table(title="Browser tax: one unit of work in the browser over native WebGPU")
    for name in ("benchmark", "impl.", "k", "form", "over", "tax", "95% CI", "synced",
                 "95% CI", "GPU"):
        table.add_column(name, justify="left" if name in ("benchmark", "impl.", "form",
                                                          "over") else "right")
    for (bench, elements), part in taxes.groupby(["benchmark", "elements"], sort=False):
        label = fmt.literal(f"{bench} {elements:,} el.")
        for r in part.itertuples():
            theirs = rows[(rows.benchmark == bench) & (rows.elements == elements)
                          & (rows.implementation == r.implementation) & (rows.k == r.k)
                          & (rows.call == r.call)]
            synced, gpu = (pick(theirs, r.variant, m)
                           for m in ("browser_tax_synced", "browser_tax_gpu"))
            table.add_row(label, *map(fmt.literal, (r.implementation, r.k, r.variant, r.call)),
                          *ratio_cells(r), *ratio_cells(synced), ratio_cells(gpu)[0])
            label = ""
        table.add_section()
    return table


#: A unit's parts in `split_grid`: (column, sync of the case, metric, hint).
_SPLIT = (("wall", "wait", "per_unit_ns", "time"), ("issue", "wait", "cpu_per_unit_ns", "time"),
          ("GPU", "timestamps", "gpu_ns", "time"),
          ("wait", "wait", "wait_per_unit_ns", "difference"),
          ("synced", "wait", "latency_ns", "time"),
          ("floor", "wait", "completion_floor_ns", "time"))


def split_grid(summary: pd.DataFrame) -> Table | None:
    """Where a browser tax was measured: per implementation and fusion case, a unit's wall
    time with the wait amortized as its issue time, GPU time and wait, beside one unit
    synced alone and the completion floor it waited on."""
    rows = _fusion_rows(summary)
    if rows.empty or not (rows.metric == "browser_tax").any():
        return None
    table = Table(title="One unit of work (µs): wall = issue + GPU + wait; synced, and its "
                        "completion floor")
    columns = ("benchmark", "impl.", "k", "form", *(c for c, *_ in _SPLIT))
    for name in columns:
        table.add_column(name, justify="left" if name in columns[:4] and name != "k"
                         else "right")
    forms = rows[rows.variant.isin(("unfused", "fused"))]
    for keys, part in forms.groupby(["benchmark", "elements", "implementation", "k",
                                     "variant"], sort=False):
        found = first_values(part)
        cells = [fmt.value(found[sync, metric], hint) if (sync, metric) in found else "—"
                 for _, sync, metric, hint in _SPLIT]
        table.add_row(fmt.literal(f"{keys[0]} {keys[1]:,} el."),
                      *map(fmt.literal, keys[2:]), *cells)
    return table


def token_loop_grid(summary: pd.DataFrame) -> Table | None:
    """Per decode form and encoding: tokens per second of the token loop (synced, pipelined)
    and from the slope, CPU per token in each loop, GPU per token and its floor multiples
    (data sheet, measured read stream)."""
    rows = _fusion_rows(summary)
    looped = rows[rows.sync.isin((SYNCED, PIPELINED)) & (rows.metric == "tokens_per_s")] \
        if not rows.empty else rows  # the recurrent step's loops give no tokens
    if looped.empty:
        return None
    rows = rows[rows.benchmark.isin(set(looped.benchmark))]
    table = Table(title="Decode token loop: tokens/s, CPU and GPU per token (µs)")
    columns = ("benchmark", "impl.", "k", "form", "encoding", "synced", "pipelined", "slope",
               "cpu synced", "cpu pipel.", "GPU", "floor x", "read x")
    for name in columns:
        table.add_column(name, justify="left" if name in columns[:5] else "right")
    cells = (("synced", "tokens_per_s", "rate"), ("pipelined", "tokens_per_s", "rate"),
             ("wait", "tokens_per_s", "rate"), ("synced", "cpu_per_token_ns", "time"),
             ("pipelined", "cpu_per_token_ns", "time"), ("timestamps", "gpu_ns", "time"),
             ("timestamps", "floor_multiple", "ratio"),
             ("timestamps", "floor_multiple_read", "ratio"))
    for keys, part in rows.groupby(["benchmark", "elements", "implementation", "k",
                                    "variant"], sort=False):
        timed = part.sync == "timestamps"
        gpu = first_values(part[timed])
        for encoding, mine in part[~timed].groupby("encoding", sort=False):
            found = {**gpu, **first_values(mine)}  # no key in both: their syncs differ
            table.add_row(fmt.literal(f"{keys[0]} {keys[1]:,} el."), fmt.literal(keys[2]),
                          str(keys[3]), fmt.literal(keys[4]), fmt.literal(encoding),
                          *(fmt.value(found[sync, metric], hint) if (sync, metric) in found
                            else "—" for sync, metric, hint in cells))
    return table


#: A decode token's GPU time and its parts (methods/fusion._token_parts), as the grid shows
#: them: the read floor, the dispatches' own GPU time, the kernels' excess.
TOKEN_PARTS = (("GPU", "gpu_ns"), ("read floor", "read_floor_ns"),
               ("dispatches", "dispatch_gpu_ns"), ("kernels' excess", "kernel_excess_ns"))


def token_parts_grid(summary: pd.DataFrame) -> Table | None:
    """Per decode form a worker measured the floors for: its GPU time a token (µs, the
    one-pass slope) and its parts, each with its interval and its share of the GPU time."""
    rows = _fusion_rows(summary)
    rows = rows[(rows.sync == "timestamps") & rows.metric.isin([m for _, m in TOKEN_PARTS])] \
        if not rows.empty else rows
    if rows.empty or "kernel_excess_ns" not in set(rows.metric):
        return None
    table = Table(title="Decode GPU time a token taken apart (µs, 95% CI; share of the GPU "
                        "time)")
    for name in ("benchmark", "impl.", "k", "form", *(label for label, _ in TOKEN_PARTS)):
        table.add_column(name, justify="left" if name in ("benchmark", "impl.", "form")
                         else "right")
    for (bench, elements, impl, k, variant), part in rows.groupby(
            ["benchmark", "elements", "implementation", "k", "variant"], sort=False):
        picks = [pick(part, variant, metric) for _, metric in TOKEN_PARTS]
        if picks[-1] is None:
            continue
        gpu = picks[0].value if picks[0] is not None else math.nan
        table.add_row(fmt.literal(f"{bench} {elements:,} el."),
                      *map(fmt.literal, (impl, k, variant)),
                      *(fmt.with_ci(r.value, r.ci_low, r.ci_high, "time", r.ci_level)
                        + (f" ({r.value / gpu:.0%})" if i and gpu > 0 else "")
                        if r is not None else "—" for i, r in enumerate(picks)))
    return table


def host_read_grid(summary: pd.DataFrame) -> Table | None:
    """Per form with host-read loops (the recurrent step's `host_reads`): its step in the
    loop that reads only after its last (µs), each read form's slowdown over that, and the
    hybrid step's over the unfused one's, each with its interval."""
    rows = _fusion_rows(summary)
    rows = rows[rows.metric.isin(("step_ns", "sync_slowdown", "hybrid_slowdown"))] \
        if not rows.empty else rows
    if rows.empty:
        return None
    table = Table(title="Host reads in a loop: µs a step unread; slowdown reading "
                        "every step, every 16, and the hybrid step (95% CI)")
    for name in ("benchmark", "impl.", "form", "unread", "synced", "pipelined", "hybrid"):
        table.add_column(name, justify="left" if name in ("benchmark", "impl.", "form")
                         else "right")
    for (bench, elements, impl), part in rows.groupby(["benchmark", "elements",
                                                      "implementation"], sort=False):
        for variant in ("unfused", "fused"):
            base = pick(part[part.sync == NEVER], variant, "step_ns")
            if base is None:
                continue
            picks = [pick(part[part.sync == s], variant, "sync_slowdown")
                     for s in (SYNCED, PIPELINED)]
            picks.append(pick(part, HYBRID, "hybrid_slowdown") if variant == "unfused"
                         else None)
            table.add_row(fmt.literal(f"{bench} {elements:,} el."), fmt.literal(impl), variant,
                          fmt.value(base.value, "time"),
                          *(fmt.with_ci(r.value, r.ci_low, r.ci_high, "ratio")
                            if r is not None else "—" for r in picks))
    return table


def readback_grid(summary: pd.DataFrame) -> Table | None:
    """Per size (the readback workload): one readback's latency, a token sampled on the GPU
    (4 bytes read) and on the CPU (every logit read), and the CPU's over the GPU's."""
    rows = _fusion_rows(summary)
    rows = rows[rows.variant.isin(HOST_UNITS)] if not rows.empty else rows
    if rows.empty:
        return None
    table = Table(title="Readback and sampling: µs a unit (N = 1); CPU argmax over GPU's")
    for name in ("benchmark", "bytes", "impl.", *HOST_UNITS, "cpu/gpu (95% CI)"):
        table.add_column(name, justify="left" if name in ("benchmark", "impl.") else "right")
    for (bench, elements, impl), part in rows.groupby(["benchmark", "elements",
                                                      "implementation"], sort=False):
        picks = [pick(part, v, "latency_ns") for v in HOST_UNITS]
        ratio = pick(part, GPU_ARGMAX, "cpu_over_gpu")
        table.add_row(fmt.literal(bench), f"{4 * elements:,}", fmt.literal(impl),
                      *(fmt.value(r.value, "time") if r is not None else "—" for r in picks),
                      fmt.with_ci(ratio.value, ratio.ci_low, ratio.ci_high, "ratio")
                      if ratio is not None else "—")
    return table


def crossover_grid(summary: pd.DataFrame) -> Table | None:
    """Matmul per size M: issuing cost, synced latency and GPU time of one matmul (µs), then
    the size M where GPU time reaches the overhead."""
    rows = _fusion_rows(summary)
    rows = rows[rows.variant.isin(("single", "crossover"))]
    if rows.empty:
        return None
    table = Table(title="Matmul: where GPU time overtakes dispatch overhead (µs)")
    for name in ("benchmark", "impl.", "M", "per dispatch", "synced", "GPU"):
        table.add_column(name, justify="left" if name in ("benchmark", "impl.") else "right")
    for (bench, impl), group in rows.groupby(["benchmark", "implementation"], sort=False):
        label = fmt.literal(bench)
        for k, part in group[group.variant == "single"].groupby("k", sort=True):
            cells = [pick(part, "single", m) for m in ("per_unit_ns", "latency_ns", "gpu_ns")]
            table.add_row(label, fmt.literal(impl), str(k),
                          *(fmt.value(r.value, "time") if r is not None else "—" for r in cells))
            label = ""
        for r in group[group.variant == "crossover"].itertuples():
            size = f"{r.value:.0f} [{r.ci_low:.0f}–{r.ci_high:.0f}]" \
                if math.isfinite(r.value) else "not reached"
            table.add_row("", fmt.literal(impl), "crossover" if r.metric == "crossover_size"
                          else "crossover, synced", size, "", "")
        table.add_section()
    return table


def compile_grid(summary: pd.DataFrame) -> Table | None:
    """Per torch.compile case of a workload: its build in seconds (the compile and one
    unit; over processes, with the interval where there are several), or the message of
    the build that failed (RecursionError, the suite's compile_limit_s): `summary` with its
    error rows."""
    rows = _fusion_rows(summary)
    rows = rows[(rows.implementation == COMPILE) & rows.metric.isin(("build_ns", ERROR))] \
        if not rows.empty else rows
    if rows.empty:
        return None
    table = Table(title="torch.compile: seconds to compile and run one unit, or its failure")
    for name in ("benchmark", "k", "build (s)", "interval", "failed"):
        table.add_column(name, justify="right" if name in ("k", "build (s)", "interval")
                         else "left")
    for (bench, elements), part in rows.groupby(["benchmark", "elements"], sort=False):
        label = fmt.literal(f"{bench} {elements:,} el.")
        for r in part.sort_values("k").itertuples():
            built = r.metric != ERROR
            table.add_row(label, str(r.k), f"{r.value / 1e9:.1f}" if built else "—",
                          f"{r.ci_low / 1e9:.1f}–{r.ci_high / 1e9:.1f}"
                          if built and math.isfinite(r.ci_low) else "",
                          "" if built else fmt.literal(str(r.estimator)[:160]))
            label = ""
    return table


def grids(summary: pd.DataFrame) -> list[Table | None]:
    """Every grid of this module, in the order they print (None where a run has none)."""
    rows = _fusion_rows(summary)  # once, not once a grid: a take a column each time
    return [fusion_grid(rows), tax_grid(rows), split_grid(rows), token_loop_grid(rows),
            token_parts_grid(rows), host_read_grid(rows), readback_grid(rows),
            crossover_grid(rows)]
