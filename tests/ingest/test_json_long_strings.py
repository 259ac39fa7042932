"""One JSON string too large to read costs its own entry, not the file (issue 36: a 300 MB event
name inside trace_view.json refused the whole file even under the default 2 GiB budget)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pipelines.ingest import dropped as drop
from pipelines.ingest.readers import json_long_strings
from pipelines.ingest.readers.json_long_strings import LEFT_OUT, long_strings
from pipelines.ingest.readers.trace_view import object_limits, read_trace_view

LEVEL1 = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"


def _random_text(rng: random.Random, size: int) -> str:
    alphabet = 'ab"\\\n\t\u00e9\u4e2d/'  # quotes and backslashes escaped by json.dumps
    return "".join(rng.choice(alphabet) for _ in range(size))


@pytest.mark.parametrize("block", [3, 7, 64, 1 << 20])
def test_long_strings_are_the_literals_json_would_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Against json.dumps of known values (escaped quotes, backslash runs across the block edge):
    exactly the literals longer than the limit, each span holding that value's JSON text."""
    monkeypatch.setattr(json_long_strings, "BLOCK", block)
    rng = random.Random(block)
    values = [_random_text(rng, rng.choice([0, 1, 5, 40, 90, 200])) for _ in range(60)]
    doc = [{"name": v, "args": {'k\\"ey': v[::-1], "n": i}} for i, v in enumerate(values)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    raw = path.read_bytes()
    limit = 120
    found = long_strings(path, limit)
    expected = [
        (key, text)
        for entry in doc
        for key, text in (("name", entry["name"]), ('k\\"ey', entry["args"]['k\\"ey']))
        if len(json.dumps(text).encode()) - 2 > limit
    ]
    assert [(s.key, json.loads(raw[s.start : s.end + 1])) for s in found] == expected
    assert expected  # the draw holds long values


def test_a_huge_event_name_costs_its_event_only(
    real_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real Level1 trace_view.json with one kernel's name made 17 MiB, read under a budget
    whose largest readable value is 16 MiB: before, the file was refused (too_large, no slices);
    now that event is set aside as too_large, named by byte, and every other event loads."""
    source = real_dir / LEVEL1 / "trace_view.json"
    events = json.loads(source.read_text(encoding="utf-8"))
    clean = tmp_path / "clean" / "trace_view.json"
    clean.parent.mkdir()
    clean.write_text(json.dumps(events), encoding="utf-8")
    budget = "128MiB"
    assert object_limits(128 << 20) == (1 << 24,)  # no retry at a larger object size
    victim = next(i for i, e in enumerate(events) if e.get("ph") == "X" and e.get("cat"))
    events[victim] = {**events[victim], "name": "x" * (17 << 20)}
    bad = tmp_path / "bad" / "trace_view.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps(events), encoding="utf-8")

    whole = read_trace_view(clean, max_memory=budget)
    view = read_trace_view(bad, max_memory=budget)

    def collected(v):
        frame = v.slices.collect() if hasattr(v.slices, "collect") else v.slices
        return frame.sort("start_ns", "name", "lane", "thread")

    kept, before = collected(view), collected(whole)
    assert view.dropped.get(drop.TOO_LARGE) == 1
    assert kept.height == before.height - 1
    assert LEFT_OUT not in kept.get_column("name").to_list()
    assert view.set_aside[0].startswith("byte ") and "17.0 MiB (key 'name')" in view.set_aside[0]
    assert any(drop.TOO_LARGE in line for line in view.set_aside[1:])
