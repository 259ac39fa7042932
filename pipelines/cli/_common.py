"""Options shared by several subcommands."""

from __future__ import annotations

import argparse


def add_warehouse_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--warehouse",
        metavar="FILE",
        help="DuckDB warehouse file (default: $TRACEREPLAY_WAREHOUSE or data/warehouse.duckdb)",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
