"""Run ids from what the profiler recorded (docs/run_identity.md "Run ids"): reader, the
profiler's configuration or worker name, the collection time, 12 hex of sha256(origin, content).
Real sets are read in place (skipped without them, failed under TRACEREPLAY_REQUIRE_REAL)."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import duckdb
import pytest

from pipelines.ingest import assemble
from pipelines.ingest.discover import discover
from pipelines.ingest.load import ingest_paths
from pipelines.ingest.per_rank import plan_run
from pipelines.ingest.run_ids import MAX_ID_CHARS, run_id_for, worker_stem
from pipelines.paths import stored_path

ID_FORMAT = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*-[0-9a-f]{12}$")
# real set -> the id without its hash (the hash covers the origin path, which is the machine's)
REAL_STEMS = {
    "msinsight/server/src/test/test_data": "ascend-pt-test-rank-20230919-0922",
    "msinsight/test/data/pytorch/text/level0": "ascend-pt-rank-20250109-0650",
    "msinsight/test/data/pytorch/db/level1": "ascend-db-rank-20250109-0816",
    "msinsight/test/st/level2": "ascend-pt-rank-20251127-1234",
    "kineto/HolisticTraceAnalysis/tests/data/trace_filter": "kineto-sampled-rank-0-20230428-2351",
    "msprof-analyze/test/ut/advisor/compute_advice/data": "ascend-pt-data",
}


def _old_style_id(run, content: str, facts=None) -> str:
    """The id rule before 2026-12-04: the origin's last two path parts slugged, 40 characters."""
    origin = Path(stored_path(run.origin))
    slug = re.sub(r"[^a-z0-9]+", "-", f"{origin.parent.name}-{origin.name}".lower()).strip("-")
    key = hashlib.sha256(f"{stored_path(run.origin)}\0{content}".encode()).hexdigest()
    return f"{slug[:40].rstrip('-')}-{key[:12]}"


def test_real_sets_are_named_by_what_their_profiler_recorded(real_dir: Path, warehouse) -> None:
    report = ingest_paths([real_dir / p for p in REAL_STEMS], warehouse, progress=False)
    by_origin = {r.origin: r.run_id for r in report.runs}
    for path, stem in REAL_STEMS.items():
        run_id = by_origin[stored_path((real_dir / path).resolve())]
        assert run_id.startswith(stem + "-") and len(run_id) == len(stem) + 13, run_id
        assert ID_FORMAT.match(run_id) and len(run_id) <= MAX_ID_CHARS, run_id
    # the hash part is the one the old rule gave: sha256(origin, content hash), 12 hex digits
    for run in report.runs:
        key = hashlib.sha256(f"{run.origin}\0{_content(run.origin)}".encode()).hexdigest()
        assert run.run_id.endswith("-" + key[:12])


def _content(origin: str) -> str:
    (run,) = [r for r in discover([Path(origin)]).runs if stored_path(r.origin) == origin]
    return assemble.content_hash(run.files)


@pytest.mark.parametrize(
    "path", ["msinsight/test/data/pytorch/text/level1", "msinsight/test/data/pytorch/db/level1"]
)
def test_the_per_rank_writers_fix_the_id_ingest_gives(real_dir: Path, warehouse, tmp_path, path):
    """One function for both: a run ingested whole and planned rank by rank has one id (the
    per-rank writers drop a whole-run file of the same id rather than doubling its rows)."""
    (run,) = ingest_paths([real_dir / path], warehouse, progress=False).runs
    assert plan_run(real_dir / path, tmp_path / "lake").run_id == run.run_id


def test_an_old_style_id_is_kept_when_the_bytes_are_unchanged(real_dir, tmp_path, monkeypatch):
    """A warehouse written under the old rule keeps its ids: same origin and content hash is
    `unchanged` (no second run); new bytes replace the run under a new-style id."""
    from pipelines.store import FileStore

    folder = tmp_path / "nightly" / "level0"
    shutil.copytree(real_dir / "msinsight/test/data/pytorch/text/level0", folder)
    store = FileStore(tmp_path / "w.duckdb")
    with monkeypatch.context() as patched:
        patched.setattr(assemble, "run_id_for", _old_style_id)
        (old,) = ingest_paths([folder], store, progress=False).runs
    assert old.run_id.startswith("nightly-level0-")
    (again,) = ingest_paths([folder], store, progress=False).runs
    assert again.status == "unchanged" and again.run_id == old.run_id
    steps = folder / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    steps.write_text(steps.read_text() + "\n")
    (new,) = ingest_paths([folder], store, progress=False).runs
    assert new.status == "replaced" and new.replaced == [old.run_id]
    assert new.run_id.startswith("ascend-pt-rank-20250109-0650-")
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    try:
        assert con.execute("select run_id from runs").fetchall() == [(new.run_id,)]
    finally:
        con.close()


def test_two_copies_share_the_name_and_differ_in_the_hash(real_dir: Path, tmp_path, warehouse):
    for name in ("one", "two"):
        shutil.copytree(real_dir / "msinsight/test/data/pytorch/text/level0", tmp_path / name)
    first, second = ingest_paths(
        [tmp_path / "one", tmp_path / "two"], warehouse, progress=False
    ).runs
    assert first.run_id[:-12] == second.run_id[:-12] and first.run_id != second.run_id


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        # torch_npu: {worker}_{YYYYmmddHHMMSSfff}_ascend_pt, the worker {host}_{pid} by default
        ("localhost.localdomain_139247_20230628101435123_ascend_pt", "localhost.localdomain"),
        ("node-7_4711_20251127123438042_ascend_pt", "node-7"),
        ("rank0_ascend_pt", "rank0"),  # msinsight's test folders
        # Kineto / torch.profiler.tensorboard_trace_handler: <worker>.<time_ns>.pt.trace.json
        ("node-3_12345.1694039959123456789.pt.trace.json.gz", "node-3"),
        ("benchmark_result_493459_1694039959_trace.json.gz", "benchmark_result"),  # HTA sample
        ("sampled_rank-0.json.gz", "sampled_rank-0"),
        ("compute_advice", "compute_advice"),  # a lone export's folder
    ],
)
def test_the_worker_stem_drops_stamps_and_pids(name: str, stem: str) -> None:
    assert worker_stem(name) == stem


def test_a_long_configuration_keeps_schedule_and_length(tmp_path: Path) -> None:
    """The model's last words go first when the id would pass 60 characters."""
    from pipelines.sim.run import simulate
    from pipelines.sim.writers_ascend import write_ascend_pt

    result = simulate([131072], "vpp_async", model="qwen3-coder-30b-a3b", chunk_size=16384, pp=2)
    write_ascend_pt(result, tmp_path / "raw", epoch_ns=1_767_225_600 * 10**9)
    (run,) = discover([tmp_path / "raw"]).runs
    run_id = run_id_for(run, assemble.content_hash(run.files))
    assert re.match(r"^ascend-pt-qwen3-vpp-async-128k-20260101-00\d\d-[0-9a-f]{12}$", run_id)
    assert len(run_id) <= MAX_ID_CHARS
