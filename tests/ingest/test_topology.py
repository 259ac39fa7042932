"""Topology-only folders (set F): profiler_metadata.json and communication_group.json (new/old)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.frames import conform
from pipelines.ingest.readers.profiler_info import double_hash
from pipelines.ingest.readers.topology import read_communication_group, read_topology

SET_F = "msinsight/server/src/test/test_data"


def _groups(frames, rank: int) -> list[dict]:
    cell = frames.tables["ranks"].filter(pl.col("rank") == rank).get_column("groups")[0]
    return json.loads(cell)


@pytest.mark.real
def test_metadata_only_folder(real_dir: Path) -> None:
    frames = read_topology(real_dir / SET_F / "metadata")
    run = frames.run
    assert (run["tp"], run["pp"], run["dp"], run["world_size"]) == (2, 2, 2, 8)
    assert run["source"] == "topology"
    ranks = conform("ranks", frames.tables["ranks"])
    assert ranks.get_column("rank").to_list() == list(range(8))
    # rank 0's pp group is [0, 4]; the Megatron layout agrees, so the others are filled from it
    assert ranks.get_column("pp_stage").to_list() == [0, 0, 0, 0, 1, 1, 1, 1]
    mine = {g["name"]: g["ranks"] for g in _groups(frames, 0)}
    assert mine["tp"] == [0, 1] and mine["pp"] == [0, 4] and mine["dp"] == [0, 2]
    tp = next(g for g in _groups(frames, 0) if g["name"] == "tp")
    assert tp["hash"] == str(double_hash(tp["group_id"]))


@pytest.mark.real
def test_communication_group_new_and_old(real_dir: Path) -> None:
    folder = real_dir / SET_F / "communication_group"
    frames = read_topology(folder)
    run = frames.run
    assert (run["tp"], run["pp"], run["dp"], run["world_size"]) == (2, 2, 2, 8)
    stages = dict(frames.tables["ranks"].select("rank", "pp_stage").iter_rows())
    # pp groups [0,4], [1,5], [2,6], [3,7]: stage = position in the group
    assert stages == {0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 1}
    by_name = {g["name"]: g for g in _groups(frames, 5)}
    assert by_name["tp"]["ranks"] == [4, 5] and by_name["pp"]["ranks"] == [1, 5]
    assert by_name["pp"]["hash"] == "17858712848717634735"
    # the new-format file is read first and its named groups replace the unnamed old lists
    assert all(g["name"] not in ("collective",) for g in _groups(frames, 5))

    old = read_communication_group(folder / "communication_group_old.json")
    assert {g.kind for g in old} == {"collective", "p2p"}
    assert all(g.hash is None for g in old)
    old_run = read_topology(folder / "communication_group_old.json")
    assert old_run.run["world_size"] == 8 and old_run.run["pp"] is None
    assert old_run.tables["ranks"].get_column("pp_stage").null_count() == 8


def test_conventions_and_inconsistent_layout(tmp_path: Path) -> None:
    """User add_metadata keys fill the run row; a pp layout that is not Megatron's is not
    extrapolated to ranks no pp group covers."""
    (tmp_path / "profiler_metadata.json").write_text(
        json.dumps(
            {
                "model": "qwen3-0.6b",
                "schedule": "vpp",
                "chunk_size": "4096",
                "vp": "2",
                "distributed_args": {
                    "tensor_model_parallel_size": 1,
                    "pipeline_model_parallel_size": 2,
                    "data_parallel_size": 2,
                    "world_size": 4,
                },
                "parallel_group_info": {
                    "g1": {"group_name": "pp", "group_rank": 0, "global_ranks": [0, 1]}
                },
            }
        )
    )
    frames = read_topology(tmp_path)
    run = frames.run
    assert run["model"] == "qwen3-0.6b" and run["schedule"] == "vpp"
    assert run["chunk_size"] == 4096 and run["vp"] == 2 and run["pp"] == 2
    stages = dict(frames.tables["ranks"].select("rank", "pp_stage").iter_rows())
    assert stages == {0: 0, 1: 1, 2: None, 3: None}
    conform("runs", pl.DataFrame([run | {"run_id": "x", "content_hash": "y"}]))


def test_malformed_topology(tmp_path: Path) -> None:
    (tmp_path / "communication_group.json").write_text('{"something": []}')
    (tmp_path / "profiler_metadata.json").write_text('{"distributed_args": ')
    with pytest.raises(QuarantineError) as err:
        read_topology(tmp_path)
    assert err.value.reason == "no_topology"
    assert "invalid_communication_group" in err.value.detail
    assert "truncated_json" in err.value.detail
    (tmp_path / "communication_group.json").write_text('{"collective": [[0, 1], [2, 3]]}')
    frames = read_topology(tmp_path)
    assert [q.reason for q in frames.quarantined] == ["truncated_json"]
    assert frames.run["world_size"] == 4


@pytest.mark.real
def test_list_of_files_as_the_spine_passes_them(real_dir: Path) -> None:
    folder = real_dir / SET_F / "communication_group"
    files = sorted(folder.glob("communication_group*.json"))
    frames = read_topology(files)
    assert frames.run["origin"] == str(folder)
    assert frames.tables["ranks"].height == 8 and frames.run["pp"] == 2
