"""The words of a run's warnings: what its last lines say (`run_warnings`), and what limited
its sampling in two wordings from one table, run.json's, which names what to read (its
columns and keys), and the terminal's, which says what it means and what to do. A report
reads run.json's text back into the terminal's words (`read_back`), so that it says what
the run's last lines said.

`{share}`, `{overrun}` and `{clock}` stand for the run's constants, which run/checks.py fills
in; reading back takes them from the text itself.
"""

from __future__ import annotations

import re
from string import Formatter

from gpuoverhead.records import Note

CUT, UNSETTLED, IMPRECISE, SHORT, GPU_STATE, MODES, DRIFT, FLOOR, FLOORED = (
    "cut", "unsettled", "imprecise", "short", "gpu", "modes", "drift", "floor", "floored")
MIXED = "mixed"

#: Each kind as run.json says it (after its count; an example follows).
DETAIL = {
    CUT: ("cases had their N sweep cut short on this adapter (a sample at a larger N "
          "took over {share} of a process's budget)"),
    UNSETTLED: ("processes stopped warming up before round durations settled "
                "(warmup_max_rounds, or the warm-up's share of the budget)"),
    SHORT: ("processes stopped short of the suite's min_rounds, at {overrun}x "
            "their budget or at the run's deadline: their rounds took longer than "
            "the time limit left them (a longer --time-limit, or a smaller sweep or "
            "loop_tokens, gives them their minimum)"),
    GPU_STATE: ("processes sampled while the GPU's SM clock fell by over "
                "{clock} or a throttle reason was set (NVML; "
                "run.json's telemetry per process): their figures may be the "
                "clocks', not the overhead's; locking clocks (nvidia-smi -lgc) "
                "keeps them still"),
    MODES: ("headline estimates had samples in two modes within their processes: "
            "such an estimate is each process's trimmed mean of its samples (what "
            "an op costs on average over both), where a median would be either mode "
            "(a sync's completion that a poll sees at once or later)"),
    IMPRECISE: ("headline estimates missed their precision target when sampling "
                "stopped: the time they had (budget_s, the time limit) or the "
                "machine's noise limited them (each example says which variance "
                "component: rel_spread_between and rel_ci_within in the summary)"),
    DRIFT: ("trends over time (run.json's drift has each: its job, case, metric, change "
            "from the first to the last quarter and scope)"),
    FLOOR: ("fusion slopes were fitted without the N whose median wall was under twice the "
            "case's completion floor (completion_floor_ns): those samples are the floor, "
            "not work"),
    FLOORED: ("fusion cases got no slope (per_unit_ns) in a process: fewer than two N of "
              "its sweep lay above twice the completion floor; a sweep to larger N "
              "(n_sweep, fused_n_sweep) gives one"),
    MIXED: ("jobs took figures that move with the CPU's two states from every round, of "
            "both (their regime says so): a process of theirs had under min_rounds rounds "
            "in the state kept (run.json's cpu_states per job)"),
}

#: Each kind in the terminal's words: (one, several, what it means and what to do).
PLAIN = {
    CUT: ("case measured fewer N than its suite asks", "cases measured fewer N than their "
          "suite asks", "one sample at a larger N would have taken over {share} of "
          "a process's time on this adapter; a larger budget_s in the suite measures it"),
    UNSETTLED: ("process stopped warming up before its rounds took a steady time",
                "processes stopped warming up before their rounds took a steady time",
                "the first rounds measured may still carry start-up costs; a larger "
                "warmup_max_rounds or budget_s in the suite lets warm-up settle"),
    SHORT: ("process ran fewer rounds than the suite's min_rounds",
            "processes ran fewer rounds than the suite's min_rounds",
            "rounds took longer than the time left; a longer --time-limit, or a smaller "
            "sweep, gives each process its minimum"),
    GPU_STATE: ("process measured while the GPU's clock fell or it throttled",
                "processes measured while the GPU's clock fell or it throttled",
                "the figures then may be the clocks', not the overhead's; lock the clocks "
                "(nvidia-smi -lgc) and run again"),
    MODES: ("headline figure has two typical values", "headline figures have two typical "
            "values", "the samples gather around two values (modes) within each process: "
            "the figure is each process's mean over both, where its median would be either "
            "value"),
    IMPRECISE: ("headline figure is less precise than its suite's target",
                "headline figures are less precise than their suite's target",
                "the run's time or the machine's noise limited the precision; a quieter "
                "machine, a longer --time-limit or more --processes narrows the intervals"),
    DRIFT: ("figure drifted while the run measured", "figures drifted while the run measured",
            "the machine changed under it (other work, clocks, heat); a quieter machine, or "
            "more processes, makes that matter less"),
    FLOOR: ("slope was fitted without its points on the completion floor",
            "slopes were fitted without their points on the completion floor",
            "those N took no longer than the wait for completion itself; the slope is "
            "fitted through the larger N"),
    FLOORED: ("process gave a case no slope: its points lay on the completion floor",
              "processes gave a case no slope: their points lay on the completion floor",
              "a slope through them would be the floor's noise; a sweep to larger N "
              "(n_sweep, fused_n_sweep in the suite) gives one"),
    MIXED: ("job's figures are of both CPU states", "jobs' figures are of both CPU states",
            "the CPU switched between two speeds that move them, and a process met one too "
            "rarely for figures of that one alone; more rounds a process (a longer "
            "--time-limit, a larger budget_s) give them"),
}


def note(kind: str, count: int, example: str, **constants: str) -> Note:
    """`count` notes of `kind` said once, with their first `example`: run.json's text, and
    the terminal's words (`Note.plain`)."""
    one, several, advice = PLAIN[kind]
    said = (one if count == 1 else several).format(**constants)
    return Note(f"{count} {DETAIL[kind].format(**constants)}; e.g. {example}", kind,
                f"{count} {said}: {advice.format(**constants)} (e.g. {example})")


def read_back(text: str) -> str:
    """A warning of run.json as the terminal said it: a sampling note in its words (a
    `Note`), any other text as it is."""
    for kind, pattern in _PATTERNS.items():
        if found := pattern.fullmatch(text):
            values = found.groupdict()
            return note(kind, int(values.pop("count")), values.pop("example"), **values)
    return text


def run_warnings(warnings: list[str]) -> list[str]:
    """A run's warnings as its last lines say them: a `Note` in its plain words, notes of one
    kind and wording in one line with their subjects joined, none that the run's first lines
    said (`plain` None), a repeated line once; run.json keeps each in full."""
    said: dict[tuple[str, ...], list[str]] = {}
    for w in warnings:
        if not isinstance(w, Note):
            said.setdefault((w,), []).append(w)
        elif w.plain is not None:
            said.setdefault((w.kind, w.plain, w.plural or ""), []).append(w.subject)
    lines = []
    for key, subjects in said.items():
        if len(key) == 1:
            lines.append(key[0])
            continue
        _, one, several = key
        subjects = list(dict.fromkeys(subjects))
        text = several if len(subjects) > 1 and several else one
        lines.append(text.replace("{subject}", _joined(subjects)))
    return lines


def _joined(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


def _pattern(detail: str) -> re.Pattern[str]:
    """run.json's text of a kind, its constants and example read as they were written."""
    parts = "".join(re.escape(literal) + (f"(?P<{field}>.+?)" if field else "")
                    for literal, field, _, _ in Formatter().parse(detail))
    return re.compile(rf"(?P<count>\d+) {parts}; e\.g\. (?P<example>.*)", re.DOTALL)


_PATTERNS = {kind: _pattern(detail) for kind, detail in DETAIL.items()}
