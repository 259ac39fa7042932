"""The project's dagster.yaml, as `dg dev` loads it without DAGSTER_HOME (a temporary instance
folder configured from the current folder, docs/dagster_dev.md): one run at a time, and no
per-step stdout/stderr capture (whose tail watchers print tracebacks at Ctrl-C)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.noop_compute_log_manager import NoOpComputeLogManager

ROOT = Path(__file__).resolve().parents[2]


def test_dg_dev_runs_one_run_at_a_time_without_log_capture(tmp_path: Path) -> None:
    ref = InstanceRef.from_dir(str(tmp_path), config_dir=str(ROOT))
    with dg.DagsterInstance.from_ref(ref) as instance:
        assert isinstance(instance.compute_log_manager, NoOpComputeLogManager)
        assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 1
