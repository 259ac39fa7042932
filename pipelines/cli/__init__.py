"""The `tracereplay` command. Each subcommand lives in its own module of this package and exposes
`register(subparsers)`, which adds its parser and sets `func(args) -> int` as the handler.

Every command exits with an `ExitCode`: 0 ok; 1 a check, target or regression failed; 2 some input
was quarantined or the arguments were bad; 130 / 143 stopped by Ctrl-C (SIGINT) / SIGTERM."""

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
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, the shell's convention)
    TERMINATED = 143  # SIGTERM (128 + SIGTERM)


class Terminated(BaseException):
    """SIGTERM, raised where the command is, so that it unwinds as on Ctrl-C: its open store
    transaction rolls back and its temporary files go (the default action killed the process on
    the spot without a word; issue 36 round seven)."""


def _stop(signum: int, frame: object) -> None:
    import signal

    if _importing(frame):
        # raised inside an import, the stop leaves that module's lock held and the ingest
        # threads waiting on it for ever (a 300 s hang of the round-seven campaign: SIGINT 2 s
        # into an ingest, a worker in encodings' import): the same signal again in 50 ms
        import os
        import threading

        threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
        return
    from pipelines import stop

    interrupt = signum == signal.SIGINT
    stop.request("Ctrl-C" if interrupt else "SIGTERM")
    raise KeyboardInterrupt if interrupt else Terminated


def _importing(frame: object) -> bool:
    """Whether the interrupted frame, or one it was called from, is the import system's."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):  # type: ignore[attr-defined]
            return True
        frame = frame.f_back  # type: ignore[attr-defined]
    return False


def _catch_stops() -> dict[int, object]:
    """SIGINT and SIGTERM raise in the command (_stop); the handlers they replace, to restore.
    Nothing when not on the main thread (a test's worker: the caller owns the signals)."""
    import signal

    previous = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) is not signal.SIG_IGN:  # nohup / a background job
                previous[signum] = signal.signal(signum, _stop)
    except ValueError:
        pass
    return previous


def _stopped() -> int:
    """One line for a command stopped by a signal (issue 36 round seven: Ctrl-C printed a
    KeyboardInterrupt traceback, or DuckDB's 'Query interrupted' one). What is stored is what
    the writes finished before the stop: each run's write is one transaction."""
    from pipelines import stop

    what = stop.requested() or "Ctrl-C"
    print(
        f"tracereplay: stopped by {what}; the store keeps what was written before, run the"
        " command again to finish",
        file=sys.stderr,
    )
    return ExitCode.TERMINATED if what == "SIGTERM" else ExitCode.INTERRUPTED


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
    import signal

    from pipelines import stop

    stop.clear()
    previous = _catch_stops()
    try:
        return _run_command(argv)
    except BrokenPipeError:  # `tracereplay runs | head`: the reader left, nothing to say
        _quiet_stdout()
        return ExitCode.OK
    except (KeyboardInterrupt, Terminated):
        return _stopped()
    except Exception:
        if stop.requested():  # the stop surfaced as another error (DuckDB: 'Query interrupted')
            return _stopped()
        raise
    finally:
        for signum, handler in previous.items():
            if argv is None:  # the process ends now: a stop that comes late changes nothing
                handler = signal.SIG_IGN
            signal.signal(signum, handler)  # type: ignore[arg-type]


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
        # a damaged lake file, a full disk, a chart renderer that cannot run: one line
        known = storage_error(exc) or _render_error(exc)
        if known is None:
            raise
        print(f"tracereplay {args.command}: {known}", file=sys.stderr)
        return ExitCode.BAD_INPUT


def _render_error(exc: Exception) -> str | None:
    """The message of a PNG render failure (dashboards.png_writer.PngRenderError), else None:
    a renderer that cannot start or render was a traceback (issue 36 round seven)."""
    from dashboards.png_writer import PngRenderError

    return str(exc) if isinstance(exc, PngRenderError) else None


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: the reader of the pipe is gone, and the interpreter's last flush
    at exit would raise BrokenPipeError again (the Python docs' recipe, `signal` module notes)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
