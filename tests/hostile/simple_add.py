"""HTA's real simple_add Kineto trace (98 kernels), read in place under ../shared/traces/real, as
a dict for the hostile cases that change one of its members."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

SIMPLE_ADD = (
    "kineto/HolisticTraceAnalysis/tests/data/critical_path/simple_add/"
    "benchmark_result_493459_1694039959_trace.json.gz"
)


def simple_add_trace(real_dir: Path) -> dict:
    """The trace's JSON, or a skip when the real sets are not there."""
    source = real_dir / SIMPLE_ADD
    if not source.is_file():
        pytest.skip(f"{source} absent")
    with gzip.open(source, "rt") as handle:
        return json.load(handle)
