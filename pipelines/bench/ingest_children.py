"""Child-process entry points of the ingest benchmark: each parses one file one way and prints
one result line, `BENCH_RESULT {json}`, with the wall and CPU time (all threads) of the work
alone (imports excluded) and the number of events or rows it produced.

Run as `python -m pipelines.bench.ingest_children KIND PATH [OUT]`; the parent measures peak RSS
from the child's rusage. Kinds:
  ours_cli      `tracereplay ingest PATH --warehouse OUT --json --no-progress` (the command users
                run, as a child process: interpreter start, the CLI's imports, chunk segmentation
                and sanity warnings included)
  ours          ingest_paths([PATH = rank folder], fresh warehouse OUT)
  duckdb_mem    DuckDB read_json(PATH, format='array', explicit columns) -> table in an in-memory
                database, default threads (the honest baseline: no file written)
  duckdb        DuckDB read_json(PATH, format='array', explicit columns) -> table in OUT
  duckdb_1t     the same with `set threads = 1`
  floor         DuckDB read_json(PATH) of the complete (X) events into a table of the DuckDB file
                OUT, one thread, with the file's sha256 on a thread beside it (what ours
                hashes): the least an ingest that stores the events does; reports its interpreter
                start and imports' CPU too (startup_cpu_s)
  msgspec       msgspec typed decode of PATH (args left raw), no table
  orjson        orjson.loads(PATH bytes), no table (when orjson is installed)
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

RESULT_PREFIX = "BENCH_RESULT "
# The columns our reader asks DuckDB for (pipelines.ingest.readers.trace_view), as in
# docs/stack.md §6.
DUCKDB_COLUMNS = (
    "{name: 'VARCHAR', ph: 'VARCHAR', pid: 'VARCHAR', tid: 'VARCHAR', ts: 'VARCHAR',"
    " dur: 'VARCHAR', cat: 'VARCHAR', args: 'JSON'}"
)


def _ours(path: Path, out: Path) -> Callable[[], dict[str, Any]]:
    import pyarrow.dataset  # noqa: F401  (duckdb imports it, and pandas, on the first register)

    from pipelines.ingest.load import ingest_paths
    from pipelines.store import open_store, queries

    def work() -> dict[str, Any]:
        con = open_store(out).open()
        try:
            report = ingest_paths([path], con, progress=False)
            slices = queries.row_counts(con, ["slices"])["slices"]
        finally:
            con.close()
        return {
            "rows": slices,
            "runs": len(report.runs),
            "quarantined": [q.message() for q in report.quarantined],
        }

    return work


def _ours_cli(path: Path, out: Path) -> Callable[[], dict[str, Any]]:
    """The CLI path: `python -m pipelines.cli ingest ...` as a child of this probe, as a user runs
    it (interpreter start, the CLI's imports and everything it loads inside the timed work; its
    CPU time is this probe's children's, its peak RSS reaches the bench through this probe's)."""
    argv = ["ingest", str(path), "--warehouse", str(out), "--json", "--no-progress"]

    def work() -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", *argv], capture_output=True, text=True
        )
        try:
            report = json.loads(done.stdout)
        except json.JSONDecodeError:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return {"rows": 0, "runs": 0, "chunks": 0, "quarantined": tail or ["no output"]}
        runs = report["runs"]
        problems = [str(q.get("detail") or q) for q in report["quarantined"]]
        if done.returncode != 0:
            problems.append(f"tracereplay ingest exited {done.returncode}")
        return {
            "rows": sum(r["events"] for r in runs),
            "runs": len(runs),
            "chunks": sum(r.get("chunks") or 0 for r in runs),
            "quarantined": problems,
        }

    return work


def _ours_streamed(path: Path, out: Path) -> Callable[[], dict[str, Any]]:
    """`ours` forced onto the bounded-memory trace_view path whatever the file size (the budget
    is $TRACEREPLAY_MAX_MEMORY, set by the bench)."""
    from pipelines.ingest.readers import trace_view

    trace_view.IN_MEMORY_PEAK_FACTOR = 1e12  # every array-form trace streams
    return _ours(path, out)


