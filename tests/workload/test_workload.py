"""The reference workload end to end: real traces from the PyTorch engine, ingested with no flags,
segmented, fitted and replayed (skips without torch: docs/workload.md says how to install it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipelines.workload.config import WorkloadConfig
from pipelines.workload.plan import rank_tasks, stage_rank


def test_fold_back_layout_and_orders_cover_every_task():
    assert [stage_rank(s) for s in range(4)] == [0, 1, 1, 0]
    cfg = WorkloadConfig(schedule="vpp", seq_len=2048, chunk=512)
    order = rank_tasks(cfg)
    assert sorted((t.k, t.vs) for t in order[0]) == [(k, s) for k in range(4) for s in (0, 3)]
    assert [(t.k, t.vs) for t in order[1]][:2] == [(0, 1), (0, 2)]
    assert all(t.recv_from == 1 for t in order[0] if t.vs == 3)


def test_parser_build_does_not_import_torch():
    code = "import sys, pipelines.cli as c; c.build_parser(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_small_run_ingests_segments_and_replays(tmp_path):
    if not os.environ.get("TRACEREPLAY_REQUIRE_TORCH"):  # .ci/run sets it with the extra
        pytest.importorskip("torch", reason="PyTorch not installed (docs/workload.md)")
    from pipelines.store import open_store
    from pipelines.workload.launch import run_workload
    from pipelines.workload.on_cpu import chunk_cpu
    from pipelines.workload.validation import validate

    cfg = WorkloadConfig(schedule="vpp", seq_len=3072, chunk=512, send="overlapped", repeats=2)
    paths, _ = run_workload(cfg, tmp_path / "vpp")
    assert all(p.stat().st_size > 0 for p in paths)
    cpu = chunk_cpu(paths)  # every profiled forward timed on the thread's CPU clock too
    assert cpu.height == 2 * 6 * 4 and set(cpu["request_id"]) == {"r0", "r1"}
    assert (cpu["cpu_ns"] > 0).all() and (cpu["cpu_ns"] <= cpu["wall_ns"] * 1.05).all()
    with open_store(tmp_path / "w.duckdb").session() as con:
        (row,) = validate([tmp_path / "vpp"], con)
    assert row["schedule"] == "vpp" and row["attention"] == "dense"
    # 2 profiled passes x 6 chunks x 4 virtual stages, every marker found; the warm-up pass
    # left no marker in the trace
    assert row["chunks"] == 2 * 6 * 4 and row["requests"] == 2
    assert 0 < row["cpu_share"] <= 1.05 and len(row["cpu_verdicts"]) == 4
    assert row["host_call_ns"] > 0
    lo, hi = row["measured_ttft_ci_ns"]
    assert lo <= row["measured_ttft_ns"] <= hi
    assert 0 < row["measured_bubble"] < 1
    assert set(row["replays"]) == {"cpp", "vpp"}
    assert row["measured_ttft_ns"] > 0 and row["replays"]["vpp"]["ttft_ns"] > 0


@pytest.mark.slow
def test_dcpp_run_cuts_smaller_chunks_and_replays_its_own_sequence(tmp_path):
    if not os.environ.get("TRACEREPLAY_REQUIRE_TORCH"):
        pytest.importorskip("torch", reason="PyTorch not installed (docs/workload.md)")
    from pipelines.store import open_store
    from pipelines.workload.launch import run_workload
    from pipelines.workload.validation import validate

    cfg = WorkloadConfig(schedule="dcpp", seq_len=2048, chunk=256, repeats=2, pin=True)
    run_workload(cfg, tmp_path / "dcpp")
    with open_store(tmp_path / "w.duckdb").session() as con:
        (row,) = validate([tmp_path / "dcpp"], con)
    assert row["schedule"] == "dcpp" and row["requests"] == 2
    # attention makes later chunks cost more, so the rule cuts more than 8 chunks of 256
    assert row["steps"] > cfg.chunks_per_request and row["rule_steps"] > cfg.chunks_per_request
    own = row["replays"]["dcpp"]
    assert own["replayed"] == "own chunk sequence" and own["ttft_ns"] > 0
    assert row["window_ratio"]["kind"] == "one_stage" and row["window_ratio"]["n_requests"] == 2
