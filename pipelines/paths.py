"""The one place where project paths and their environment overrides are resolved.

Data paths resolve from the working folder, never from where the package is installed: the
project root is the nearest folder at or above the working folder that holds a `tracereplay.toml`
marker (the repository ships one; place one in any folder to make it a project), else the working
folder itself. Data lives in `<root>/data/`. The SQL files are package data, found next to the
installed package or, in a checkout, in the top-level `sql/` (docs/paths.md)."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import BinaryIO

MARKER = "tracereplay.toml"
WAREHOUSE_NAME = "warehouse.duckdb"


def _sql_dir() -> Path:
    """The wheel force-includes the top-level sql/ as pipelines/sql; a checkout reads sql/."""
    packaged = Path(str(resources.files("pipelines").joinpath("sql")))
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / "sql"


SQL_DIR = _sql_dir()
# the shared real profiler samples next to a repository checkout: a test and benchmark input
REAL_TRACES_DIR = Path(
    os.environ.get("TRACEREPLAY_REAL_TRACES")
    or Path(__file__).resolve().parent.parent.parent / "shared" / "traces" / "real"
)


def project_root(start: str | os.PathLike[str] | None = None) -> Path:
    """The nearest folder at or above `start` (default: the working folder) holding
    tracereplay.toml, else `start` itself."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / MARKER).is_file():
            return folder
    return here


def data_dir() -> Path:
    """<project root>/data."""
    return project_root() / "data"


def demo_dir() -> Path:
    """Where `tracereplay demo` writes its raw run folders by default: data/demo."""
    return data_dir() / "demo"


def site_dir() -> Path:
    """Where `tracereplay dashboards` and the Dagster `dashboard_site` asset write the pages."""
    return data_dir() / "site"


def warehouse_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The explicit argument, else $TRACEREPLAY_WAREHOUSE, else data/warehouse.duckdb (a lake's
    views file is chosen by pipelines.store.open_store)."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("TRACEREPLAY_WAREHOUSE")
    return Path(env) if env else data_dir() / WAREHOUSE_NAME


LAKE_ENV = "TRACEREPLAY_LAKE"


def lake_path(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The Parquet lake folder (docs/lake.md): the explicit argument, else $TRACEREPLAY_LAKE
    (`tracereplay --lake DIR` sets it), else `lake = "<folder>"` in the project's
    tracereplay.toml (relative to that file), else None: the single-file warehouse."""
    if explicit:
        return Path(explicit)
    env = os.environ.get(LAKE_ENV)
    if env:
        return Path(env)
    root = project_root()
    setting = project_config(root).get("lake")
    return root / setting if setting else None


class ConfigError(ValueError):
    """The project's tracereplay.toml cannot be used (one line: the file and what is wrong)."""


def project_config(root: Path | None = None) -> dict:
    """The project's tracereplay.toml as a dict ({} without one). Raises ConfigError when the file
    cannot be read, is no TOML, or gives `lake` as anything but a folder name in quotes (issue 36
    round seven: a TOML error, `lake = 5` or `lake = ""` was passed over without a word, so the
    runs went into the single-file warehouse instead of the lake the file asks for). A UTF-8 BOM
    before the text is allowed (Windows editors write one)."""
    import tomllib

    marker = (root or project_root()) / MARKER
    if not marker.is_file():
        return {}
    shown = printable(stored_path(marker))
    try:
        text = marker.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"{shown} cannot be read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown} is not UTF-8 text") from exc
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{shown} is not valid TOML: {exc}") from exc
    for key, example, absent in FOLDER_SETTINGS:
        value = config.get(key)
        if key in config and not (isinstance(value, str) and value.strip() and value.isprintable()):
            given = printable(repr(value))[:60]
            raise ConfigError(
                f'{shown}: {key} = {given} is no folder; write {key} = "{example}" (relative to'
                f" the file) or leave the key out for {absent}"
            )
    return config


FOLDER_SETTINGS = (("lake", "data/lake", "the single-file warehouse"),)
"""tracereplay.toml keys that name a folder: (key, an example, what leaving it out means)."""


def raw_dir() -> Path:
    """Folder the Dagster sensor watches for new run folders ($TRACEREPLAY_RAW_DIR overrides)."""
    env = os.environ.get("TRACEREPLAY_RAW_DIR")
    return Path(env) if env else data_dir() / "raw"


def stored_path(path: object) -> str:
    """A path as the store keeps and shows it: its text, with any byte of a file or folder name
    that is not UTF-8 written as a `\\xNN` escape (a name with such bytes is a str with
    surrogates in Python, which neither Polars nor DuckDB accepts)."""
    return os.fsencode(os.fspath(path)).decode("utf-8", "backslashreplace")


def printable(text: str) -> str:
    """`text` with every non-printable character (newline, TAB, ESC, ...) as its escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


CACHE_ENV = "TRACEREPLAY_CACHE_DIR"
"""Where the user's cache folder is; default $XDG_CACHE_HOME/tracereplay (or ~/.cache/...)."""


def cache_base() -> Path:
    """The user's tracereplay cache folder: $TRACEREPLAY_CACHE_DIR, else
    $XDG_CACHE_HOME/tracereplay (or ~/.cache/tracereplay)."""
    base = os.environ.get(CACHE_ENV)
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "tracereplay")
    return Path(base)


CACHE_MAX_AGE_S = 60 * 86_400
"""A cache entry neither written nor read for this long (60 days) is deleted the next time a
process writes into its folder: each nightly run lengthens its series and so keys new entries,
and the old ones would otherwise pile up for ever (a file per series per night)."""

_swept: set[Path] = set()


def read_cache_file(path: Path) -> bytes:
    """A cache entry's bytes; reading it marks it used (its mtime set to now), so entries in use
    are never swept. Raises OSError when it is absent or unreadable."""
    data = path.read_bytes()
    with contextlib.suppress(OSError):  # a read-only cache still answers
        os.utime(path)
    return data


def _sweep_stale(folder: Path) -> None:
    """Delete the entries of `folder` unused for CACHE_MAX_AGE_S, once per folder per process."""
    if folder in _swept:
        return
    _swept.add(folder)
    cutoff = time.time() - CACHE_MAX_AGE_S
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                    Path(entry.path).unlink(missing_ok=True)
    except OSError:
        pass  # the cache is only a cache


def keep_file(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write a cache file whole or not at all: `write` fills a temporary file in the same folder,
    renamed over `path`; a folder that cannot be written is skipped (the cache is only a cache).
    The folder's entries unused for CACHE_MAX_AGE_S go at the first write of a process."""
    _sweep_stale(path.parent)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, spare = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                write(out)
            os.replace(spare, path)
        except BaseException:
            Path(spare).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # a read-only or full cache folder costs only the next process's work again
