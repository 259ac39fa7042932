"""The `attention` run fact (dense / sparse): from the simulator preset through
profiler_metadata.json into runs.attention, and overridden by `--tag attention=...`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.ingest.load import ingest_paths
from pipelines.sim.presets import attention_kind
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import open_store


@pytest.mark.parametrize(
    ("model", "kind"),
    [("glm-5.2", "sparse"), ("deepseek-v3.1", "dense"), ("qwen3-coder-30b-a3b", "dense")],
)
def test_presets_name_their_attention(model: str, kind: str) -> None:
    assert attention_kind(model) == kind
    assert attention_kind("llama3-8b") == "dense"
    with pytest.raises(ValueError):
        attention_kind("no-such-model")


def _tiny(folder: Path, model: str) -> None:
    result = simulate([16384], "cpp", model=model, chunk_size=4096, pp=2, noise=0.0, seed=1)
    write_ascend_pt(result, folder)


def test_attention_reaches_the_runs_table_and_a_tag_overrides_it(tmp_path: Path) -> None:
    _tiny(tmp_path / "raw" / "glm", "glm-5.2")
    _tiny(tmp_path / "raw" / "llama", "llama3-8b")
    meta = next((tmp_path / "raw" / "glm").rglob("profiler_metadata.json"))
    assert json.loads(meta.read_text())["attention"] == "sparse"
    con = open_store(tmp_path / "w.duckdb").open()
    try:
        ingest_paths([tmp_path / "raw"], con, progress=False)
        got = dict(con.execute("select model, attention from runs").fetchall())
        assert got == {"glm-5.2": "sparse", "llama3-8b": "dense"}
        tags = {"attention": "sparse"}
        ingest_paths([tmp_path / "raw" / "llama"], con, tags=tags, progress=False)
        (kind,) = con.execute("select attention from runs where model = 'llama3-8b'").fetchone()
        assert kind == "sparse"
    finally:
        con.close()
