"""Run selectors: parse, match facts, tags, dates, ids and reruns; a miss names what exists."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from pipelines.selectors import SelectorError, parse_selector, require_runs, select_run_ids


@pytest.fixture
def runs(warehouse):
    rows = [
        (
            "a",
            "deepseek-v3.1",
            "cpp",
            524288,
            datetime(2026, 11, 1, 23, 59),
            None,
            {"team": "perf"},
        ),
        ("b", "deepseek-v3.1", "vpp", 524288, datetime(2026, 11, 2, 0, 0), None, {"team": "infra"}),
        ("c", "qwen3-8b", "vpp", 131072, datetime(2026, 11, 3), None, None),
        ("c~replay", "qwen3-8b", "cpp", 131072, datetime(2026, 11, 3), "c", None),
        ("d", "qwen3-8b", "dcpp", 131072, None, None, None),
    ]
    for run_id, model, schedule, seq_len, collected, replay_of, tags in rows:
        warehouse.execute(
            "insert into runs (run_id, source, content_hash, model, schedule, seq_len,"
            " collected_at, replay_of, tags) values (?, 'sim', ?, ?, ?, ?, ?, ?, ?)",
            [
                run_id,
                f"hash-{run_id}",  # each run its own bytes (a copy is one measurement)
                model,
                schedule,
                seq_len,
                collected,
                replay_of,
                json.dumps(tags) if tags else None,
            ],
        )
    return warehouse


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ["a", "b", "c", "d"]),
        ("model=deepseek-v3.1", ["a", "b"]),
        ("model=qwen3-8b,schedule=vpp|dcpp", ["c", "d"]),
        ("seq_len=524288,schedule=vpp", ["b"]),
        ("team=perf", ["a"]),
        ("since=2026-11-02", ["b", "c"]),
        ("until=2026-11-01", ["a"]),
        ("since=2026-11-01,until=2026-11-02", ["a", "b"]),
        ("runs=c+a", ["a", "c"]),
        ("model=qwen3-8b,replays=yes", ["c", "c~replay", "d"]),
        ("replays=only", ["c~replay"]),
    ],
)
def test_selector_matches(runs, text: str, expected: list[str]) -> None:
    assert select_run_ids(runs, text) == expected


@pytest.mark.parametrize(
    "text", ["model", "=x", "since=yesterday", "replays=maybe", "model=a,model=b", "bad key=1"]
)
def test_bad_selectors_are_refused(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(text)


def test_no_match_names_the_facts_that_exist(runs) -> None:
    with pytest.raises(SelectorError) as err:
        require_runs(runs, "model=glm-5.2")
    message = str(err.value)
    assert "model: deepseek-v3.1, qwen3-8b" in message and "4 runs stored" in message


def test_empty_warehouse_says_to_ingest(warehouse) -> None:
    with pytest.raises(SelectorError, match="tracereplay ingest"):
        require_runs(warehouse, "model=x")
