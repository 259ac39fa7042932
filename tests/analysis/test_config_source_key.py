"""The reader (`source`) and the hardware are part of a configuration
(pipelines/vocabulary/configuration.py): one simulated campaign written as Ascend text and as
Kineto traces, ingested with the same model tag, is two fits and two trends, never one
(issue 35)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from dashboards import data
from pipelines.analysis.runs.run_metrics import CONFIG_KEYS as RUN_KEYS
from pipelines.analysis.tau.curve_keys import CONFIG_KEYS as CURVE_KEYS
from pipelines.cli import main
from pipelines.vocabulary.configuration import RUN_CONFIG_KEYS

NIGHTS = 3


@pytest.fixture(scope="module")
def two_readers(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("two_readers")
    for night in range(1, NIGHTS + 1):
        argv = ["simulate", "--seq-len", "65536", "--chunk", "16384", "--run-noise", "0.02"]
        argv += ["--seed", str(night), "--collected-at", f"2026-03-{night:02d}T02:00"]
        argv += ["--format", "ascend,kineto", "--out", str(root / "raw" / f"night-{night:02d}")]
        assert main(argv) == 0
    warehouse = str(root / "w.duckdb")
    argv = ["ingest", str(root / "raw"), "--warehouse", warehouse, "--no-progress"]
    assert main([*argv, "--tag", "model=m", "--tag", "schedule=cpp"]) == 0
    return warehouse


def test_every_configuration_key_holds_source_and_hardware() -> None:
    for keys in (RUN_CONFIG_KEYS, RUN_KEYS, CURVE_KEYS):
        assert {"source", "hardware"} <= set(keys)


def test_one_model_from_two_readers_is_two_fits(two_readers: str, capsys) -> None:
    capsys.readouterr()
    assert main(["fit", "--warehouse", two_readers, "--json"]) == 0
    curves = json.loads(capsys.readouterr().out)["curves"]
    assert {c["model"] for c in curves} == {"m"}
    by_source: dict[str, set[int]] = {}
    for c in curves:
        by_source.setdefault(c["source"], set()).add(c["vstage"])
        assert c["n_runs"] == NIGHTS  # the nights of one reader pooled, never the other's
    assert set(by_source) == {"ascend_pt", "kineto"}
    assert by_source["ascend_pt"] == by_source["kineto"]
    capsys.readouterr()
    assert main(["fit", "--warehouse", two_readers]) == 0
    text = capsys.readouterr().out
    for source in ("ascend_pt", "kineto"):
        assert re.search(rf"^m\s+{source}\s+cpp", text, re.M)


def test_one_model_from_two_readers_is_two_trends(two_readers: str, tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert main(["dashboards", "--warehouse", two_readers, "--out", str(site)]) == 0
    page = (site / "trends.html").read_text()
    configs = set(re.findall(r'"config": "([^"]*)"', page))
    assert len(configs) == 2, configs
    assert {c.rsplit(" ", 1)[-1] for c in configs} == {"(ascend_pt)", "(kineto)"}


def test_nightly_groups_by_reader() -> None:
    nights = [f"2026-11-0{d}T02:00:00" for d in range(1, 4)]
    runs = pl.DataFrame(
        [
            {"model": "m", "schedule": "cpp", "source": source, "hardware": "a100"}
            | {"collected_at": at, "ttft_ms": 100.0}
            for source in ("kineto", "ascend_pt")
            for at in nights
        ]
    ).with_columns(pl.col("collected_at").str.to_datetime())
    history = data.nightly(runs, "ttft", min_nights=3)
    assert sorted(history["config"].unique().to_list()) == [
        "m · cpp · a100 (ascend_pt)",
        "m · cpp · a100 (kineto)",
    ]
    assert history["n"].to_list() == [1] * 6  # never a night of two runs from two readers
