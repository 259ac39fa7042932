"""The `tracereplay` command. Each subcommand lives in its own module of this package and exposes
`register(subparsers)`, which adds its parser and sets `func(args) -> int` as the handler.

Every command exits with an `ExitCode`: 0 ok; 1 a check, target or regression failed; 2 some input
was quarantined or the arguments were bad."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from enum import IntEnum

from pipelines.cli._common import lake_folder


class ExitCode(IntEnum):
    """The exit status of every `tracereplay` command."""

    OK = 0
    CHECK_FAILED = 1  # a check, a benchmark target or a regression failed
    BAD_INPUT = 2  # an input was quarantined, or the arguments were bad


class OneLineErrorParser(argparse.ArgumentParser):
    """Bad arguments are one line on stderr and exit 2 (not the usage block): the line names
    the command, the option and what it must be, and where the help is."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(ExitCode.BAD_INPUT, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _version() -> str:
    """The installed distribution's version (importlib.metadata), else the checkout's."""
    from importlib import metadata

    try:
        return metadata.version("tracereplay")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand module of this package registered."""
    from pipelines.cli._common import refuse_non_finite

    parser = OneLineErrorParser(
        prog="tracereplay",
        description=(
            "Trace-replay analytics for chunked-prefill pipeline-parallel LLM inference: ingest "
            "Ascend/Kineto profiler output and simulated reruns into DuckDB, fit per-chunk "
            "latency curves tau_k, replay them under CPP/DCPP/VPP schedules, catch regressions."
        ),
    )
    parser.add_argument(
        "--lake",
        metavar="DIR",
        type=lake_folder,
        help=(
            "keep the canonical tables as Parquet partitions under DIR (one folder per run, "
            "written by any number of processes at once) and read them through views; default "
            "$TRACEREPLAY_LAKE, else `lake` in tracereplay.toml, else the single-file warehouse "
            "(docs/lake.md)"
        ),
    )
    parser.add_argument(
        "--version", action="version", version=f"tracereplay {_version()}", help="print the version"
    )
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=OneLineErrorParser
    )
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        module.register(subparsers)
    refuse_non_finite(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `tracereplay` console script."""
    try:
        return _run_command(argv)
    except BrokenPipeError:  # `tracereplay runs | head`: the reader left, nothing to say
        _quiet_stdout()
        return ExitCode.OK


def _run_command(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitCode.BAD_INPUT
    from pipelines.cli._common import config_problem, environment_problem
    from pipelines.store import use_lake

    problem = environment_problem() or config_problem()
    if problem:
        print(f"tracereplay {args.command}: {problem}", file=sys.stderr)
        return ExitCode.BAD_INPUT

    with use_lake(args.lake):  # seen by every step and subprocess of this command
        return _handled(args)


def _handled(args: argparse.Namespace) -> int:
    """The command's exit status, a store problem as one line."""
    from pipelines.store import StoreError, storage_error

    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        raise  # main's, before the generic handler below
    except StoreError as exc:
        print(f"tracereplay {args.command}: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except Exception as exc:
        known = storage_error(exc)  # a damaged lake file, a full disk: one line, not a traceback
        if known is None:
            raise
        print(f"tracereplay {args.command}: {known}", file=sys.stderr)
        return ExitCode.BAD_INPUT


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: the reader of the pipe is gone, and the interpreter's last flush
    at exit would raise BrokenPipeError again (the Python docs' recipe, `signal` module notes)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
