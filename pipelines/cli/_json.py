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

from pipelines.vocabulary.unknown import is_unknown

_MISSING = object()


def known(value: Any) -> Any:
    """`value` with every unknown part left out: a mapping loses the keys whose value is None or
    NaN (or becomes empty); a list or tuple holding an unknown item is left out whole (its
    items' places are their meaning: dropping the item shifted every later one onto the place
    before it, so `[1.5, NaN, 3.0]` read as `[1.5, 3.0]`), a set only loses the item (no
    places); +-inf is written 'inf' / '-inf' (JSON has neither); numpy scalars and arrays,
    polars series and frames become Python values; dates ISO text. Unknown is
    `pipelines.vocabulary.unknown.is_unknown`, as on the chart pages."""
    out = _known(value)
    return None if out is _MISSING else out


def _known(value: Any) -> Any:
    if is_unknown(value):
        return _MISSING
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Mapping):
        kept = ((str(k), _known(v)) for k, v in value.items())
        return {k: v for k, v in kept if v is not _MISSING}
    if isinstance(value, set | frozenset):
        return [v for v in (_known(v) for v in sorted(value, key=str)) if v is not _MISSING]
    if isinstance(value, list | tuple):
        items = [_known(v) for v in value]
        return _MISSING if any(v is _MISSING for v in items) else items
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
