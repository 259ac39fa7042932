"""Trace writers: Ascend text layout, Chrome/Perfetto JSON, Kineto; round trips through readers.

Two inputs: the seed-001 single-device run (many steps, compute only) and a small hand-built
two-rank pipeline (3 chunks, tau_k = (k+1) us per stage, 300 ns hops whose sends overlap the
next chunk on rank 0) whose breakdown is worked out by hand below.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import polars as pl
import pytest

from pipelines.sim.result import REQUEST_SCHEMA, TASK_SCHEMA, SimResult
from pipelines.sim.single_device import SEED_POLICIES, Workload, simulate_single
from pipelines.sim.trace_layout import double_hash
from pipelines.sim.writers_ascend import (
    KERNEL_HEADER,
    STEP_TRACE_HEADER,
    format_pid,
    write_ascend_pt,
)
from pipelines.sim.writers_chrome import write_chrome_trace
from pipelines.sim.writers_kineto import write_kineto_trace

CHUNK_RE = re.compile(
    r"^chunk\[req=(?P<req>[^,\]]+),k=(?P<k>\d+),vs=(?P<vs>-?\d+),"
    r"tokens=(?P<tokens>\d+),prefix=(?P<prefix>\d+)\]$"
)
TS_RE = re.compile(r"^\d+\.\d{3}$")


def small_single() -> SimResult:
    wl = Workload(horizon_ns=200_000_000, long_first_ns=20_000_000, long_tokens=6000)
    return simulate_single(SEED_POLICIES[2], wl).result


def two_rank_pipeline() -> SimResult:
    """Rank 0 computes chunk k in [S_k, S_k + (k+1) us) back to back, sends for 300 ns right
    after; rank 1 receives over the same 300 ns and computes chunk k once both its previous
    chunk and the receive are done."""
    rows = []
    t0 = 0
    t1_free = 0
    for k in range(3):
        tau = (k + 1) * 1000
        rows.append(("r0", k, 0, 0, "compute", 100, 100 * k, t0, t0 + tau))
        rows.append(("r0", k, 0, 0, "send", 100, 100 * k, t0 + tau, t0 + tau + 300))
        rows.append(("r0", k, 1, 1, "recv", 100, 100 * k, t0 + tau, t0 + tau + 300))
        start1 = max(t0 + tau + 300, t1_free)
        rows.append(("r0", k, 1, 1, "compute", 100, 100 * k, start1, start1 + tau))
        t1_free = start1 + tau
        t0 += tau
    tasks = pl.DataFrame(rows, schema=list(TASK_SCHEMA), orient="row").cast(TASK_SCHEMA)
    requests = pl.DataFrame(
        [("r0", 0, 300, t1_free, t1_free)], schema=list(REQUEST_SCHEMA), orient="row"
    ).cast(REQUEST_SCHEMA)
    meta = {"model": "toy", "schedule": "cpp", "chunk_size": 100, "seq_len": 300, "pp": 2}
    meta |= {"vp": 1, "tp": 1, "hardware": "toy", "seed": 0, "noise": 0.0, "bytes_per_token": 8}
    return SimResult(tasks=tasks, requests=requests, meta=meta)


# Hand-derived breakdown of two_rank_pipeline (ns). Rank 0: compute [0,1000) [1000,3000)
# [3000,6000), sends [1000,1300) [3000,3300) [6000,6300): the first two overlap compute.
# Rank 1: receives as the sends, compute [1300,2300) [3300,5300) [6300,9300); idle
# [2300,3000) and [5300,6000); its first event (a receive) starts 1000 ns into the run window.
PIPELINE_EXPECTED = {
    0: dict(computing=6000, communication=900, not_overlapped=300, overlapped=600, free=0,
            bubble=0, stage=6300, preparing=0),
    1: dict(computing=6000, communication=900, not_overlapped=900, overlapped=0, free=1400,
            bubble=900, stage=7400, preparing=1000),
}  # fmt: skip


def _trace(folder: Path) -> list[dict]:
    return json.loads((folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())


def _csv(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _ns(ts: str) -> int:
    return int(ts.replace(".", ""))


def _lanes(events: list[dict]) -> dict[int, str]:
    return {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}


def test_ascend_layout_single_device(tmp_path: Path) -> None:
    result = small_single()
    folders = write_ascend_pt(result, tmp_path)
    assert len(folders) == 1
    folder = folders[0]
    assert re.fullmatch(r".+_\d{17}_ascend_pt", folder.name)
    info = json.loads((folder / "profiler_info_0.json").read_text())
    assert int(str(info["rank_id"])) == 0
    assert info["torch_npu_version"] == "sim" and info["cann_version"] == "sim"
    meta = json.loads((folder / "profiler_metadata.json").read_text())
    for key in ("model", "schedule", "chunk_size", "seq_len", "tp", "pp", "vp"):
        assert isinstance(meta[key], str), key
    assert meta["schedule"] == "single"
    assert [g["group_name"] for g in meta["parallel_group_info"].values()] == ["pp"]

    events = _trace(folder)
    assert isinstance(events, list)
    lanes = _lanes(events)
    by_lane: dict[str, list[dict]] = {}
    for e in events:
        if e["ph"] == "X":
            assert TS_RE.match(e["ts"]), e
            assert isinstance(e["dur"], float | int)
            by_lane.setdefault(lanes[e["pid"]], []).append(e)
    py_pid = next(p for p, n in lanes.items() if n == "Python")
    hw_pid = next(p for p, n in lanes.items() if n == "Ascend Hardware")
    assert hw_pid == format_pid(py_pid, 13, 0)
    assert {e["args"]["labels"] for e in events if e["name"] == "process_labels"} >= {"CPU"}

    tasks = result.tasks
    chunks = tasks.filter(pl.col("request_id") != "decode")
    steps = [e for e in by_lane["Python"] if e["name"].startswith("ProfilerStep#")]
    markers = [e for e in by_lane["Python"] if CHUNK_RE.match(e["name"])]
    assert len(steps) == len(result.meta["steps_ns"])
    assert len(markers) == chunks.height
    assert {e["cat"] for e in markers} == {"user_annotation"}
    kernels = by_lane["Ascend Hardware"]
    assert len(kernels) == tasks.height
    # each chunk marker is linked by its flow to one kernel with the same interval
    kernel_by_conn = {k["args"]["connection_id"]: k for k in kernels}
    starts = {(e["pid"], e["ts"]): e for e in markers}
    flows = [e for e in events if e["ph"] == "s" and (e["pid"], e["ts"]) in starts]
    assert len(flows) == len(markers)
    for flow in flows:
        marker, kernel = starts[(flow["pid"], flow["ts"])], kernel_by_conn[flow["id"]]
        assert (marker["ts"], marker["dur"]) == (kernel["ts"], kernel["dur"])
    # the device is never idle inside a step: one Computing slice per step, no Free
    overlap = by_lane["Overlap Analysis"]
    assert {e["name"] for e in overlap} == {"Computing"}
    assert len(overlap) == len(steps)
    busy_ns = int((tasks["end_ns"] - tasks["start_ns"]).sum())
    assert sum(round(e["dur"] * 1000) for e in overlap) == busy_ns

    out = folder / "ASCEND_PROFILER_OUTPUT"
    kd = _csv(out / "kernel_details.csv")
    assert kd[0] == KERNEL_HEADER
    assert len(kd) - 1 == tasks.height
    start_col = KERNEL_HEADER.index("Start Time(us)")
    assert all(row[start_col].endswith("\t") and TS_RE.match(row[start_col][:-1]) for row in kd[1:])
    assert (out / "kernel_details.csv").read_bytes().count(b"\r\n") == len(kd)
    st = _csv(out / "step_trace_time.csv")
    assert st[0] == STEP_TRACE_HEADER
    assert len(st) - 1 == len(steps)
    computing = sum(round(float(r[1]) * 1000) for r in st[1:])
    assert computing == busy_ns
    stage = [round(float(r[6]) * 1000) for r in st[1:]]
    assert stage == [e - s for s, e in result.meta["steps_ns"]]


def test_ascend_pipeline_comm_and_overlap(tmp_path: Path) -> None:
    result = two_rank_pipeline()
    folders = write_ascend_pt(result, tmp_path)
    assert len(folders) == 2
    ops: dict[int, list[str]] = {}
    for rank, folder in enumerate(sorted(folders, key=lambda p: p.name)):
        assert (folder / f"profiler_info_{rank}.json").is_file()
        meta = json.loads((folder / "profiler_metadata.json").read_text())
        ((group_id, group),) = meta["parallel_group_info"].items()
        assert group["global_ranks"] == [0, 1] and group["group_rank"] == rank
        suffix = f"{double_hash(group_id) % 1000:03d}"
        events = _trace(folder)
        lanes = _lanes(events)
        hccl = [e for e in events if e["ph"] == "X" and lanes[e["pid"]] == "HCCL"]
        top = [e for e in hccl if e["name"].startswith("hcom_")]
        assert all(e["name"].split("__")[1].startswith(suffix + "_") for e in top)
        ops[rank] = sorted(e["name"] for e in top)
        planes = [e for e in hccl if not e["name"].startswith("hcom_")]
        assert {(e["args"]["src rank"], e["args"]["dst rank"]) for e in planes} == {(0, 1)}

        st = _csv(folder / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv")
        assert len(st) == 2  # one ProfilerStep for the whole run
        row = dict(zip(st[0], st[1], strict=True))
        got = {
            "computing": row["Computing"],
            "communication": row["Communication"],
            "not_overlapped": row["Communication(Not Overlapped)"],
            "overlapped": row["Overlapped"],
            "free": row["Free"],
            "bubble": row["Bubble"],
            "stage": row["Stage"],
            "preparing": row["Preparing"],
        }
        assert {k: round(float(v) * 1000) for k, v in got.items()} == PIPELINE_EXPECTED[rank]
        # the four lanes tile the device window: Computing + Not Overlapped + Free = window
        ov = [e for e in events if e["ph"] == "X" and lanes[e["pid"]] == "Overlap Analysis"]
        span = max(_ns(e["ts"]) + round(e["dur"] * 1000) for e in ov) - min(
            _ns(e["ts"]) for e in ov
        )
        tiled = sum(
            round(e["dur"] * 1000)
            for e in ov
            if e["name"] in ("Computing", "Communication(Not Overlapped)", "Free")
        )
        assert tiled == span
    # both ends of each transfer share <G3>_<idx>
    sends = [o.removeprefix("hcom_send__") for o in ops[0]]
    recvs = [o.removeprefix("hcom_receive__") for o in ops[1]]
    assert len(sends) == 3 and sends == recvs


def test_chrome_trace_schema(tmp_path: Path) -> None:
    for result in (small_single(), two_rank_pipeline()):
        path = write_chrome_trace(result, tmp_path / "run.json")
        trace = json.loads(path.read_text())
        assert trace["displayTimeUnit"] == "ns"
        events = trace["traceEvents"]
        slices = [e for e in events if e["ph"] == "X"]
        for e in events:
            assert {"ph", "pid", "tid"} <= e.keys()
            if e["ph"] in ("X", "s", "f"):
                assert isinstance(e["ts"], float | int) and not isinstance(e["ts"], bool)
        for e in slices:
            assert isinstance(e["dur"], float | int) and e["dur"] >= 0
        names = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "process_name"}
        assert {pid for pid, _ in names} == set(result.tasks["rank"].unique().to_list())
        task_slices = [e for e in slices if "request_id" in e["args"]]
        assert len(task_slices) == result.tasks.height
        assert sum(round(e["dur"] * 1000) for e in task_slices) == int(
            (result.tasks["end_ns"] - result.tasks["start_ns"]).sum()
        )
        threads = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
        assert "compute" in threads
        if (result.tasks["kind"] != "compute").any():
            assert {"send", "recv"} <= threads
            flows = [e for e in events if e["ph"] in ("s", "f")]
            assert len(flows) == 2 * 3


def test_kineto_trace_structure(tmp_path: Path) -> None:
    result = two_rank_pipeline()
    paths = write_kineto_trace(result, tmp_path)
    assert len(paths) == 2
    for rank, path in enumerate(sorted(paths)):
        assert path.name.endswith(".pt.trace.json")
        trace = json.loads(path.read_text())
        assert trace["schemaVersion"] == 1
        assert trace["distributedInfo"]["rank"] == rank
        assert trace["distributedInfo"]["world_size"] == 2
        events = trace["traceEvents"]
        markers = [
            e for e in events if e.get("cat") == "user_annotation" and CHUNK_RE.match(e["name"])
        ]
        kernels = [e for e in events if e.get("cat") == "kernel"]
        compute = result.tasks.filter((pl.col("rank") == rank) & (pl.col("kind") == "compute"))
        assert len(markers) == compute.height == 3
        assert {m["name"] for m in markers} == {
            f"chunk[req=r0,k={k},vs={rank},tokens=100,prefix={100 * k}]" for k in range(3)
        }
        cpu_pid = markers[0]["pid"]
        assert all(k["pid"] == rank and isinstance(k["tid"], int) for k in kernels)
        by_ext = {k["args"]["External id"]: k for k in kernels}
        for m in markers:
            kernel = by_ext[m["args"]["External id"]]
            assert kernel["ts"] == m["ts"] and kernel["dur"] == m["dur"]
        flows = [e for e in events if e.get("cat") == "ac2g"]
        starts = {e["id"]: e for e in flows if e["ph"] == "s"}
        ends = {e["id"]: e for e in flows if e["ph"] == "f"}
        assert starts.keys() == ends.keys() == {k["args"]["correlation"] for k in kernels}
        assert all(starts[i]["pid"] == cpu_pid and ends[i]["pid"] == rank for i in starts)
        nccl = [k for k in kernels if k["name"].startswith("ncclDevKernel")]
        assert [k["args"]["Collective name"] for k in nccl] == ["send" if rank == 0 else "recv"] * 3


@pytest.mark.parametrize("which", ["single", "pipeline"])
def test_round_trip_through_text_reader(tmp_path: Path, which: str) -> None:
    """Written folders ingest through the Ascend text reader with nothing quarantined, and the
    step breakdown it reports (the profiler's rows and its own derived rows) equals the
    simulator's own per-rank figures."""
    from pipelines.ingest.readers.ascend_text import read_rank

    result = small_single() if which == "single" else two_rank_pipeline()
    folders = sorted(write_ascend_pt(result, tmp_path), key=lambda p: p.name)
    for rank, folder in enumerate(folders):
        frames = read_rank(folder)
        assert frames.quarantined == []
        assert frames.rank == rank
        mine = result.tasks.filter(pl.col("rank") == rank)
        compute = mine.filter(pl.col("kind") == "compute")
        busy = int((compute["end_ns"] - compute["start_ns"]).sum())
        sb = frames.tables["step_breakdown"]
        assert set(sb["origin"]) == {"profiler", "derived"}
        # the writer's lanes are exact: read back, our derivation agrees with its step_trace_time
        assert sb["complete"].to_list() == [True] * sb.height
        for origin in ("profiler", "derived"):
            rows = sb.filter(pl.col("origin") == origin).sort("step")
            assert int(rows["computing_ns"].sum()) == busy, origin
            if which == "single":
                windows = result.meta["steps_ns"]
                assert rows["step"].to_list() == list(range(1, len(windows) + 1))
                assert rows["computing_ns"].to_list() == [e - s for s, e in windows]
                assert int(rows["free_ns"].sum()) == 0
                assert int(rows["communication_ns"].sum()) == 0
            else:
                exp = PIPELINE_EXPECTED[rank]
                row = rows.row(0, named=True)
                got = {
                    "computing": row["computing_ns"],
                    "communication": row["communication_ns"],
                    "not_overlapped": row["comm_not_overlapped_ns"],
                    "overlapped": row["overlapped_ns"],
                    "free": row["free_ns"],
                    "bubble": row["bubble_ns"],
                    "stage": row["stage_ns"],
                    "preparing": row["preparing_ns"],
                }
                assert got == exp, origin
        markers = frames.tables["slices"].filter(pl.col("name").str.starts_with("chunk["))
        assert markers.height == compute.filter(pl.col("request_id") != "decode").height
        if which == "pipeline":
            comm = frames.tables["comm_ops"]
            assert comm["peer"].to_list() == [1 - rank] * 3
            assert comm["group_kind"].to_list() == ["pp"] * 3


def test_pipeline_chunks_segment_back(tmp_path: Path) -> None:
    """Chunk segmentation of the written pipeline trace recovers every (chunk, stage) task and
    its busy time tau."""
    from pipelines.analysis.chunks.segment import segment_chunks
    from pipelines.ingest.readers.ascend_text import read_rank

    result = two_rank_pipeline()
    slices = pl.concat(
        [
            read_rank(folder).tables["slices"].with_columns(pl.lit(rank).alias("rank"))
            for rank, folder in enumerate(
                sorted(write_ascend_pt(result, tmp_path), key=lambda p: p.name)
            )
        ],
        how="diagonal_relaxed",
    )
    chunks, _ = segment_chunks(slices, "sim")
    got = chunks.select("rank", "vstage", "chunk_idx", "busy_ns").sort("rank", "chunk_idx")
    want = (
        result.tasks.filter(pl.col("kind") == "compute")
        .select(
            "rank",
            "vstage",
            "chunk_idx",
            (pl.col("end_ns") - pl.col("start_ns")).alias("busy_ns"),
        )
        .sort("rank", "chunk_idx")
    )
    assert got.cast(want.schema).equals(want)


def test_round_trip_through_file_readers(tmp_path: Path) -> None:
    """The per-file readers already in pipelines/ingest read every written file back exactly."""
    from pipelines.ingest.readers.kernel_details import read_kernel_details
    from pipelines.ingest.readers.profiler_info import read_profiler_info, read_profiler_metadata
    from pipelines.ingest.readers.step_trace import read_step_trace_time
    from pipelines.ingest.readers.trace_view import read_trace_view

    result = two_rank_pipeline()
    for rank, folder in enumerate(sorted(write_ascend_pt(result, tmp_path), key=lambda p: p.name)):
        info = read_profiler_info(folder / f"profiler_info_{rank}.json")
        assert info.rank == rank and info.software.get("torch_npu") == "sim"
        meta = read_profiler_metadata(folder / "profiler_metadata.json")
        assert meta.conventions["schedule"] == "cpp" and meta.conventions["pp"] == "2"
        assert [g.kind for g in meta.groups] == ["pp"]
        out = folder / "ASCEND_PROFILER_OUTPUT"
        tv = read_trace_view(out / "trace_view.json")
        assert tv.device_id == rank
        assert tv.steps.height == 1
        compute = tv.lane("compute")
        mine = result.tasks.filter(pl.col("rank") == rank)
        kernels = compute.filter(pl.col("thread") == "Stream 2")
        assert kernels["dur_ns"].sum() == int(
            mine.filter(pl.col("kind") == "compute")
            .select(pl.col("end_ns") - pl.col("start_ns"))
            .sum()
            .item()
        )
        comm = tv.lane("comm").filter(pl.col("name").str.starts_with("hcom_"))
        assert comm.height == 3
        st = read_step_trace_time(out / "step_trace_time.csv").rows.row(0, named=True)
        exp = PIPELINE_EXPECTED[rank]
        assert (st["computing_ns"], st["free_ns"], st["bubble_ns"]) == (
            exp["computing"],
            exp["free"],
            exp["bubble"],
        )
        kd = read_kernel_details(out / "kernel_details.csv")
        assert kd.kernels.height == 6  # 3 kernels + 3 hcom ops
        assert kd.kernels["is_comm"].sum() == 3


def test_kineto_round_trip_through_reader(tmp_path: Path) -> None:
    """The Kineto reader reads each written rank with nothing quarantined and derives the same
    breakdown as the hand-worked pipeline (Kineto has no receive-based Bubble)."""
    from pipelines.ingest.readers.kineto import read_trace

    result = two_rank_pipeline()
    for rank, path in enumerate(sorted(write_kineto_trace(result, tmp_path))):
        frames = read_trace(path)
        assert frames.quarantined == [] and frames.rank == rank and frames.device_id == rank
        row = frames.tables["step_breakdown"].row(0, named=True)
        exp = PIPELINE_EXPECTED[rank]
        got = (
            row["computing_ns"],
            row["communication_ns"],
            row["comm_not_overlapped_ns"],
            row["overlapped_ns"],
            row["free_ns"],
            row["preparing_ns"],
        )
        assert got == (
            exp["computing"],
            exp["communication"],
            exp["not_overlapped"],
            exp["overlapped"],
            exp["free"],
            exp["preparing"],
        )
        assert frames.tables["comm_ops"].height == 3
        conventions = frames.info["conventions"]
        assert conventions["schedule"] == str(result.meta["schedule"])
        assert conventions["pp"] == str(result.meta["pp"])


@pytest.mark.parametrize("which", ["single", "pipeline"])
def test_ingested_breakdown_equals_simulator_metrics(tmp_path: Path, which: str) -> None:
    """Per rank, the ingested breakdown summed over steps equals the simulator's own accounting
    (pipelines.sim.metrics.ranks_frame): compute, comm, overlapped, exposed comm, and its bubble
    = Free + the idle time before the rank's first and after its last device event."""
    from pipelines.ingest.readers.ascend_text import read_rank
    from pipelines.sim.metrics import ranks_frame

    result = small_single() if which == "single" else two_rank_pipeline()
    sim = ranks_frame(result)
    window_end = int(result.tasks["end_ns"].max())
    for rank, folder in enumerate(sorted(write_ascend_pt(result, tmp_path), key=lambda p: p.name)):
        sb = read_rank(folder).tables["step_breakdown"].filter(pl.col("origin") == "profiler")
        totals = {
            c: int(sb[c].sum())
            for c in sb.columns
            if c.endswith("_ns") and sb[c].dtype.is_integer()
        }
        mine = result.tasks.filter(pl.col("rank") == rank)
        tail = window_end - int(mine["end_ns"].max())
        expected = sim.filter(pl.col("rank") == rank).row(0, named=True)
        assert totals["computing_ns"] == expected["compute_ns"]
        assert totals["communication_ns"] == expected["comm_ns"]
        assert totals["overlapped_ns"] == expected["overlapped_ns"]
        assert totals["comm_not_overlapped_ns"] == expected["exposed_comm_ns"]
        assert totals["free_ns"] + totals["preparing_ns"] + tail == expected["bubble_ns"]


@pytest.mark.parametrize("schedule", ["cpp", "dcpp", "vpp", "vpp_async", "vpp_pack"])
def test_simulated_schedules_round_trip(tmp_path: Path, schedule: str) -> None:
    """Runs of the pipeline simulator, written as Ascend folders, ingest with nothing quarantined;
    per rank the breakdown equals the simulator's accounting, every p2p op names its peer, and
    chunk segmentation recovers every compute task with its duration."""
    from pipelines.analysis.chunks.segment import segment_chunks
    from pipelines.ingest.readers.ascend_text import read_rank
    from pipelines.sim.metrics import ranks_frame
    from pipelines.sim.run import simulate

    vp = 2 if schedule.startswith("vpp") else 1
    result = simulate([65536, 65536], schedule, chunk_size=16384, pp=2, vp=vp)
    sim = ranks_frame(result)
    window_end = int(result.tasks["end_ns"].max())
    slices = []
    for rank, folder in enumerate(sorted(write_ascend_pt(result, tmp_path), key=lambda p: p.name)):
        frames = read_rank(folder)
        assert frames.quarantined == [] and frames.rank == rank
        assert frames.info["conventions"]["schedule"] == schedule
        mine = result.tasks.filter(pl.col("rank") == rank)
        comm = frames.tables["comm_ops"]
        assert comm.height == mine.filter(pl.col("kind") != "compute").height
        p2p = comm.filter(pl.col("op").str.contains("^hcom_(send|receive)"))
        assert set(p2p["peer"].to_list()) == {1 - rank}
        # the TP AllReduce and EP all-to-all of every stage call sit on the comm lane
        calls = mine.filter(pl.col("kind") == "compute").height
        for prefix in ("hcom_allReduce__", "hcom_alltoAll__"):
            assert comm.filter(pl.col("op").str.starts_with(prefix)).height == calls
        for origin in ("profiler", "derived"):
            sb = (
                frames.tables["step_breakdown"]
                .filter(pl.col("origin") == origin)
                .row(0, named=True)
            )
            expected = sim.filter(pl.col("rank") == rank).row(0, named=True)
            tail = window_end - int(mine["end_ns"].max())
            assert sb["computing_ns"] == expected["compute_ns"], origin
            assert sb["communication_ns"] == expected["comm_ns"], origin
            assert sb["comm_not_overlapped_ns"] == expected["exposed_comm_ns"], origin
            assert sb["free_ns"] + sb["preparing_ns"] + tail == expected["bubble_ns"], origin
        slices.append(frames.tables["slices"].with_columns(pl.lit(rank).alias("rank")))
    chunks, _ = segment_chunks(pl.concat(slices, how="diagonal_relaxed"), "sim")
    key = ["rank", "vstage", "request_id", "chunk_idx"]
    got = chunks.select(*key, "busy_ns").sort(key)
    want = (
        result.tasks.filter(pl.col("kind") == "compute")
        .select(*key, (pl.col("end_ns") - pl.col("start_ns")).alias("busy_ns"))
        .sort(key)
    )
    assert got.cast(want.schema).equals(want)


def test_ingest_paths_loads_one_run_per_simulation(tmp_path: Path, warehouse) -> None:
    """`ingest_paths` on a folder of written rank folders loads exactly one run, nothing
    quarantined, its run facts from profiler_metadata.json; re-ingesting changes nothing."""
    from pipelines.ingest.load import ingest_paths
    from pipelines.sim.run import simulate

    result = simulate([65536], "vpp", chunk_size=16384, pp=2, vp=2)
    out = tmp_path / "vpp_run"
    write_ascend_pt(result, out)
    report = ingest_paths([out], warehouse, progress=False)
    assert report.quarantined == [] and len(report.runs) == 1
    run = warehouse.execute(
        "select run_id, schedule, chunk_size, seq_len, pp, vp, hardware from runs"
    ).fetchall()
    assert [r[1:] for r in run] == [("vpp", 16384, 65536, 2, 2, result.meta["hardware"])]
    run_id = run[0][0]
    ranks = warehouse.execute("select count(*) from ranks where run_id = ?", [run_id]).fetchone()[0]
    assert ranks == 2
    computing = warehouse.execute(
        "select sum(computing_ns) from step_breakdown where run_id = ? and origin = 'profiler'",
        [run_id],
    ).fetchone()[0]
    compute = result.tasks.filter(pl.col("kind") == "compute")
    assert computing == int((compute["end_ns"] - compute["start_ns"]).sum())
    again = ingest_paths([out], warehouse, progress=False)
    assert again.quarantined == []
    assert warehouse.execute("select count(*) from runs").fetchone()[0] == 1


def test_cli_output_folder_ingests_as_one_run(tmp_path: Path, warehouse) -> None:
    """`tracereplay simulate --out DIR` (Ascend folders + Perfetto JSON) then ingesting DIR
    gives one run and nothing quarantined."""
    from pipelines.cli import main
    from pipelines.ingest.load import ingest_paths

    code = main(["simulate", "--schedule", "cpp", "--seq-len", "65536", "--chunk", "16384",
                 "--out", str(tmp_path / "cli")])  # fmt: skip
    assert code == 0
    report = ingest_paths([tmp_path / "cli"], warehouse, progress=False)
    assert report.quarantined == []
    assert [r.source for r in report.runs] == ["ascend_pt"]
