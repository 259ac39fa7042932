"""Round seven of the hostile-input campaign (issue 36): the chart renderer of `dashboards` (and
of every page with PNGs) could not start its worker processes, and the command ended in a
traceback on 373e096 (/tmp/h7/hostile7/env7.py: a 0444 warehouse read as `nobody`, whose
interpreter link into /root it cannot follow)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import pipelines.cli as cli


def test_a_png_renderer_that_cannot_start_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from dashboards.png_writer import PngWriter

    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))

    def command(argv: list[str] | None) -> int:
        args = cli.build_parser().parse_args(["runs"])
        args.func = lambda _: PngWriter(processes=2)
        return cli._handled(args)

    monkeypatch.setattr(cli, "_run_command", command)
    assert cli.main(["runs"]) == 2
    err = capsys.readouterr().err
    assert "the PNG renderer could not start" in err and len(err.splitlines()) == 1
