"""Arguments, output paths and run-id prefixes, round four (issue 36; the campaign under
/tmp/h4/hostile2 of 2026-12-04, docs/ingest_rules.md "Hostile campaign, round four: arguments,
paths, Dagster, concurrency"). Each case failed before: a traceback, a value accepted and then
wrong (a curve of 1e308 ms gave a negative TTFT), an option silently ignored (--operator
without --table, --preset ''), a typo that printed an empty table with exit 0 (fit --model),
a unique run-id prefix that `runs` prints but `replay` refused, or a path printed raw."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.paths import LAKE_ENV

TRACEREPLAY = [sys.executable, "-m", "pipelines.cli"]


@pytest.fixture(autouse=True)
def _no_lake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LAKE_ENV, "")
    monkeypatch.delenv(LAKE_ENV)


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], *words: str) -> str:
    """exit 2 and one stderr line that holds every word (argparse's or the command's)."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert code == 2, err
    assert len(err) == 1, err
    for word in words:
        assert word in err[0], err[0]
    return err[0]


ADVISE = ["advise", "--draws", "100", "--runs", "1", "--schedules", "cpp", "--chunks", "16K"]


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--preset", "llama3-8b", "--seq-len", "99999999999999999999K"], ("--seq-len", "1024M")),
        (["--curve", "1e308,1e308@16K", "--seq-len", "64K"], ("--curve", "at most")),
        (["--curve", "1e300,0@16K", "--seq-len", "64K"], ("--curve",)),
        (["--curve=-180,12@16K", "--seq-len", "64K"], ("--curve", "A must be > 0")),
        (["--curve", "180,-12@16K", "--seq-len", "64K"], ("--curve",)),
        (["--preset", "", "--seq-len", "64K"], ("unknown preset ''",)),
        (["--preset", "llama3-8b", "--operator", "attn", "--seq-len", "64K"], ("--operator",)),
    ],
    ids=[
        "huge seq-len",
        "1e308 curve",
        "1e300 curve",
        "negative A",
        "negative B",
        "empty preset",
        "operator without table",
    ],
)
def test_advise_refuses_in_one_line(
    capsys: pytest.CaptureFixture[str], extra: list[str], words: tuple[str, ...]
) -> None:
    _refused(capsys, [*ADVISE, *extra], *words)


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "x", "--html", "{long_name}/x"],
        ["show", "x", "--html", "{long_path}"],
        ["check", "--junit", "{long_name}"],
        ["dashboards", "--out", "{long_path}"],
        ["simulate", "--seq-len", "8192", "--out", "{long_name}"],
        ["--lake", "{long_name}", "runs"],
    ],
)
def test_output_paths_longer_than_the_file_system_takes_are_refused_up_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    names = {
        "{long_name}": str(tmp_path / ("L" * 300)),
        "{long_path}": str(tmp_path / "/".join(["d" * 200] * 22)),
    }
    argv = [names.get(a.split("/")[0], a) + ("/x" if a.endswith("}/x") else "") for a in argv]
    line = _refused(capsys, argv)
    assert "255" in line or "4095" in line
    assert len(line) < 400  # the path is cut, not printed whole


