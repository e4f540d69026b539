"""Result files are replaced atomically, and a replace refused for a while is tried again."""

from __future__ import annotations

import os

import pytest

from gpuoverhead import whole_files
from gpuoverhead.results import write


def test_a_replace_refused_twice_is_tried_again(tmp_path, monkeypatch):
    real, refusals = os.replace, []

    def held_open(src, dst):
        if len(refusals) < 2:  # as Windows does while a reader holds the file
            refusals.append(dst)
            raise PermissionError(13, "The process cannot access the file")
        real(src, dst)

    monkeypatch.setattr(whole_files.os, "replace", held_open)
    monkeypatch.setattr(whole_files, "REPLACE_WAITS_S", (0.0,) * 3)
    write.write_json(tmp_path / "run.json", {"status": "complete"})
    assert len(refusals) == 2 and (tmp_path / "run.json").read_text().strip().endswith("}")
    assert not list(tmp_path.glob(".*partial"))


def test_a_replace_refused_for_good_raises_and_keeps_the_old_file(tmp_path, monkeypatch):
    (tmp_path / "run.json").write_text("old")

    def refused(src, dst):
        raise PermissionError(13, "The process cannot access the file")

    monkeypatch.setattr(whole_files.os, "replace", refused)
    monkeypatch.setattr(whole_files, "REPLACE_WAITS_S", (0.0,) * 3)
    with pytest.raises(PermissionError):
        write.write_json(tmp_path / "run.json", {"status": "complete"})
    assert (tmp_path / "run.json").read_text() == "old"
    assert not list(tmp_path.glob(".*partial"))


def test_text_cells_are_made_inert_beside_missing_ones():
    """inert_text leaves missing cells (None, NaN, pd.NA) missing, in object and text
    columns alike, and makes the formulas beside them text; numbers are not touched."""
    import pandas as pd

    table = pd.DataFrame({
        "a": pd.Series(["=1+1", None, "x", float("nan")], dtype=object),
        "b": pd.array(["@SUM(A1)", pd.NA, "-", "ok"], dtype="string"),
        "c": pd.Series(["+cmd", None, "1e3", "z"], dtype="str"),
        "d": [1.0, 2.0, None, 3.0]})
    found = write.inert_text(table)
    for name, first in (("a", "'=1+1"), ("b", "'@SUM(A1)"), ("c", "'+cmd")):
        assert found[name][0] == first and found[name].dtype == table[name].dtype
        assert found[name].isna().tolist() == table[name].isna().tolist()
        assert found[name][2:].dropna().tolist() == table[name][2:].dropna().tolist()
    assert found["d"].equals(table["d"])
