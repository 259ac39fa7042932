"""Runs without a model fact (untagged real data) are each a curve of their own: never pooled with
each other, never printed as `None` (issue 35 item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.cli import main

pytestmark = pytest.mark.real

SETS = ("text/level1", "text/level0")  # two real Ascend exports, same hardware, no model fact


def test_untagged_runs_are_fitted_one_curve_each(real_dir: Path, tmp_path: Path, capsys) -> None:
    target = str(tmp_path / "w.duckdb")
    base = real_dir / "msinsight/test/data/pytorch"
    assert main(["ingest", *(str(base / s) for s in SETS), "--warehouse", target]) == 0
    assert main(["chunks", "--profiler-steps", "--warehouse", target]) == 0
    capsys.readouterr()
    assert main(["fit", "--warehouse", target, "--json"]) == 0
    curves = json.loads(capsys.readouterr().out)["curves"]
    models = sorted({c["model"] for c in curves})
    assert len(models) == 2 and all(m.startswith("(untagged) ") for m in models)
    assert all(c["n_runs"] == 1 for c in curves)  # before: one curve pooling both exports
    assert main(["fit", "--warehouse", target]) == 0
    text = capsys.readouterr().out
    assert "None" not in text and "2 untagged runs" in text and "--tag model=" in text
    # following the hint (chunks --profiler-steps) leaves the data check green: ProfilerStep
    # chunks carry no token counts by construction (positive_prompt_tokens allows it there)
    assert main(["check", "--warehouse", target]) == 0
