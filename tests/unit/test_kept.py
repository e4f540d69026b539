"""kept.py: answers kept per boot in the cache folder, and what torch's offer keeps there."""

from __future__ import annotations

import json
import time

import pytest

from gpuoverhead.gpu import kept


def _as_is(value):
    """A caller's `read` that takes any value."""
    return value


def test_a_value_is_kept_for_its_key_this_boot_and_for_its_time(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert kept.get("x.json", ["a", 1], 60, _as_is) is None
    kept.put("x.json", ["a", 1], {"v": 2})
    kept.put("x.json", ["b"], 3)
    assert kept.get("x.json", ["a", 1], 60, _as_is) == {"v": 2}
    assert kept.get("x.json", ["b"], 60, _as_is) == 3
    assert kept.get("x.json", ["a", 2], 60, _as_is) is None
    later = time.time() + 61
    monkeypatch.setattr(kept.time, "time", lambda: later)
    assert kept.get("x.json", ["a", 1], 60, _as_is) is None  # too old
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(kept, "boot", lambda: "another boot")
    assert kept.get("x.json", ["a", 1], 60, _as_is) is None


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"k": 1}', "[" * 200_000, "\x00"])
def test_a_damaged_file_is_ignored_and_replaced_hostile(monkeypatch, tmp_path, text):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = tmp_path / "gpuoverhead" / "x.json"
    path.parent.mkdir()
    path.write_text(text)
    assert kept.get("x.json", ["a"], 60, _as_is) is None
    kept.put("x.json", ["a"], 1)
    assert kept.get("x.json", ["a"], 60, _as_is) == 1


@pytest.mark.torch_here
@pytest.mark.slow
def test_torch_s_device_is_kept_and_a_kept_one_of_the_wrong_shape_is_asked_again(
        monkeypatch, tmp_path):
    pytest.importorskip("torch")
    from gpuoverhead.drivers import pytorch
    from gpuoverhead.drivers.base import Request

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    request = Request(None)  # type: ignore[arg-type]  (offers reads no suite)
    real = pytorch.offers(request, [])[0].info
    path = tmp_path / "gpuoverhead" / pytorch.FILE
    entries = json.loads(path.read_text())
    for entry in entries.values():
        entry["value"]["device"] = "kept device"
    path.write_text(json.dumps(entries))
    assert pytorch.offers(request, [])[0].info.device == "kept device"
    for entry in entries.values():
        entry["value"]["timestamps"] = "yes"  # not a bool: not an AdapterInfo
    path.write_text(json.dumps(entries))
    assert pytorch.offers(request, [])[0].info == real
