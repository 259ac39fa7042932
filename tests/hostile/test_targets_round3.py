"""Store targets and output paths, round three (issue 36, /tmp campaign of 2026-12-04): a
folder named with a `?` made every DuckDB commit fail with a traceback (DuckDB puts `.wal` before
the first `?` of the resolved path, even through a link), for a warehouse file and for a lake's
views file; an output path under a folder nothing can be written in (/proc, /sys) was accepted
and ended in a traceback after the work."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.paths import LAKE_ENV


@pytest.fixture(autouse=True)
def _lake_of_this_test_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--lake` sets the process's lake for every later command (use_lake): undone after each
    test, so other tests in this process see none."""
    monkeypatch.setenv(LAKE_ENV, "")  # records the variable's state before, restored after
    monkeypatch.delenv(LAKE_ENV)


@pytest.mark.parametrize(
    "argv",
    [
        ["ingest", "{empty}", "--warehouse", "{q}/w.duckdb"],
        ["--lake", "{q}", "ingest", "{empty}"],
        ["--lake", "{q}/lake", "ingest", "{empty}"],
    ],
    ids=["ingest --warehouse", "--lake ingest", "--lake below ingest"],
)
def test_a_folder_named_with_a_question_mark_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    folder = tmp_path / "runs[1]?"
    folder.mkdir()
    (tmp_path / "empty").mkdir()
    argv = [a.replace("{q}", str(folder)).replace("{empty}", str(tmp_path / "empty")) for a in argv]
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "holds a '?': DuckDB cannot keep a database" in err[0]
    assert sorted(p.name for p in folder.iterdir()) == []  # nothing half-made


def test_a_lake_with_glob_characters_but_no_question_mark_still_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sim = tmp_path / "sim"
    assert main(["simulate", "--seq-len", "8192", "--chunk", "4096", "--out", str(sim)]) == 0
    lake = tmp_path / "lake[1]*{a,b}"
    assert main(["--lake", str(lake), "ingest", str(sim)]) == 0
    capsys.readouterr()
    assert main(["--lake", str(lake), "runs", "--json"]) == 0
    assert '"run_id"' in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["dashboards", "--warehouse", "{w}", "--out", "/proc/tracereplay-x"],
        ["check", "--warehouse", "{w}", "--junit", "/proc/tracereplay.xml"],
        ["simulate", "--out", "/proc/tracereplay-sim"],
    ],
    ids=["dashboards --out /proc/..", "check --junit /proc/..", "simulate --out /proc/.."],
)
def test_an_output_path_nothing_can_be_written_to_is_refused_up_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([a.replace("{w}", str(tmp_path / "w.duckdb")) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2
    assert "nothing can be written in /proc" in err[-1]
