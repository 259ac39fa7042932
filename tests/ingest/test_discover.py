"""Discovery by content on the real tree and on synthetic layouts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pipelines.ingest.discover import discover
from tests.ingest.malformed.corpus import GOOD_KERNELS, good_run


def test_real_tree_runs(real_dir: Path) -> None:
    found = discover([real_dir])
    assert not found.quarantined
    by_origin = {r.origin.relative_to(real_dir).as_posix(): r for r in found.runs}
    set_a = by_origin["msinsight/test/st/level2"]
    assert set_a.source == "ascend_pt"
    assert [r.rank_hint for r in set_a.ranks] == [0, 1, 2, 3]
    assert by_origin["msinsight/test/data/pytorch/db/level1"].source == "ascend_pt_db"
    set_d = by_origin["msinsight/server/src/test/test_data"]
    assert [c.name for c in set_d.cluster_dirs] == ["cluster_analysis_output"]  # set E
    sources = sorted(r.source for r in found.runs)
    assert sources.count("kineto") == 2 and sources.count("topology") == 0
    # lone topology files (no rank data beside them) are listed with the reason, not runs
    lone_topology = {p.parent.name for p in found.ignored_reasons}
    assert lone_topology == {"communication_group", "metadata"}
    assert sources.count("cluster") == 1  # set G's summary has no rank folders beside it
    lone = by_origin["msprof-analyze/test/ut/advisor/advisor_backend/timeline_advice"]
    assert lone.ranks[0].rank_hint is None and lone.ranks[0].files[0].name == "trace_view.json"
    assert any(p.name == "memory_record.csv" for p in found.ignored)


def test_directory_names_do_not_matter(tmp_path: Path) -> None:
    good = good_run(tmp_path / "a")
    renamed = tmp_path / "whatever" / "x"
    renamed.parent.mkdir()
    shutil.copytree(good / "rank0_ascend_pt", renamed)
    # no ASCEND_PROFILER_OUTPUT name either: a lone kernel_details.csv is still a rank
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "kernel_details.csv").write_text(GOOD_KERNELS)
    found = discover([tmp_path / "whatever", loose])
    assert sorted(len(r.ranks) for r in found.runs) == [1, 1]
    assert not found.quarantined


def test_raw_profiler_subfolders_are_not_searched(tmp_path: Path) -> None:
    job = good_run(tmp_path)
    raw = job / "rank0_ascend_pt" / "PROF_000001_20250101_abc" / "device_0" / "data"
    raw.mkdir(parents=True)
    (raw / "ts_track.data.0.slice_0.json").write_text(json.dumps({"x": 1}))
    found = discover([job])
    assert not found.quarantined and len(found.runs) == 1


def test_kineto_folder_and_stray_json(tmp_path: Path, real_dir: Path) -> None:
    source = (
        real_dir / "kineto/HolisticTraceAnalysis/tests/data/trace_filter/sampled_rank-0.json.gz"
    )
    folder = tmp_path / "gpu_job"
    folder.mkdir()
    shutil.copy(source, folder / "rank0.json.gz")
    (folder / "notes.json").write_text(json.dumps({"owner": "me"}))
    found = discover([folder])
    assert [r.source for r in found.runs] == ["kineto"]
    assert [(Path(q.path).name, q.reason) for q in found.quarantined] == [
        ("notes.json", "unrecognised_input")
    ]


def test_plain_chrome_json_beside_rank_folders_is_not_a_kineto_run(tmp_path: Path) -> None:
    job = good_run(tmp_path)
    (job / "timeline.perfetto.json").write_text(
        json.dumps({"displayTimeUnit": "ns", "traceEvents": [{"ph": "X", "name": "a"}]})
    )
    found = discover([job])
    assert [r.source for r in found.runs] == ["ascend_pt"]
    assert not found.quarantined
