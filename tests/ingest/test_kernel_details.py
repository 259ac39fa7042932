"""kernel_details.csv reader on every real variant, plus damaged files."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.readers.kernel_details import read_kernel_details

OUT = "ASCEND_PROFILER_OUTPUT/kernel_details.csv"
B0 = f"msinsight/test/data/pytorch/text/level0/rank0_ascend_pt/{OUT}"
B1 = f"msinsight/test/data/pytorch/text/level1/rank0_ascend_pt/{OUT}"
SET_A_RANK2 = f"msinsight/test/st/level2/rank_2_ascend_pt/{OUT}"
SET_D_RANK0 = f"msinsight/server/src/test/test_data/test_rank_0/{OUT}"
G_2023 = "msprof-analyze/test/ut/advisor/advisor_backend/compute_advice/kernel_details.csv"
G_2025 = "msprof-analyze/test/ut/advisor/compute_advice/data/kernel_details.csv"


def test_set_b1_rank0_has_191_kernels_with_4_hccl_ops(real_dir: Path) -> None:
    kd = read_kernel_details(real_dir / B1)
    assert kd.kernels.height == 191
    assert kd.kernels["is_comm"].sum() == 4
    assert kd.kernels["step"].unique().to_list() == [50]
    first = kd.kernels.row(0, named=True)  # 1736408883704643.212<TAB>, 53.741
    assert first["start_ns"] == 1736408883704643212 and first["dur_ns"] == 53741


def test_level0_eight_columns(real_dir: Path) -> None:
    kd = read_kernel_details(real_dir / B0)
    assert kd.kernels.height == 191
    comm = kd.kernels.filter(pl.col("is_comm"))
    assert comm["core"].unique().to_list() == ["HCCL"]
    assert comm["name"].str.starts_with("hcom_allReduce").all()


def test_v2025b_device_column_and_communication_core(real_dir: Path) -> None:
    kd = read_kernel_details(real_dir / SET_A_RANK2)
    assert kd.device_id == 4
    assert kd.kernels.height == 2587
    first_p2p = kd.kernels.filter(pl.col("name") == "hcom_batchSendRecv__128_3_1").row(
        0, named=True
    )
    assert first_p2p["core"] == "COMMUNICATION" and first_p2p["is_comm"]
    assert first_p2p["start_ns"] == 1764246877076689680
    assert first_p2p["dur_ns"] == 71424680
    assert first_p2p["wait_ns"] == 772270


def test_v2023_patched_row_and_old_pmu_columns(real_dir: Path) -> None:
    # set D rank 0 has one hand-patched row with a column fewer; it must still load
    kd = read_kernel_details(real_dir / SET_D_RANK0)
    assert kd.kernels.height == 21
    assert kd.kernels.filter(pl.col("name") == "FlashAttentionScore").height == 4
    old = read_kernel_details(real_dir / G_2023)
    assert old.kernels.height == 591 and old.kernels["is_comm"].sum() == 19
    quoted = read_kernel_details(real_dir / G_2025)  # "1736413971558972.912\t" in quotes
    assert quoted.kernels["start_ns"][0] == 1736413971558972912


HEADER = "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim\n"


def test_a_row_of_text_costs_that_row(tmp_path: Path) -> None:
    # a start cell that is not a number drops its row (it quarantined the file before)
    path = tmp_path / "kernel_details.csv"
    path.write_text(HEADER + "1,k,T,AI_CORE,12.5\t,1.0,0,1\n1,#garbage#,x,y,zz,1,0,1\n")
    kd = read_kernel_details(path)
    assert kd.kernels["name"].to_list() == ["k"]
    assert kd.dropped == {"unparsable_timestamp": 1}
    assert kd.set_aside == ["line 3: unparsable_timestamp"] and kd.unusable == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (HEADER + "1,k,T,AI_CORE,1.69512E+15,1.0,0,1\n", "excel_mangled_number"),
        ("Step Id,Op,Start\n1,k,12\n", "missing_columns"),
        ("", "empty_file"),
    ],
)
def test_damaged_files(tmp_path: Path, body: str, reason: str) -> None:
    path = tmp_path / "kernel_details.csv"
    path.write_text(body)
    with pytest.raises(QuarantineError) as err:
        read_kernel_details(path)
    assert err.value.reason == reason
