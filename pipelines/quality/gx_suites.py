"""The Great Expectations side: GX judges the counts DuckDB computed, every expectation of every
table in one validation.

GX 1.x validates pandas frames (its DuckDB SQL path is broken upstream, GX issue #11579), and
`import great_expectations` takes 8-10 s (docs/quality.md §Timings), so it is imported here and
never where the CLI or the Dagster definitions load. `start_import()` begins that import in a
background thread, so it runs while DuckDB (which releases the GIL) answers the probes;
`validate()` waits for it. The frame has one row and one column per expectation (named by its
key, `<table>.<name>`), holding the number of rows that break it (pipelines/quality/probes.py);
each GX expectation asks that number to be 0 and carries the key and table in its meta. One
suite over one frame is one GX validation: a suite per table cost one validation each (13 in
all, 4.1-4.4 s against 1.9 s for the same 48 counts, measured on the demo warehouse).
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Sequence

from pipelines.quality.probes import Probe

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
    # a failure here is raised again by the import in validate(), in the caller's thread
    with contextlib.suppress(Exception):
        importlib.import_module("great_expectations")


def validate(probes: Sequence[Probe]) -> dict[str, dict[str, object]]:
    """GX verdict per expectation key: {"success": bool, "observed": failing count}."""
    wait_for_import()
    import great_expectations as gx
    import great_expectations.expectations as gxe
    import pandas as pd
    from great_expectations.data_context.types.base import ProgressBarsConfig

    if not probes:
        return {}
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    frame = pd.DataFrame({p.expectation.key: [p.failing] for p in probes})
    batch = (
        context.data_sources.add_pandas("warehouse")
        .add_dataframe_asset("failing_counts")
        .add_batch_definition_whole_dataframe("all")
    )
    suite = context.suites.add(
        gx.ExpectationSuite(
            name="tracereplay_check",
            expectations=[
                gxe.ExpectColumnValuesToBeBetween(
                    column=p.expectation.key,
                    min_value=0,
                    max_value=0,
                    meta={"check": p.expectation.key, "table": p.expectation.table},
                )
                for p in probes
            ],
        )
    )
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name="tracereplay_check", data=batch, suite=suite)
    )
    result = definition.run(batch_parameters={"dataframe": frame}, result_format="SUMMARY")
    verdicts: dict[str, dict[str, object]] = {}
    for item in result.results:
        key = item.expectation_config.meta["check"]
        verdicts[key] = {"success": bool(item.success), "observed": int(frame[key].iloc[0])}
    return verdicts
