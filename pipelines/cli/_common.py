"""Options shared by several subcommands."""

from __future__ import annotations

import argparse


def add_warehouse_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--warehouse",
        metavar="FILE",
        help="DuckDB warehouse file (default: $TRACEREPLAY_WAREHOUSE or data/warehouse.duckdb)",
    )
    parser.add_argument(
        "--wait",
        type=float,
        default=None,
        metavar="SECONDS",
        help="when another process holds the warehouse, wait this long for it "
        "(default: $TRACEREPLAY_WAIT or 300 s)",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
