"""Run selectors: one syntax for every command that takes runs (docs/selectors.md).

    model=deepseek-v3.1,schedule=vpp|dcpp,seq_len=524288,since=2026-11-01,until=2026-11-30
    runs=<run_id>+<run_id>
    replays=yes

Comma-separated `key=value` terms, all of which must hold. A key is a column of `runs` (model,
schedule, chunk_size, seq_len, tp, pp, vp, dp, world_size, hardware, source, attention, ...) or,
failing that, a user tag (`--tag key=value` at ingest). `a|b` accepts either value. `since` /
`until` bound `collected_at` by calendar day, inclusive. `runs=` names runs by id (`+`-separated).
Simulated reruns (`replay_of` set) are left out unless `replays=yes` (or `replays=only`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta

import duckdb

from pipelines.store import catalog, queries

SPECIAL_KEYS = ("since", "until", "runs", "replays")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
# run columns a selector never compares (free text or internal)
_NOT_SELECTABLE = {"tags", "software", "origin", "content_hash", "dropped_rows", "segmentation"}


class SelectorError(ValueError):
    """A selector that cannot be parsed, or that matches no run (the message says what exists)."""


@dataclass(frozen=True)
class Selector:
    """A parsed selector; `text` is what the user wrote."""

    text: str = ""
    facts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    since: date | None = None
    until: date | None = None
    run_ids: tuple[str, ...] = ()
    replays: str = "no"  # no | yes | only
    unknown: tuple[str, ...] = field(default=(), compare=False)

    @property
    def is_empty(self) -> bool:
        return not (self.facts or self.since or self.until or self.run_ids) and self.replays == "no"


def _day(key: str, value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise SelectorError(f"{key}={value!r}: expected a date YYYY-MM-DD") from exc


def parse_selector(text: str | None) -> Selector:
    """Parse `text` (None or empty: every measured run). Raises SelectorError."""
    if not text or not text.strip():
        return Selector()
    facts: dict[str, tuple[str, ...]] = {}
    since = until = None
    run_ids: tuple[str, ...] = ()
    replays = "no"
    for term in (t.strip() for t in text.split(",")):
        if not term:
            continue
        key, sep, value = term.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise SelectorError(f"selector term {term!r}: expected key=value")
        if not _KEY.match(key):
            raise SelectorError(f"selector key {key!r}: letters, digits, _ . - only")
        if key == "since":
            since = _day(key, value)
        elif key == "until":
            until = _day(key, value)
        elif key == "runs":
            run_ids = tuple(v for v in (p.strip() for p in value.split("+")) if v)
        elif key == "replays":
            if value not in ("yes", "no", "only"):
                raise SelectorError(f"replays={value!r}: expected yes, no or only")
            replays = value
        else:
            if key in facts:
                raise SelectorError(f"selector key {key!r} given twice (use a|b for either)")
            facts[key] = tuple(v.strip() for v in value.split("|") if v.strip())
    if since and until and since > until:
        raise SelectorError(f"since={since} is after until={until}")
    return Selector(text.strip(), tuple(facts.items()), since, until, run_ids, replays)


def _run_columns(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [c for t, c in catalog.schema_columns(con) if t == "runs"]


def _where(selector: Selector, columns: list[str]) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    for key, values in selector.facts:
        if key in columns and key not in _NOT_SELECTABLE:
            target = f'cast("{key}" as varchar)'
        else:
            target = "json_extract_string(tags, ?)"
            params.append(f'$."{key}"')
        clauses.append(f"{target} in ({', '.join('?' for _ in values)})")
        params.extend(values)
    if selector.since:
        clauses.append("collected_at >= ?")
        params.append(selector.since)
    if selector.until:
        clauses.append("collected_at < ?")
        params.append(selector.until + timedelta(days=1))
    if selector.run_ids:
        clauses.append(f"run_id in ({', '.join('?' for _ in selector.run_ids)})")
        params.extend(selector.run_ids)
    if selector.replays == "no":
        clauses.append("replay_of is null")
    elif selector.replays == "only":
        clauses.append("replay_of is not null")
    return (" and ".join(clauses) or "true"), params


def select_run_ids(
    con: duckdb.DuckDBPyConnection, selector: Selector | str | None, copies: bool = False
) -> list[str]:
    """Ids of the runs the selector matches, oldest first (collected_at, then run_id). A run
    that is a byte-identical copy of an earlier one (sql/intermediate/int_run_copies.sql) is the
    same measurement and left out, unless `copies` or the selector names it by run id."""
    if not isinstance(selector, Selector):
        selector = parse_selector(selector)
    where, params = _where(selector, _run_columns(con))
    found = queries.run_ids_where(con, where, params)
    if copies or not found:
        return found
    named = set(selector.run_ids)
    dropped = set(queries.run_copies(con)) - named
    return [run_id for run_id in found if run_id not in dropped]


def available_facts(con: duckdb.DuckDBPyConnection, keys: list[str], limit: int = 8) -> str:
    """'model: a, b; schedule: cpp, vpp' for the given keys (columns or tags), for a hint."""
    columns = _run_columns(con)
    parts = []
    for key in keys:
        if key in SPECIAL_KEYS:
            continue
        if key in columns and key not in _NOT_SELECTABLE:
            expr, params = f'cast("{key}" as varchar)', []
        else:
            expr, params = "json_extract_string(tags, ?)", [f'$."{key}"']
        values = queries.distinct_run_values(con, expr, params)
        shown = ", ".join(values[:limit]) + (
            f", ... ({len(values)} in all)" if len(values) > limit else ""
        )
        parts.append(f"{key}: {shown or 'none stored'}")
    return "; ".join(parts)


def require_runs(
    con: duckdb.DuckDBPyConnection, selector: Selector | str | None, copies: bool = False
) -> list[str]:
    """Like select_run_ids, but SelectorError (with the facts that do exist) when nothing
    matches."""
    if not isinstance(selector, Selector):
        selector = parse_selector(selector)
    found = select_run_ids(con, selector, copies)
    if found:
        return found
    total, first, last = queries.measured_run_span(con)
    if total == 0:
        raise SelectorError("the warehouse holds no runs: run `tracereplay ingest PATH` first")
    keys = [k for k, _ in selector.facts] or ["model", "schedule", "seq_len"]
    hint = available_facts(con, keys)
    when = f"; collected {first} .. {last}" if first else ""
    raise SelectorError(
        f"no run matches {selector.text or 'the selector'!r} ({total} runs stored; {hint}{when})"
    )
