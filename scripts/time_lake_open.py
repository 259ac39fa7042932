"""Time what opening a Parquet lake costs as the lake grows (docs/lake.md "What an open costs").

    uv run python scripts/time_lake_open.py [--runs 1000] [--repeat 5] [--work DIR]

Builds a lake of --runs runs from one real torch_npu rank (pipelines.bench.rank_copies.DEFAULT_RANK,
ingested once, then its partition files linked under new run ids as `tracereplay bench scale`
does), then prints, each the median of --repeat:

* scan_first / scan_again: `lake_damage.damaged_files` on a lake never scanned, and again;
* first_open: `LakeStore.open()` of the lake without its views file (views built, damage scanned);
* open / open_for_ingest / open_runs: a writable open, the ingest writer's open, the post-ingest
  read of run rows;
* ingest_new_run: `tracereplay --lake LAKE ingest RUN` in this process for one new run folder
  (chunks, sanity warnings and all), the run deleted again between repeats.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from pipelines.bench.rank_copies import DEFAULT_RANK, replicate_rank
from pipelines.bench.scale import _history
from pipelines.cli import main as cli_main
from pipelines.ingest.load import ingest_paths
from pipelines.store import LakeStore, lake_damage


def _median(fn, repeat: int, before=None) -> float:
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="lake_open_"))
    template, lake = work / "template_lake", work / "lake"
    shutil.rmtree(template, ignore_errors=True)
    shutil.rmtree(lake, ignore_errors=True)
    first = replicate_rank(work / "template" / "run", 2)
    report = ingest_paths([first], LakeStore(template), progress=False)
    run_id = report.runs[0].run_id
    _history(lake, template, run_id, args.runs)
    files = sum(1 for _ in lake.rglob("*.parquet"))
    newcomer = replicate_rank(work / "new" / "run", 2, DEFAULT_RANK)
    store = LakeStore(lake)
    print(f"lake: {args.runs} runs, {files:,} Parquet files ({work})")

    def forget() -> None:
        # what the incremental scan remembers (absent before it existed)
        if hasattr(lake_damage, "forget"):
            lake_damage.forget(lake)

    def no_views() -> None:
        forget()
        store.views_file.unlink(missing_ok=True)

    def close(session) -> None:
        session.close()

    out = {
        "scan_first": _median(lambda: lake_damage.damaged_files(lake), args.repeat, forget),
        "scan_again": _median(lambda: lake_damage.damaged_files(lake), args.repeat),
        "first_open": _median(lambda: close(store.open()), args.repeat, no_views),
        "open": _median(lambda: close(store.open()), args.repeat),
        "open_for_ingest": _median(lambda: close(store.open_for_ingest()), args.repeat),
        "open_runs": _median(lambda: close(store.open_runs()), args.repeat),
    }

    def drop_new() -> None:
        with store.open() as session:
            for row in session.stored_runs():
                if not row[0].startswith("history-"):
                    session.delete_run(row[0])

    def ingest_new() -> None:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            cli_main(["--lake", str(lake), "ingest", "--no-progress", str(newcomer)])

    out["ingest_new_run"] = _median(ingest_new, args.repeat, drop_new)
    for name, seconds in out.items():
        print(f"{name:16s} {seconds * 1000:9.1f} ms")


if __name__ == "__main__":
    main()
