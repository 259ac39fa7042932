"""The fit step: tau_k points (segmenting runs that have chunk markers but no chunk rows yet),
the fits with their verdicts, stored as the warehouse table `tau_fits`. `tracereplay fit`, the
demo and the Dagster asset `tau_fits` all call `fit_and_store`, so the same warehouse gives the
same stored rows whichever door ran it.

Incremental: beside `tau_fits` the table `tau_fit_inputs` keeps one fingerprint per configuration
(sha256 over the fit options, the code that makes the fit: every source file of
pipelines/analysis/ and every SQL file under sql/, and the sorted run id, content hash and
segmentation rule of its measured runs, from the `runs` table), so an upgrade that changes a fit
or verdict rule refits everything once instead of keeping stale verdicts. A fit refits only the
configurations whose fingerprint changed (new runs, re-ingested or re-segmented runs, other
options, new code), reads chunks and scans slices
for their runs only, and keeps the stored rows of the others: the same rows a full refit gives,
since each configuration is fitted on its own points with its own seeds."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from pipelines.analysis.changes.segments import SEGMENTED_CURVE_KEYS, segment_points
from pipelines.analysis.tau.curve_keys import CONFIG_KEYS, CURVE_KEYS
from pipelines.analysis.tau.fit_inputs import current_inputs, store_inputs
from pipelines.analysis.tau.table_points import DEFAULT_CONTEXTS, at_contexts, table_fit_inputs
from pipelines.analysis.tau.tau_points import load_tau_points
from pipelines.paths import SQL_DIR
from pipelines.store import Session, queries

Progress = Callable[[int, int], None]
"""progress(configurations fitted, configurations to fit): curves.Progress, named here so that
importing this module does not import the fits (statsmodels)."""
FIT_TABLE = "tau_fits"
INPUTS_TABLE = "tau_fit_inputs"
"""One row per configuration: `config` (JSON list of CONFIG_KEYS values), `fingerprint`."""


@dataclass(frozen=True)
class FitOptions:
    """Options of pipelines.analysis.tau.curves.fit_curves (and whether to segment first)."""

    segment: bool = True
    drop_partial: bool = True
    level: float = 0.95
    n_boot: int = 1000
    seed: int = 0
    contexts: tuple[int, ...] = DEFAULT_CONTEXTS
    """Request lengths a latency table's curves are also judged at (table_points.at_contexts)."""


@dataclass
class FitReport:
    """The stored fit table, how many points were fitted in this call, the runs segmented here,
    and how many configurations were refitted / kept as stored."""

    fits: pl.DataFrame
    points: int
    segmented: list[str] = field(default_factory=list)
    refitted: int = 0
    kept: int = 0


def store_fits(session: Session, fits: pl.DataFrame) -> None:
    """Replace the `tau_fits` table with `fits`, in one transaction."""
    session.replace_table(FIT_TABLE, fits)


def fit_and_store(
    session: Session, options: FitOptions = FitOptions(), progress: Progress | None = None
) -> FitReport:
    """Fit the tau_k curves of the warehouse and store the result as `tau_fits`: only the
    configurations whose runs changed since the stored fit (module docstring), all of them when
    no fit (or no fingerprint) is stored. Runs with chunk markers but no chunk rows are segmented
    in memory with their default rule (`options.segment`;
    pipelines.analysis.tau.tau_points.load_tau_points). `progress(done, total)`: after each
    configuration fitted (curves.fit_curves)."""
    inputs = current_inputs(session)
    now = config_fingerprints(_with_tables(session, inputs, options.contexts), options)
    stored_fits, before = load_fits(session.con), _load_fingerprints(session.con)
    if stored_fits is None or before is None:
        changed, kept, run_ids = set(now), None, None
    else:
        changed = {key for key, (fingerprint, _) in now.items() if before.get(key) != fingerprint}
        drop = changed | (set(before) - set(now))
        if not drop:
            store_inputs(session, inputs)
            return FitReport(stored_fits, 0, [], 0, _configs(stored_fits))
        configs = pl.Series(
            [
                _config_key(tuple(row.get(key) for key in CONFIG_KEYS))
                for row in stored_fits.iter_rows(named=True)
            ],
            dtype=pl.String,
        )
        kept = stored_fits.filter(~configs.is_in(list(drop)))
        run_ids = sorted(run for key in changed for run in now[key][1])
    points, segmented, fitted = 0, [], None
    if run_ids is None or run_ids:
        # statsmodels takes seconds to import: only when fitting
        from pipelines.analysis.tau.curves import fit_curves

        frame, segmented = load_tau_points(session, segment=options.segment, run_ids=run_ids)
        points = frame.height
        # one curve per segment of a history split by confirmed change points (issue 33 item 5)
        frame = segment_points(session, frame)
        # a table's curves also as requests of the stated lengths (docs/tau_k.md §4)
        frame = at_contexts(frame, options.contexts)
        fitted = fit_curves(
            frame,
            keys=SEGMENTED_CURVE_KEYS,
            drop_partial=options.drop_partial,
            level=options.level,
            n_boot=options.n_boot,
            seed=options.seed,
            progress=progress,
        )
    fits = _merge(kept, fitted)
    store_fits(session, fits)
    _store_fingerprints(session, now)
    store_inputs(session, inputs)
    return FitReport(fits, points, segmented, len(changed), _configs(kept))


