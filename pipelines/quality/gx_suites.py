"""The Great Expectations side of the checks: the suites of pipelines/quality/suites/*.json,
validated by GX on the batches DuckDB hands over, and the custom SQL checks' counts.

GX 1.x is used on pandas frames: its SQL datasource cannot talk to DuckDB (1.24.1 has no DuckDB
dialect without the third-party `duckdb-engine`, and with it metric resolution fails, GX issue
#11579; docs/quality.md). Each suite's batch query (sql/quality/gx/<suite>.sql) selects only the
columns its rules read, for the checked runs only; a suite with `batch_by_run` in its meta is
validated a few runs at a time (at most BATCH_ROWS rows a batch, one run never split, since
uniqueness is judged within a run), so a table of millions of rows never becomes one frame.
Names and args of events stay in DuckDB: the duplicate rules compare a 64-bit hash of them.

`import great_expectations` takes 8-10 s (docs/quality.md §Timings), so it is imported here and
never where the CLI or the Dagster definitions load. `start_import()` begins that import in a
background thread, so it runs while DuckDB (which releases the GIL) answers the custom queries;
`Validator` waits for it.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from pipelines.quality.check_catalog import Expectation
from pipelines.quality.check_queries import (
    Probe,
    batches_by_run,
    fetch_batch,
    restrict_checked_runs,
)
from pipelines.quality.run_cache import (
    Broken,
    entry_path,
    keep,
    load,
    run_fingerprints,
    splits_by_run,
    suite_signature,
)
from pipelines.quality.suite_files import SuiteFile

BATCH_ROWS = 2_000_000
"""Rows of one validated frame, at most (unless one run alone has more)."""

_IMPORT_LOCK = threading.Lock()
_importer: threading.Thread | None = None


def start_import() -> None:
    """Start importing great_expectations in a background thread (once per process)."""
    global _importer
    with _IMPORT_LOCK:
        if _importer is None:
            _importer = threading.Thread(
                target=_import_quietly, name="import-great-expectations", daemon=True
            )
            _importer.start()


def wait_for_import() -> None:
    """Block until the background import (if one was started) has finished."""
    if _importer is not None:
        _importer.join()


def _import_quietly() -> None:
    # a failure here is raised again by the import in Validator, in the caller's thread
    with contextlib.suppress(Exception):
        importlib.import_module("great_expectations")


@dataclass
class Verdict:
    """What GX found for one check, over every batch: passed, rows breaking it, examples."""

    passed: bool = True
    failing: int = 0
    examples: list[dict[str, object]] = field(default_factory=list)


def _plain(value: object) -> object:
    """numpy / pandas scalars as Python values (None for missing)."""
    with contextlib.suppress(TypeError, ValueError):
        import pandas as pd

        if pd.isna(value):
            return None
    item = getattr(value, "item", None)
    return item() if callable(item) else value


def _index_rows(rows: Sequence[dict], index: Sequence[str], limit: int) -> list[dict]:
    """GX's unexpected rows as examples: the index columns first, then the columns it checked."""
    first = [c for c in index if c in rows[0]]
    return [
        {k: _plain(row[k]) for k in (*first, *(k for k in row if k not in first))}
        for row in rows[:limit]
    ]


def _result_examples(result: Any, frame: Any, index: Sequence[str], limit: int) -> list[dict]:
    """Example rows of one failed expectation: GX's unexpected rows (index columns and the
    columns it checked), or for a table-level expectation (row count) the batch's first rows."""
    details = result.result or {}
    rows = details.get("partial_unexpected_index_list")
    if rows:
        return _index_rows(rows, index, limit)
    if result.exception_info and result.exception_info.get("raised_exception", True):
        info = result.exception_info
        if "exception_message" not in info:  # keyed by metric: take the first
            info = next(iter(info.values()), {})
        message = str(info.get("exception_message") or "GX raised").splitlines()[0]
        return [{"error": message}]
    if frame is not None and len(frame):
        head = frame.head(limit)
        return [{k: _plain(v) for k, v in row.items()} for row in head.to_dict("records")]
    return []


def _failing_count(result: Any, frame: Any) -> int:
    details = result.result or {}
    if "unexpected_count" in details:
        return int(details["unexpected_count"])
    if "observed_value" in details and isinstance(details["observed_value"], int | float):
        # expect_table_row_count_to_equal(0): the rows present break it
        return int(details["observed_value"]) if frame is not None else 1
    return 1


def with_notes(suite: SuiteFile) -> dict:
    """The suite dict with each expectation's check, severity and doc as GX `notes` (which the
    Data Docs pages print under the rule)."""
    specs = {c.name: c for c in suite.checks}
    expectations = []
    for item in suite.data["expectations"]:
        spec = specs[item["meta"]["check"]]
        note = f"check `{suite.table}.{spec.name}` ({spec.severity}): {spec.doc}"
        meta = {**item["meta"], "notes": {"format": "markdown", "content": [note]}}
        expectations.append({**item, "meta": meta})
    return {**suite.data, "expectations": expectations}


