"""communication.json / communication_matrix.json readers and HCCL name helpers."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.readers.communication import read_communication, read_communication_matrix
from pipelines.ingest.readers.hccl import is_p2p_op, op_group_suffix, op_type

SET_A = "msinsight/test/st/level2/rank_2_ascend_pt/ASCEND_PROFILER_OUTPUT"
SET_D = "msinsight/server/src/test/test_data/test_rank_0/ASCEND_PROFILER_OUTPUT"


def test_names() -> None:
    assert op_type("hcom_allReduce__586_0_1") == "allReduce"
    assert op_type("hcom_send__822_0") == "send"
    assert op_group_suffix("hcom_batchSendRecv__128_3_1") == "128"
    assert is_p2p_op("hcom_batchSendRecv__128_3_1") and is_p2p_op("HCOM_BATCHSENDRECV__1_2_1")
    assert is_p2p_op("hcom_receive__822_0") and is_p2p_op("hcom_send__822_0")
    assert not is_p2p_op("hcom_allReduce__586_0_1")


def test_set_a_ops_skip_totals_and_read_units(real_dir: Path) -> None:
    ops = read_communication(real_dir / SET_A / "communication.json")
    assert ops.height == 23 and "Total Op Info" not in ops["op"].to_list()
    first = ops.filter(pl.col("op") == "hcom_batchSendRecv__128_4_1").row(0, named=True)
    assert first["step"] == 13 and first["kind"] == "p2p"
    assert first["group_name"] == "3985310405473756128"
    assert first["dur_ns"] == 804120  # 0.80412 ms
    assert first["wait_ns"] == 404460
    assert first["bytes"] == 8388608  # HCCS/SDMA 8.388608 MB, not counted twice


def test_set_d_send_and_matrix_peer(real_dir: Path) -> None:
    ops = read_communication(real_dir / SET_D / "communication.json")
    send = ops.filter(pl.col("kind") == "p2p").row(0, named=True)
    assert send["op"] == "hcom_send__822_0" and send["bytes"] == 20971520
    links = read_communication_matrix(real_dir / SET_D / "communication_matrix.json")
    rdma = links.filter((pl.col("op") == "hcom_send__822_0") & (pl.col("transport") == "RDMA"))
    assert rdma.select("src", "dst").row(0) == (0, 8)


def test_step_key_without_number_and_bad_key(tmp_path: Path) -> None:
    path = tmp_path / "communication.json"
    info = {"Communication Time Info": {"Start Timestamp(us)": 10.5, "Elapse Time(ms)": 0.002}}
    path.write_text(json.dumps({"step": {"collective": {"hcom_x__123_0@99": info}}}))
    ops = read_communication(path)
    assert ops["step"].to_list() == [None] and ops["dur_ns"].to_list() == [2000]
    path.write_text(json.dumps({"oops": {}}))
    with pytest.raises(QuarantineError) as err:
        read_communication(path)
    assert err.value.reason == "invalid_communication"
