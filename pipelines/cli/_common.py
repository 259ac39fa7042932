"""Options shared by several subcommands."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipelines.store import Store


def warehouse_file(text: str) -> str:
    """A --warehouse value: a file path (an empty one, or DuckDB's ':memory:', would store
    nothing a later command can read)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; give a file such as data/warehouse.duckdb")
    if text.strip() == ":memory:":
        raise argparse.ArgumentTypeError(
            "':memory:' keeps nothing after the command; give a file such as data/warehouse.duckdb"
        )
    return text


def seconds(text: str) -> float:
    """A duration option in seconds: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"a duration is a finite number >= 0, not {text!r}")
    return value


def store_of(args: argparse.Namespace) -> Store:
    """The store the command's --warehouse / --wait (and the global --lake) name; nothing is
    opened yet."""
    from pipelines.store import open_store  # imported on use: `--help` stays fast

    return open_store(getattr(args, "warehouse", None), wait_s=getattr(args, "wait", None))


def add_warehouse_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--warehouse",
        metavar="FILE",
        type=warehouse_file,
        help="DuckDB warehouse file (default: $TRACEREPLAY_WAREHOUSE or data/warehouse.duckdb)",
    )
    parser.add_argument(
        "--wait",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="when another process holds the warehouse, wait this long for it "
        "(default: $TRACEREPLAY_WAIT or 300 s)",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
