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


def _result_examples(result: Any, frame: Any, index: Sequence[str], limit: int) -> list[dict]:
    """Example rows of one failed expectation: GX's unexpected rows (index columns and the
    columns it checked), or for a table-level expectation (row count) the batch's first rows."""
    details = result.result or {}
    rows = details.get("partial_unexpected_index_list")
    if rows:
        first = [c for c in index if c in rows[0]]
        return [
            {k: _plain(row[k]) for k in (*first, *(k for k in row if k not in first))}
            for row in rows[:limit]
        ]
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
        self, definition: Any, frame: Any, index: Sequence[str], rows: int, run_name: str
    ) -> Any:
        from great_expectations.core.run_identifier import RunIdentifier

        result_format = {
            "result_format": "SUMMARY",
            "partial_unexpected_count": rows,
            "unexpected_index_column_names": [c for c in index if c in frame.columns],
        }
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
    ) -> dict[str, Verdict]:
        """Validate one suite file over the checked runs (checked_runs filled), batch by batch;
        the verdict per check name."""
        verdicts = {c.name: Verdict() for c in suite.checks}
        definition = self._definition(suite.name, with_notes(suite))
        groups: list[list[str] | None] = (
            batches_by_run(con, suite.batch_by_run, batch_rows) if suite.batch_by_run else [None]
        )
        for number, runs in enumerate(groups, start=1):
            with restrict_checked_runs(con, runs):
                try:
                    frame = fetch_batch(con, suite.batch_query())
                except (duckdb.CatalogException, duckdb.BinderException) as exc:
                    # a table or column the batch needs is missing: `schema` names it
                    for verdict in verdicts.values():
                        verdict.passed = False
                        verdict.failing = max(verdict.failing, 1)
                        verdict.examples = [{"error": str(exc).splitlines()[0]}]
                    return verdicts
            label = "every checked run" if runs is None else f"{len(runs)} runs"
            run_name = f"tracereplay check: batch {number}/{len(groups)}, {label}"
            result = self._run(definition, frame, suite.index_columns, sample_rows, run_name)
            for item in result.results:
                if item.success:
                    continue
                verdict = verdicts[item.expectation_config.meta["check"]]
                verdict.passed = False
                verdict.failing += _failing_count(item, frame)
                room = sample_rows - len(verdict.examples)
                if room > 0:
                    verdict.examples += _result_examples(item, frame, suite.index_columns, room)
            del frame
        return verdicts

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
) -> tuple[dict[str, Verdict], Validator]:
    """Every GX suite in `suites` and the custom counts in `probes`; the verdict per check key
    (`<table>.<name>`) of the checks in `wanted`, and the validator holding GX's results."""
    validator = Validator()
    verdicts: dict[str, Verdict] = {}
    keys = {e.key for e in wanted}
    for suite in suites:
        found = validator.validate_suite(con, suite, sample_rows, batch_rows)
        verdicts.update({f"{suite.table}.{n}": v for n, v in found.items()})
    for key, success in validator.judge_counts(probes).items():
        probe = next(p for p in probes if p.expectation.key == key)
        verdicts[key] = Verdict(
            passed=success,
            failing=probe.failing,
            examples=[dict(zip(probe.columns, row, strict=True)) for row in probe.examples],
        )
    return {k: v for k, v in verdicts.items() if k in keys}, validator
