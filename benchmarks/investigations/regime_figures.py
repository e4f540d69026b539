"""The figures issue 54's "done when" asks for, from the folders that
benchmarks/gpu_machine/measure_gpu_machine.sh writes (its questions `default`, `default-again`,
`selftest`, `selftest-b2b`, `cadence`, `c-loop` or `c-loop-b2b`), each where it exists:

- per plain run (`default`, `default-again`, and the two runs of `selftest-b2b`), the
  median and the widest half-width of its 68 headline rows (wgpu-native's and Dawn's per-op
  wall, CPU, api and python per encoding and layer, naive and breakdown latency, as
  docs/results.md counts them), how many lie within ±25%, their regime, and the processes
  left out and why;
- two plain runs made one after the other (`default` and `default-again`, or
  `selftest-b2b`'s) as `compare` judges them without a run-to-run allowance: the verdicts
  of the headline rows and of all, and the allowance that comparison shows
  (present/allowance.py);
- each A/A (`selftest`, the halves alternating; `selftest-b2b`, one after the other): the
  share of headline rows `same`;
- the native layer's back-to-back `submit` per op (each plain run) against the plain C loop
  measured in the same call (`c-loop` or `c-loop-b2b`:
  benchmarks/investigations/submit_cadence.py);
- per gap, the cadence's wall time per op of wgpu-native's `submit` in each layer, when its
  level settled, and the C loop's; and, after 6 s, what the first burst of a block (after
  another case's) cost against the others (after one of its own kind);
- per plain run and WebGPU job, what the Python loop timed at each round's start
  (`python_step_ns`) says of the CPU's two speeds: its two modes, each process's share of
  rounds in the slow one, and per process `submit`'s issue slope (wrapper, native) in the
  rounds of each speed, with their rank correlation; and the run's own record of them
  (run.json `cpu_states`: the state kept, the other state's level of `submit`).

    python benchmarks/investigations/regime_figures.py /tmp/results
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

#: The headline rows docs/results.md's precision figures are over.
IMPLEMENTATIONS = ("wgpu-native", "dawn")
METRICS = ("per_dispatch_ns", "cpu_per_dispatch_ns", "api_ns", "python_ns", "latency_ns")
#: What compare and selftest call headline (gpuoverhead/metrics.py HEADLINE).
HEADLINE = ("latency_ns", "per_dispatch_ns")


def headline_rows(folder: Path) -> pd.DataFrame:
    s = pd.read_parquet(folder / "summary.parquet")
    return s[s["process"].isna() & s["implementation"].isin(IMPLEMENTATIONS)
             & s["metric"].isin(METRICS)]


def precision(name: str, folder: Path) -> str:
    rows = headline_rows(folder)
    half = ((rows["ci_high"] - rows["ci_low"]) / 2 / rows["value"].abs()).replace(
        [np.inf, -np.inf], np.nan)
    widest = rows.loc[half.idxmax()] if half.notna().any() else None
    regimes = ", ".join(sorted(set(rows["regime"]))) if "regime" in rows else "not named"
    info = json.loads((folder / "run.json").read_text())
    left = [f"{b['implementation']} p{p['process']}: {p['left_out']}"
            for b in info["benchmarks"] for p in b.get("processes", []) if "left_out" in p]
    return (f"{name}: median headline half-width ±{np.nanmedian(half):.1%}, widest "
            f"±{half.max():.1%} ({widest.implementation} {widest.case} {widest.metric}), "
            f"{int((half <= 0.25).sum())} of {len(rows)} within ±25% (targets: median <= 8%, "
            f"none over 25%); regime: {regimes}; left out: {'; '.join(left) or 'none'}")


def compared(base: Path, new: Path) -> tuple[dict[str, int], dict[str, int], float]:
    """compare's verdicts of the headline rows and of all, without a run-to-run allowance,
    and the allowance the comparison shows."""
    from gpuoverhead.present.allowance import measured

    proc = subprocess.run([sys.executable, "-m", "gpuoverhead", "compare", str(base), str(new),
                           "--json", "--allowance", "0"], capture_output=True, text=True,
                          check=True)
    table = pd.DataFrame(json.loads(proc.stdout)["estimates"])
    head = table[table["metric"].isin(HEADLINE)]
    return (head["verdict"].value_counts().to_dict(), table["verdict"].value_counts().to_dict(),
            measured(table))


def said(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    same = counts.get("same", 0)
    others = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()) if v != "same")
    return f"{same} of {total} same ({same / total:.1%})" + (f"; {others}" if others else "")


def native_submit(folder: Path) -> pd.Series | None:
    rows = headline_rows(folder)
    hit = rows[(rows["implementation"] == "wgpu-native") & (rows["variant"] == "")
               & rows["case"].str.endswith("sequential/submit/native")
               & (rows["metric"] == "per_dispatch_ns")]
    return None if hit.empty else hit.iloc[0]


def c_loop(root: Path) -> dict[float, float]:
    """The C loop's level per gap (median over its processes), µs per op: `c-loop`'s, else
    `c-loop-b2b`'s (back to back only)."""
    found = [p for q in ("c-loop", "c-loop-b2b") if (p := root / q / "c-loop.json").is_file()]
    if not found:
        return {}
    runs = json.loads(found[0].read_text())["processes"]
    return {gap: float(np.median([r["level_us"] for r in runs if r["gap_ms"] == gap]))
            for gap in sorted({r["gap_ms"] for r in runs})}