def _with_tables(session: Session, inputs: pl.DataFrame, contexts: tuple[int, ...]) -> pl.DataFrame:
    """The runs' fit inputs and one row per operator-latency table curve (table_points), at its
    whole range and at each request length of `contexts` shorter than it."""

    tables = table_fit_inputs(session.con, contexts)
    if "operator" not in inputs.columns:
        inputs = inputs.with_columns(pl.lit(None, pl.String).alias("operator"))
    if tables.is_empty():
        return inputs
    return pl.concat([inputs, tables], how="diagonal_relaxed")


def config_fingerprints(
    inputs: pl.DataFrame, options: FitOptions
) -> dict[str, tuple[str, list[str]]]:
    """Per configuration (its JSON key): the fingerprint of what its fit depends on (the options,
    each run's id, content hash and segmentation rule) and its run ids.
    `inputs`: pipelines.store.queries.fit_inputs."""
    runs: dict[str, list[tuple[str, str, str | None]]] = {}
    for row in inputs.iter_rows(named=True):
        key = _config_key(tuple(row[k] for k in CONFIG_KEYS))
        runs.setdefault(key, []).append((row["run_id"], row["content_hash"], row["segmentation"]))
    salt = json.dumps([asdict(options), fit_code_signature()], sort_keys=True)
    result = {}
    for key, members in runs.items():
        members.sort()
        digest = hashlib.sha256(json.dumps([salt, members]).encode()).hexdigest()
        result[key] = (digest, [run_id for run_id, _, _ in members])
    return result


@functools.cache
def fit_code_signature() -> str:
    """sha256 over the analysis package's sources and the SQL layer: what turns runs into fits."""
    digest = hashlib.sha256()
    analysis = Path(__file__).resolve().parents[1]  # pipelines/analysis, every area
    for root, pattern in ((analysis, "*.py"), (SQL_DIR, "*.sql")):
        for path in sorted(root.rglob(pattern)):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _config_key(values: tuple) -> str:
    return json.dumps([None if v is None else str(v) for v in values])


def _configs(fits: pl.DataFrame | None) -> int:
    if fits is None or fits.is_empty():
        return 0
    return fits.select([k for k in CONFIG_KEYS if k in fits.columns]).unique().height


def _merge(kept: pl.DataFrame | None, fitted: pl.DataFrame | None) -> pl.DataFrame:
    """Kept and newly fitted rows in the order fit_curves gives (sorted by the curve keys)."""
    parts = [part for part in (kept, fitted) if part is not None and part.width]
    if not parts:
        return pl.DataFrame()
    if len(parts) == 1:
        return parts[0]
    if kept is not None and kept.is_empty():
        return fitted
    if fitted is not None and fitted.is_empty():
        return kept
    merged = pl.concat(parts, how="vertical_relaxed")
    present = [key for key in CURVE_KEYS if key in merged.columns]
    return merged.sort(present, nulls_last=True) if present else merged


def _load_fingerprints(con: duckdb.DuckDBPyConnection) -> dict[str, str] | None:
    if not queries.relation_exists(con, INPUTS_TABLE):
        return None
    frame = queries.read_relation(con, INPUTS_TABLE)
    return dict(zip(frame["config"].to_list(), frame["fingerprint"].to_list(), strict=True))


def _store_fingerprints(session: Session, fingerprints: dict[str, tuple[str, list[str]]]) -> None:
    frame = pl.DataFrame(
        {
            "config": list(fingerprints),
            "fingerprint": [fingerprint for fingerprint, _ in fingerprints.values()],
        },
        schema={"config": pl.String, "fingerprint": pl.String},
    )
    session.replace_table(INPUTS_TABLE, frame)


def load_fits(con: duckdb.DuckDBPyConnection) -> pl.DataFrame | None:
    """The stored fit table, or None when no fit was ever stored in this warehouse."""
    if not queries.relation_exists(con, FIT_TABLE):
        return None
    return queries.read_relation(con, FIT_TABLE)
