"""The figures issue 54's "done when" asks for, from the folders that
benchmarks/measure_gpu_machine.sh writes (its questions `default`, `default-again`,
`selftest`, `selftest-b2b`, `cadence`, `c-loop`), each where it exists:

- per plain run, the median and the widest half-width of its 68 headline rows (wgpu-native's
  and Dawn's per-op wall, CPU, api and python per encoding and layer, naive and breakdown
  latency, as docs/results.md counts them) and how many lie within ±25%;
- `default` against `default-again` (made right after it) as `compare` judges them: the
  verdicts of the headline rows and of all;
- each A/A (`selftest`, the halves alternating; `selftest-b2b`, one after the other): the
  share of headline rows `same`;
- the native layer's back-to-back `submit` per op (each plain run) against the plain C loop
  measured in the same call (`c-loop`: benchmarks/submit_cadence.py);
- per gap, the cadence's wall time per op of wgpu-native's `submit` in each layer, when its
  level settled, and the C loop's;
- per plain run and WebGPU job, what the Python loop timed at each round's start
  (`python_step_ns`) says of the CPU's two speeds: its two modes, each process's share of
  rounds in the slow one, and per process `submit`'s issue slope (wrapper, native) in the
  rounds of each speed, with their rank correlation.

    python benchmarks/regime_figures.py /tmp/results
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
    return (f"{name}: median headline half-width ±{np.nanmedian(half):.1%}, widest "
            f"±{half.max():.1%} ({widest.implementation} {widest.case} {widest.metric}), "
            f"{int((half <= 0.25).sum())} of {len(rows)} within ±25% (targets: median <= 8%, "
            f"none over 25%); regime: {regimes}")


def compared(base: Path, new: Path) -> tuple[dict[str, int], dict[str, int]]:
    """compare's verdicts of the headline rows and of all."""
    proc = subprocess.run([sys.executable, "-m", "gpuoverhead", "compare", str(base), str(new),
                           "--json"], capture_output=True, text=True, check=True)
    table = pd.DataFrame(json.loads(proc.stdout)["estimates"])
    head = table[table["metric"].isin(HEADLINE)]
    return (head["verdict"].value_counts().to_dict(), table["verdict"].value_counts().to_dict())


def said(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    same = counts.get("same", 0)
    return (f"{same} of {total} same ({same / total:.1%}); "
            + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()) if v != "same"))


def native_submit(folder: Path) -> pd.Series | None:
    rows = headline_rows(folder)
    hit = rows[(rows["implementation"] == "wgpu-native") & (rows["variant"] == "")
               & rows["case"].str.endswith("sequential/submit/native")
               & (rows["metric"] == "per_dispatch_ns")]
    return None if hit.empty else hit.iloc[0]


def c_loop(root: Path) -> dict[float, float]:
    """The C loop's level per gap (median over its processes), µs per op."""
    path = root / "c-loop" / "c-loop.json"
    if not path.is_file():
        return {}
    runs = json.loads(path.read_text())["processes"]
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
    return lines


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
        if job["implementation"] not in IMPLEMENTATIONS or not job.get("processes"):
            continue
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


def main(root: Path) -> None:
    lines = []
    plain = [q for q in ("default", "default-again") if (root / q / "run.json").is_file()]
    lines += [precision(q, root / q) for q in plain]
    if len(plain) == 2:
        head, every = compared(root / plain[0], root / plain[1])
        lines.append(f"default vs default-again: headline {said(head)} (targets: >= 90% "
                     f"same, none faster/slower); all {said(every)}")
    for question in ("selftest", "selftest-b2b"):
        if (root / question / "a" / "run.json").is_file():
            head, every = compared(root / question / "a", root / question / "b")
            lines.append(f"{question}: headline {said(head)}; all {said(every)} (targets: "
                         f"selftest >= 95%, the back-to-back form >= 90%)")
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
        lines += cadence(root / "cadence")
    for q in plain:
        lines += cpu_states(q, root / q)
    print("\n".join(lines) if lines else f"nothing measured under {root}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/results"))
