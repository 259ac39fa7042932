"""The measured engine's DCPP rule, fold-back ratio, own-sequence replay and bench checks
(no torch: the engine's pieces that run on numbers)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from pipelines.bench.engine_rounds import ab_ratio, acceptance, pooled_fold_back
from pipelines.replay.tables import chunks_frame
from pipelines.sim.chunking import DcppConfig, DynamicChunker, dynamic_chunks, profile
from pipelines.sim.fitted_cost import FittedCost
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate
from pipelines.workload.config import WorkloadConfig, config_from_trace, profile_fit_from_trace
from pipelines.workload.fold_back import window_interval, window_ratios
from pipelines.workload.sequence_replay import replay_sequence, rule_chunks


def stage0(tokens: np.ndarray, prefix: np.ndarray) -> np.ndarray:
    """A stage-0 step time with attention: alpha c + beta c (p + c / 2) + gamma (ns)."""
    t, p = np.asarray(tokens, float), np.asarray(prefix, float)
    return 20_000.0 * t + 40.0 * t * (p + t / 2) + 2e6


def test_engine_rule_is_the_simulators_dcpp_rule():
    cfg = WorkloadConfig(schedule="dcpp", seq_len=4096, chunk=512)
    rule = cfg.dcpp_rule()
    assert (rule.online, rule.min_chunk, rule.align, rule.sigma) == (True, 128, 64, 1.0)
    sim = dynamic_chunks(cfg.seq_len, cfg.chunk, stage0, rule)
    # what the engine's rank 0 does between forwards: next_size, forward, observe
    chunker, got, prefix = DynamicChunker(profile(stage0, "vllm_ascend", 512), 512, rule), [], 0
    while prefix < cfg.seq_len:
        size = chunker.next_size(prefix, cfg.seq_len - prefix)
        chunker.observe(size, prefix, float(stage0(np.array([size]), np.array([prefix]))[0]))
        got.append(size)
        prefix += size
    assert got == sim and sum(got) == 4096
    assert len(got) > cfg.chunks_per_request  # attention makes later chunks smaller
    assert min(got[:-1]) >= 128 and all(c % 64 == 0 for c in got)
    # rule_chunks (validate's check) from measured stage-0 times of that cost gives it again
    frame = pl.DataFrame(
        {
            "tokens": got,
            "prefix_tokens": np.cumsum([0, *got[:-1]]).tolist(),
        }
    ).with_columns(
        pl.Series("cpu_ns", stage0(np.array(got), np.cumsum([0, *got[:-1]])).astype(np.int64))
    )
    fit = profile(stage0, "vllm_ascend", 512)
    assert rule_chunks(frame, 4096, 512, rule, fit) == sim


def test_dcpp_config_facts_and_limits(tmp_path):
    cfg = WorkloadConfig(schedule="dcpp", chunk=512, dcpp_min_chunk=192, dcpp_smooth=0.5)
    meta = cfg.metadata()
    assert meta["schedule"] == "dcpp" and meta["dcpp_min_chunk"] == "192"
    assert cfg.stages == 2 and "dcpp_rule" not in WorkloadConfig().metadata()
    with pytest.raises(ValueError, match="dcpp_min_chunk"):
        WorkloadConfig(schedule="dcpp", chunk=512, dcpp_min_chunk=1024)
    with pytest.raises(ValueError, match="dcpp_smooth"):
        WorkloadConfig(schedule="dcpp", dcpp_smooth=0.0)
    trace = tmp_path / "rank0.pt.trace.json"
    trace.write_text(
        json.dumps(
            {
                "workload": json.dumps(cfg.as_dict()),
                "dcpp_profile_fit": json.dumps([1.0, 2.0, 3.0]),
                "traceEvents": [],
            }
        )
    )
    assert config_from_trace(trace) == cfg
    assert profile_fit_from_trace(trace)(2.0) == 1.0 * 4 + 2.0 * 2 + 3.0
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"traceEvents": []}))
    assert config_from_trace(other) is None and profile_fit_from_trace(other) is None


def _stage_frame(tau, stages: int, passes: int = 3, noise: float = 0.0) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    rows = [
        (f"r{p}", k, s, float(tau(k)) * (1 + noise * rng.standard_normal()))
        for p in range(passes)
        for k in range(8)
        for s in range(stages)
    ]
    return pl.DataFrame(rows, schema=["request_id", "chunk_idx", "vstage", "busy_ns"], orient="row")


def test_fold_back_ratio_is_one_exactly_when_tau_is_linear():
    line = window_interval(_stage_frame(lambda k: 10 + 3 * k, stages=4))
    assert line["kind"] == "fold_back" and line["n_requests"] == 3
    assert line["mean"] == pytest.approx(1.0) and line["n_windows"] == 3 * 6
    # convex tau breaks tau_{k-1} + tau_{k+1} = 2 tau_k: the ratio leaves 1
    convex = window_interval(_stage_frame(lambda k: 10 + 3 * k * k, stages=4))
    assert convex["mean"] > 1.05
    # one stage per rank (CPP): rank 0 runs chunk k+1 while rank 1 runs chunk k
    cpp = window_ratios(_stage_frame(lambda k: 10 + 3 * k, stages=2))
    assert cpp["ratio"].to_list()[:2] == pytest.approx([13 / 10, 16 / 13])
    noisy = window_interval(_stage_frame(lambda k: 10 + 3 * k, stages=4, noise=0.05, passes=6))
    assert noisy["low"] < noisy["mean"] < noisy["high"] and len(noisy["per_request"]) == 6
    assert window_interval(_stage_frame(lambda k: 1, stages=3)) is None


def test_own_sequence_replay_reproduces_a_simulated_dcpp_run():
    truth = FittedCost(alpha_ns=2_000.0, beta_ns=0.05, call_overhead_ns=3_000_000.0)
    result = simulate(
        [262144, 262144], "dcpp", model=truth, chunk_size=16384, comm=None,
        dcpp=DcppConfig(online=True, min_chunk=4096),
    )  # fmt: skip
    frame = chunks_frame(result, run_id="sim-dcpp")
    got = replay_sequence(frame)
    want = summarize(result)
    # TTFT as validate measures it: a request's last chunk end minus its first chunk start
    span = pl.col("end_ns").max() - pl.col("start_ns").min()
    per_request = frame.group_by("request_id").agg(span)
    assert got["steps"] == frame.filter(pl.col("vstage") == 0).height / 2 > 16
    assert got["ttft_mean_ns"] == pytest.approx(per_request["end_ns"].mean(), rel=0.01)
    assert got["makespan_ns"] == pytest.approx(want["makespan_ns"], rel=0.01)
    assert got["bubble_ratio"] == pytest.approx(want["bubble_ratio"], abs=0.01)
    slower = replay_sequence(frame, host_call_ns=1e7)  # host time per call is charged
    assert slower["ttft_mean_ns"] > got["ttft_mean_ns"] + 1e7 * got["steps"]


def _row(rnd, schedule, bubble, steps, err, ratios=()):
    return {
        "round": rnd,
        "schedule": schedule,
        "measured_bubble": bubble,
        "steps": steps,
        "replays": {schedule: {"ttft_rel_err": err}},
        "window_ratio": {"per_request": list(ratios)} if ratios else None,
    }


def test_acceptance_lines_can_fail():
    good = [
        row
        for r in (1, 2)
        for row in (
            _row(r, "cpp", 0.10, 8, 0.02),
            _row(r, "dcpp", 0.08, 12, -0.03),
            _row(r, "vpp", 0.06, 8, 0.05, ratios=(0.98, 1.01, 1.0)),
        )
    ]
    assert all(c["met"] for c in acceptance(good))
    assert pooled_fold_back(good)["n"] == 6
    bad = [*good[:-1], _row(2, "vpp", 0.12, 8, 0.15, ratios=(1.0,))]
    missed = {c["line"] for c in acceptance(bad) if not c["met"]}
    assert missed == {
        "VPP bubble below CPP's in every round",
        "vpp replayed TTFT within 10% of measured in every round",
    }


def test_ab_ratio_recovers_the_line():
    rows = [(f"r{p}", k, s, int(1e6 * (2 + 0.5 * k) / 2)) for p in range(2) for k in range(8)
            for s in range(2)]  # fmt: skip
    cpu = pl.DataFrame(rows, schema=["request_id", "chunk_idx", "vstage", "cpu_ns"], orient="row")
    a, b, ab = ab_ratio(cpu)
    assert (a, b, ab) == pytest.approx((2e6, 0.5e6, 4.0))


def test_validate_runs_finds_each_run_by_its_folder(tmp_path, monkeypatch):
    import pipelines.bench.engine_rounds as engine_rounds
    from pipelines.bench.engine_rounds import EngineRun, validate_runs

    runs = [EngineRun(f"r1-{s}", 1, s, tmp_path / "rounds" / f"r1-{s}", 1.0, 2.0) for s in "ab"]
    # ingest names a run <parent folder>-<folder>-<content hash>
    rows = [{"run_id": f"rounds-r1-{s}-0123abcd", "schedule": s} for s in "ba"]
    monkeypatch.setattr(engine_rounds, "validate", lambda paths, con: rows)
    got = validate_runs(runs, tmp_path / "w.duckdb")
    assert [(r["label"], r["schedule"], r["process_cpu_s"]) for r in got] == [
        ("r1-a", "a", 2.0),
        ("r1-b", "b", 2.0),
    ]


def test_sweep_rows_compare_the_replayed_saving_with_g(tmp_path):
    from pipelines.analysis.tau.bubble_pred import analytic_bubbles
    from pipelines.bench.engine_rounds import EngineRun, sweep_rows

    folder = tmp_path / "h64-c512-cpp"
    folder.mkdir()
    cpu = {  # tau_k = 2 ms + 1 ms k on the CPU clock, both stages, 2 passes
        f"chunk[req=r{p},k={k},vs={s},tokens=512,prefix={512 * k}]": [(2 + k) * 500_000, 1]
        for p in range(2)
        for k in range(8)
        for s in range(2)
    }
    (folder / "rank0.pt.trace.json").write_text(json.dumps({"chunk_cpu_ns": json.dumps(cpu)}))
    runs = [
        EngineRun(f"h64-c512-{s}", 1, s, tmp_path / f"h64-c512-{s}", 1.0, 1.0)
        for s in ("cpp", "vpp")
    ]
    replays = {
        "cpp": {"ttft_ns": 100.0, "ttft_busy_only_ns": 90.0},
        "vpp": {"ttft_ns": 104.0, "ttft_busy_only_ns": 81.0},
    }
    rows = [
        {"label": "h64-c512-cpp", "replays": replays, "measured_ttft_ns": 100.0,
         "measured_bubble": 0.2},
        {"label": "h64-c512-vpp", "replays": {}, "measured_ttft_ns": 80.0, "measured_bubble": 0.1},
    ]  # fmt: skip
    (row,) = sweep_rows(rows, runs)
    assert row["ab"] == pytest.approx(2.0) and row["n_chunks"] == 8
    assert row["analytic_saving"] == pytest.approx(analytic_bubbles(2.0, 8)["ttft_saving"])
    assert row["replayed_busy_saving"] == pytest.approx(0.1)
    assert row["replayed_saving"] == pytest.approx(-0.04)
    assert row["measured_saving"] == pytest.approx(0.2)
