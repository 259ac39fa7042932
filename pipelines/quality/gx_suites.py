"""The Great Expectations side: one GX suite per table, judging the counts DuckDB computed.

GX 1.x validates pandas frames (its DuckDB SQL path is broken upstream, GX issue #11579), and
`import great_expectations` takes about 8 s, so it is imported here, inside the function, and
never where the CLI or the Dagster definitions load. Each table's frame has one row and one
column per expectation, holding the number of rows that break it (pipelines/quality/probes.py);
each GX expectation asks that number to be 0, and is tagged with the expectation's name because
GX does not return results in suite order.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.quality.probes import Probe


def validate(probes: Sequence[Probe]) -> dict[str, dict[str, object]]:
    """GX verdict per expectation key: {"success": bool, "observed": failing count}."""
    import great_expectations as gx
    import great_expectations.expectations as gxe
    import pandas as pd
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas("warehouse")
    verdicts: dict[str, dict[str, object]] = {}
    tables = sorted({p.expectation.table for p in probes})
    for table in tables:
        members = [p for p in probes if p.expectation.table == table]
        frame = pd.DataFrame({p.expectation.name: [p.failing] for p in members})
        batch = source.add_dataframe_asset(table).add_batch_definition_whole_dataframe("all")
        suite = context.suites.add(
            gx.ExpectationSuite(
                name=table,
                expectations=[
                    gxe.ExpectColumnValuesToBeBetween(
                        column=p.expectation.name,
                        min_value=0,
                        max_value=0,
                        meta={"check": p.expectation.key},
                    )
                    for p in members
                ],
            )
        )
        definition = context.validation_definitions.add(
            gx.ValidationDefinition(name=f"{table}_check", data=batch, suite=suite)
        )
        result = definition.run(batch_parameters={"dataframe": frame}, result_format="SUMMARY")
        for item in result.results:
            key = item.expectation_config.meta["check"]
            verdicts[key] = {
                "success": bool(item.success),
                "observed": int(frame[key.split(".", 1)[1]].iloc[0]),
            }
    return verdicts
