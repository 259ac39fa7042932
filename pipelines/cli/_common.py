"""Options shared by several subcommands."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path
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
    if text.endswith(("/", os.sep)):
        # a trailing slash names a folder (POSIX path resolution); pathlib drops it, so
        # `--warehouse w.duckdb/` wrote a file w.duckdb without a word (issue 36 round six)
        raise argparse.ArgumentTypeError(
            f"{printable_path(text)} ends in '/', which names a folder; give the warehouse file"
            " (data/warehouse.duckdb) or, for a Parquet lake, --lake DIR"
        )
    return text


def number(
    kind: type[int] | type[float] = float,
    *,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
    below: float | None = None,
    what: str = "a number",
) -> Callable[[str], int | float]:
    """An argparse type: `kind` parsed from the text, finite, >= `low`, > `above`, <= `high`,
    < `below`; anything else is one clear line (exit 2), never NaN or inf reaching a statistic."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}: it must be finite")
        if low is not None and value < low:
            raise argparse.ArgumentTypeError(f"{text!r}: {what} must be >= {low:g}")
        if above is not None and value <= above:
            raise argparse.ArgumentTypeError(f"{text!r}: {what} must be > {above:g}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{text!r}: {what} must be <= {high:g}")
        if below is not None and value >= below:
            raise argparse.ArgumentTypeError(f"{text!r}: {what} must be < {below:g}")
        return value

    parse.__name__ = what  # argparse names the type in its messages
    return parse


seconds = number(float, low=0, what="a number of seconds")
"""A duration option: a finite number of seconds >= 0."""
percent = number(float, low=0, high=1000, what="a percentage")
"""A threshold in percent: finite, 0 to 1000."""
finite_float = number(float, what="a finite number")
"""Any float option without a range of its own: NaN and inf refused."""
positive_int = number(int, low=1, what="a whole number")
"""A count that must be at least one (ranks, layers, threads, requests)."""
count = number(int, low=0, what="a whole number")
"""A count that may be zero (warm-up passes, a window, decode streams)."""
seed = number(int, low=0, what="a seed")
"""A random seed: numpy refuses negative seeds."""


def day(text: str) -> str:
    """A date option (YYYY-MM-DD): checked at the parser, kept as the text given."""
    from datetime import date

    try:
        date.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)") from None
    return text.strip()


