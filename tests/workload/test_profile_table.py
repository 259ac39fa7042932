"""`tracereplay workload --profile-table`: a CPU operator-latency table of the reference model in
the generic layout, read back by `ingest` and fitted by `fit` (skips without torch)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.ingest.readers.latency_tables import GENERIC, read_table, sniff

pytest.importorskip("torch")


def test_profile_table_is_a_generic_table_that_ingest_and_fit_read(tmp_path: Path, capsys):
    out = tmp_path / "table"
    args = ["workload", "--profile-table", "--hidden", "32", "--heads", "2", "--kv-heads", "1"]
    args += ["--seq-len", "512", "--chunk", "128", "--profile-chunks", "64,128"]
    assert main([*args, "--repeats", "3", "--out", str(out), "--json"]) == 0
    path = Path(json.loads(capsys.readouterr().out)["table"])
    assert sniff(path) == GENERIC
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    # chunk 64: prefixes 0..448 (8), chunk 128: 0..384 (4); two operators each
    assert len(rows) == 2 * (8 + 4)
    assert {r["operator"] for r in rows} == {"attention", "layer"}
    assert all(float(r["min_us"]) <= float(r["time_us"]) <= float(r["max_us"]) for r in rows)
    table = read_table(path)
    assert table.quarantined == [] and table.points.height == len(rows)
    first = table.points.row(0, named=True)
    assert first["time_ns"] == round(float(rows[0]["time_us"]) * 1000)
    assert first["min_ns"] == round(float(rows[0]["min_us"]) * 1000)
    warehouse = str(tmp_path / "w.duckdb")
    assert main(["ingest", str(path), "--warehouse", warehouse]) == 0
    capsys.readouterr()
    assert main(["fit", "--warehouse", warehouse, "--json"]) == 0
    curves = json.loads(capsys.readouterr().out)["curves"]
    got = {(c["operator"], c["chunk_size"]): c["n_points"] for c in curves}
    assert got == {("attention", 64): 8, ("layer", 64): 8, ("attention", 128): 4, ("layer", 128): 4}
    assert {c["model"] for c in curves} == {"tiny-l4-h32-a2-kv1-dense"}


def test_profile_chunks_must_be_integers(tmp_path: Path, capsys):
    args = ["workload", "--profile-table", "--profile-chunks", "a,b", "--out", str(tmp_path)]
    assert main(args) == 2
    assert "--profile-chunks" in capsys.readouterr().err
