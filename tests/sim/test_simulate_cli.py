"""`tracereplay simulate`: options, outputs, summary and argument errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.cli import ExitCode, main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["simulate", *argv])
    except SystemExit as exc:  # refused at the parser (a number out of range): exit 2
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_single_json_and_all_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "--schedule",
        "single",
        "--chunk",
        "2048",
        "--interactive-first",
        "--json",
        "--out",
        str(tmp_path),
        "--format",
        "ascend,kineto,chrome",
    )
    assert code == ExitCode.OK
    report = json.loads(out)
    # seed 001's "budget 2048, interactive first" row: 12.2 ms / 56 ms / 0.95 s / 21 ms / 97 ms
    assert round(report["itl_max_ms"]) == 56 and round(report["short_ttft_max_ms"]) == 97
    assert report["schedule"] == "single" and report["chunk_size"] == 2048
    written = [Path(p) for p in report["written"]]
    assert any(p.name.endswith("_ascend_pt") and p.is_dir() for p in written)
    assert any(p.name.endswith(".pt.trace.json") for p in written)
    chrome = next(p for p in written if p.name.endswith(".perfetto.json"))
    assert json.loads(chrome.read_text())["displayTimeUnit"] == "ns"


def test_default_formats_and_text_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "--schedule", "single", "--chunk", "0", "--out", str(tmp_path))
    assert code == ExitCode.OK
    assert "itl_max_ms" in out and "wrote" in out
    assert {p.suffix or "dir" for p in tmp_path.iterdir()} == {".json", "dir"}
    assert not (tmp_path / "kineto").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--schedule", "single", "--chunk", "10"], "no room"),
        (["--schedule", "single", "--format", "ascend,foo"], "unknown format"),
        (["--schedule", "single", "--ranks", "2"], "--ranks must be 1"),
        (["--schedule", "single", "--model", "nope"], "--model"),
        (["--schedule", "single", "--requests", "0"], "--requests"),
        (["--schedule", "single", "--noise", "-1"], "--noise"),
        (["--schedule", "cpp", "--vp", "2"], "--vp 2 needs a vpp"),
        (["--schedule", "cpp", "--cap", "100"], "single only"),
        (["--schedule", "cpp", "--chunk", "0"], "single only"),
        (["--schedule", "vpp", "--model", "gpt-9"], "not a simulator preset"),
    ],
)
def test_bad_arguments_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = _run(capsys, *argv)
    assert code == ExitCode.BAD_INPUT
    assert message in err


def test_pipeline_schedule_writes_every_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(
        capsys,
        "--schedule",
        "vpp",
        "--ranks",
        "2",
        "--vp",
        "2",
        "--seq-len",
        "65536",
        "--chunk",
        "16384",
        "--requests",
        "2",
        "--arrival-gap",
        "250",
        "--format",
        "ascend,kineto",
        "--out",
        str(tmp_path),
        "--json",
    )
    assert code == ExitCode.OK
    report = json.loads(out)
    assert (report["schedule"], report["ranks"], report["vp"], report["requests"]) == (
        "vpp",
        2,
        2,
        2,
    )
    assert report["chunk_size"] == 16384 and report["seq_len"] == 65536
    assert 0 <= report["bubble_ratio"] < 1
    folders = sorted(tmp_path.glob("*_ascend_pt"))
    assert [f.name.split("-rank")[1][0] for f in folders] == ["0", "1"]
    assert len(list((tmp_path / "kineto").glob("*.pt.trace.json"))) == 2
    meta = json.loads((folders[0] / "profiler_metadata.json").read_text())
    assert (meta["schedule"], meta["pp"], meta["vp"], meta["seq_len"]) == (
        "vpp",
        "2",
        "2",
        "65536",
    )


def test_out_folder_holds_one_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A second run into the same folder is refused (ingest would merge the ranks of both)
    unless --overwrite, which replaces the earlier run; foreign traces are never touched."""
    base = ["--seq-len", "32768", "--chunk", "16384", "--out", str(tmp_path), "--format"]
    assert _run(capsys, "--schedule", "cpp", "--ranks", "4", *base, "ascend,kineto")[0] == 0
    assert len(list(tmp_path.glob("*_ascend_pt"))) == 4
    code, _, err = _run(capsys, "--schedule", "cpp", *base, "ascend")
    assert code == ExitCode.BAD_INPUT and "--overwrite" in err
    assert len(list(tmp_path.glob("*_ascend_pt"))) == 4
    assert _run(capsys, "--schedule", "cpp", *base, "ascend", "--overwrite")[0] == ExitCode.OK
    assert len(list(tmp_path.glob("*_ascend_pt"))) == 2
    assert not list((tmp_path / "kineto").glob("*.json"))
    (tmp_path / "rank9_ascend_pt").mkdir()
    code, _, err = _run(capsys, "--schedule", "cpp", *base, "ascend", "--overwrite")
    assert code == ExitCode.BAD_INPUT and "rank9_ascend_pt" in err
    assert (tmp_path / "rank9_ascend_pt").is_dir()