def _broken(suite: SuiteFile, result: Any, frame: Any, sample_rows: int) -> tuple[Broken, ...]:
    """The expectations one batch breaks (position in GX's results, rows, first examples)."""
    return tuple(
        Broken(
            position,
            item.expectation_config.meta["check"],
            _failing_count(item, frame),
            tuple(_result_examples(item, frame, suite.index_columns, sample_rows)),
        )
        for position, item in enumerate(result.results)
        if not item.success
    )


def _broken_by_run(
    suite: SuiteFile, result: Any, runs: Sequence[str], sample_rows: int
) -> dict[str, tuple[Broken, ...]] | None:
    """A COMPLETE result of a batch of `runs` split by run_id (None: it cannot be)."""
    per_run: dict[str, list[Broken]] = {run: [] for run in runs}
    for position, item in enumerate(result.results):
        if item.success:
            continue
        details = item.result or {}
        rows = details.get("unexpected_index_list") or []
        if not rows or len(rows) != details.get("unexpected_count"):
            return None  # GX raised, or failed without naming rows
        if not all(isinstance(row, dict) and "run_id" in row for row in rows):
            return None  # rows named by position, not by their run
        by_run: dict[object, list[dict]] = {}
        for row in rows:
            by_run.setdefault(_plain(row.get("run_id")), []).append(row)
        if not set(by_run) <= set(per_run):
            return None
        for run, found in by_run.items():
            examples = _index_rows(found, suite.index_columns, sample_rows)
            check = item.expectation_config.meta["check"]
            per_run[str(run)].append(Broken(position, check, len(found), tuple(examples)))
    return {run: tuple(broken) for run, broken in per_run.items()}


def _merge(
    suite: SuiteFile, found: Sequence[Sequence[Broken]], sample_rows: int
) -> dict[str, Verdict]:
    """The verdict per check from what each batch (or run, in order) breaks: failing rows
    summed, examples taken expectation by expectation in the order of GX's results (GX sorts
    a suite's expectations by column), each in batch (run) order, the first `sample_rows` kept."""
    verdicts = {c.name: Verdict() for c in suite.checks}
    for broken in sorted((b for unit in found for b in unit), key=lambda b: b.position):
        verdict = verdicts[broken.check]
        verdict.passed = False
        verdict.failing += broken.failing
        room = sample_rows - len(verdict.examples)
        verdict.examples += list(broken.examples[: max(room, 0)])
    return verdicts


