"""Every data expectation on the canonical tables, with its severity, in one place.

An expectation is named `<table>.<name>`. Apart from `schema` (every table: the columns and
types sql/schema/<table>.sql declares), each one is a query in sql/quality/<table>/<name>.sql
that returns the rows breaking it, restricted to the runs in the temporary table `checked_runs`.
The marts (MARTS, views over the canonical tables) have suites of the same kind, without
`schema`.
`error` fails `tracereplay check` (exit 1) and blocks downstream Dagster assets; `warning` is
reported and blocks nothing (docs/quality.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pipelines.store.schema import CANONICAL_TABLES


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Expectation:
    """One named check on one table; `doc` says in one line what it expects."""

    table: str
    name: str
    severity: Severity
    doc: str

    @property
    def key(self) -> str:
        return f"{self.table}.{self.name}"


SCHEMA = "schema"
E, W = Severity.ERROR, Severity.WARNING

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
        "stored_once",
        W,
        "no run is a byte-identical copy of another (a copy is counted once: docs/run_identity.md)",
    ),
    ("run_inputs", "non_negative_bytes", E, "every input file has a size >= 0"),
    ("run_inputs", "sha256_hex", E, "every input digest is 64 lower-case hex digits"),
    ("run_inputs", "run_exists", E, "every input row belongs to a run in runs"),
    ("run_inputs", "one_run_per_input", E, "an input file belongs to at most one current run"),
    ("ranks", "unique_rank", E, "a run stores each rank once"),
    ("ranks", "pp_groups_complete", E, "every rank named in a pp group has a row in ranks"),
    ("slices", "non_negative_durations", E, "no slice has a negative duration"),
    ("slices", "no_duplicated_events", E, "no slice is stored twice (all columns equal)"),
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
        "steps_consecutive",
        E,
        "a rank's step numbers have no gap (they need not start at 0: ProfilerStep#N)",
    ),
    ("kernels", "non_negative_durations", E, "no kernel has a negative duration or wait"),
    (
        "kernels",
        "no_duplicated_events",
        W,
        "no kernel is stored twice (a profiler export may repeat a row: docs/quality.md)",
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
    ("kernels", "not_longer_than_step", E, "no kernel is longer than its step (stage + bubble)"),
    (
        "kernels",
        "shorter_than_a_minute",
        E,
        "no kernel lasts a minute or more (a duration read in the wrong unit)",
    ),
    (
        "comm_ops",
        "non_negative_durations",
        E,
        "no communication op has a negative duration, wait, transit or sync time",
    ),
    ("comm_ops", "no_duplicated_events", E, "no communication op is stored twice"),
    (
        "comm_ops",
        "inside_run_span",
        E,
        "communication ops lie inside the time span of the run's slices",
    ),
    ("step_breakdown", "non_negative_components", E, "no breakdown component is negative"),
    (
        "step_breakdown",
        "breakdown_identity",
        E,
        "computing + comm_not_overlapped + free = stage + bubble within 1 us (rows not incomplete)",
    ),
    (
        "step_breakdown",
        "overlap_within_communication",
        E,
        "overlapped communication <= communication",
    ),
    (
        "step_breakdown",
        "derived_rows_complete",
        W,
        "no derived row was judged incomplete at ingest (complete = false)",
    ),
    ("step_breakdown", "unique_step_origin", E, "one row per run, rank, step and origin"),
    (
        "step_breakdown",
        "steps_consecutive",
        E,
        "a rank's step numbers per origin have no gap (they need not start at 0)",
    ),
    (
        "step_breakdown",
        "bubble_within_comm_not_overlapped",
        W,
        "bubble (receive wait) <= comm_not_overlapped, which contains it",
    ),
    (
        "chunks",
        "indices_contiguous",
        E,
        "chunk indices are 0, 1, ..., n-1 per run, rank, virtual stage and request",
    ),
    ("chunks", "indices_in_time_order", E, "chunk k+1 of a request and stage starts after chunk k"),
    ("chunks", "busy_within_span", E, "0 <= busy_ns <= end_ns - start_ns"),
    ("chunks", "inside_run_span", E, "chunks lie inside the time span of the run's slices"),
    ("quarantine", "nothing_quarantined", W, "every input found could be read"),
    (
        "fct_run_metrics",
        "non_negative_values",
        E,
        "no negative time, token count or throughput; n_steps >= 1",
    ),
    (
        "fct_run_metrics",
        "plausible_ratios_and_bounds",
        E,
        "0 <= overlap and bubble ratios <= 1, mean TTFT <= longest TTFT <= makespan",
    ),
    ("fct_config_metrics", "n_at_least_one", E, "every configuration x metric row has n >= 1"),
    (
        "fct_config_metrics",
        "interval_contains_mean",
        E,
        "ci_lo <= mean <= ci_hi, and n >= 2 has an interval",
    ),
    ("fct_request_ttft", "positive_ttft", E, "every request has a TTFT > 0"),
    ("fct_request_ttft", "positive_prompt_tokens", E, "every request has a prompt of > 0 tokens"),
    (
        "fct_rank_time_split",
        "parts_add_up_to_window",
        E,
        "computing + exposed comm + bubble + free = window within 1 us per step (complete ranks)",
    ),
    ("fct_rank_time_split", "non_negative_parts", E, "no part of the step window is negative"),
)

TABLES = CANONICAL_TABLES

# the marts (sql/marts, views built on every connection): no schema of their own to compare with
MARTS = (
    "fct_run_metrics",
    "fct_config_metrics",
    "fct_request_ttft",
    "fct_rank_time_split",
)

EXPECTATIONS: tuple[Expectation, ...] = tuple(
    item
    for table in (*TABLES, *MARTS)
    for item in (
        *(
            [Expectation(table, SCHEMA, E, f"{table} has the columns and types of sql/schema")]
            if table in TABLES
            else []
        ),
        *(Expectation(t, n, s, d) for t, n, s, d in _DECLARED if t == table),
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
