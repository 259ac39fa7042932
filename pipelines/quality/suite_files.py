"""The declarative GX suites, `pipelines/quality/suites/<suite>.json`, read without importing
Great Expectations (the catalogue, the CLI and the Dagster definitions list their checks).

Each file is a Great Expectations ExpectationSuite in GX's own JSON form (`name`,
`expectations` with `type`, `kwargs`, `meta`), which `gx.ExpectationSuite(**data)` loads as it
stands. Our additions live in `meta` (docs/quality.md §Adding a check):

* suite `meta.table`: the table (or mart) whose checks these are; `meta.batch`: the DuckDB query
  (a path under sql/) that hands GX the batch, restricted to the runs in `checked_runs`;
  `meta.index_columns`: the columns that identify a failing row in the examples;
  `meta.batch_by_run` (optional): the table whose rows per run size the batches (large tables
  are validated a few runs at a time); `meta.checks`: each check's severity and one-line doc.
* expectation `meta.check`: the check it belongs to. A check may hold several GX expectations
  (say one `expect_column_values_to_be_between` per column); it passes when all of them do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pipelines.paths import SQL_DIR

SUITES_DIR = Path(__file__).with_name("suites")
SEVERITIES = ("error", "warning")


@dataclass(frozen=True)
class CheckSpec:
    """One named check of a suite: its severity, doc and the GX expectation types it uses."""

    table: str
    name: str
    severity: str
    doc: str
    suite: str
    types: tuple[str, ...]


@dataclass(frozen=True)
class SuiteFile:
    """One suite file: GX's suite dict (`data`) and what our meta says about it."""

    name: str
    table: str
    batch_sql: Path
    index_columns: tuple[str, ...]
    batch_by_run: str | None
    checks: tuple[CheckSpec, ...]
    data: dict

    def batch_query(self) -> str:
        return self.batch_sql.read_text()


class SuiteFileError(ValueError):
    """A suite file that cannot be used, with the file and the reason."""


def _load(path: Path) -> SuiteFile:
    try:
        data = json.loads(path.read_text())
        meta = data["meta"]
        table, declared = meta["table"], meta["checks"]
        batch_sql = SQL_DIR / meta["batch"]
        expectations = data["expectations"]
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise SuiteFileError(f"{path}: not a suite file ({exc!r})") from exc
    if data.get("name") != path.stem:
        raise SuiteFileError(f"{path}: name {data.get('name')!r} differs from the file name")
    if not batch_sql.is_file():
        raise SuiteFileError(f"{path}: batch query {meta['batch']} not found")
    types: dict[str, list[str]] = {name: [] for name in declared}
    for item in expectations:
        check = item.get("meta", {}).get("check")
        if check not in types:
            raise SuiteFileError(f"{path}: expectation {item.get('type')} names no declared check")
        types[check].append(item["type"])
    checks = []
    for name, spec in declared.items():
        if spec.get("severity") not in SEVERITIES or not spec.get("doc"):
            raise SuiteFileError(f"{path}: check {name} needs a severity (error/warning) and doc")
        if not types[name]:
            raise SuiteFileError(f"{path}: check {name} has no expectation")
        checks.append(
            CheckSpec(table, name, spec["severity"], spec["doc"], path.stem, tuple(types[name]))
        )
    return SuiteFile(
        name=path.stem,
        table=table,
        batch_sql=batch_sql,
        index_columns=tuple(meta.get("index_columns", ())),
        batch_by_run=meta.get("batch_by_run"),
        checks=tuple(checks),
        data=data,
    )


@cache
def suite_files(directory: Path = SUITES_DIR) -> tuple[SuiteFile, ...]:
    """Every suite file, by name."""
    return tuple(_load(p) for p in sorted(directory.glob("*.json")))