def _check_length(path: Path, text: str) -> None:
    """A name longer than the file system takes (255 bytes a component, 4096 a path on Linux:
    pathconf's NAME_MAX / PATH_MAX) fails only when the output is written, after the work."""
    import os

    try:
        name_max = os.pathconf("/", "PC_NAME_MAX")
        path_max = os.pathconf("/", "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        name_max, path_max = 255, 4096
    whole = len(os.fsencode(os.path.abspath(path)))
    if whole >= path_max:
        raise argparse.ArgumentTypeError(
            f"the path is {whole} bytes long; the file system takes at most {path_max - 1}"
        )
    for part in path.parts:
        if len(os.fsencode(part)) > name_max:
            raise argparse.ArgumentTypeError(
                f"a folder or file name of {len(os.fsencode(part))} bytes in"
                f" {printable_path(text)}; the file system takes at most {name_max} a name"
            )


def shown_path(path: object) -> str:
    """A path for the terminal: control characters (newline, TAB, ESC) and bytes that are not
    UTF-8 written as escapes, never sent raw."""
    from pipelines.paths import printable, stored_path

    return printable(stored_path(path))


def printable_path(text: str) -> str:
    """`text` cut to 60 characters and with control characters and undecodable bytes escaped,
    for a one-line message."""
    shown = shown_path(text)
    return shown if len(shown) <= 60 else shown[:28] + "..." + shown[-28:]


def _check_parents(path: Path, text: str) -> None:
    """The nearest existing folder above `path` must be a folder one can write in, so `path`
    can be made (a read-only folder, /proc: a traceback after the work before)."""
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(
                    f"{printable_path(str(parent))} is a file, so {printable_path(text)}"
                    " cannot be made"
                )
            if not (path.exists() and path.is_dir()):
                _check_writable(parent, text)
            return


def _check_writable(folder: Path, text: str) -> None:
    """Make and remove a folder in `folder` (a permission check alone says yes to root where
    nothing can be made, as in /proc)."""
    import tempfile

    try:
        Path(tempfile.mkdtemp(prefix=".tracereplay-probe-", dir=folder)).rmdir()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise argparse.ArgumentTypeError(
            f"nothing can be written in {printable_path(str(folder))} ({reason}), so"
            f" {printable_path(text)} cannot be made"
        ) from None


def output_folder(text: str) -> Path:
    """An output folder option: refused up front when the path exists and is not a folder (a
    file there would fail only after the work is done)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; give a folder")
    path = Path(text)
    _check_length(path, text)
    try:
        if path.exists() and not path.is_dir():
            raise argparse.ArgumentTypeError(f"{printable_path(text)} exists and is not a folder")
        _check_parents(path, text)
    except OSError as exc:  # a link loop on the way, a name the file system refuses
        raise argparse.ArgumentTypeError(f"{printable_path(text)}: {exc.strerror}") from None
    return path


def lake_folder(text: str) -> str:
    """A --lake value: a folder path (an empty one would fall back to the warehouse file without
    a word)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; give a folder such as data/lake")
    if text.strip() == ":memory:":
        raise argparse.ArgumentTypeError(
            "':memory:' is DuckDB's in-memory database, not a folder; give one such as data/lake"
        )
    output_folder(text)
    return text


def output_file(text: str) -> Path:
    """An output file option: refused up front when the path is a folder or its folder cannot
    be made."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; give a file")
    path = Path(text)
    _check_length(path, text)
    try:
        if path.is_dir():
            raise argparse.ArgumentTypeError(
                f"{printable_path(text)} is a folder; give a file path"
            )
        _check_parents(path, text)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{printable_path(text)}: {exc.strerror}") from None
    return path


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
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the result as JSON on stdout; a key left out means unknown (never null)",
    )


def refuse_non_finite(parser: argparse.ArgumentParser) -> None:
    """Every float option of `parser` and its subcommands that has no type of its own refuses
    NaN and inf (`--noise nan` would otherwise flow into a simulation or a statistic)."""
    for action in parser._actions:
        if action.type is float:
            action.type = finite_float
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                refuse_non_finite(sub)


def one_run(con: object, text: str, what: str = "RUN_ID") -> str:
    """The one stored run whose id is `text` or starts with it (the ids `tracereplay runs`
    prints are cut to a unique prefix); ValueError naming `what` when none or several match."""
    from pipelines.analysis.runs.run_views import match_run_id

    found = match_run_id(con, text) if text.strip() else []
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(f"{what}: no run {shown_path(text)!r}; `tracereplay runs` lists them")
    shown = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
    raise ValueError(
        f"{what} {shown_path(text)!r} matches {len(found)} runs ({shown}); give more of the id"
    )


_SWITCH_WORDS = {"0", "off", "no", "false", "1", "on", "yes", "true"}


def config_problem() -> str | None:
    """What is wrong with the project's tracereplay.toml, or None (checked before any command
    runs, as the environment is)."""
    from pipelines.paths import ConfigError, project_config

    try:
        project_config()
    except ConfigError as exc:
        return str(exc)
    return None


def environment_problem(environ: dict[str, str] | None = None) -> str | None:
    """What is wrong with a TRACEREPLAY_* variable, or None. Read where it is used, a garbage
    value was ignored without a word (TRACEREPLAY_WAIT=abc waited the default 300 s) or stored
    nothing (TRACEREPLAY_WAREHOUSE=:memory:); checked once, before any command runs. An empty
    variable is an unset one."""
    import os

    from pipelines.memory_budget import ENV_MAX_MEMORY, ENV_SPILL_DIR, parse_size
    from pipelines.paths import CACHE_ENV, LAKE_ENV

    env = os.environ if environ is None else environ

    def value(name: str) -> str | None:
        text = env.get(name)
        return text if text else None

    parsers = (
        ("TRACEREPLAY_WAIT", seconds),
        (ENV_MAX_MEMORY, parse_size),
        ("TRACEREPLAY_WAREHOUSE", warehouse_file),
        (LAKE_ENV, lake_folder),
    )
    for name, parse in parsers:
        text = value(name)
        try:
            if text is not None:
                parse(text)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            return f"{name}: {exc}"
    for name in ("TRACEREPLAY_CHECK_CACHE", "TRACEREPLAY_CHANGE_CACHE"):
        switch = value(name)
        if switch is not None and switch.strip().lower() not in _SWITCH_WORDS:
            return f"{name}={switch!r}: give 0 / off to turn the cache off, 1 / on to keep it"
    for name in (CACHE_ENV, ENV_SPILL_DIR, "TRACEREPLAY_RAW_DIR"):
        folder = value(name)
        if folder is not None and os.path.exists(folder) and not os.path.isdir(folder):
            return f"{name}={shown_path(folder)!r} is not a folder"
    return None