def cadence(folder: Path) -> list[str]:
    s = pd.read_parquet(folder / "summary.parquet")
    rows = s[s["process"].isna() & (s["metric"] == "burst_per_op_ns")
             & (s["encoding"] == "submit")]
    lines = []
    for (impl, layer), part in rows.groupby(["implementation", "layer"], sort=False):
        cells = [f"{r.regime}: {r.value / 1e3:.1f} [{r.ci_low / 1e3:.1f}-{r.ci_high / 1e3:.1f}]"
                 f" (settled {'never' if np.isinf(r.settled_s) else f'{r.settled_s:.1f} s'})"
                 for r in part.itertuples()]
        lines.append(f"cadence {impl} submit/{layer} µs per op: " + "; ".join(cells))
    return lines + [switches(folder)]


def against_loop(folder: Path, loop: dict[float, float]) -> list[str]:
    """The cadence's `submit` through the C loop over the plain C loop's: back to back over
    its back to back, 16 ms gaps and more over its 30 ms gaps (its level settles at about
    the same after the ramp: issue 54)."""
    s = pd.read_parquet(folder / "summary.parquet")
    rows = s[s["process"].isna() & (s["metric"] == "burst_per_op_ns")
             & (s["implementation"] == "wgpu-native")
             & s["case"].str.endswith("/submit/native")]
    cells = []
    for r in rows.itertuples():
        gap = float(r.case.split("/gap=")[1].split("ms")[0])
        base = loop.get(0.0) if gap == 0 else loop.get(30.0) if gap >= 16 else None
        if base:
            cells.append(f"{r.regime} {r.value / 1e3:.1f} = {r.value / 1e3 / base:.2f}x the "
                         f"C loop's {'back to back' if gap == 0 else '30 ms gaps'}")
    return [f"cadence vs c-loop (wgpu-native submit/native): {'; '.join(cells)}"] if cells else []


def switches(folder: Path) -> str:
    """Per gap, wgpu-native's `submit` through the C loop after 6 s of age: the first burst
    of a block (kept as a warm-up one: it follows another case's burst) against the others
    (each after a burst of its own kind), µs per op."""
    s = pd.read_parquet(folder / "samples.parquet", columns=[
        "implementation", "case", "phase", "process", "elapsed_ns", "wall_ns", "n_dispatches"])
    s = s[(s["implementation"] == "wgpu-native") & s["case"].str.endswith("/submit/native")]
    cells = []
    for case, part in s.groupby("case", sort=False):
        per = part["wall_ns"] / part["n_dispatches"] / 1e3
        measured = part["elapsed_ns"].where(part["phase"] == "measure")
        first = measured.groupby(part["process"]).transform("min")
        age = (part["elapsed_ns"] - first) / 1e9
        late = age > 6.0
        switch = late & (part["phase"] == "warmup")
        kept = late & (part["phase"] == "measure")
        gap = case.split("/gap=")[1].split("/")[0]
        if switch.any() and kept.any():
            cells.append(f"{gap}: first of a block {per[switch].median():.1f}, the others "
                         f"{per[kept].median():.1f}")
    return "cadence wgpu-native submit/native after 6 s, µs per op: " + ("; ".join(cells)
                                                                          or "no blocks")


