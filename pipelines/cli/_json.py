"""The one door of every `--json` output: unknown values are left out, never written as JSON
`null`, Python `None` or `NaN` (README "Exit status": an absent key means unknown)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from datetime import date, datetime, time, timedelta
from pathlib import PurePath
from typing import IO, Any

_MISSING = object()


def known(value: Any) -> Any:
    """`value` with every unknown part left out: a mapping loses the keys whose value is None or
    NaN (or becomes empty), a list or tuple the items that are; +-inf is written 'inf' / '-inf'
    (JSON has neither); numpy scalars and arrays, polars series and frames become Python values;
    dates ISO text."""
    out = _known(value)
    return None if out is _MISSING else out


def _known(value: Any) -> Any:
    if value is None:
        return _MISSING
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return _MISSING
        return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Mapping):
        kept = ((str(k), _known(v)) for k, v in value.items())
        return {k: v for k, v in kept if v is not _MISSING}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [v for v in (_known(v) for v in items) if v is not _MISSING]
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, PurePath):
        return str(value)
    for name in ("to_list", "tolist"):  # a polars series; a numpy array or scalar
        as_list = getattr(value, name, None)
        if callable(as_list):
            return _known(as_list())
    to_dicts = getattr(value, "to_dicts", None)  # a polars frame
    if callable(to_dicts):
        return _known(to_dicts())
    return str(value)


def json_text(payload: Any, indent: int | None = 1) -> str:
    """`payload` as JSON text with its unknown values left out (known)."""
    return json.dumps(known(payload), indent=indent, allow_nan=False)


def emit_json(payload: Any, indent: int | None = 1, stream: IO[str] | None = None) -> None:
    """Print `payload` as JSON (json_text) on stdout: what every command's --json writes."""
    print(json_text(payload, indent), file=stream or sys.stdout)
