"""A suite reads the same through libyaml's parser as through PyYAML's Python one: the same
data and lines, and the same one-line errors, hostile files included (suite/source.py
`LOADER`), but for the words of a syntax error, libyaml's own, at the same line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpuoverhead.errors import UserError
from gpuoverhead.suite import source

pytestmark = pytest.mark.skipif(not yaml.__with_libyaml__,
                                reason="PyYAML here was built without libyaml")

TEXTS = {
    "a suite": "name: s\ndefaults: {n_sweep: [1, 8]}\nbenchmarks:\n  - name: a\n"
               "    kernel: empty\n  - {name: b, kernel: add_one, elements: [64, 1024]}\n",
    "a NUL after other letters": "name: é\ndescription: ü\nbenchmarks: [a\x00]\n",
    "a C1 control": "name: s\n\ndescription: \x85 x \x90\n",
    "alias bomb": "a: &a [1, 1]\nb: &b [*a, *a]\nc: [*b, *b]\n",
    "python tag": "!!python/object/apply:os.system ['true']\n",
    "not yaml": "benchmarks: [1,\n",
    "duplicate key": "benchmarks:\n  - {name: a, kernel: add_one, kernel: empty}\n",
    "100,000 deep": "a: " + "[" * 100_000 + "]" * 100_000 + "\n",
    "a long integer": "a: " + "9" * 50 + "\n",
    "900 KB name": "name: " + "x" * 900_000 + "\nbenchmarks: []\n",
    "empty": "",
}


def _read(path: Path, loader: type, monkeypatch: pytest.MonkeyPatch) -> tuple:
    monkeypatch.setattr(source, "LOADER", loader)
    try:
        doc = source.load_yaml(path)
    except UserError as exc:
        return ("error", str(exc))
    return ("read", doc.data, doc.lines)


@pytest.mark.parametrize("name", TEXTS)
def test_libyaml_reads_as_python_does(name, tmp_path, monkeypatch):
    path = tmp_path / "suite.yaml"
    path.write_text(TEXTS[name], encoding="utf-8")
    assert source.LOADER is not yaml.SafeLoader
    fast = _read(path, source.LOADER, monkeypatch)
    python = _read(path, yaml.SafeLoader, monkeypatch)
    if name == "not yaml":  # "did not find expected node content" at the same line
        fast, python = ((kind, text.split(" not valid YAML: ")[0]) for kind, text in (fast, python))
    assert fast == python
    if name != "a suite" and not name.startswith("900"):
        assert fast[0] == "error", fast
