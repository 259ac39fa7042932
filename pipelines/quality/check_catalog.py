"""Every data check on the canonical tables and the marts, with its severity, in one place.

A check is named `<table>.<name>` and is one of three kinds:

* `gx`: Great Expectations built-in expectation types (not-null, between, unique, in-set,
  compound-column uniqueness, column pairs, regex, row count) declared in a suite file,
  pipelines/quality/suites/<suite>.json (pipelines/quality/suite_files.py), and evaluated by GX
  on the batch DuckDB hands over. Column-level rules of one table live here.
* `sql`: a custom query, sql/quality/<table>/<name>.sql, returning the rows that break it,
  restricted to the runs in the temporary table `checked_runs`: invariants across tables (spans,
  joins) and the sanity checks `tracereplay ingest` runs without importing GX (sanity.py).
* `schema` (every canonical table): the columns and types sql/schema/<table>.sql declares.

The marts (MARTS, views over the canonical tables) have suites of the same kind, without
`schema`. `error` fails `tracereplay check` (exit 1) and blocks downstream Dagster assets;
`warning` is reported and blocks nothing (docs/quality.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pipelines.quality.suite_files import suite_files
from pipelines.store.schema import CANONICAL_TABLES


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Kind(StrEnum):
    GX = "gx"
    SQL = "sql"
    SCHEMA = "schema"


@dataclass(frozen=True)
class Expectation:
    """One named check on one table; `doc` says in one line what it expects; `gx_types` are the
    GX expectation types a `gx` check is made of, `suite` its suite file."""

    table: str
    name: str
    severity: Severity
    doc: str
    kind: Kind = Kind.SQL
    suite: str | None = None
    gx_types: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.table}.{self.name}"


SCHEMA = "schema"
E, W = Severity.ERROR, Severity.WARNING

# the custom SQL checks: sql/quality/<table>/<name>.sql
_DECLARED: tuple[tuple[str, str, Severity, str], ...] = (
    (
        "runs",
        "facts_for_chunks",
        W,
        "runs that have chunks carry model, schedule, chunk_size and seq_len",
    ),
    (
        "runs",
        "measurement_counted_once",
        E,
        "no two runs with the same input bytes both enter the tau_k points (one measurement)",
    ),
    (
        "runs",
        "same_device_work_once",
        E,
        "no two measured runs of different bytes hold the same kernels (one measurement stored"
        " twice in other bytes: a trace kept plain in one folder and gzipped in another)",
    ),
    (
        "runs",
        "stored_once",
        W,
        "no run is a byte-identical copy of another (a copy is counted once: docs/run_identity.md)",
    ),
    ("run_inputs", "run_exists", E, "every input row belongs to a run in runs"),
    ("ranks", "pp_groups_complete", E, "every rank named in a pp group has a row in ranks"),
    (
        "ranks",
        "device_work_on_every_rank",
        W,
        "every rank recorded its kernels (a summaries-only rank makes the run partial)",
    ),
    (
        "slices",
        "plausible_span",
        E,
        "no rank's slices span more than a week (a timestamp read in the wrong unit)",
    ),
    (
        "slices",
        "chunk_markers_unique",
        E,
        "a chunk marker (req, k, vs) appears once per rank (two ranges would be summed)",
    ),
    (
        "slices",
        "no_overlapping_copies",
        E,
        "no device task starts inside an earlier one of its stream with the same name, length and"
        " args (the same task stored twice)",
    ),
    (
        "kernels",
        "not_written_twice",
        E,
        "no rank has every kernel stored more than once (a batch written twice)",
    ),
    ("kernels", "inside_run_span", E, "kernels lie inside the time span of the run's slices"),
    (
        "kernels",
        "no_overlapping_copies",
        E,
        "no kernel starts inside the first half of an earlier one of the same name and length",
    ),
    (
        "kernels",
        "no_same_stream_overlap",
        E,
        "no compute kernel starts before the one before it on its stream ends, by more than"
        " max(2 us, 1/4 of the shorter)",
    ),
    ("kernels", "not_longer_than_step", E, "no kernel is longer than its step (stage + bubble)"),
    (
        "comm_ops",
        "inside_run_span",
        E,
        "communication ops lie inside the time span of the run's slices",
    ),
    ("chunks", "inside_run_span", E, "chunks lie inside the time span of the run's slices"),
    (
        "latency_points",
        "in_line_with_neighbours",
        E,
        "no table point is more than 100x above or below both its neighbours along the prefix",
    ),
    (
        "latency_points",
        "replicates_agree",
        E,
        "a table point given more than once has its slowest time within 20x of its fastest",
    ),
    (
        "fct_config_metrics",
        "interval_contains_mean",
        E,
        "ci_lo <= mean <= ci_hi, and n >= 2 has an interval",
    ),
    (
        "fct_request_ttft",
        "positive_prompt_tokens",
        E,
        "every request has a prompt of > 0 tokens (unknown is allowed for ProfilerStep chunks)",
    ),
)

TABLES = CANONICAL_TABLES

# the marts (sql/marts, views built on every connection): no schema of their own to compare with
MARTS = (
    "fct_run_metrics",
    "fct_config_metrics",
    "fct_request_ttft",
    "fct_rank_time_split",
)

_GX: tuple[Expectation, ...] = tuple(
    Expectation(c.table, c.name, Severity(c.severity), c.doc, Kind.GX, c.suite, c.types)
    for suite in suite_files()
    for c in suite.checks
)

EXPECTATIONS: tuple[Expectation, ...] = tuple(
    item
    for table in (*TABLES, *MARTS)
    for item in (
        *(
            [
                Expectation(
                    table,
                    SCHEMA,
                    E,
                    f"{table} has the columns and types of sql/schema",
                    Kind.SCHEMA,
                )
            ]
            if table in TABLES
            else []
        ),
        *(Expectation(t, n, s, d) for t, n, s, d in _DECLARED if t == table),
        *(e for e in _GX if e.table == table),
    )
)


def expectations_of(table: str) -> tuple[Expectation, ...]:
    """The suite of one table, schema first."""
    return tuple(e for e in EXPECTATIONS if e.table == table)


def expectation(key: str) -> Expectation:
    """The expectation named `<table>.<name>`; KeyError when there is none."""
    for item in EXPECTATIONS:
        if item.key == key:
            return item
    raise KeyError(key)
