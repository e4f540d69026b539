"""The run folder: a finished benchmark's run.json entries and its rows are one record, so
run.json never names a finished benchmark whose rows are not written beside it."""

from __future__ import annotations

import json

import pandas as pd

from gpuoverhead.results.columns import SUMMARY_COLUMNS, RunRecord
from gpuoverhead.run.files import Finished, RunFolder


def _record() -> RunRecord:
    return RunRecord(run_id="r", argv=[], suite={}, seed=1, started="now", host={},
                     packages={}, native={}, warnings=["from the plan"])


def _finished(name: str) -> Finished:
    row = pd.DataFrame([{**dict.fromkeys(SUMMARY_COLUMNS), "benchmark": name, "elements": 1,
                         "methodology": "naive", "layer": "wrapper", "metric": "latency_ns",
                         "value": 1000.0}])
    return Finished(entries=[{"benchmark": name, "status": "ok"}], samples=[row],
                    summaries=[row], warnings=[f"{name} warned"])


def test_run_json_and_tables_hold_the_same_finished_benchmarks(tmp_path):
    folder = RunFolder.open(tmp_path / "r", _record(), force=False)
    folder.save("running")
    assert json.loads((tmp_path / "r" / "run.json").read_text())["benchmarks"] == []
    folder.add(_finished("a"))
    folder.add(_finished("b"))
    folder.save("interrupted")
    info = json.loads((tmp_path / "r" / "run.json").read_text())
    summary = pd.read_csv(tmp_path / "r" / "summary.csv")
    assert [b["benchmark"] for b in info["benchmarks"]] == ["a", "b"]
    assert list(summary.benchmark) == ["a", "b"]
    assert info["warnings"] == ["from the plan", "a warned", "b warned"]
    assert info["status"] == "interrupted" and info["finished"]
    assert not (tmp_path / "r" / "states.parquet").exists()  # no job kept a state beside


def test_the_summary_is_made_once_for_each_count_of_finished_benchmarks(tmp_path):
    """A save, the closing notes and the run's result read one summary; a benchmark more
    makes it again, with its rows."""
    folder = RunFolder.open(tmp_path / "r", _record(), force=False)
    assert folder.summary().empty
    folder.add(_finished("a"))
    first = folder.summary()
    assert list(first.benchmark) == ["a"] and folder.summary() is first
    folder.add(_finished("b"))
    assert list(folder.summary().benchmark) == ["a", "b"]


def test_a_jobs_estimates_in_a_cpu_state_are_written_beside_the_summary(tmp_path):
    folder = RunFolder.open(tmp_path / "r", _record(), force=False)
    row = _finished("a")
    folder.add(Finished(entries=row.entries, samples=row.samples, summaries=row.summaries,
                        states=[row.summaries[0].assign(cpu_state="fast")]))
    folder.save("complete")
    states = pd.read_parquet(tmp_path / "r" / "states.parquet")
    assert list(states.cpu_state) == ["fast"] and list(states.benchmark) == ["a"]
    assert "cpu_state" not in pd.read_parquet(tmp_path / "r" / "summary.parquet")


def test_the_start_record_is_not_changed_by_what_finished(tmp_path):
    record = _record()
    folder = RunFolder.open(tmp_path / "r", record, force=False)
    folder.add(_finished("a"))
    assert folder.record().benchmarks and not record.benchmarks
    assert record.warnings == ["from the plan"]


def test_a_forced_run_writes_apart_until_it_has_a_benchmark(tmp_path):
    old = RunFolder.open(tmp_path / "r", _record(), force=False)
    old.add(_finished("old"))
    old.save("complete")
    old.release()
    new = RunFolder.open(tmp_path / "r", _record(), force=True)
    assert new.folder != tmp_path / "r" and str(new.folder.name).startswith(".r.")
    new.save("running")
    assert json.loads((tmp_path / "r" / "run.json").read_text())["benchmarks"][0][
        "benchmark"] == "old"
    new.add(_finished("new"))
    new.save("running")
    assert new.folder == tmp_path / "r"
    assert json.loads((tmp_path / "r" / "run.json").read_text())["benchmarks"][0][
        "benchmark"] == "new"
    new.release()
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


def test_a_folder_written_again_keeps_no_states_of_the_run_before(tmp_path):
    """write_run without states removes a states table an earlier run left (a forced run into
    a dead run's folder): compare would judge by it."""
    from gpuoverhead.results.write import write_run
    row = _finished("a").summaries[0]
    write_run(tmp_path, row, row, {"run_id": "r"}, row.assign(cpu_state="fast"))
    assert (tmp_path / "states.parquet").is_file()
    write_run(tmp_path, row, row, {"run_id": "r"})
    assert not (tmp_path / "states.parquet").exists()
    assert not (tmp_path / "states.csv").exists()
