"""What the terminal shows of results: the summary grids, adapters, warnings (stdout/stderr)."""

from __future__ import annotations

import math
import sys
from typing import Any

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpuoverhead import encodings
from gpuoverhead.cases import GPU_ARGMAX, HOST_UNITS, HYBRID, NEVER, PIPELINED, SYNCED
from gpuoverhead.present import format as fmt
from gpuoverhead.records import AdapterInfo
from gpuoverhead.results.columns import ERROR

# Piped output keeps whole lines: rich would cut tables to 80 columns.
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

#: Rows of the summary per group: (label, methodology, encoding, sync, layer, metric, call).
_ROWS = [("naive", "naive", "submit", "wait", "wrapper", "latency_ns", ""),
         ("naive readback", "naive", "submit", "readback", "wrapper", "latency_ns", "")]
for _encoding in encodings.NAMES:
    _ROWS += [(f"{_encoding} wall", "sequential", _encoding, "wait", "wrapper",
               "per_dispatch_ns", ""),
              ("  cpu", "sequential", _encoding, "wait", "wrapper", "cpu_per_dispatch_ns", ""),
              ("    api", "sequential", _encoding, "wait", "wrapper", "api_ns", ""),
              ("    python", "sequential", _encoding, "wait", "wrapper", "python_ns", ""),
              ("    api/ref.", "sequential", _encoding, "wait", "native", "reference_ratio",
               "cpu_per_dispatch_ns")]
_ROWS += [("gpu", "sequential", "dispatch", "timestamps", "wrapper", "gpu_ns", ""),
          ("fixed wait", "sequential", "submit", "wait", "wrapper", "fixed_ns", ""),
          ("naive/submit", "sequential", "submit", "wait", "wrapper", "inflation", ""),
          ("naive/dispatch", "sequential", "dispatch", "wait", "wrapper", "inflation", "")]


