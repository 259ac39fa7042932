"""json_entries.ArrayStream finds the entries of a JSON array fed block by block, with the
structure scan's state (depth, open string, a run of backslashes) carried across blocks: the
same entries as split_array on the whole text, however the blocks cut it."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from pipelines.ingest.readers import json_entries
from pipelines.ingest.readers.json_entries import ArrayStream, split_array

LEVEL1 = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
SAMPLED = "kineto/HolisticTraceAnalysis/tests/data/trace_filter/sampled_rank-0.json.gz"


def _streamed(text: bytes, sizes: list[int]) -> tuple[list[bytes | int], bytes, bool]:
    stream = ArrayStream("traceEvents", max_entry=1 << 30, max_rest=1 << 30)
    entries: list[bytes | int] = []
    at, turn = 0, 0
    while at < len(text):
        size = sizes[turn % len(sizes)]
        entries += stream.feed(text[at : at + size])
        at, turn = at + size, turn + 1
    return entries, bytes(stream.rest), stream.finish()


@pytest.mark.parametrize("sizes", [[1 << 16], [4093], [1, 2, 3, 50_000, 7]])
def test_real_files_split_as_a_whole(real_dir: Path, sizes: list[int]) -> None:
    array = real_dir / LEVEL1 / "trace_view.json"
    if not array.is_file():
        pytest.skip(f"{array} not found")
    text = array.read_bytes()
    entries, rest, whole = _streamed(text, sizes)
    assert whole and rest == b"[]"
    assert entries == split_array(text) and len(entries) > 4000
    with gzip.open(real_dir / SAMPLED) as handle:
        trace = handle.read()
    entries, rest, whole = _streamed(trace, sizes)
    first, last = json_entries.member_array(trace, "traceEvents")
    assert whole and entries == split_array(trace[first : last + 1])
    around = json.loads(trace)
    around["traceEvents"] = []
    assert json.loads(rest) == around and len(around) > 1  # every other member, as it was


def test_escapes_and_brackets_inside_strings_across_blocks() -> None:
    """Strings holding brackets, commas, escaped quotes and runs of backslashes, cut at every
    byte by blocks of 1 to 5 bytes: the entries and the text around the array are exact."""
    rng = random.Random(36)
    names = ['a"b', "a\\", "\\\\", '],{"x":[', "\\u0022", "tab\\t"]
    events = [
        {"name": rng.choice(names) * rng.randint(0, 3), "args": {"k": [1, {"v": "]"}]}}
        for _ in range(40)
    ]
    text = json.dumps({"schemaVersion": 1, "traceEvents": events, "after": {"z": "[,]"}})
    entries, rest, whole = _streamed(text.encode(), [1, 2, 3, 4, 5])
    assert whole
    assert [json.loads(e) for e in entries] == events
    assert json.loads(rest) == {"schemaVersion": 1, "traceEvents": [], "after": {"z": "[,]"}}


def test_an_entry_past_the_limit_is_counted_not_held() -> None:
    stream = ArrayStream("traceEvents", max_entry=10, max_rest=100)
    entries = stream.feed(b'{"traceEvents": [1, "' + b"x" * 40)
    entries += stream.feed(b'", 2]}')
    assert entries == [b"1", 43, b"2"] and stream.finish()


def test_what_cannot_be_read() -> None:
    cut = ArrayStream("traceEvents", 1 << 20, 1 << 20)
    assert cut.feed(b'{"traceEvents": [{"a": 1}, {"b": ') == [b'{"a": 1}']
    assert not cut.finish()  # the text ends inside the array
    with pytest.raises(json_entries.BrokenStructure):
        ArrayStream("traceEvents", 1 << 20, 1 << 20).feed(b'{"traceEvents": [{"a": 1}}, 2]}')
    with pytest.raises(json_entries.TooLarge):
        ArrayStream("traceEvents", 1 << 20, 100).feed(b"{" + b" " * 200)
    empty = ArrayStream("traceEvents", 1 << 20, 1 << 20)
    assert empty.feed(b"[ ]") == [] and empty.finish() and empty.entries == 0
