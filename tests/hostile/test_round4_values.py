"""Round four of the hostile-input campaign (issue 36): the one-bad-value cases it found, each made
from a copy of a real export (the msinsight Level1 rank 0 text export: read in place under
../shared/traces/real, copied before changing). The campaign script (/tmp/h4/hostile/campaign4.py,
docs/ingest_rules.md "round four") compares every stored row with an ingest of a reference file
made with the csv / json / sqlite3 modules alone; these are its fast failing cases."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.ingest.readers.trace_view import read_trace_view

LEVEL1 = Path("msinsight/test/data/pytorch/text/level1/rank0_ascend_pt")


@pytest.fixture(scope="module")
def trace_events(real_dir: Path) -> list:
    path = real_dir / LEVEL1 / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return json.loads(path.read_text())


def _starts(path: Path) -> list[int]:
    return sorted(read_trace_view(path).slices["start_ns"].to_list())


def test_a_json_number_ts_past_the_head_is_read_exactly(trace_events, tmp_path: Path) -> None:
    """One `ts` written as a JSON number deep in a string-`ts` file (past the 64 KB head the
    reader looks at first): DuckDB read it through a double, 1736408883717128.900 ->
    1736408883717129.0 (100 ns off). Now the whole file is searched and msgspec keeps the digits."""
    texts = [json.dumps(e) for e in trace_events]
    index = next(
        i
        for i, e in enumerate(trace_events)
        if i > 2000 and e.get("ph") == "X" and not e["ts"].endswith("000")
    )
    ts = trace_events[index]["ts"]
    clean, changed = tmp_path / "clean.json", tmp_path / "trace_view.json"
    clean.write_text("[" + ", ".join(texts) + "]")
    texts[index] = texts[index].replace(f'"ts": "{ts}"', f'"ts": {ts}')
    changed.write_text("[" + ", ".join(texts) + "]")
    assert f'"ts": {ts}' in changed.read_text()[70_000:]  # past the head
    starts = _starts(changed)
    assert int(Decimal(ts) * 1000) in starts
    assert starts == _starts(clean)
