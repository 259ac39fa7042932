"""Store targets and output paths refused before any work (issue 36 deliver 4 / 5), each found
failing by the round-four hostile campaign: `schedules` created an empty 780 KB warehouse at a
mistyped path (it stores replays, so it opened the file writable), `--lake ''` fell back to the
warehouse file without a word, and `workload --out`, `bench ingest --workdir` and
`bench scale --workdir` naming a file ended in a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main


def test_schedules_on_a_missing_warehouse_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "typo.duckdb"
    assert main(["schedules", "--warehouse", str(target)]) == 2
    assert "no warehouse at" in capsys.readouterr().err
    assert not target.exists()


def test_empty_lake_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--lake", "", "runs"])
    assert exit_.value.code == 2
    assert "argument --lake: an empty path" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["workload", "--out", "{file}"],
        ["bench", "ingest", "--size-mb", "1", "--workdir", "{file}"],
        ["bench", "scale", "--workdir", "{file}"],
        ["--lake", "{file}", "runs"],
    ],
    ids=["workload --out", "bench ingest --workdir", "bench scale --workdir", "--lake"],
)
def test_output_folder_that_is_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    path = tmp_path / "a-file"
    path.write_text("x")
    with pytest.raises(SystemExit) as exit_:
        main([a.replace("{file}", str(path)) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and "exists and is not a folder" in err[-1]
    assert path.read_text() == "x"


@pytest.mark.parametrize("tag", ["pp=nan", "chunk_size=-5", "seq_len=inf", "tp=0", "vp=2.5"])
def test_count_tag_that_is_no_whole_number_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    """`--tag pp=nan` stored the run with pp NULL and exit 0 (round-four campaign): a count
    fact must be a whole number >= 1, refused before anything is read or created."""
    target = tmp_path / "w.duckdb"
    assert main(["ingest", str(tmp_path), "--tag", tag, "--warehouse", str(target)]) == 2
    key = tag.partition("=")[0]
    assert f"{key} must be a whole number >= 1" in capsys.readouterr().err
    assert not target.exists()
