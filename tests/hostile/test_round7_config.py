"""Round seven of the hostile-input campaign (issue 36): a project's tracereplay.toml that cannot
be used. On 373e096 a TOML error, `lake = 5`, `lake = ""`, a list or a table was passed over
without a word (every command used the single-file warehouse instead of the lake asked for,
exit 0), a lake holding a NUL was a `ValueError: embedded null byte` traceback, and a file
starting with a UTF-8 BOM lost its lake setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main


@pytest.mark.parametrize(
    "text",
    [
        "lake = \n",
        "lake = 5\n",
        'lake = ""\n',
        'lake = ["a"]\n',
        "[lake]\npath = 'x'\n",
        'lake = "a"\nlake = "b"\n',
        'lake = "a\\u0000b"\n',
        "\x00\x01",
    ],
)
def test_an_unusable_config_is_one_line_before_any_work(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
) -> None:
    (tmp_path / "tracereplay.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRACEREPLAY_LAKE", raising=False)
    monkeypatch.delenv("TRACEREPLAY_WAREHOUSE", raising=False)
    assert main(["runs"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tracereplay runs: ") and "tracereplay.toml" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "data").exists()


def test_a_bom_before_the_config_keeps_its_lake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tracereplay.toml").write_text('\ufefflake = "lk"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRACEREPLAY_LAKE", raising=False)
    monkeypatch.delenv("TRACEREPLAY_WAREHOUSE", raising=False)
    assert main(["runs"]) == 2
    assert "no lake at" in capsys.readouterr().err  # the lake it names, not data/warehouse