def test_help_explains_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for option in (
        "--model",
        "--schedule",
        "--seq-len",
        "--chunk",
        "--ranks",
        "--vp",
        "--requests",
        "--arrival-gap",
        "--seed",
        "--noise",
        "--out",
        "--format",
        "--overwrite",
        "--json",
    ):
        assert option in text
    assert text.count("default") >= 10


def test_comm_and_collective_options(capsys: pytest.CaptureFixture[str]) -> None:
    """--collectives blocking (default) / overlapped / none and --comm none change what the run
    pays for communication; --tp must be positive."""
    base = ["--schedule", "cpp", "--seq-len", "131072", "--chunk", "16384", "--json"]
    report = {}
    for name, extra in {
        "blocking": [],
        "overlapped": ["--collectives", "overlapped"],
        "none": ["--collectives", "none"],
        "free": ["--comm", "none"],
    }.items():
        code, out, _ = _run(capsys, *base, *extra)
        assert code == ExitCode.OK
        report[name] = json.loads(out)
    exposed = {k: v["exposed_comm_ns"] for k, v in report.items()}
    assert exposed["blocking"] > 1e9 > 1e7 > exposed["none"] > exposed["free"] == 0
    assert exposed["overlapped"] < 0.1 * exposed["blocking"]
    assert report["blocking"]["makespan_ns"] > report["overlapped"]["makespan_ns"]
    code, _, err = _run(capsys, *base, "--tp", "0")
    assert code == ExitCode.BAD_INPUT and "argument --tp: '0'" in err


def test_collected_at_dates_the_run_for_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # runs written night by night form a history: the folder stamps and the ingested
    # collected_at follow --collected-at (default 2026-01-01)
    from pipelines.ingest.load import ingest_paths
    from pipelines.store import open_store

    for night in ("2026-03-01", "2026-03-02T02:30"):
        out = tmp_path / night
        code, _, _ = _run(
            capsys, "--seq-len", "32768", "--chunk", "16384", "--collected-at", night,
            "--format", "ascend", "--out", str(out),
        )  # fmt: skip
        assert code == ExitCode.OK
    assert any("20260302023000000" in p.name for p in (tmp_path / "2026-03-02T02:30").iterdir())
    con = open_store(tmp_path / "w.duckdb").open()
    ingest_paths([tmp_path], con, progress=False)
    stamps = con.execute("select collected_at from runs order by collected_at").fetchall()
    # the profiler's start: the simulated t = 0 plus the run's first operation
    assert [str(d[0])[:16] for d in stamps] == ["2026-03-01 00:00", "2026-03-02 02:30"]
    code, _, err = _run(capsys, "--collected-at", "2026-13-01")  # argparse's own refusal
    assert code == ExitCode.BAD_INPUT and "is not a date" in err
