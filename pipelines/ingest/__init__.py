"""Ingest: find runs by content, read each rank with its format reader (`readers/`, with step
attribution from `steps/`), build the run rows and write them through the store, quarantining
what cannot be read (no Dagster). The layers are listed in docs/code_map.md."""