def cpu_states(name: str, folder: Path) -> list[str]:
    """Per WebGPU job of a plain run: the Python loop's two modes over its rounds and, per
    process, the share of rounds in the slow one and `submit`'s issue slope in each."""
    from scipy.stats import spearmanr

    from gpuoverhead.analysis.modes import two_modes
    from gpuoverhead.analysis.stats import round_fits

    info = json.loads((folder / "run.json").read_text())
    samples = pd.read_parquet(folder / "samples.parquet")
    samples = samples[(samples["phase"] == "measure") & (samples["call"] == "")]
    lines = []
    for job in info["benchmarks"]:
        if (job["implementation"] not in IMPLEMENTATIONS or not job.get("processes")
                or not all("python_step_ns" in p for p in job["processes"])):
            continue  # a run made before the Python loop was timed (2026-11-29)
        steps = [np.array(p["python_step_ns"], float) for p in job["processes"]]
        found = two_modes(np.concatenate(steps))
        middle = np.sqrt(found.low_ns * found.high_ns) if found else np.inf
        said = (f"{found.low_ns:.0f} or {found.high_ns:.0f} ns a step" if found
                else f"one mode, {np.median(np.concatenate(steps)):.0f} ns a step")
        cells = []
        for p, step in zip(job["processes"], steps, strict=True):
            mine = samples[(samples["implementation"] == job["implementation"])
                           & (samples["process"] == p["process"]) & (samples["variant"] == "")]
            per = []
            for layer in ("wrapper", "native"):
                case = mine[mine["case"].str.endswith(f"sequential/submit/{layer}")]
                if case.empty:
                    continue
                table = case.pivot_table(index="repetition", columns="n_dispatches",
                                         values="issue_ns", aggfunc="first").dropna()
                slope = round_fits(table.columns.to_numpy(float), table.to_numpy(float))[0] / 1e3
                at = p["warmup_rounds"] + table.index.to_numpy()
                state = np.maximum(step[np.minimum(at, len(step) - 1)],
                                   step[np.minimum(at + 1, len(step) - 1)])
                slow = state > middle
                rho = spearmanr(state, slope)[0] if len(slope) > 2 else np.nan
                levels = "/".join(f"{np.median(slope[m]):.1f}" if m.any() else "-"
                                  for m in (~slow, slow))
                per.append(f"{layer} {levels} (rho {rho:.2f})")
            share = float(np.mean(step[p["warmup_rounds"]:] > middle)) if found else 0.0
            cells.append(f"p{p['process']} slow {share:.0%}: " + ", ".join(per))
        lines.append(f"{name} {job['id']} {job['implementation']}: Python loop {said}; "
                     "submit issue slope µs fast/slow: " + "; ".join(cells))
    return lines


def cpu_record(name: str, folder: Path) -> list[str]:
    """Per WebGPU job of a plain run, run.json's `cpu_states`: the loop's two speeds, the
    state kept, its share, and `submit`'s level in the other state beside the headline's."""
    info = json.loads((folder / "run.json").read_text())
    summary = pd.read_parquet(folder / "summary.parquet")
    lines = []
    for job in info["benchmarks"]:
        found = job.get("cpu_states")
        if job["implementation"] not in IMPLEMENTATIONS or not found:
            continue
        other = next((k for k in found if k.endswith("_state_us")), "")
        cells = []
        for layer in ("wrapper", "native"):
            key = f"{job['id']}/sequential/submit/{layer} per_dispatch_ns"
            row = summary[(summary["implementation"] == job["implementation"])
                          & summary["process"].isna() & (summary["metric"] == "per_dispatch_ns")
                          & (summary["case"] == key.split(" ")[0])]
            if len(row) and key in found.get(other, {}):
                cells.append(f"{layer} {row['value'].iloc[0] / 1e3:.1f} ({found['kept']}) vs "
                             f"{found[other][key]:.1f} ({other.split('_')[0]})")
        lines.append(f"{name} {job['implementation']}: kept the CPU {found['kept']} state "
                     f"(slow in {found['slow_share']:.0%} of rounds; loop "
                     f"{found['loop_step_us']['fast']}/{found['loop_step_us']['slow']} µs); "
                     f"submit µs: {', '.join(cells) or '-'}; figures from "
                     f"{found.get('figures_from', 'the kept state rounds')}")
    return lines


def main(root: Path) -> None:
    lines = []
    plain = [q for q in ("default", "default-again", "selftest-b2b/a", "selftest-b2b/b")
             if (root / q / "run.json").is_file()]
    halves = [q for q in ("selftest/a", "selftest/b") if (root / q / "run.json").is_file()]
    lines += [precision(q, root / q) for q in plain + halves]
    for a, b in (("default", "default-again"), ("selftest-b2b/a", "selftest-b2b/b")):
        if a in plain and b in plain:
            head, every, allowed = compared(root / a, root / b)
            lines.append(f"{a} vs {b} (one after the other, no allowance): headline "
                         f"{said(head)} (targets: >= 90% same, none faster/slower); all "
                         f"{said(every)}; run to run: ±{allowed:.1%}")
    if (root / "selftest" / "a" / "run.json").is_file():
        head, every, _ = compared(root / "selftest" / "a", root / "selftest" / "b")
        lines.append(f"selftest: headline {said(head)}; all {said(every)} (target >= 95%)")
    loop = c_loop(root)
    if loop:
        lines.append("c-loop µs per op: " + ", ".join(
            f"{'back to back' if g == 0 else f'{g:g} ms gaps'} {v:.2f}" for g, v in loop.items()))
    for q in plain:
        native = native_submit(root / q)
        if native is not None and 0.0 in loop:
            ratio = native.value / 1e3 / loop[0.0]
            lines.append(f"{q}: wgpu-native submit/native {native.value / 1e3:.2f} "
                         f"[{native.ci_low / 1e3:.2f}-{native.ci_high / 1e3:.2f}] µs per op, "
                         f"{ratio:.2f}x the C loop's back to back (target: within 15%)")
    if (root / "cadence" / "run.json").is_file():
        lines += cadence(root / "cadence") + against_loop(root / "cadence", loop)
    for q in plain:
        lines += cpu_states(q, root / q) + cpu_record(q, root / q)
    print("\n".join(lines) if lines else f"nothing measured under {root}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/results"))
