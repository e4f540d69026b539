"""The hostile-input catalogue (`pytest -k hostile`): every error a user can cause ends in
one clear line, exit code 2, no traceback, and no output file created or changed.

Three tables: suites (checked by `validate` and refused by `run` before anything is
written), run options, and result sets given to `report`/`compare`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import (
    BACKEND,
    CONFIGS,
    ROOT,
    cli_commands,
    gpuoverhead,
    in_process,
    measured_adapter,
    measuring_first,
    only_run_folder,
    read_run,
    within,
    without_cpu_note,
    write_suite,
)

from gpuoverhead.gpu.layers import native

GOOD = "benchmarks:\n  - {name: a, kernel: add_one, elements: 64}\n"

BAD_SUITES = {
    "empty file": ("", "suite.yaml: the file is empty"),
    "not yaml": ("benchmarks: [1,\n", "suite.yaml:2: not valid YAML"),
    "alias bomb": ("a: &a [1, 1]\nb: &b [*a, *a]\nc: [*b, *b]\n",
                   "suite.yaml:2: YAML aliases are not allowed"),
    "python tag": ("!!python/object/apply:os.system ['true']\n",
                   "suite.yaml:1: not valid YAML: could not determine a constructor"),
    "unknown key": ("benchmarks:\n  - name: a\n    kernel: add_one\n    colour: red\n",
                    "suite.yaml:4: benchmarks[0].colour: unknown key 'colour'; known keys:"),
    "unknown top key": ("benchmark: []\n", "suite.yaml:1: benchmark: unknown key 'benchmark'"),
    "unknown default": ("defaults: {budget: 3}\n" + GOOD,
                        "suite.yaml:1: defaults.budget: unknown key 'budget'"),
    "wrong type": ("benchmarks:\n  - name: a\n    kernel: add_one\n    elements: lots\n",
                   "suite.yaml:4: benchmarks[0].elements"),
    "negative size": ("benchmarks:\n  - {name: a, kernel: add_one, elements: -4}\n",
                      "suite.yaml:2: benchmarks[0].elements[0]: Input should be greater than 0"),
    "zero workgroup": ("benchmarks:\n  - {name: a, kernel: add_one, workgroup_size: 0}\n",
                       "benchmarks[0].workgroup_size: Input should be greater than 0"),
    "one n": ("defaults:\n  n_sweep: [4, 4]\n" + GOOD,
              "suite.yaml:2: defaults.n_sweep: Value error, needs at least two different N"),
    "bad encoding": ("defaults: {encodings: [bundle]}\n" + GOOD,
                     "defaults.encodings[0]: Input should be 'submit', 'pass' or 'dispatch'"),
    "missing kernel key": ("benchmarks:\n  - {name: a}\n",
                           "suite.yaml:2: benchmarks[0].kernel: required key is missing"),
    "unknown kernel": ("benchmarks:\n  - {name: a, kernel: fma}\n",
                       "suite.yaml:2: benchmarks[0].kernel: unknown kernel 'fma'; shipped"),
    "missing shader": ("benchmarks:\n  - {name: a, kernel: gone.wgsl}\n",
                       "suite.yaml:2: benchmarks[0].kernel: cannot read shader"),
    "duplicate names": (GOOD + "  - {name: a, kernel: empty}\n",
                        "suite.yaml:3: benchmarks[1].name: duplicate benchmark name 'a'"),
    "no benchmarks": ("benchmarks: []\n", "benchmarks: List should have at least 1 item"),
    "min over max rounds": ("defaults: {min_rounds: 50, max_rounds: 10}\n" + GOOD,
                            "suite.yaml:3: benchmarks[0]: min_rounds is larger than max_rounds"),
    "shader escapes with ..": ("benchmarks:\n  - {name: a, kernel: ../outside.wgsl}\n",
                               "benchmarks[0].kernel: shader path '../outside.wgsl' leads "
                               "outside the suite's folder"),
    "absolute shader path": ("benchmarks:\n  - {name: a, kernel: /etc/x.wgsl}\n",
                             "shader path '/etc/x.wgsl' leads outside the suite's folder"),
    "shader is a folder": ("benchmarks:\n  - {name: a, kernel: folder.wgsl}\n",
                           "benchmarks[0].kernel: cannot read shader"),
    "fusion kernel as kernel": ("benchmarks:\n  - {name: a, kernel: fusion_chain}\n",
                                "unknown kernel 'fusion_chain'; shipped kernels: add_one, empty"),
    "unknown fusion pattern": ("benchmarks:\n  - {name: a, fusion: blur}\n",
                               "benchmarks[0].fusion: Input should be 'chain', 'loop'"),
    "fusion and kernel": ("benchmarks:\n  - {name: a, fusion: chain, kernel: add_one}\n",
                          "benchmarks[0].kernel: a fusion benchmark runs its pattern's shipped "
                          "kernels"),
    "loop too large": ("benchmarks:\n  - {name: a, fusion: loop, elements: 300}\n",
                       "benchmarks[0].elements: the dependent loop keeps all cells in one "
                       "workgroup: at most 256"),
    "rmsnorm rows": ("benchmarks:\n  - {name: a, fusion: rmsnorm, elements: 1000}\n",
                     "elements must be multiples of 896, not 1000"),
    "mlp too large": ("benchmarks:\n  - {name: a, fusion: mlp, elements: [64, 4096]}\n",
                      "benchmarks[0].elements: the MLP reads its weights (2 x 4 D^2 f32, D = "
                      "elements) as vec4 from one binding of at most 128 MiB: D must be a "
                      "multiple of 4 up to 2048, not 4096"),
    "matmul size": ("benchmarks:\n  - {name: a, fusion: matmul, k_sweep: [64, 100]}\n",
                    "benchmarks[0].k_sweep: matmul sizes (k_sweep) must be multiples of 16"),
    "f16 off the decode step": ("benchmarks:\n  - {name: a, kernel: empty, precision: f16}\n",
                                "benchmarks[0].precision: f16 weights exist for the `decode` "
                                "workload only"),
    "f16 on a fusion chain": ("benchmarks:\n  - {name: a, fusion: chain, precision: f16}\n",
                              "benchmarks[0].precision: f16 weights exist for the `decode`"),
    "token loop of no tokens": ("benchmarks:\n  - {name: a, fusion: decode, elements: 128, "
                                "loop_tokens: 0}\n",
                                "benchmarks[0].loop_tokens: Input should be greater than 0"),
    # Second round (issue 15): each of these got through or crashed before.
    "kernel path without .wgsl": ("benchmarks:\n  - {name: a, kernel: ../../tmp/x/evil}\n",
                                  "kernel '../../tmp/x/evil' is neither a shipped kernel's "
                                  "name nor a .wgsl path"),
    "absolute kernel without .wgsl": ("benchmarks:\n  - {name: a, kernel: /tmp/x/evil}\n",
                                      "is neither a shipped kernel's name nor a .wgsl path"),
    "duplicate key": ("benchmarks:\n  - {name: a, kernel: add_one, kernel: empty}\n",
                      "suite.yaml:2: key 'kernel' appears twice"),
    "nested 500 deep": ("a: " + "[" * 500 + "]" * 500 + "\n",
                        "nested deeper than 32 levels: not a suite"),
    "infinite budget": ("defaults: {budget_s: .inf}\n" + GOOD,
                        "defaults.budget_s: Input should be a finite number"),
    "N too large": ("defaults: {n_sweep: [1, 1000000000000]}\n" + GOOD,
                    "defaults.n_sweep[1]: Input should be less than or equal to 65536"),
    "shader not utf-8": ("benchmarks:\n  - {name: a, kernel: latin1.wgsl}\n",
                         "latin1.wgsl: not UTF-8 text"),
    # Issue 26.8: the binding contract, which `run` left to a worker's traceback.
    "kernel binds group 1": ("benchmarks:\n  - {name: a, kernel: group1.wgsl}\n",
                             "group1.wgsl:7: binds @group(1) @binding(0); a kernel binds one "
                             "`var<storage, read_write>` of `array<u32>` at @group(0) @binding(0)"),
    "kernel binds a uniform too": ("benchmarks:\n  - {name: a, kernel: uniform.wgsl}\n",
                                   "uniform.wgsl:17: binds @group(0) @binding(1); a kernel "
                                   "binds one"),
    "kernel's buffer read-only": ("benchmarks:\n  - {name: a, kernel: readonly.wgsl}\n",
                                  "readonly.wgsl:7: binds `var<storage, read>` of `array<u32>`"),
    "kernel never uses its buffer": ("benchmarks:\n  - {name: a, kernel: unused.wgsl}\n",
                                     "unused.wgsl:2: binds `data` but never uses it"),
}


def _assert_one_clear_line(proc, expected: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert expected in proc.stderr, proc.stderr


@pytest.mark.parametrize("name", BAD_SUITES)
def test_hostile_suite(tmp_path, name):
    """`validate` explains it; `run` refuses it before creating anything."""
    text, expected = BAD_SUITES[name]
    (tmp_path / "folder.wgsl").mkdir()
    (tmp_path / "latin1.wgsl").write_bytes("// caf\xe9\n".encode("latin-1"))
    add_one = (ROOT / "shaders" / "add_one.wgsl").read_text()
    (tmp_path / "group1.wgsl").write_text(add_one.replace("@group(0)", "@group(1)"))
    (tmp_path / "uniform.wgsl").write_text(
        add_one + "@group(0) @binding(1) var<uniform> u: vec4<u32>;\n")
    (tmp_path / "readonly.wgsl").write_text(add_one.replace("read_write", "read"))
    (tmp_path / "unused.wgsl").write_text(
        "override WG: u32 = 64;\n@group(0) @binding(0) var<storage, read_write> data: array<u32>;\n"
        "@compute @workgroup_size(WG)\nfn main() {}\n")
    suite = write_suite(tmp_path, text)
    _assert_one_clear_line(in_process("validate", str(suite)), expected)
    out = tmp_path / "out"
    proc = in_process("run", "--suite", str(suite), "--out", str(out), "--processes", "1")
    # `run` names the first problem, and points to `validate` when there are more.
    more = "more: run `gpuoverhead validate"
    _assert_one_clear_line(proc, expected if more not in proc.stderr else more)
    assert not out.exists()


def test_shader_outside_the_suite_folder_runs_with_the_flag(tmp_path):
    inner = tmp_path / "suites"
    inner.mkdir()
    shutil.copy(ROOT / "shaders" / "add_one.wgsl", tmp_path / "k.wgsl")
    suite = write_suite(inner, "benchmarks:\n  - {name: a, kernel: ../k.wgsl}\n")
    assert in_process("validate", str(suite)).returncode == 2
    proc = in_process("validate", str(suite), "--outside-shaders")
    assert proc.returncode == 0 and "ok: 1 groups" in proc.stdout, proc.stderr


def test_validate_lists_every_problem(tmp_path):
    suite = write_suite(tmp_path, "benchmarks:\n  - {name: a, kernel: add_one, elements: 0,"
                                  " colour: 1}\n")
    proc = in_process("validate", str(suite))
    assert proc.returncode == 2
    assert "elements[0]" in proc.stderr and "colour" in proc.stderr


def test_hostile_shader_that_does_not_compile(tmp_path):
    (tmp_path / "broken.wgsl").write_text(
        "override WG: u32 = 64;\n@group(0) @binding(0) var<storage, read_write> d: array<u32>;\n"
        "fn main( { d[0] += 1u;\n")
    suite = write_suite(tmp_path, "benchmarks:\n  - {name: a, kernel: broken.wgsl}\n")
    proc = in_process("run", "--suite", str(suite), "--backend", BACKEND,
                      "--out", str(tmp_path / "out"))
    _assert_one_clear_line(proc, "broken.wgsl:3:")
    assert "shader rejected" in proc.stderr
    # `validate` compiles the kernels too, so it no longer calls this suite ok.
    _assert_one_clear_line(in_process("validate", str(suite)), "broken.wgsl:3:")
    assert "shaders not compiled" in in_process("validate", str(suite), "--no-compile").stdout


def test_hostile_unknown_backend(tmp_path):
    proc = in_process("run", "--backend", "glide", "--out", str(tmp_path))
    _assert_one_clear_line(proc, "unknown backend 'glide'; choose one of vulkan, metal, d3d12, "
                                 "opengl")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="names Linux's backends")
def test_hostile_backend_of_another_platform(tmp_path):
    proc = in_process("run", "--backend", "metal", "--out", str(tmp_path / "out"))
    _assert_one_clear_line(proc, "backend metal does not exist on linux; this platform can "
                                 "have vulkan, opengl")
    assert not (tmp_path / "out").exists()


def test_hostile_adapter_name_not_present(tmp_path):
    proc = in_process("run", "--adapter", "GeForce 256", "--out", str(tmp_path))
    _assert_one_clear_line(proc, "no adapter with name ~ 'GeForce 256'; present: ")


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="hides the Vulkan and EGL drivers, as only Linux loads them")
@pytest.mark.slow
def test_hostile_no_adapter_at_all(tmp_path):
    """The drivers' loaders read their variables as a process first loads them: both
    commands in one child that never saw a driver (a start-up, ~1 CPU-s, less than one
    child each)."""
    hide = {"VK_DRIVER_FILES": str(tmp_path / "none.json"),
            "VK_ICD_FILENAMES": str(tmp_path / "none.json"),
            "__EGL_VENDOR_LIBRARY_FILENAMES": str(tmp_path / "none.json")}
    for proc in cli_commands(["run", "--out", str(tmp_path)], ["adapters"],
                             env={**os.environ, **hide}):
        _assert_one_clear_line(proc, "no WebGPU adapter found")
        assert "apt-get install mesa-vulkan-drivers" in proc.stderr


@pytest.mark.skipif(os.name == "posix" and os.geteuid() == 0,
                    reason="root can write into a read-only folder; the file case covers it")
def test_hostile_unwritable_output_folder(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    proc = in_process("run", "--suite", str(CONFIGS / "ci.yaml"), "--out", str(locked))
    _assert_one_clear_line(proc, "cannot write results to")


def test_hostile_output_folder_is_a_file(tmp_path):
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    proc = in_process("run", "--suite", str(CONFIGS / "ci.yaml"), "--out", str(blocker))
    _assert_one_clear_line(proc, f"--out {blocker} is a file: --out takes a folder")


@pytest.mark.slow
def test_hostile_existing_run_folder(tmp_path, good_run, monkeypatch):
    """Refused before planning (it used to be said once the drivers had offered their
    adapters: a browser started, torch imported), the run left as it was; --force replaces
    it. The existing run is a copy of the module's finished run (making one here cost a run
    of 2.6 CPU-s); the run that replaces it is one job of one methodology: what is checked
    is the run folder (every methodology and layer, with its reference loop, made it 2 s
    longer), made in this process (a child's start-up less)."""
    from gpuoverhead.run import runner

    shutil.copytree(good_run, tmp_path / "o" / "same")
    suite = write_suite(tmp_path, "defaults: {n_sweep: [1, 2], budget_s: 0.02, min_rounds: 3,"
                                  " warmup_max_rounds: 1, methodologies: [naive]}\n" + GOOD)
    args = ("run", "--suite", str(suite), "--backend", BACKEND, "--out", str(tmp_path / "o"),
            "--run-id", "same", "--processes", "1", "--implementation", "wgpu-native")
    before = (only_run_folder(tmp_path / "o") / "run.json").read_bytes()
    with monkeypatch.context() as patched:
        patched.setattr(runner, "prepare", lambda options: pytest.fail("planned first"))
        proc = in_process(*args)
    _assert_one_clear_line(proc, "already exists; choose another --run-id, or pass --force")
    assert (only_run_folder(tmp_path / "o") / "run.json").read_bytes() == before
    forced = in_process(*args, "--force")
    assert forced.returncode == 0, forced.stderr
    assert (only_run_folder(tmp_path / "o") / "run.json").read_bytes() != before


#: Run options that cannot work: (arguments after `run`, expected line). None of them may
#: create the output folder.
BAD_RUNS = {
    "unknown implementation": (["--implementation", "metal"],
                               "unknown implementation 'metal'; choose one of"),
    "zero processes": (["--processes", "0"], "--processes must be at least 1, not 0"),
    "affinity not CPUs": (["--affinity", "2-x"], "--affinity takes CPU numbers and ranges"),
    "affinity backwards": (["--affinity", "3-1"], "--affinity takes CPU numbers and ranges"),
    "affinity CPU absent": (["--affinity", "4096"], "--affinity 4096: CPU 4096 is not one"),
    "missing suite file": (["--suite", "nowhere.yaml"], "nowhere.yaml"),
    "workgroup over the limit": (
        ["--suite", "{suite:benchmarks:\n  - {name: a, kernel: add_one, workgroup_size: 4096}\n}"],
        "workgroup_size 4096 is over the adapter's max-compute-invocations-per-workgroup"),
    "elements over the limit": (
        ["--suite", "{suite:benchmarks:\n  - {name: a, kernel: add_one, elements: 2000000000}\n}"],
        "elements up to 2000000000 need 8000000000 bytes, over the adapter's"),
    "negative seed": (["--seed", "-1"], "--seed must be between 0 and 2**32 - 1, not -1"),
    "zero stall timeout": (["--stall-timeout", "0"], "--stall-timeout must be a positive"),
    "negative stall timeout": (["--stall-timeout", "-5"], "--stall-timeout must be a positive"),
    "nan stall timeout": (["--stall-timeout", "nan"], "--stall-timeout must be a positive"),
    "run id escapes --out": (["--run-id", "../../escaped"], "is not a plain folder name"),
    "absolute run id": (["--run-id", "/tmp/elsewhere"], "is not a plain folder name"),
    "nested run id": (["--run-id", "x/y/z"], "is not a plain folder name"),
    "run id .": (["--run-id", ".", "--force"], "is not a plain folder name"),
    "run id of 300 characters": (["--run-id", "r" * 300], "is not a plain folder name"),
    "dawn not installed": (["--implementation", "dawn"],
                           "dawn: the package wgpudawn is not installed (pip install wgpudawn)"),
}


@pytest.mark.parametrize("name", BAD_RUNS)
def test_hostile_run_option(tmp_path, name):
    args, expected = BAD_RUNS[name]
    if name == "dawn not installed" and importlib.util.find_spec("wgpudawn") is not None:
        pytest.skip("wgpudawn is installed here: Dawn's own refusal is another test's")
    args = [str(write_suite(tmp_path, a[len("{suite:"):-1])) if a.startswith("{suite:") else a
            for a in args]
    out = tmp_path / "out"
    proc = in_process("run", "--backend", BACKEND, "--out", str(out), *args)
    _assert_one_clear_line(proc, expected)
    assert not out.exists()


@pytest.fixture(scope="module")
def good_run_read_through_pipes(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """One small finished run, its stdout and stderr piped (and no XDG_RUNTIME_DIR, which
    Mesa complains of): what test_hostile_output_read_through_pipes reads of it, and the run
    whose copies the result-set cases damage."""
    out = tmp_path_factory.mktemp("good")
    suite = write_suite(out, "defaults: {n_sweep: [1, 2], budget_s: 0.02, min_rounds: 3,"
                             " warmup_max_rounds: 1, methodologies: [naive, sequential]}\n"
                        + GOOD)
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    proc = subprocess.run([sys.executable, "-m", "gpuoverhead", "run", "--suite", str(suite),
                           "--backend", BACKEND, "--processes", "1", "--implementation",
                           "wgpu-native", "--out", str(out / "o")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env,
                          preexec_fn=measuring_first)
    assert proc.returncode == 0, proc.stderr
    return proc, only_run_folder(out / "o")


@pytest.fixture(scope="module")
def good_run(good_run_read_through_pipes) -> Path:
    """One small finished run whose copies the result-set cases damage."""
    return good_run_read_through_pipes[1]


def _truncate(folder: Path) -> None:
    data = (folder / "summary.parquet").read_bytes()
    (folder / "summary.parquet").write_bytes(data[: len(data) // 2])


def _garbage(folder: Path) -> None:
    (folder / "summary.parquet").write_bytes(b"PAR1 this is not parquet")


def _bad_json(folder: Path) -> None:
    (folder / "run.json").write_text("{\"schema_version\": ")


def _other_schema(folder: Path) -> None:
    info = json.loads((folder / "run.json").read_text())
    info["schema_version"] = 99
    (folder / "run.json").write_text(json.dumps(info))


def _mixed_units(folder: Path) -> None:
    summary = pd.read_parquet(folder / "summary.parquet")
    summary.loc[summary.metric == "latency_ns", "unit"] = "us"
    summary.to_parquet(folder / "summary.parquet")


def _no_run_json(folder: Path) -> None:
    (folder / "run.json").unlink()


def _text_in_value(folder: Path) -> None:
    summary = pd.read_parquet(folder / "summary.parquet")
    summary["value"] = summary["value"].astype(str)
    summary.to_parquet(folder / "summary.parquet")


def _no_case_column(folder: Path) -> None:
    pd.read_parquet(folder / "summary.parquet").drop(columns=["case"]).to_parquet(
        folder / "summary.parquet")


def _field(name: str, value: object):
    """Damage: one run.json field of another type (issue 26.12: `compare` raised a
    TypeError on `"adapters": 3`, `show` and `report` took it)."""
    def damage(folder: Path) -> None:
        info = json.loads((folder / "run.json").read_text())
        info[name] = value
        (folder / "run.json").write_text(json.dumps(info))
    return damage


#: run.json fields of another type than RunRecord's (results/columns.py).
BAD_RECORDS = {
    "adapters a number": (_field("adapters", 3), "run.json: field 'adapters' is an integer "
                                                 "(3), not a list of objects"),
    "status a number": (_field("status", 5), "run.json: field 'status' is an integer (5), "
                                             "not a string"),
    "benchmarks a string": (_field("benchmarks", "x"), "run.json: field 'benchmarks' is a "
                                                       "string (\"x\"), not a list of objects"),
    "a warning a number": (_field("warnings", ["ok", 7]), "run.json: field 'warnings[1]' is an "
                                                          "integer (7), not a string"),
    "suite name a list": (_field("suite", {"name": []}), "run.json: field 'suite.name' is a "
                                                         "list ([]), not a string"),
    "schema version true": (_field("schema_version", True), "schema version True, this "
                                                            "gpuoverhead reads"),
}

#: Damage done to a copy of a good result set, and what `report` and `compare` must say.
BAD_RESULTS = {
    "truncated parquet": (_truncate, "summary.parquet: not a readable Parquet file"),
    "corrupt parquet": (_garbage, "summary.parquet: not a readable Parquet file"),
    "run.json not json": (_bad_json, "run.json: cannot read"),
    "other schema version": (_other_schema, "schema version 99, this gpuoverhead reads"),
    "mixed units": (_mixed_units, "mixed units: metric 'latency_ns' comes in us"),
    "no run.json": (_no_run_json, "no result sets (folders with run.json)"),
    "text in value": (_text_in_value, "column(s) value hold text, not numbers"),
    "missing column": (_no_case_column, "no case column(s): not a gpuoverhead summary"),
    **BAD_RECORDS,
}


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize("name", BAD_RESULTS)
def test_hostile_result_set(tmp_path, good_run, name, command):
    damage, expected = BAD_RESULTS[name]
    bad = tmp_path / "bad"
    shutil.copytree(good_run, bad)
    damage(bad)
    written = tmp_path / "table.md"
    args = ["report", str(bad), "-o", str(written)] if command == "report" else \
        ["compare", str(good_run), str(bad)]
    proc = in_process(*args)
    if command == "compare" and name == "no run.json":
        expected = "not a run folder (no run.json)"
    _assert_one_clear_line(proc, expected)
    assert not written.exists()


@pytest.mark.parametrize("name", BAD_RECORDS)
def test_hostile_run_json_field_of_another_type_in_show(tmp_path, good_run, name):
    """`show` read run.json's status only to print it, so a malformed record passed."""
    damage, expected = BAD_RECORDS[name]
    bad = shutil.copytree(good_run, tmp_path / "bad")
    damage(bad)
    _assert_one_clear_line(in_process("show", str(bad)), expected)


def test_hostile_run_json_of_every_older_version_still_reads(tmp_path, good_run):
    """The field check takes what older versions wrote: fields missing (no noise, drift
    or time limit in version 1), fields since dropped (calibration), a null time limit."""
    old = shutil.copytree(good_run, tmp_path / "old")
    info = json.loads((old / "run.json").read_text())
    for name in ("noise", "drift", "time_limit_s", "processes", "layers"):
        info.pop(name, None)
    info.update(schema_version=1, calibration={"timer_ns": 30}, finished=None)
    (old / "run.json").write_text(json.dumps(info))
    for args in (("show", str(old)), ("report", str(old)), ("compare", str(good_run), str(old))):
        proc = in_process(*args)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


#: Where `report -o`/`--plots` must not write (issue 26.4: `report R -o R/summary.csv`
#: replaced the run's own summary): (arguments after the run folder R, expected line).
BAD_OUTPUTS = {
    "onto the run's summary.csv": (["-o", "{run}/summary.csv"], "{run}/summary.csv: inside "
                                   "the run folder {run}"),
    "onto the run's run.json": (["-o", "{run}/run.json"], "inside the run folder {run}"),
    "a new file in the run folder": (["-o", "{run}/table.md"], "{run}/table.md: inside the "
                                     "run folder {run}"),
    "a folder below the run folder": (["-o", "{run}/tables/t.html"], "inside the run folder"),
    "plots into the run folder": (["--plots", "{run}"], "{run}: inside the run folder {run}"),
    "plots below the run folder": (["--plots", "{run}/plots"], "inside the run folder {run}"),
    "a link into the run folder": (["-o", "{tmp}/link.csv"], "{tmp}/link.csv: inside the run "
                                   "folder {run}"),
    "onto a result file elsewhere": (["-o", "{tmp}/kept/summary.csv"],
                                     "{tmp}/kept/summary.csv: exists and is named as a run's "
                                     "result file"),
    "onto samples.csv elsewhere": (["-o", "{tmp}/kept/samples.csv"], "exists and is named as"),
}


@pytest.mark.parametrize("name", BAD_OUTPUTS)
def test_hostile_report_output_onto_a_run(tmp_path, good_run, name):
    """Refused before anything is read or written: one line, exit 2, every file as it was."""
    run = shutil.copytree(good_run, tmp_path / "R")
    if not (run / "summary.csv").exists():
        pd.read_parquet(run / "summary.parquet").to_csv(run / "summary.csv", index=False)
    (tmp_path / "link.csv").symlink_to(run / "summary.csv")
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "summary.csv").write_text("someone's table\n")
    (kept / "samples.csv").write_text("someone's samples\n")
    args, expected = BAD_OUTPUTS[name]
    fill = {"run": str(run), "tmp": str(tmp_path)}
    before = _tree(tmp_path)
    proc = in_process("report", str(run), *(a.format(**fill) for a in args))
    _assert_one_clear_line(proc, expected.format(**fill))
    assert _tree(tmp_path) == before


def test_hostile_report_output_beside_runs_is_written(tmp_path, good_run):
    """Outside every run folder, even in the folder that holds them, a report is written."""
    runs = tmp_path / "results"
    shutil.copytree(good_run, runs / "R")
    proc = in_process("report", str(runs), "-o", str(runs / "report.md"), "-o",
                      str(tmp_path / "summary.csv"))  # a result file's name, none there yet
    assert proc.returncode == 0, proc.stderr
    assert (runs / "report.md").is_file() and (tmp_path / "summary.csv").is_file()


def test_hostile_same_run_in_two_folders_counts_once(tmp_path, good_run):
    """`report x/R y/R` of a copied folder said `runs 2` (issue 26.5): one run, counted
    once, and a warning that names it and both folders."""
    first = shutil.copytree(good_run, tmp_path / "x" / "R")
    second = shutil.copytree(good_run, tmp_path / "y" / "R")
    table = tmp_path / "t.csv"
    proc = in_process("report", str(first), str(second), "-o", str(table))
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads((good_run / "run.json").read_text())["run_id"]
    warned = [line for line in proc.stderr.splitlines() if line.startswith("warning: run ")]
    assert len(warned) == 1, proc.stderr
    assert f"run {run_id} is in 2 folders ({first}, {second}): counted once, from the first" \
        in warned[0]
    assert pd.read_csv(table)["runs"].tolist() == [1]
    # The same run.json beside another run's: that one still counts.
    other = shutil.copytree(good_run, tmp_path / "z" / "S")
    info = json.loads((other / "run.json").read_text())
    (other / "run.json").write_text(json.dumps({**info, "run_id": "another",
                                                "started": "2000-01-01T00:00:00+00:00"}))
    proc = in_process("report", str(first), str(second), str(other), "-o", str(table))
    assert proc.returncode == 0, proc.stderr
    assert pd.read_csv(table)["runs"].tolist() == [2]


def _reference_rows(mine: list[float], theirs: list[list[float]]) -> list:
    """reference_ratio rows of the native dispatch case as `finish` makes them: one pair
    of processes per entry of `theirs` (the reference's per-round CPU costs per dispatch,
    ns), the product's cost `mine` in every process."""
    from gpuoverhead.analysis import pairs
    from gpuoverhead.analysis.series import Key, Series
    from gpuoverhead.cases import Case

    case = Case("empty", "empty", 1, 64, "sequential", "dispatch", "wait", (1, 16), "native")
    ref = Case("empty", "empty", 1, 64, "sequential", "dispatch", "wait", (1, 16), "native",
               variant="reference")
    key, ref_key = (Key(c, "cpu_per_dispatch_ns", "ns", "slope") for c in (case, ref))
    rounds = np.arange(5)
    product = [{key: Series(np.array(mine), rounds, 5)} for _ in theirs]
    reference = [{ref_key: Series(np.array(t), rounds, 5)} for t in theirs]
    return pairs.paired_ratios(product, reference, "reference loop", "reference_ratio",
                               pairs.REFERENCED, pairs.reference_of({"dispatch": ref}))


@pytest.mark.parametrize("theirs", [
    [[-40.0, -5.0, 0.0, 3.0, -2.0]],  # one pair: the reference's median is at or below 0
    [[480.0, 500.0, 510.0, 490.0, 505.0], [-40.0, -5.0, 0.0, 3.0, -2.0]],
    [[-1.0, 0.0, 0.0, -3.0, 1.0], [-40.0, -5.0, 0.0, 3.0, -2.0]]],
    ids=["one pair", "one of two pairs", "both pairs"])
def test_hostile_reference_below_resolution_is_no_ratio_warning(theirs):
    """Issue 26.15: on lavapipe `run` warned 'dispatch CPU cost per dispatch is infx the
    reference loop's [nan–inf]' where the reference loop's cost per dispatch was below what
    its sweep resolves. A ratio with no finite interval gives no warning (run/checks.py)."""
    from types import SimpleNamespace

    from gpuoverhead.run import checks

    group = SimpleNamespace(id="empty/elements=1")
    rows = _reference_rows([500.0] * 5, theirs)
    assert len(rows) == 1 and not math.isfinite(rows[0].estimate.ci_high), rows
    assert checks.reference_warnings(group, "wgpu-native", rows) == []
    # The check is not mute: three pairs where the product costs 5x the reference warn.
    clear = _reference_rows([500.0] * 5, [[100.0, 98.0, 101.0, 99.0, 102.0]] * 3)
    said = checks.reference_warnings(group, "wgpu-native", clear)
    assert len(said) == 1 and "is 5.00x the reference loop's" in said[0], said


def test_hostile_reference_below_resolution_is_said_as_such(tmp_path, good_run):
    """The ratio of the native layer over a reference loop whose cost per dispatch is
    below resolution (what `run` writes: value +inf, no interval) is no ratio: the summary
    says the reference is below resolution, not '∞'."""
    run = shutil.copytree(good_run, tmp_path / "R")
    summary = pd.read_parquet(run / "summary.parquet")
    row = summary[(summary.metric == "per_dispatch_ns") & summary.process.isna()].iloc[[0]]
    ratio = row.assign(metric="reference_ratio", unit="ratio", hint="ratio", better="none",
                       layer="native", call="cpu_per_dispatch_ns", value=math.inf,
                       ci_low=math.nan, ci_high=math.nan, rel_ci=math.nan, ci_level=0.0,
                       encoding="dispatch", sync="wait", bound="")
    pd.concat([summary, ratio], ignore_index=True).to_parquet(run / "summary.parquet")
    proc = in_process("show", str(run))
    assert proc.returncode == 0, proc.stderr
    shown = [line for line in proc.stdout.splitlines() if "api/ref." in line and "│" in line]
    assert len(shown) == 1, proc.stdout
    assert "∞" not in shown[0] and "below resolution" in shown[0], shown[0]


def test_hostile_readme_names_every_option_of_every_command():
    """README's table of commands is the usage a user reads (issue 26.16: selftest's line
    was checked against `selftest --help`): each command is in it with every option."""
    import typer

    from gpuoverhead.cli import app

    readme = (ROOT / "README.md").read_text()
    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        line = next((x for x in readme.splitlines() if x.startswith(f"| `gpuoverhead {name}")),
                    None)
        assert line is not None, f"README's table of commands has no `gpuoverhead {name}`"
        for param in command.params:
            if param.param_type_name == "option" and "--help" not in param.opts:
                names = param.opts + param.secondary_opts
                assert any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", line)
                           for o in names), (name, names, line)


def test_hostile_suite_that_is_not_a_file_of_text(tmp_path):
    _assert_one_clear_line(in_process("validate", "/dev/zero"),
                           "/dev/zero: cannot read: not a regular file but a character device")


def test_hostile_run_that_finished_nothing_reads_as_a_run(tmp_path, good_run):
    """A run interrupted in its first benchmark is a run with no estimates: `show` says so,
    `report` takes the others, `compare` says there is nothing in common."""
    empty = tmp_path / "empty"
    shutil.copytree(good_run, empty)
    summary = pd.read_parquet(empty / "summary.parquet").iloc[0:0]
    summary.to_parquet(empty / "summary.parquet")
    info = json.loads((empty / "run.json").read_text())
    (empty / "run.json").write_text(json.dumps({**info, "status": "interrupted"}))
    shown = in_process("show", str(empty))
    assert shown.returncode == 0 and "no estimates (status 'interrupted')" in shown.stderr
    both = tmp_path / "both"
    both.mkdir()
    shutil.copytree(good_run, both / "good")
    shutil.copytree(empty, both / "empty")
    assert in_process("report", str(both)).returncode == 0
    _assert_one_clear_line(in_process("compare", str(good_run), str(empty)),
                           "have no estimate in common")




def test_hostile_report_on_a_path_that_does_not_exist(tmp_path):
    _assert_one_clear_line(in_process("report", str(tmp_path / "nothing")),
                           "nothing: no such file or folder")


def test_hostile_output_that_the_terminal_cannot_encode(good_run):
    proc = gpuoverhead("show", str(good_run), env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "benchmark" in proc.stdout


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_hostile_stdout_that_is_full(good_run):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "gpuoverhead", "show", str(good_run)],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
                              cwd=ROOT)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "cannot write the output" in proc.stderr


@pytest.mark.slow
def test_hostile_mesa_runtime_dir_noise_is_gone():
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    proc = subprocess.run([sys.executable, "-m", "gpuoverhead", "adapters"], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "XDG_RUNTIME_DIR" not in proc.stderr


def test_hostile_torch_asked_for_but_not_importable(tmp_path):
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("raise ImportError('no torch on this machine')\n")
    proc = gpuoverhead("run", "--implementation", "torch", "--out", str(tmp_path / "out"),
                       env={"PYTHONPATH": f"{fake}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})
    _assert_one_clear_line(proc, "torch is not usable (no torch on this machine); install "
                                 "gpuoverhead[torch]")
    assert not (tmp_path / "out").exists()


def test_hostile_output_read_through_pipes(good_run_read_through_pipes):
    """What a user reads with stdout and stderr piped: what will be measured and where,
    a line per benchmark, whole table lines, no Mesa noise; typed columns for other tools."""
    proc, folder = good_run_read_through_pipes
    first = without_cpu_note(proc.stderr).splitlines()[0]
    assert first.startswith(f"measuring 1 benchmark of suite on {measured_adapter()[0]}")
    assert "results in" in first
    assert "[1/1] a/elements=64 (wgpu-native)" in proc.stderr
    assert "XDG_RUNTIME_DIR" not in proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) > 80  # not cut to 80 columns
    summary = pd.read_parquet(folder / "summary.parquet")
    assert str(summary["n_dispatches"].dtype) == "Int64"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.slow  # two waits of 1 s
def test_hostile_fifo_as_shader_or_suite(tmp_path, monkeypatch):
    """A FIFO is refused as a shader at once; as the suite, one nobody writes to is given up
    after the pipe's wait, and one that is written to is read (issue 26.7: both hung). In
    this process (five child processes cost 4 CPU-s), under a timeout: a read that blocks
    fails the test instead of holding CI."""
    from gpuoverhead.suite import source

    monkeypatch.setattr(source, "PIPE_WAIT_S", 1.0)
    monkeypatch.setattr(source, "_PIPES", {})  # none of another test's pipes
    os.mkfifo(tmp_path / "k.wgsl")
    os.mkfifo(tmp_path / "nobody.yaml")
    suite = write_suite(tmp_path, "benchmarks:\n  - {name: a, kernel: k.wgsl}\n")
    out = tmp_path / "out"
    with within(60):
        for path, expected in ((suite, "k.wgsl: not a regular file but a FIFO"),
                               (tmp_path / "nobody.yaml",
                                "nobody.yaml: cannot read: nothing came through the pipe in 1 s")):
            _assert_one_clear_line(in_process("validate", str(path)), expected)
            _assert_one_clear_line(in_process("run", "--suite", str(path), "--out", str(out)),
                                   expected)
        assert not out.exists()
        os.mkfifo(tmp_path / "fed.yaml")
        writer = threading.Thread(target=(tmp_path / "fed.yaml").write_text, args=(GOOD,),
                                  daemon=True)  # its open waits for the reader
        writer.start()
        proc = in_process("validate", str(tmp_path / "fed.yaml"), "--no-compile")
    assert proc.returncode == 0 and "ok: 1 groups" in proc.stdout, proc.stderr


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/dev/fd"), reason="needs /dev/fd")
@pytest.mark.parametrize("command", ["validate", "run"])
def test_hostile_suite_through_a_pipe_is_read_once(tmp_path, monkeypatch, command):
    """`validate <(cat s.yaml)` said "the file is empty": the suite is loaded more than once
    (checked, expanded, hashed) and a pipe can be read once. Its bytes are kept: the run
    records their sha256. In this process (a child's start-up less, ~1 CPU-s each; the pipe
    is then this process's /dev/fd), the kept pipes emptied first."""
    from gpuoverhead.suite import source

    text = ("defaults: {n_sweep: [1, 2], budget_s: 0.02, min_rounds: 3, warmup_max_rounds: 1,"
            " methodologies: [naive]}\n" + GOOD)
    read, write = os.pipe()
    os.write(write, text.encode())
    os.close(write)
    args = {"validate": ["validate", f"/dev/fd/{read}"],
            "run": ["run", "--suite", f"/dev/fd/{read}", "--backend", BACKEND, "--processes",
                    "1", "--implementation", "wgpu-native", "--out", str(tmp_path / "o")]}
    monkeypatch.setattr(source, "_PIPES", {})  # none of another test's pipes
    try:
        with within(120):
            proc = in_process(*args[command])
    finally:
        os.close(read)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    if command == "validate":
        assert "ok: 1 groups" in proc.stdout and "compiled" in proc.stdout, proc.stdout
    else:
        _, _, info = read_run(only_run_folder(tmp_path / "o"))
        assert info["suite"]["sha256"] == hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize(("shader", "expected"), [
    ("huge.wgsl", "huge.wgsl: larger than 1024 KiB: not a kernel"),
    ("zero.wgsl", "cannot read shader /dev/zero: not a regular file but a character device")])
def test_hostile_shader_too_large_or_a_device(tmp_path, shader, expected):
    """A 3 GB sparse shader, or /dev/zero through a link (with --outside-shaders), read until
    a MemoryError (issue 26.6); now at most 1 MiB + 1 byte is read, and a device not at all.
    Both refusals come before anything is measured: in this process (four child processes
    cost 3 CPU-s), under a timeout, so that a read that does not end fails the test."""
    with open(tmp_path / "huge.wgsl", "wb") as huge:
        huge.truncate(3 << 30)
    (tmp_path / "zero.wgsl").symlink_to("/dev/zero")
    inner = tmp_path / "suites"
    inner.mkdir()
    suite = write_suite(inner, f"benchmarks:\n  - {{name: a, kernel: ../{shader}}}\n")
    out = tmp_path / "out"
    with within(60):
        _assert_one_clear_line(in_process("validate", str(suite), "--outside-shaders"),
                               expected)
        _assert_one_clear_line(in_process("run", "--suite", str(suite), "--outside-shaders",
                                          "--out", str(out)), expected)
    assert not out.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME is Linux's")
@pytest.mark.parametrize("where", ["unwritable XDG_CACHE_HOME", "read-only HOME"])
@pytest.mark.slow
def test_hostile_cache_folder_that_cannot_be_written(tmp_path, monkeypatch, where):
    """The native layer's cache: a PermissionError traceback before (issue 26.9); now the loop
    is built in a private folder under the temporary one, and the run says where. The run in
    this process (its environment this test's, which its worker inherits: a child's
    start-up less), on the CPUs given (--affinity: the CPU probe, which a cache folder of
    its own would make again, is no part of this)."""
    from gpuoverhead.gpu import cache_folder

    blocker = tmp_path / "a file"  # no folder can be made under it, not even by root
    blocker.write_text("")
    home = tmp_path / "home"
    home.mkdir(mode=0o500)  # read-only, except to root: root gets /proc, where none can
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {"XDG_CACHE_HOME": str(blocker / "cache")} if where.endswith("XDG_CACHE_HOME") \
        else {"HOME": "/proc" if os.geteuid() == 0 else str(home), "XDG_CACHE_HOME": ""}
    for name, value in {**env, "TMPDIR": str(temp)}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    monkeypatch.setattr(cache_folder, "_said", set())
    suite = write_suite(tmp_path, "defaults: {n_sweep: [1, 2], budget_s: 0.02, min_rounds: 3,"
                                  " warmup_max_rounds: 1, methodologies: [sequential], layers:"
                                  " [native], encodings: [dispatch], gpu_timestamps: false}\n"
                        + GOOD)
    every = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    proc = in_process("run", "--suite", str(suite), "--backend", BACKEND, "--processes", "1",
                      "--implementation", "wgpu-native", "--out", str(tmp_path / "o"),
                      "--affinity", every)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    _, _, info = read_run(only_run_folder(tmp_path / "o"))
    if native.compiler() is not None:
        assert info["layers"]["native"]["library"].startswith(str(temp)), info["layers"]


@pytest.mark.skipif(not sys.platform.startswith("linux") or native.compiler() is None,
                    reason="XDG_CACHE_HOME is Linux's; needs a C compiler")
def test_hostile_no_folder_at_all_for_the_native_loop(tmp_path, monkeypatch):
    """Neither the cache folder nor the temporary one can be written: the layer is skipped
    with a note that says which folders were tried."""
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", str(blocker / "tmp"))
    note = native.load()
    assert isinstance(note, str), note
    assert note.startswith("native layer skipped: no cache folder can be written (")
    assert str(blocker / "cache") in note and str(blocker / "tmp") in note


def test_hostile_show_on_a_folder_of_runs_lists_them(tmp_path):
    """Issue 26.17: `show results/` lists the runs in it (a refactor had made it raise 'the
    truth value of a DataFrame is ambiguous'); a folder without runs is one line, exit 2."""
    runs = ROOT / "results" / "h200"
    proc = in_process("show", str(runs))
    assert proc.returncode == 0, proc.stderr
    for name in ("processes-3", "decode", "crossover-small"):
        assert name in proc.stdout
    proc = in_process("show", str(tmp_path))
    assert proc.returncode == 2 and "not a run folder" in proc.stderr, proc


def test_hostile_version_short_help_and_a_closed_stdout():
    """Issue 26.17 and 26.10: `--version` and `-h` answer; `show R >&-` (stdout closed)
    ends quietly instead of an AttributeError traceback."""
    from gpuoverhead import __version__

    assert in_process("--version").stdout.strip() == f"gpuoverhead {__version__}"
    assert in_process("-h").stdout.startswith("Usage: ")
    run = ROOT / "results" / "h100" / "default"
    proc = subprocess.run(f'"{sys.executable}" -m gpuoverhead show "{run}" >&-', shell=True,
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(("limit_mib", "said"), [
    (600, "the address-space limit (ulimit -v) is 0.59 GiB"),
    (300, "error: out of memory"),
])
def test_hostile_memory_limit_is_one_line(limit_mib, said):
    """Issue 26.11: under `ulimit -v` a run segfaulted in the driver (1 GiB), or ended in a
    MemoryError or 'Not enough memory' traceback (0.3-1.5 GiB). A limit below what the
    drivers need is refused before they load; running out while importing is one line."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_mib << 20, limit_mib << 20))

    proc = subprocess.run([sys.executable, "-m", "gpuoverhead", "run", "--quick",
                           "--implementation", "wgpu-native"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, preexec_fn=limit)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], proc.stderr


@pytest.mark.slow
def test_hostile_two_forced_runs_into_one_id_both_end_cleanly(tmp_path):
    """Issue 26.13: two `--force` runs into the same id a second apart shared a staging
    folder and the second died mid-run. Issue 53.9: a run holds its id while it runs, so
    the one that comes second while the other runs is refused in one line (exit 2); one
    that comes after it has ended replaces it. The run is a cadence that idles 250 ms after
    each burst: it holds its id for about 5.7 s, past the second's start-up, at 1.9 CPU-s
    (add_one's every methodology and layer held it 4.4 s, at 4.9 CPU-s). The second starts
    in this process (a child's start-up less) once the first holds the id (its lock file
    is there), or has ended."""
    suite = write_suite(tmp_path, "benchmarks:\n  - {name: a, kernel: empty, elements: 1, "
                                  "methodologies: [cadence], gaps_ms: [250], burst: 2, encodings:"
                                  " [submit], layers: [wrapper], budget_s: 3, min_rounds: 3,"
                                  " warmup_max_rounds: 1}\n")
    args = [sys.executable, "-m", "gpuoverhead", "run", "--suite", str(suite), "--processes",
            "1", "--implementation", "wgpu-native", "--backend", BACKEND, "--run-id", "same",
            "--force", "--out", str(tmp_path / "out")]
    first = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    held = tmp_path / "out" / ".same.lock"
    with within(120):
        while not held.exists() and first.poll() is None:
            threading.Event().wait(0.05)
    second = in_process(*args[3:])
    _, err = first.communicate(timeout=300)
    codes = sorted((first.returncode, second.returncode))
    assert codes in ([0, 0], [0, 2]), (err, second.stderr)
    if codes == [0, 2]:
        refused = err if first.returncode else second.stderr
        assert "another run with this --run-id is writing it now" in refused, refused
    _, summary, info = read_run(tmp_path / "out" / "same")
    assert info["status"] == "complete" and len(summary) > 0
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["same"]
