"""`tracereplay simulate`: options, outputs, summary and argument errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.cli import EXIT_BAD_INPUT, EXIT_OK, main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
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
    assert code == EXIT_OK
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
    assert code == EXIT_OK
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
    ],
)
def test_bad_arguments_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = _run(capsys, *argv)
    assert code == EXIT_BAD_INPUT
    assert message in err


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
        "--json",
    ):
        assert option in text
    assert text.count("default") >= 10
