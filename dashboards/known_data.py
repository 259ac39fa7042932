"""Chart data with its unknown values left out (issue 35: no `null`, `None` or `NaN` on a page).

A Vega-Lite spec made by Altair inlines its data as records in `datasets`; a value nobody knows
(no interval with one run, no virtual stage on a ProfilerStep chunk) arrives as JSON `null` or
NaN. Vega reads a field a record lacks as undefined, which every mark skips as it skips null, so
such a field is left out of its record. A tooltip would print a left-out number as 'NaN'
(Vega's format() of undefined; of null it printed '0.000') and a left-out text as 'undefined':
a tooltip entry whose field some record lacks shows a text field made here instead, the value
formatted with the entry's d3 format (the fixed-point formats the charts use read the same in
Python's format()) and '-' where it is unknown.

The spec's own `null`s, Vega-Lite's word for 'none', are written as the equal settings that are
no null: a title `""` and a legend `{"disable": true}` (vl-convert renders the same SVG for each
pair: tests/dashboards/test_known_data.py)."""

from __future__ import annotations

from typing import Any

from pipelines.vocabulary.unknown import is_unknown

UNKNOWN = "-"
TEXT_PREFIX = "_text_"


def known_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` (Altair's to_dict) with null / NaN fields left out of its inline data records and
    the tooltip entries of fields some record lacks reading a text field (the module's doc)."""
    datasets = spec.get("datasets")
    if not isinstance(datasets, dict):
        return spec
    cleaned = {name: [_known_record(r) for r in rows] for name, rows in datasets.items()}
    missing = {
        field
        for rows, before in zip(cleaned.values(), datasets.values(), strict=True)
        for row, old in zip(rows, before, strict=True)
        for field in old
        if field not in row
    }
    entries = [e for e in _tooltip_entries(spec) if e.get("field") in missing]
    for entry in entries:
        field, fmt = entry["field"], entry.get("format", "")
        text = TEXT_PREFIX + field
        for rows in cleaned.values():
            for row in rows:
                row[text] = _formatted(row.get(field), fmt)
        entry.setdefault("title", field)
        entry.update(field=text, type="nominal")
        entry.pop("format", None)
    _quiet_partial_marks(spec, missing)
    return {**_no_none_settings(spec), "datasets": cleaned}


def _quiet_partial_marks(node: Any, missing: set[str]) -> None:
    """A mark without a tooltip that encodes a field some record lacks (an interval band or
    error bar) gets `aria: false`: Vega would describe it to screen readers (and in the SVG's
    aria-label) as 'lo: NaN'; the mark's line or points, with their tooltip, still are."""
    if isinstance(node, list):
        for item in node:
            _quiet_partial_marks(item, missing)
        return
    if not isinstance(node, dict):
        return
    encoding = node.get("encoding")
    if "mark" in node and isinstance(encoding, dict) and "tooltip" not in encoding:
        fields = {c.get("field") for c in encoding.values() if isinstance(c, dict)}
        if fields & missing:
            mark = node["mark"]
            node["mark"] = {**(mark if isinstance(mark, dict) else {"type": mark}), "aria": False}
    for key, value in node.items():
        if key != "datasets":
            _quiet_partial_marks(value, missing)


NONE_SETTINGS: dict[str, Any] = {"title": "", "legend": {"disable": True}}
"""Vega-Lite settings whose null means 'none', and the equal setting that is no null."""


def _no_none_settings(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: (
                value
                if key == "datasets"
                else dict(NONE_SETTINGS[key])
                if value is None and key == "legend"
                else NONE_SETTINGS[key]
                if value is None and key in NONE_SETTINGS
                else _no_none_settings(value)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_no_none_settings(item) for item in node]
    return node


def _known_record(record: Any) -> Any:
    if not isinstance(record, dict):
        return record
    return {k: v for k, v in record.items() if not is_unknown(v)}


def _formatted(value: Any, fmt: str) -> str:
    if is_unknown(value):
        return UNKNOWN
    if fmt and isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return format(value, fmt)
        except ValueError:
            pass
    return str(value)


def _tooltip_entries(node: Any) -> list[dict[str, Any]]:
    """Every field entry of every tooltip encoding under `node` (layers, facets, concats)."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "datasets":
                continue
            if key == "tooltip":
                items = value if isinstance(value, list) else [value]
                found += [i for i in items if isinstance(i, dict) and "field" in i]
            else:
                found += _tooltip_entries(value)
    elif isinstance(node, list):
        for item in node:
            found += _tooltip_entries(item)
    return found
