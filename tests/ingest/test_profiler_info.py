"""profiler_info_N.json / profiler_metadata.json on the real exports, and double_hash."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.readers.profiler_info import (
    collected_at_from_names,
    double_hash,
    group_by_suffix,
    read_profiler_info,
    read_profiler_metadata,
)

SET_A = "msinsight/test/st/level2"


def test_double_hash_matches_the_group_hashes_seen_in_communication_json() -> None:
    # set A: group_name_19 is the pp group; its ops are keyed ...@3985310405473756128
    assert double_hash("group_name_19") == 3985310405473756128
    # set F: comm_group_parallel_info pairs a raw HCCL group id with its hash
    assert double_hash("10.174.216.241%enp189s0f1_55000_0_1738895506630464") == 6960437680420871035


def test_rank_id_string_int_and_file_name(real_dir: Path) -> None:
    info = read_profiler_info(real_dir / SET_A / "rank_2_ascend_pt/profiler_info_2.json")
    assert info.rank == 2 and info.rank_problem is None  # "rank_id": "2"
    assert info.software == {"torch_npu": "2.7.1", "cann": "8.3.RC1"}
    assert info.collected_at is not None and info.collected_at.year == 2025
    assert info.profiler_level == "Level2"
    old = read_profiler_info(
        real_dir / "msinsight/server/src/test/test_data/test_rank_1/profiler_info_1.json"
    )
    assert old.rank == 1 and old.software == {}  # V2023: "rank_id": 1, no versions


@pytest.mark.parametrize(
    ("content", "name", "rank", "problem"),
    [
        ({"rank_id": -1}, "profiler_info.json", 0, False),
        ({"rank_id": -1}, "profiler_info_3.json", 3, False),
        ({}, "profiler_info_5.json", 5, False),
        ({"rank_id": "abc"}, "profiler_info_7.json", 7, True),
        ({"rank_id": "abc"}, "profiler_info.json", None, True),
    ],
)
def test_rank_fallbacks(tmp_path: Path, content, name, rank, problem) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(content))
    info = read_profiler_info(path)
    assert info.rank == rank
    assert (info.rank_problem is not None) is problem


def test_bad_profiler_info_is_quarantined(tmp_path: Path) -> None:
    path = tmp_path / "profiler_info_0.json"
    path.write_text('{"rank_id": 0, "config": {')
    with pytest.raises(QuarantineError) as err:
        read_profiler_info(path)
    assert err.value.reason == "truncated_json"


def test_metadata_groups_and_suffix_lookup(real_dir: Path) -> None:
    meta = read_profiler_metadata(real_dir / SET_A / "rank_2_ascend_pt/profiler_metadata.json")
    pp = [g for g in meta.groups if g.kind == "pp"]
    assert [g.global_ranks for g in pp] == [(0, 2)]
    assert meta.distributed_args["pipeline_model_parallel_size"] == 2
    # op hcom_allReduce__534_6_1 has no @hash in kernel_details: its suffix names the tp group
    assert group_by_suffix(meta.groups, "534").kind == "tp"
    assert group_by_suffix(meta.groups, "999") is None


def test_metadata_convention_keys(tmp_path: Path) -> None:
    path = tmp_path / "profiler_metadata.json"
    path.write_text(json.dumps({"model": "qwen3", "chunk_size": "4096", "pp": "2", "x": "y"}))
    meta = read_profiler_metadata(path)
    assert meta.conventions == {"model": "qwen3", "chunk_size": "4096", "pp": "2"}


@pytest.mark.parametrize(
    ("folders", "expected"),
    [
        # the two real naming forms (docs/ascend_formats.md): 14-digit and 17-digit (ms) stamps
        (
            ["localhost.localdomain_139247_20230628101435_ascend_pt"],
            datetime(2023, 6, 28, 10, 14, 35),
        ),
        (
            ["liteserver-c001-4_3508133_20260806080527522_ascend_pt"],
            datetime(2026, 8, 6, 8, 5, 27, 522000),
        ),
        # a renamed rank folder: the PROF_<n>_<stamp>_<rand> folder inside it
        (
            ["rank0_ascend_pt", "PROF_000001_20251127140712345_ABCDEF"],
            datetime(2025, 11, 27, 14, 7, 12, 345000),
        ),
        (["rank0_ascend_pt"], None),
        (["host_1_20261399000000_ascend_pt"], None),  # month 13: not a stamp
    ],
)
def test_collected_at_from_folder_names(tmp_path: Path, folders, expected) -> None:
    rank_dir = tmp_path / folders[0]
    for sub in folders[1:]:
        (rank_dir / sub).mkdir(parents=True)
    rank_dir.mkdir(exist_ok=True)
    assert collected_at_from_names(rank_dir) == expected


def test_a_text_export_without_collection_end_takes_the_folder_stamp(tmp_path: Path) -> None:
    from pipelines.ingest.readers.ascend_text import read_rank
    from pipelines.sim.run import simulate
    from pipelines.sim.writers_ascend import write_ascend_pt

    (folder, _) = write_ascend_pt(simulate([32768], "cpp", chunk_size=16384), tmp_path / "raw")
    assert read_rank(folder).info["collected_at"].year == 2026  # profiler_info's collection end
    for info_file in folder.glob("profiler_info*.json"):
        content = json.loads(info_file.read_text())
        content.pop("end_info", None)
        info_file.write_text(json.dumps(content))
    renamed = folder.rename(folder.parent / "rank0_ascend_pt")  # as upstream test data
    assert "collected_at" not in read_rank(renamed).info
    named = renamed.rename(folder.parent / "node7_4242_20251203021500123_ascend_pt")
    assert read_rank(named).info["collected_at"] == datetime(2025, 12, 3, 2, 15, 0, 123000)
