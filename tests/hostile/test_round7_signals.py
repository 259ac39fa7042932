"""Round seven of the hostile-input campaign (issue 36): Ctrl-C and SIGTERM during a command. On
373e096 Ctrl-C during ingest, fit or demo printed a KeyboardInterrupt traceback, and SIGTERM
killed the process without a word (exit -15); a stop that reached DuckDB mid-query surfaced as
a 'RuntimeError: Query interrupted' traceback. Now one line and exit 130 / 143. Re-running the
stopped command leaves the store equal to a clean run's: /tmp/h7/hostile7/sig7.py, 18
instants over ingest, fit and demo (docs/ingest_rules.md, round seven)."""

from __future__ import annotations

import os
import signal
import time

import pytest

import pipelines.cli as cli


def _stopped_during(monkeypatch: pytest.MonkeyPatch, signum: int, surfaced=None) -> None:
    def command(argv: list[str] | None) -> int:
        try:
            os.kill(os.getpid(), signum)
            time.sleep(5)  # the handler raises before this ends
        except BaseException:
            if surfaced is None:
                raise
            raise surfaced from None
        return 0

    monkeypatch.setattr(cli, "_run_command", command)


@pytest.mark.parametrize(
    ("signum", "code", "what"),
    [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")],
)
@pytest.mark.parametrize("surfaced", [None, RuntimeError("Query interrupted")])
def test_a_stop_is_one_line_and_its_exit_status(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    signum: int,
    code: int,
    what: str,
    surfaced: Exception | None,
) -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    _stopped_during(monkeypatch, signum, surfaced)
    assert cli.main(["runs"]) == code
    err = capsys.readouterr().err
    assert err.startswith(f"tracereplay: stopped by {what};") and len(err.splitlines()) == 1
    # the caller's handlers are back (pytest's own Ctrl-C)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_another_error_without_a_stop_is_not_called_a_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def command(argv: list[str] | None) -> int:
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr(cli, "_run_command", command)
    with pytest.raises(RuntimeError):
        cli.main(["runs"])


def test_a_stop_a_reader_sees_as_an_error_is_no_read_error(tmp_path) -> None:
    """DuckDB turns a stop inside a query into `RuntimeError: Query interrupted`; the readers'
    guards stored it as the file's `read_error` and the ingest went on (sig7.py: SIGINT 2.6 s
    into an ingest stored the run without its cluster data, and the re-run found it unchanged)."""
    from pipelines import stop
    from pipelines.ingest.assemble import _guarded
    from pipelines.ingest.readers.ascend_text import _Attempts

    def reader(path):
        stop.request("Ctrl-C")
        raise RuntimeError("Query interrupted")

    (tmp_path / "f.csv").write_text("x\n")
    quarantined: list = []
    try:
        for guard in (
            lambda: _guarded(tmp_path / "f.csv", reader, quarantined),
            lambda: _Attempts().read(tmp_path / "f.csv", reader),
        ):
            with pytest.raises(KeyboardInterrupt):
                guard()
    finally:
        stop.clear()
    assert quarantined == []


def test_a_run_written_without_its_chunks_gets_them_at_the_next_ingest(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stop between a run's write and its chunks left it `unchanged` with no chunk rows at
    every later ingest (sig7.py: 3 of 14 stopped ingests); `--no-chunks` leaves the same state."""
    import duckdb

    run = tmp_path / "run"
    run.mkdir()
    cli.main(
        [
            "simulate",
            "--schedule",
            "cpp",
            "--ranks",
            "2",
            "--seq-len",
            "16384",
            "--chunk",
            "4096",
            "--out",
            str(tmp_path / "sim"),
            "--format",
            "kineto",
        ]
    )
    for trace in (tmp_path / "sim" / "kineto").iterdir():
        trace.rename(run / trace.name)
    warehouse = str(tmp_path / "w.duckdb")
    assert cli.main(["ingest", str(run), "--warehouse", warehouse, "--no-chunks"]) == 0
    assert cli.main(["ingest", str(run), "--warehouse", warehouse, "--no-progress"]) == 0
    assert "unchanged" in capsys.readouterr().out
    with duckdb.connect(warehouse, read_only=True) as con:
        assert con.execute("select count(*) from chunks").fetchone()[0] == 8
