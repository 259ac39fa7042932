"""Every --json output goes through pipelines/cli/_json.py: unknown values are left out, never
written as null, None or NaN (issue 35); on simulated runs and on real untagged exports."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipelines.cli import main
from pipelines.cli._json import json_text, known

NO_VALUE = re.compile(r"\bnull\b|\bNone\b|\bNaN\b|\bnan\b")
REAL_SETS = ("text/level0", "text/level1", "db/level1")  # Ascend exports with no model fact


def test_known_leaves_out_unknown_values() -> None:
    payload = {
        "a": None,
        "b": float("nan"),
        "c": [1, None, np.float64("nan"), 2.5],
        "d": {"e": None, "f": np.int64(3)},
        "g": float("inf"),
        "h": datetime(2026, 12, 4, 13, 0),
        "i": pl.Series([1.0, None]),
        "j": Path("/x/y"),
        "k": (1.5, 3.0),
        "l": {"r2", None, "r1"},
        "m": [{"k": 1, "tau": None}, {"k": 2, "tau": 7.0}],
    }
    # a list holding an unknown item is left out whole: dropping the item moved every later one
    # to the place before it ([1, None, nan, 2.5] read as [1, 2.5]); a set has no places
    assert known(payload) == {
        "d": {"f": 3},
        "g": "inf",
        "h": "2026-12-04T13:00:00",
        "j": "/x/y",
        "k": [1.5, 3.0],
        "l": ["r1", "r2"],
        "m": [{"k": 1}, {"k": 2, "tau": 7.0}],
    }
    assert known(None) is None and known(math.nan) is None
    text = json_text(payload)
    assert not NO_VALUE.search(text) and json.loads(text)["d"] == {"f": 3}


def _commands(warehouse: str, run_id: str) -> list[list[str]]:
    w = ["--warehouse", warehouse, "--json"]
    return [
        ["runs", *w],
        ["show", run_id, "--no-fit", *w],
        ["fit", *w],
        ["schedules", *w],
        ["regressions", *w],
        ["check", *w],
        ["compare", "--baseline", f"runs={run_id}", "--candidate", f"runs={run_id}", *w],
        ["explain", f"runs={run_id}", f"runs={run_id}", *w],
    ]


def _assert_no_value(argv: list[str], capsys) -> None:
    capsys.readouterr()
    code = main(argv)
    out = capsys.readouterr().out
    assert code in (0, 1, 3), (argv, code)
    if out.strip():
        json.loads(out)  # JSON, and a key left out where the value is unknown
        found = NO_VALUE.search(out)
        assert not found, (argv, out[max(0, found.start() - 200) : found.end() + 50])


def _every_command(warehouse: str, capsys, tmp_path: Path) -> None:
    capsys.readouterr()
    assert main(["runs", "--warehouse", warehouse, "--json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["runs"][0]["run_id"]
    for argv in _commands(warehouse, run_id):
        _assert_no_value(argv, capsys)
    site = tmp_path / "site"
    _assert_no_value(["dashboards", "--warehouse", warehouse, "--out", str(site), "--json"], capsys)
    pages = list(site.glob("*.html"))
    assert pages
    for page in pages:  # the page text and its inline chart specs and data
        found = NO_VALUE.search(page.read_text())
        assert not found, (page.name, page.read_text()[found.start() - 200 : found.end() + 50])


def test_every_json_output_of_simulated_runs(tmp_path: Path, capsys) -> None:
    raw = tmp_path / "raw"
    for night in (1, 2, 3):
        argv = ["simulate", "--seq-len", "65536", "--chunk", "16384", "--seed", str(night)]
        argv += ["--collected-at", f"2026-03-0{night}T02:00", "--format", "ascend,kineto"]
        _assert_no_value([*argv, "--out", str(raw / f"n{night}"), "--json"], capsys)
    warehouse = str(tmp_path / "w.duckdb")
    _assert_no_value(["ingest", str(raw), "--warehouse", warehouse, "--json"], capsys)
    _assert_no_value(["chunks", "--warehouse", warehouse, "--json"], capsys)
    _every_command(warehouse, capsys, tmp_path)


@pytest.mark.real
def test_every_json_output_of_real_untagged_runs(real_dir: Path, tmp_path: Path, capsys) -> None:
    base = real_dir / "msinsight/test/data/pytorch"
    warehouse = str(tmp_path / "w.duckdb")
    sets = [str(base / s) for s in REAL_SETS]
    _assert_no_value(["ingest", *sets, "--warehouse", warehouse, "--json"], capsys)
    argv = ["chunks", "--profiler-steps", "--warehouse", warehouse, "--json"]
    _assert_no_value(argv, capsys)
    _every_command(warehouse, capsys, tmp_path)
