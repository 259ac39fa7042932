"""communication.json (and its matrix) with a key given twice: Python's json kept the last value
without a word. An op whose own key, or a key inside it, is given twice with two values is set
aside and named; the same value twice is one key; a step or section given twice refuses the file
(docs/ingest_rules.md, round seven). On the real msinsight Level1 rank 0 text export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.readers.communication import (
    read_communication_matrix_rows,
    read_communication_rows,
)
from tests.hostile.text_rank import TEXT

OUTPUT = "ASCEND_PROFILER_OUTPUT"


def _source(real_dir: Path, name: str) -> tuple[Path, dict]:
    source = real_dir / TEXT / OUTPUT / name
    if not source.is_file():
        pytest.skip(f"{source} not found")
    return source, json.loads(source.read_text())


def _first_op(data: dict) -> tuple[str, str, str]:
    step = next(iter(data))
    kind = next(k for k, ops in data[step].items() if ops)
    op = next(k for k in data[step][kind] if k != "Total Op Info")
    return step, kind, op


def _written(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_ops_time_given_twice_with_two_values_sets_the_op_aside(real_dir, tmp_path) -> None:
    source, data = _source(real_dir, "communication.json")
    clean = read_communication_rows(source)[0]
    step, kind, op = _first_op(data)
    elapse = data[step][kind][op]["Communication Time Info"]["Elapse Time(ms)"]
    text = json.dumps(data)
    head = text.index(json.dumps(op))  # the op's own text: its Elapse comes after its key
    at = text.index('"Elapse Time(ms)": ', head)
    twice = text[:at] + f'"Elapse Time(ms)": {elapse + 1}, ' + text[at:]
    rows, aside = read_communication_rows(_written(tmp_path, "communication.json", twice))
    assert rows.height == clean.height - 1
    assert len(aside) == 1 and "'Elapse Time(ms)' is given twice" in aside[0], aside
    assert op in aside[0]
    # the same value twice is one key: nothing changes
    same = text[:at] + f'"Elapse Time(ms)": {json.dumps(elapse)}, ' + text[at:]
    rows, aside = read_communication_rows(_written(tmp_path, "same.json", same))
    assert rows.equals(clean) and aside == []


def test_an_op_given_twice_with_two_values_is_set_aside(real_dir, tmp_path) -> None:
    source, data = _source(real_dir, "communication.json")
    clean = read_communication_rows(source)[0]
    _step, _kind, op = _first_op(data)
    text = json.dumps(data)
    key = json.dumps(op) + ": "
    at = text.index(key)
    other = {"Communication Time Info": {"Elapse Time(ms)": 1.0, "Wait Time(ms)": 0.5}}
    twice = text[:at] + key + json.dumps(other) + ", " + text[at:]
    rows, aside = read_communication_rows(_written(tmp_path, "communication.json", twice))
    assert rows.height == clean.height - 1
    assert len(aside) == 1 and repr(op) in aside[0], aside
    assert aside[0].endswith(
        "the op is given twice with two values: which the writer meant is unknown"
    )


def test_a_step_given_twice_with_two_values_refuses_the_file(real_dir, tmp_path) -> None:
    _, data = _source(real_dir, "communication.json")
    step = next(iter(data))
    text = json.dumps(data)
    twice = "{" + json.dumps(step) + ": {}, " + text[1:]
    with pytest.raises(QuarantineError, match="given twice with two values"):
        read_communication_rows(_written(tmp_path, "communication.json", twice))


def test_a_matrix_link_set_given_twice_is_set_aside(real_dir, tmp_path) -> None:
    source, data = _source(real_dir, "communication_matrix.json")
    clean = read_communication_matrix_rows(source)[0]
    step, kind, op = _first_op(data)
    links = data[step][kind][op]
    if not isinstance(links, dict) or not links:
        pytest.skip("the first matrix op has no links")
    text = json.dumps(data)
    key = json.dumps(op) + ": "
    at = text.index(key)
    twice = text[:at] + key + '{"0-1": {"Transit Size(MB)": 7.0}}, ' + text[at:]
    rows, aside = read_communication_matrix_rows(_written(tmp_path, "m.json", twice))
    assert rows.height < clean.height or clean.height == 0
    assert len(aside) == 1 and "given twice" in aside[0], aside
