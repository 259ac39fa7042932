"""The in-memory DuckDB connection the file readers scan with, and the one way a file path reaches
DuckDB.

DuckDB expands every path given to `read_json` / `read_csv` / ... as a glob pattern (`*`, `?`,
`[...]`, `{a,b}`, `**`) and there is no way to switch that off for one call, so a folder
`job_[x]` next to `job_x` would read job_x's file, and `job_*` every sibling's. `sql_path`
returns a path that means exactly the given file: the absolute path itself when it holds only
characters DuckDB never interprets, else a symlink with a plain name (the file's own suffixes
kept: DuckDB picks the decompression by them, e.g. `.json.gz`) in a private temp folder of this
process, removed at exit. The link stays valid for the life of the process, so a lazy relation or
view over it can be used as long as its connection is open.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

import duckdb

# Characters DuckDB reads literally in a local path (no glob, quote, escape, protocol or ~).
_SAFE_PATH = re.compile(r"[A-Za-z0-9._/+-]+")
_SAFE_SUFFIXES = re.compile(r"(?:\.[A-Za-z0-9]{1,16})+$")
_lock = threading.Lock()
_link_dir: tuple[int, Path] | None = None  # (owning pid, folder)


def private_connection() -> duckdb.DuckDBPyConnection:
    """A fresh in-memory database of its own, progress bar off (it would draw on the terminal
    in the middle of `tracereplay ingest` output for long scans): for a reader that changes
    database-wide settings (threads, memory limit, temp folder)."""
    con = duckdb.connect()
    con.execute("set enable_progress_bar = false")
    return con


_scratch = threading.local()


def scratch_connection(settings: tuple[str, ...] = ()) -> duckdb.DuckDBPyConnection:
    """A new connection (the caller closes it) to this thread's in-memory scratch database for
    `settings` (`set ...` statements of database-wide settings, run once when the database is
    made), for a reader whose settings are always the same. Opening a database costs ~20 ms, a
    sixth of a small run's ingest (docs/bench_ingest.md); a connection to an open one, well under
    1 ms. Its views and registered relations are its own and go with it."""
    databases = getattr(_scratch, "databases", None)
    if databases is None or _scratch.pid != os.getpid():  # a forked child opens its own
        databases = _scratch.databases = {}
        _scratch.pid = os.getpid()
    database = databases.get(settings)
    if database is None:
        database = private_connection()
        for statement in settings:
            database.execute(statement)
        databases[settings] = database
    con = database.cursor()
    con.execute("set enable_progress_bar = false")
    return con


def _is_safe(text: str) -> bool:
    return _SAFE_PATH.fullmatch(text) is not None and not text.startswith("//")


def _links() -> Path:
    """This process's folder of links (a forked child makes its own)."""
    global _link_dir
    if _link_dir is not None and _link_dir[0] == os.getpid():
        return _link_dir[1]
    for base in (None, "/tmp", "/var/tmp"):
        folder = Path(tempfile.mkdtemp(prefix="tracereplay-duck-", dir=base))
        if _is_safe(str(folder)):
            break
        folder.rmdir()
    else:
        raise OSError("no temp folder with a plain path for DuckDB file links")
    pid = os.getpid()
    _link_dir = (pid, folder)
    atexit.register(lambda: os.getpid() == pid and shutil.rmtree(folder, ignore_errors=True))
    return folder


def sql_path(path: str | os.PathLike[str]) -> str:
    """A path DuckDB reads as exactly the file `path`, never as a pattern; already safe to put
    between single quotes in SQL (it holds no quote)."""
    absolute = os.path.abspath(os.fspath(path))
    if _is_safe(absolute):
        return absolute
    suffix = _SAFE_SUFFIXES.search(os.path.basename(absolute))
    digest = hashlib.sha256(os.fsencode(absolute)).hexdigest()[:32]
    with _lock:
        link = _links() / f"{digest}{suffix.group(0) if suffix else ''}"
        try:
            current = os.readlink(link)
        except OSError:
            current = None
        if current != absolute:
            spare = link.with_name(f".{link.name}.{os.getpid()}.{threading.get_ident()}")
            os.symlink(absolute, spare)
            os.replace(spare, link)
    return str(link)


def lasting_sql_path(path: str | os.PathLike[str]) -> str:
    """Like sql_path, for a folder named in SQL that outlives this process (the stored views of
    a lake): the absolute path when it is safe, else a link with a plain name under the user's
    cache folder ($XDG_CACHE_HOME or ~/.cache, /tmp as a last resort), named by the path's
    digest and made again by any process that needs it."""
    absolute = os.path.abspath(os.fspath(path))
    if _is_safe(absolute):
        return absolute
    digest = hashlib.sha256(os.fsencode(absolute)).hexdigest()[:32]
    for base in (os.environ.get("XDG_CACHE_HOME"), os.path.expanduser("~/.cache"), "/tmp"):
        if not base:
            continue
        folder = os.path.join(os.path.abspath(base), "tracereplay", "links")
        link = os.path.join(folder, digest)
        if not _is_safe(link):
            continue
        try:
            os.makedirs(folder, exist_ok=True)
            if os.path.islink(link) and os.readlink(link) == absolute:
                return link
            spare = f"{link}.{os.getpid()}.{threading.get_ident()}"
            os.symlink(absolute, spare)
            os.replace(spare, link)
            return link
        except OSError:
            continue
    return sql_path(path)


def sql_string(path: str | os.PathLike[str]) -> str:
    """`sql_path(path)` as a SQL string literal."""
    return "'" + sql_path(path).replace("'", "''") + "'"