def test_a_path_with_a_newline_is_printed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sim\nx\x1b[31m"
    assert main(["simulate", "--seq-len", "8192", "--chunk", "4096", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert out.is_dir()
    assert "\x1b" not in printed and "sim\\nx\\x1b[31m" in printed


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Two simulated runs whose ids share a prefix, in one warehouse."""
    base = tmp_path_factory.mktemp("prefix")
    warehouse = base / "w.duckdb"
    for seed in (1, 2):
        out = base / f"sim{seed}"
        assert (
            main(
                [
                    "simulate",
                    "--seq-len",
                    "8192",
                    "--chunk",
                    "4096",
                    "--seed",
                    str(seed),
                    "--noise",
                    "0.02",
                    "--out",
                    str(out),
                    "--format",
                    "ascend",
                ]
            )
            == 0
        )
        assert main(["ingest", str(out), "--warehouse", str(warehouse), "--no-progress"]) in (0,)
    import duckdb

    con = duckdb.connect(str(warehouse), read_only=True)
    ids = sorted(r[0] for r in con.execute("select run_id from runs").fetchall())
    con.close()
    assert len(ids) == 2
    return warehouse, ids


def test_a_closed_pipe_is_no_traceback(two_runs: tuple[Path, list[str]]) -> None:
    """`| true` leaves before the command writes: every write meets a closed pipe (`runs`
    ended in a BrokenPipeError traceback)."""
    warehouse, _ = two_runs
    for argv in (["runs", "--warehouse", str(warehouse)], ["simulate", "--help"]):
        done = subprocess.run(
            ["sh", "-c", " ".join([*TRACEREPLAY, *argv]) + " | true"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path(__file__).parents[2],
        )
        assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def _common_prefix(ids: list[str]) -> str:
    """The longest start two run ids share (characters, not path components)."""
    first, last = min(ids), max(ids)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def test_replay_and_chunks_take_a_unique_prefix_and_refuse_an_ambiguous_one(
    two_runs: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    warehouse, ids = two_runs
    unique = ids[0][: len(_common_prefix(ids)) + 1]
    capsys.readouterr()
    assert (
        main(["replay", unique, "--no-write", "--schedules", "cpp", "--warehouse", str(warehouse)])
        == 0
    )
    assert main(["chunks", "--run", unique, "--warehouse", str(warehouse)]) == 0
    capsys.readouterr()
    for argv in (
        ["replay", _common_prefix(ids), "--no-write"],
        ["chunks", "--run", _common_prefix(ids)],
    ):
        line = _refused(capsys, [*argv, "--warehouse", str(warehouse)], "matches 2 runs")
        assert "give more of the id" in line
    _refused(capsys, ["replay", "nosuch", "--warehouse", str(warehouse)], "no run 'nosuch'")


@pytest.mark.parametrize(
    ("option", "value"), [("--model", "gpt-9"), ("--schedule", "nosuch"), ("--model", "")]
)
def test_fit_refuses_a_model_or_schedule_no_run_has(
    two_runs: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    warehouse, _ = two_runs
    line = _refused(
        capsys,
        ["fit", option, value, "--no-segment", "--warehouse", str(warehouse)],
        option,
        "no stored run has it",
    )
    assert "nothing fitted" in line


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--outlier-chunk", "99"], ("--outlier-chunk 99", "slow nothing")),
        (["--model", ""], ("--model ''", "not a simulator preset")),
    ],
    ids=["outlier chunk past the last", "empty model"],
)
def test_simulate_refuses_what_it_would_ignore(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], words: tuple[str, ...]
) -> None:
    out = tmp_path / "sim"
    argv = ["simulate", "--seq-len", "8192", "--chunk", "4096", "--out", str(out), *extra]
    _refused(capsys, argv, *words)
    assert not out.exists()


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("TRACEREPLAY_WAIT", "abc", ("TRACEREPLAY_WAIT", "not a number of seconds")),
        ("TRACEREPLAY_WAIT", "nan", ("TRACEREPLAY_WAIT", "finite")),
        ("TRACEREPLAY_WAREHOUSE", ":memory:", ("TRACEREPLAY_WAREHOUSE", "keeps nothing")),
        ("TRACEREPLAY_LAKE", ":memory:", ("TRACEREPLAY_LAKE", "in-memory database")),
        ("TRACEREPLAY_MAX_MEMORY", "-1GB", ("TRACEREPLAY_MAX_MEMORY", "not a size")),
        ("TRACEREPLAY_CHANGE_CACHE", "maybe", ("TRACEREPLAY_CHANGE_CACHE",)),
        ("TRACEREPLAY_SPILL_DIR", "{file}", ("TRACEREPLAY_SPILL_DIR", "is not a folder")),
        ("TRACEREPLAY_RAW_DIR", "{file}", ("TRACEREPLAY_RAW_DIR", "is not a folder")),
    ],
)
def test_a_garbage_environment_variable_is_refused_before_the_command(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    value: str,
    words: tuple[str, ...],
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.setenv(name, value.replace("{file}", str(afile)))
    _refused(capsys, ["runs", "--warehouse", str(tmp_path / "w.duckdb")], *words)
    assert not (tmp_path / "w.duckdb").exists()


@pytest.mark.parametrize(
    ("tags", "words"),
    [
        (["model="], ("--tag model=", "an empty value")),
        (["model=a", "model=b"], ("--tag model is given twice", "'a' and 'b'")),
    ],
    ids=["empty value", "one key twice"],
)
def test_ingest_refuses_a_tag_it_would_store_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tags: list[str], words: tuple[str, ...]
) -> None:
    (tmp_path / "run").mkdir()
    argv = ["ingest", str(tmp_path / "run"), "--warehouse", str(tmp_path / "w.duckdb")]
    for tag in tags:
        argv += ["--tag", tag]
    _refused(capsys, argv, *words)
    assert not (tmp_path / "w.duckdb").exists()


def test_bench_ingest_refuses_a_missing_hta_python_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was run only after the other paths' minutes of work (a hang past 60 s, then a failure)."""
    argv = ["bench", "ingest", "--hta-python", str(tmp_path / "nope"), "--size-mb", "1"]
    _refused(capsys, argv, "--hta-python", "no such executable")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["bench", "engine", "--workdir", "{file}"], ("--workdir", "is not a folder")),
        (["validate", "{tmp}", "--warehouse", ""], ("--warehouse", "an empty path")),
        (["bench", "changepoints", "--noise", "1,inf"], ("--noise", "'1,inf'")),
        (["check", "--html", "{tmp}/same", "--junit", "{tmp}/same"], ("--junit is the --html",)),
    ],
    ids=[
        "engine workdir a file",
        "validate empty warehouse",
        "changepoints inf noise",
        "check junit = html",
    ],
)
def test_more_options_refused_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: tuple[str, ...]
) -> None:
    """A traceback (a file as --workdir, an empty --warehouse of validate) or a bench run on
    an infinite noise level, before."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    argv = [a.replace("{file}", str(afile)).replace("{tmp}", str(tmp_path)) for a in argv]
    _refused(capsys, argv, *words)