def _duckdb(
    path: Path, out: Path | None, threads: int | None = None
) -> Callable[[], dict[str, Any]]:
    """read_json into a table of the DuckDB file `out`, or of an in-memory database (None)."""
    import duckdb

    from pipelines.store.duck import sql_string

    literal = sql_string(path)

    def work() -> dict[str, Any]:
        con = duckdb.connect(":memory:" if out is None else str(out))
        if threads is not None:
            con.execute(f"set threads = {threads}")
        try:
            con.execute(
                "create table events as select * from read_json("
                f"{literal}, format = 'array', columns = {DUCKDB_COLUMNS},"
                " maximum_object_size = 1073741824)"
            )
            rows = con.execute("select count(*) from events").fetchone()[0]
        finally:
            con.close()
        return {"rows": rows}

    return work


def _floor(path: Path, out: Path) -> Callable[[], dict[str, Any]]:
    """DuckDB's own read of the complete events into a file, the content hash beside it."""
    import hashlib
    import threading

    import duckdb

    # the least a Python ingest imports: duckdb alone (not the project's modules, which bring
    # polars); the path quoted as SQL here for the same reason
    startup = cpu_seconds()  # interpreter start and the imports up to here
    literal = "'" + str(path).replace("'", "''") + "'"

    def sha256() -> str:  # as pipelines.ingest.assemble.file_sha256: 1 MiB blocks
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
        return digest.hexdigest()

    def work() -> dict[str, Any]:
        digest: list[str] = []
        hasher = threading.Thread(target=lambda: digest.append(sha256()))
        hasher.start()
        con = duckdb.connect(str(out))
        # one thread: DuckDB parses one JSON array on one (a second thread spent as much CPU
        # again in some runs, 7.7 s for a 3.9 s read, and shortened nothing)
        con.execute("set threads = 1")
        try:
            (rows,) = con.execute(  # CREATE TABLE AS answers with its row count
                "create table complete_events as select * from read_json("
                f"{literal}, format = 'array', columns = {DUCKDB_COLUMNS},"
                " maximum_object_size = 1073741824) where ph = 'X'"
            ).fetchone()
        finally:
            con.close()
        hasher.join()
        return {"rows": rows, "startup_cpu_s": startup, "sha256": digest[0]}

    return work


def _msgspec(path: Path, out: Path | None) -> Callable[[], dict[str, Any]]:

    from pipelines.ingest.readers.trace_view import TraceEvent

    decoder = msgspec.json.Decoder(list[TraceEvent])

    def work() -> dict[str, Any]:
        events = decoder.decode(path.read_bytes())
        return {"rows": len(events)}

    return work


def _orjson(path: Path, out: Path | None) -> Callable[[], dict[str, Any]]:
    import orjson

    def work() -> dict[str, Any]:
        return {"rows": len(orjson.loads(path.read_bytes()))}

    return work


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (all its threads) and of its children that
    have ended (the ours_cli probe's command)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


PROBES: dict[str, Callable[[Path, Any], Callable[[], dict[str, Any]]]] = {
    "ours_cli": _ours_cli,
    "ours": _ours,
    "ours_streamed": _ours_streamed,
    "duckdb_mem": lambda path, _out: _duckdb(path, None),
    "duckdb": _duckdb,
    "duckdb_1t": lambda path, out: _duckdb(path, out, threads=1),
    "floor": _floor,
    "msgspec": _msgspec,
    "orjson": _orjson,
}


def main(argv: list[str]) -> int:
    kind, path = argv[0], Path(argv[1])
    out = Path(argv[2]) if len(argv) > 2 else None
    work = PROBES[kind](path, out)  # imports happen here, outside the timed part
    cpu = cpu_seconds()
    start = time.perf_counter()
    result = work()
    result["wall_s"] = time.perf_counter() - start
    result["cpu_s"] = cpu_seconds() - cpu
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
