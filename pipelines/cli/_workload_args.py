"""The reference engine's arguments, shared by `tracereplay workload` and `tracereplay bench
engine`: the engine's shape options (one definition, one validation) and the WorkloadConfig
built from parsed arguments (pipelines/workload/config.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pipelines.cli._common import positive_int

if TYPE_CHECKING:
    from pipelines.workload.config import WorkloadConfig


def add_shape_arguments(
    parser: argparse.ArgumentParser, *, repeats: int, repeats_help: str
) -> None:
    """--layers, --hidden, --seq-len, --chunk, --repeats and --dcpp-min-chunk, each a positive
    integer (an argument error exits 2 with one line)."""
    parser.add_argument(
        "--layers", type=positive_int, default=4, help="decoder layers (default: 4)"
    )
    parser.add_argument(
        "--hidden", type=positive_int, default=128, help="hidden size (default: 128)"
    )
    parser.add_argument(
        "--seq-len",
        type=positive_int,
        default=4096,
        help="prompt tokens per request (default: 4096)",
    )
    parser.add_argument("--chunk", type=positive_int, default=512, help="chunk size (default: 512)")
    parser.add_argument(
        "--repeats", type=positive_int, default=repeats, help=f"{repeats_help} (default: {repeats})"
    )
    parser.add_argument(
        "--dcpp-min-chunk",
        type=positive_int,
        default=None,
        metavar="TOKENS",
        help="dcpp: smallest chunk (default: --chunk / 4)",
    )


def workload_config(args: argparse.Namespace, **fields: Any) -> WorkloadConfig:
    """The WorkloadConfig of the parsed arguments: every WorkloadConfig field the command has as
    an option, then `fields` over them. Raises ValueError as WorkloadConfig does."""
    from pipelines.workload.config import WorkloadConfig

    known = WorkloadConfig.__dataclass_fields__
    values = {name: value for name, value in vars(args).items() if name in known}
    return WorkloadConfig(**(values | fields))
