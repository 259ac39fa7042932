"""One partition per run folder under the raw folder (keys live in the Dagster instance)."""

import dagster as dg

runs_partitions = dg.DynamicPartitionsDefinition(name="runs")
