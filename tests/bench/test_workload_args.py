"""`tracereplay workload` and `tracereplay bench engine` build their WorkloadConfig through one
door (pipelines/cli/_workload_args.py): the same options parse to the same configuration."""

from __future__ import annotations

import pytest

from pipelines.cli import build_parser
from pipelines.cli._workload_args import workload_config
from pipelines.workload.config import WorkloadConfig

SHAPE = ["--layers", "8", "--hidden", "64", "--seq-len", "2048", "--chunk", "256"]


def test_workload_options_reach_every_field(tmp_path) -> None:
    args = build_parser().parse_args(
        [
            *("workload", "--out", str(tmp_path), *SHAPE, "--heads", "8", "--kv-heads", "4"),
            *("--requests", "3", "--schedule", "dcpp", "--attention", "sparse", "--top-k", "64"),
            *("--send", "overlapped", "--threads", "2", "--repeats", "5", "--warmup", "0"),
            *("--seed", "7", "--dcpp-min-chunk", "32", "--dcpp-smooth", "0.5", "--pin"),
        ]
    )
    expected = WorkloadConfig(
        layers=8, hidden=64, heads=8, kv_heads=4, seq_len=2048, chunk=256, requests=3,
        schedule="dcpp", attention="sparse", top_k=64, send="overlapped", threads=2, repeats=5,
        warmup=0, seed=7, dcpp_min_chunk=32, dcpp_smooth=0.5, pin=True,
    )  # fmt: skip
    assert workload_config(args) == expected


def test_engine_bench_defaults_and_overrides() -> None:
    args = build_parser().parse_args(["bench", "engine", *SHAPE])
    assert workload_config(args) == WorkloadConfig(
        layers=8, hidden=64, seq_len=2048, chunk=256, repeats=4, dcpp_min_chunk=None
    )
    assert workload_config(args, schedule="vpp").schedule == "vpp"
    default = workload_config(build_parser().parse_args(["bench", "engine"]))
    assert (default.layers, default.hidden, default.seq_len, default.chunk) == (4, 128, 4096, 512)
    assert default.repeats == 4  # the bench's own default; the workload command's is 1


@pytest.mark.parametrize("command", [["bench", "engine"], ["workload", "--out", "x"]])
def test_a_non_positive_shape_is_refused_by_the_parser(command, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args([*command, "--layers", "0"])
    assert stop.value.code == 2
    assert "--layers" in capsys.readouterr().err


def test_a_bad_combination_raises_as_workload_config_does() -> None:
    args = build_parser().parse_args(["bench", "engine", "--chunk", "8192"])
    with pytest.raises(ValueError):
        workload_config(args)