class Validator:
    """One ephemeral GX context for one check run; it keeps every validation result, which
    pipelines/quality/data_docs.py renders."""

    def __init__(self) -> None:
        wait_for_import()
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        self._gx = gx
        self.context = gx.get_context(mode="ephemeral")
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self._source = self.context.data_sources.add_pandas("tracereplay_warehouse")
        self.results: list[Any] = []

    def _definition(self, name: str, suite_data: dict) -> Any:
        gx = self._gx
        batch = self._source.add_dataframe_asset(name).add_batch_definition_whole_dataframe(
            "checked_runs"
        )
        suite = self.context.suites.add(gx.ExpectationSuite(**suite_data))
        return self.context.validation_definitions.add(
            gx.ValidationDefinition(name=name, data=batch, suite=suite)
        )

    def _run(
        self,
        definition: Any,
        frame: Any,
        index: Sequence[str],
        rows: int,
        run_name: str,
        every_row: bool = False,
    ) -> Any:
        from great_expectations.core.run_identifier import RunIdentifier

        result_format: dict[str, object] = {
            "result_format": "SUMMARY",
            "partial_unexpected_count": rows,
            "unexpected_index_column_names": [c for c in index if c in frame.columns],
        }
        if every_row:  # every unexpected row with its index columns (split by run)
            result_format.update(result_format="COMPLETE", return_unexpected_index_query=False)
        result = definition.run(
            batch_parameters={"dataframe": frame},
            result_format=result_format,
            run_id=RunIdentifier(run_name=run_name),
        )
        self.results.append(result)
        return result

    def validate_suite(
        self,
        con: duckdb.DuckDBPyConnection,
        suite: SuiteFile,
        sample_rows: int,
        batch_rows: int = BATCH_ROWS,
        use_cache: bool = False,
    ) -> dict[str, Verdict]:
        """Validate one suite file over the checked runs (checked_runs filled), batch by batch;
        the verdict per check name. With `use_cache`, a suite judged run by run
        (run_cache.splits_by_run) validates only the runs whose verdict is not kept."""
        if use_cache and splits_by_run(suite):
            found = self._validate_by_run(con, suite, sample_rows, batch_rows)
            if found is not None:
                return _merge(suite, found, sample_rows)
        definition = self._definition(suite.name, with_notes(suite))
        groups: list[list[str] | None] = (
            batches_by_run(con, suite.batch_by_run, batch_rows) if suite.batch_by_run else [None]
        )
        found = []
        for number, runs in enumerate(groups, start=1):
            with restrict_checked_runs(con, runs):
                try:
                    frame = fetch_batch(con, suite.batch_query())
                except (duckdb.CatalogException, duckdb.BinderException) as exc:
                    # a table or column the batch needs is missing: `schema` names it
                    error = {"error": str(exc).splitlines()[0]}
                    return {c.name: Verdict(False, 1, [error]) for c in suite.checks}
            label = "every checked run" if runs is None else f"{len(runs)} runs"
            run_name = f"tracereplay check: batch {number}/{len(groups)}, {label}"
            result = self._run(definition, frame, suite.index_columns, sample_rows, run_name)
            found.append(_broken(suite, result, frame, sample_rows))
            del frame
        return _merge(suite, found, sample_rows)

    def _validate_by_run(
        self, con: duckdb.DuckDBPyConnection, suite: SuiteFile, sample_rows: int, batch_rows: int
    ) -> list[tuple[Broken, ...]] | None:
        """What each checked run breaks, in run order: kept verdicts read back, the other runs
        validated (COMPLETE results split by run_id) and kept. None when a batch cannot be
        split (GX raised, or its rows do not add up): the caller validates the suite whole."""
        by_run = suite.batch_by_run
        if by_run is None:
            return None  # no per-run batch: the caller validates the suite whole
        try:
            fingerprints = run_fingerprints(con, suite)
        except (duckdb.CatalogException, duckdb.BinderException):
            return None  # the whole-suite path reports the missing table or column
        signature = suite_signature(suite, sample_rows)
        paths = {run: entry_path(suite, signature, fp) for run, fp in fingerprints.items()}
        kept = {run: load(path) for run, path in paths.items()}
        todo = sorted(run for run, verdict in kept.items() if verdict is None)
        if todo:
            with restrict_checked_runs(con, todo):
                groups = batches_by_run(con, by_run, batch_rows)
            name = f"{suite.name}-by-run"
            definition = self._definition(name, {**with_notes(suite), "name": name})
            for number, runs in enumerate(groups, start=1):
                runs = runs or todo
                with restrict_checked_runs(con, runs):
                    frame = fetch_batch(con, suite.batch_query())
                run_name = f"tracereplay check: new runs, batch {number}/{len(groups)}"
                result = self._run(
                    definition, frame, suite.index_columns, sample_rows, run_name, every_row=True
                )
                split = _broken_by_run(suite, result, runs, sample_rows)
                del frame
                if split is None:
                    return None
                for run, broken in split.items():
                    kept[run] = broken
                    keep(paths[run], broken)
        return [kept[run] or () for run in sorted(kept)]

    def judge_counts(self, probes: Sequence[Probe]) -> dict[str, bool]:
        """The custom SQL and schema checks: one GX suite over a one-row frame of their failing
        counts (each must be 0), so they sit in the same GX results and report as the rest."""
        if not probes:
            return {}
        import pandas as pd

        gx = self._gx
        frame = pd.DataFrame({p.expectation.key: [p.failing] for p in probes})
        suite = {
            "name": "custom_sql_and_schema",
            "meta": {"doc": "failing-row counts of sql/quality/<table>/<name>.sql and schema"},
            "expectations": [
                gx.expectations.ExpectColumnValuesToBeBetween(
                    column=p.expectation.key,
                    min_value=0,
                    max_value=0,
                    meta={"check": p.expectation.key, "table": p.expectation.table},
                )
                for p in probes
            ],
        }
        definition = self._definition("custom_sql_and_schema", suite)
        result = self._run(definition, frame, (), 0, "tracereplay check: custom SQL counts")
        return {i.expectation_config.meta["check"]: bool(i.success) for i in result.results}


def validate(
    con: duckdb.DuckDBPyConnection,
    suites: Sequence[SuiteFile],
    probes: Sequence[Probe],
    wanted: set[Expectation],
    sample_rows: int,
    batch_rows: int = BATCH_ROWS,
    use_cache: bool = False,
) -> tuple[dict[str, Verdict], Validator]:
    """Every GX suite in `suites` and the custom counts in `probes`; the verdict per check key
    (`<table>.<name>`) of the checks in `wanted`, and the validator holding GX's results."""
    validator = Validator()
    verdicts: dict[str, Verdict] = {}
    keys = {e.key for e in wanted}
    for suite in suites:
        found = validator.validate_suite(con, suite, sample_rows, batch_rows, use_cache)
        verdicts.update({f"{suite.table}.{n}": v for n, v in found.items()})
    for key, success in validator.judge_counts(probes).items():
        probe = next(p for p in probes if p.expectation.key == key)
        verdicts[key] = Verdict(
            passed=success,
            failing=probe.failing,
            examples=[dict(zip(probe.columns, row, strict=True)) for row in probe.examples],
        )
    return {k: v for k, v in verdicts.items() if k in keys}, validator
