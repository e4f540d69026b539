"""Every error a user can cause ends in one clear line, exit code 2, and no traceback."""

from __future__ import annotations

import os

import pytest
from conftest import CONFIGS, gpuoverhead, only_run_folder, write_suite

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
}


def _assert_one_clear_line(proc, expected: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert expected in proc.stderr, proc.stderr


@pytest.mark.parametrize("name", BAD_SUITES)
def test_validate_explains_bad_suites(tmp_path, name):
    text, expected = BAD_SUITES[name]
    proc = gpuoverhead("validate", str(write_suite(tmp_path, text)))
    _assert_one_clear_line(proc, expected)


def test_validate_lists_every_problem(tmp_path):
    suite = write_suite(tmp_path, "benchmarks:\n  - {name: a, kernel: add_one, elements: 0,"
                                  " colour: 1}\n")
    proc = gpuoverhead("validate", str(suite))
    assert proc.returncode == 2
    assert "elements[0]" in proc.stderr and "colour" in proc.stderr


def test_run_refuses_a_bad_suite_before_measuring(tmp_path):
    text, expected = BAD_SUITES["unknown key"]
    out = tmp_path / "out"
    proc = gpuoverhead("run", "--suite", str(write_suite(tmp_path, text)), "--out", str(out))
    _assert_one_clear_line(proc, expected)
    assert not out.exists()


def test_shader_that_does_not_compile_names_file_and_line(tmp_path):
    (tmp_path / "broken.wgsl").write_text("override WG: u32 = 64;\nfn main( {\n")
    suite = write_suite(tmp_path, "benchmarks:\n  - {name: a, kernel: broken.wgsl}\n")
    proc = gpuoverhead("run", "--suite", str(suite), "--backend", "vulkan",
                       "--out", str(tmp_path / "out"))
    _assert_one_clear_line(proc, "broken.wgsl:2:")
    assert "shader rejected" in proc.stderr


def test_unknown_backend(tmp_path):
    proc = gpuoverhead("run", "--backend", "glide", "--out", str(tmp_path))
    _assert_one_clear_line(proc, "unknown backend 'glide'; choose one of vulkan, metal, d3d12, "
                                 "opengl")


def test_backend_not_present_lists_the_present_ones(tmp_path):
    proc = gpuoverhead("run", "--backend", "metal", "--out", str(tmp_path))
    _assert_one_clear_line(proc, "no adapter with backend metal; present: ")
    assert "(vulkan, CPU, wgpu-native)" in proc.stderr


def test_adapter_name_not_present(tmp_path):
    proc = gpuoverhead("run", "--adapter", "GeForce 256", "--out", str(tmp_path))
    _assert_one_clear_line(proc, "no adapter with name ~ 'GeForce 256'; present: ")


def test_no_adapter_at_all_says_how_to_get_a_software_one(tmp_path):
    hide = {"VK_DRIVER_FILES": str(tmp_path / "none.json"),
            "VK_ICD_FILENAMES": str(tmp_path / "none.json"),
            "__EGL_VENDOR_LIBRARY_FILENAMES": str(tmp_path / "none.json")}
    for args in (("run", "--out", str(tmp_path)), ("adapters",)):
        proc = gpuoverhead(*args, env=hide)
        _assert_one_clear_line(proc, "no WebGPU adapter found")
        assert "apt-get install mesa-vulkan-drivers" in proc.stderr


@pytest.mark.skipif(os.name == "posix" and os.geteuid() == 0,
                    reason="root can write into a read-only folder; the file case covers it")
def test_unwritable_output_folder(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    proc = gpuoverhead("run", "--suite", str(CONFIGS / "ci.yaml"), "--out", str(locked))
    _assert_one_clear_line(proc, "cannot write results to")


def test_output_folder_that_is_a_file(tmp_path):
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    proc = gpuoverhead("run", "--suite", str(CONFIGS / "ci.yaml"), "--out", str(blocker))
    _assert_one_clear_line(proc, f"cannot write results to {blocker}")


def test_existing_run_folder_is_not_overwritten(tmp_path):
    suite = write_suite(tmp_path, "defaults: {n_sweep: [1, 2], budget_s: 0.02, min_rounds: 3,"
                                  " warmup_max_rounds: 1}\n" + GOOD)
    args = ("run", "--suite", str(suite), "--backend", "vulkan", "--out", str(tmp_path / "o"),
            "--run-id", "same", "--processes", "1")
    assert gpuoverhead(*args).returncode == 0
    before = (only_run_folder(tmp_path / "o") / "run.json").read_bytes()
    proc = gpuoverhead(*args)
    _assert_one_clear_line(proc, "already exists; choose another --run-id, or pass --force")
    assert (only_run_folder(tmp_path / "o") / "run.json").read_bytes() == before
    assert gpuoverhead(*args, "--force").returncode == 0