def summary_grid(summary: pd.DataFrame) -> Table:
    """Per group and implementation the headline figures: estimate, interval (its coverage
    where under 95%) and half-width relative to it.

    Per encoding: wall time per op (the throughput cost; `gpu-bound` where GPU time is most
    of it), CPU time per op (issue time, read before the wait), split into `api` (the
    native implementation) and `python` where the layers ran, and the native layer against
    the reference loop. `fixed wait` is the submit fit's intercept; `naive/*` are inflation
    ratios.
    """
    table = Table(title="Dispatch overhead per op (µs; ratios marked x): wall time, CPU "
                        "(issue) time, GPU time")
    for name, justify in (("benchmark", "left"), ("measure", "left"), ("estimate", "right"),
                          ("interval", "right"), ("±", "right"), ("bound", "left"),
                          ("rounds", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    combined = summary[summary["process"].isna()] if "process" in summary else summary
    combined = combined[combined["variant"].fillna("") == ""] if "variant" in combined \
        else combined
    for (bench, elements, impl), rows in combined.groupby(
            ["benchmark", "elements", "implementation"], sort=False):
        processes = int(rows["processes"].max()) if "processes" in rows else 1
        labels = [str(bench), f"{elements:,} el.", str(impl),
                  f"{processes} process{'es' if processes > 1 else ''}"]
        for name, method, encoding, sync, layer, metric, call in _ROWS:
            hit = rows[(rows.methodology == method) & (rows.encoding == encoding)
                       & (rows.sync == sync) & (rows.layer == layer) & (rows.metric == metric)
                       & (rows.call == call)]
            if hit.empty:
                continue
            r = hit.iloc[0]
            table.add_row(labels.pop(0) if labels else "", name, *_shown(r),
                          getattr(r, "bound", "") or "", str(r.rounds))
        table.add_section()
    return table


def _shown(r: pd.Series) -> tuple[str, str, str]:
    """Estimate, interval and half-width of a row; a ratio over a reference loop whose cost
    is below its sweep's resolution (written as +inf, no interval) is said to be that."""
    if r.metric == "reference_ratio" and not math.isfinite(r.value):
        return "ref. below resolution", "—", ""
    return fmt.value(r.value, r.hint), fmt.interval(r), fmt.relative(r)


def implementations_grid(summary: pd.DataFrame) -> Table | None:
    """Implementations side by side per group: naive latency and per-dispatch cost of each
    wrapper-layer case, with its ratio to the fastest way measured to do that work."""
    if "ratio_to_fastest" not in summary or summary["implementation"].nunique() < 2:
        return None
    rows = summary[summary["metric"].isin(("latency_ns", "per_dispatch_ns"))
                   & (summary["layer"] == "wrapper") & summary["process"].isna()
                   & (summary["methodology"] != "breakdown")]
    table = Table(title="Implementations side by side (µs; ratio to the fastest)")
    for name in ("benchmark", "measure", "implementation", "encoding", "median", "vs fastest"):
        table.add_column(name, justify="right" if name in ("median", "vs fastest") else "left")
    for (bench, elements), group in rows.groupby(["benchmark", "elements"], sort=False):
        label = f"{bench} {elements:,} el."
        for metric, title in (("latency_ns", "naive"), ("per_dispatch_ns", "per dispatch")):
            mine = group[(group.metric == metric) & (group.sync == "wait")]
            for r in mine.sort_values("value").itertuples():
                ratio = r.ratio_to_fastest
                table.add_row(label, title, r.implementation, r.encoding,
                              fmt.value(r.value, r.hint),
                              f"{ratio:.2f}x" if ratio == ratio else "≈0: fused")
                label, title = "", ""
        table.add_section()
    return table


def _fusion_rows(summary: pd.DataFrame) -> pd.DataFrame:
    if "variant" not in summary:
        return summary.iloc[0:0]
    return summary[(summary["methodology"] == "fusion") & summary["process"].isna()]


def _pick(part: pd.DataFrame, variant: str, metric: str) -> Any:
    hit = part[(part.variant == variant) & (part.metric == metric)]
    return hit.iloc[0] if not hit.empty else None


def _ratio_cells(r: Any) -> list[str]:
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
        label = f"{bench} {elements:,} el."
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
                unfused, fused = (_pick(part, v, "per_unit_ns") for v in ("unfused", "fused"))
                table.add_row(label, str(impl), str(k), str(encoding),
                              *(fmt.value(r.value, "time") if r is not None else "—"
                                for r in (unfused, fused)),
                              *_ratio_cells(_pick(part, "fused", "fusion_speedup")),
                              *(_ratio_cells(_pick(part, "fused", m))[0]
                                for m in ("fusion_speedup_synced", "fusion_gpu_speedup")))
                label = ""
        table.add_section()
    return table


def tax_grid(summary: pd.DataFrame) -> Table | None:
    """Per fusion case the browser ran: its per-unit time over each native WebGPU
    implementation's (`browser_tax`, the row's `call`), with the interval over pairs."""
    rows = _fusion_rows(summary)
    rows = rows[rows.metric == "browser_tax"] if not rows.empty else rows
    if rows.empty:
        return None
    table = Table(title="Browser tax: one unit of work in the browser over native WebGPU")
    for name in ("benchmark", "impl.", "k", "form", "over", "tax", "95% CI"):
        table.add_column(name, justify="left" if name in ("benchmark", "impl.", "form",
                                                          "over") else "right")
    for (bench, elements), part in rows.groupby(["benchmark", "elements"], sort=False):
        label = f"{bench} {elements:,} el."
        for r in part.itertuples():
            table.add_row(label, str(r.implementation), str(r.k), str(r.variant), str(r.call),
                          *_ratio_cells(r))
            label = ""
        table.add_section()
    return table


def token_loop_grid(summary: pd.DataFrame) -> Table | None:
    """Per decode form and encoding: tokens per second of the token loop (synced, pipelined)
    and from the slope, CPU per token in each loop, GPU per token and its floor multiple."""
    rows = _fusion_rows(summary)
    looped = rows[rows.sync.isin((SYNCED, PIPELINED)) & (rows.metric == "tokens_per_s")] \
        if not rows.empty else rows  # the recurrent step's loops give no tokens
    if looped.empty:
        return None
    rows = rows[rows.benchmark.isin(set(looped.benchmark))]
    table = Table(title="Decode token loop: tokens/s, CPU and GPU per token (µs)")
    columns = ("benchmark", "impl.", "k", "form", "encoding", "synced", "pipelined", "slope",
               "cpu synced", "cpu pipel.", "GPU", "floor x")
    for name in columns:
        table.add_column(name, justify="left" if name in columns[:5] else "right")
    cells = (("synced", "tokens_per_s", "rate"), ("pipelined", "tokens_per_s", "rate"),
             ("wait", "tokens_per_s", "rate"), ("synced", "cpu_per_token_ns", "time"),
             ("pipelined", "cpu_per_token_ns", "time"), ("timestamps", "gpu_ns", "time"),
             ("timestamps", "floor_multiple", "ratio"))
    for keys, part in rows.groupby(["benchmark", "elements", "implementation", "k",
                                    "variant"], sort=False):
        gpu = part[part.sync == "timestamps"]
        for encoding, mine in part[part.sync != "timestamps"].groupby("encoding", sort=False):
            mine = pd.concat([mine, gpu])
            picked = [mine[(mine.sync == sync) & (mine.metric == metric)]
                      for sync, metric, _ in cells]
            table.add_row(f"{keys[0]} {keys[1]:,} el.", str(keys[2]), str(keys[3]),
                          str(keys[4]), str(encoding),
                          *(fmt.value(hit.value.iloc[0], hint) if not hit.empty else "—"
                            for hit, (_, _, hint) in zip(picked, cells, strict=True)))
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
            base = _pick(part[part.sync == NEVER], variant, "step_ns")
            if base is None:
                continue
            picks = [_pick(part[part.sync == s], variant, "sync_slowdown")
                     for s in (SYNCED, PIPELINED)]
            picks.append(_pick(part, HYBRID, "hybrid_slowdown") if variant == "unfused"
                         else None)
            table.add_row(f"{bench} {elements:,} el.", str(impl), variant,
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
        picks = [_pick(part, v, "latency_ns") for v in HOST_UNITS]
        ratio = _pick(part, GPU_ARGMAX, "cpu_over_gpu")
        table.add_row(str(bench), f"{4 * elements:,}", str(impl),
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
        label = str(bench)
        for k, part in group[group.variant == "single"].groupby("k", sort=True):
            cells = [_pick(part, "single", m) for m in ("per_unit_ns", "latency_ns", "gpu_ns")]
            table.add_row(label, str(impl), str(k),
                          *(fmt.value(r.value, "time") if r is not None else "—" for r in cells))
            label = ""
        for r in group[group.variant == "crossover"].itertuples():
            size = f"{r.value:.0f} [{r.ci_low:.0f}–{r.ci_high:.0f}]" \
                if math.isfinite(r.value) else "not reached"
            table.add_row("", str(impl), "crossover" if r.metric == "crossover_size"
                          else "crossover, synced", size, "", "")
        table.add_section()
    return table


def print_report(table: Any, sets: list) -> None:
    """A report (present/report.py) in the terminal: its table, its footnotes, and each
    run's crossovers, read from that run's own ratios."""
    from gpuoverhead.present import render

    out.print(render.terminal(table))
    for note in render.footnotes(table):
        out.print(note, highlight=False)
    for rs in sets:
        print_crossovers(rs.summary[rs.summary.benchmark == table.benchmark])


def print_crossovers(summary: pd.DataFrame) -> None:
    """Where each implementation's form starts to beat the CPU reference, one sentence each."""
    from gpuoverhead.analysis import crossover
    from gpuoverhead.drivers.registry import CPU_REFERENCE

    for row, c in crossover.lines(summary):
        out.print(fmt.crossover(row, c, CPU_REFERENCE), highlight=False)


def breakdown_grid(summary: pd.DataFrame) -> Table | None:
    """Per call of one `submit` operation, the median CPU time in each layer that ran."""
    calls = summary[(summary.metric == "call_ns")
                    & (summary["process"].isna() if "process" in summary else True)]
    if calls.empty:
        return None
    layers = list(dict.fromkeys(calls.layer))
    table = Table(title="Per-call breakdown of one submit op (µs, clock cost subtracted)")
    table.add_column("benchmark")
    table.add_column("call")
    for layer in layers:
        table.add_column(layer, justify="right")
    for (bench, elements), rows in calls.groupby(["benchmark", "elements"], sort=False):
        label = f"{bench} {elements:,} el."
        for call, by_call in rows.groupby("call", sort=False):
            cells = [fmt.value(by_call[by_call.layer == lay].value.iloc[0], "time")
                     if (by_call.layer == lay).any() else "—" for lay in layers]
            table.add_row(label, str(call), *cells)
            label = ""
        table.add_section()
    return table


def frame_table(frame: pd.DataFrame, title: str) -> Table:
    """Any frame of strings as a table."""
    table = Table(title=title)
    for column in frame.columns:
        table.add_column(str(column))
    for row in frame.itertuples(index=False):
        table.add_row(*map(str, row))
    return table


def adapters_table(found: list[AdapterInfo]) -> Table:
    table = Table(title="Adapters (best first)")
    for col in ("#", "implementation", "backend", "type", "vendor", "device", "driver",
                "timestamps"):
        table.add_column(col)
    for i, a in enumerate(found):
        table.add_row(str(i), a.implementation, a.backend, a.adapter_type, a.vendor, a.device,
                      a.driver, "yes" if a.timestamps else "no")
    return table


def print_summary(summary: pd.DataFrame) -> None:
    """Every grid that the estimates of a run fill (errors are printed as such, elsewhere)."""
    if summary.empty:
        return
    summary = summary[summary["metric"] != ERROR]
    plain = summary[summary["methodology"] != "fusion"]
    if not plain.empty:
        out.print(summary_grid(plain))
    for extra in (implementations_grid(plain), breakdown_grid(plain), fusion_grid(summary),
                  tax_grid(summary), token_loop_grid(summary), host_read_grid(summary),
                  readback_grid(summary), crossover_grid(summary)):
        if extra is not None:
            out.print(extra)
    print_crossovers(summary)


def show_errors(errors: list[str]) -> None:
    for e in errors:
        err.print(f"[red]error:[/red] {escape(e)}", highlight=False, soft_wrap=True)


def show_warnings(warnings: list[str]) -> None:
    for w in warnings:
        err.print(f"[yellow]warning:[/yellow] {escape(w)}", highlight=False, soft_wrap=True)
