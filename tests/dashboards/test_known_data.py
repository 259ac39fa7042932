"""Chart specs with their unknown values left out (dashboards/known_data.py, issue 35)."""

from __future__ import annotations

import json
import re

import altair as alt
import polars as pl
import vl_convert as vlc

from dashboards.known_data import known_spec
from dashboards.pages import chart_spec
from dashboards.trends import trend_chart

NO_VALUE = re.compile(r"\bnull\b|\bNone\b|\bNaN\b|\bnan\b")


def _history() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "config": ["m · cpp"] * 3,
            "collected_at": pl.datetime_range(
                pl.datetime(2026, 11, 1), pl.datetime(2026, 11, 3), "1d", eager=True
            ),
            "n": [1, 2, 2],
            "mean": [10.0, 11.0, float("nan")],
            "lo": [None, 10.5, 10.0],
            "hi": [None, 11.5, 12.0],
            "metric": ["ttft"] * 3,
        }
    )


def test_unknown_values_leave_the_records_and_the_tooltip_reads_a_dash() -> None:
    spec = chart_spec(trend_chart(_history()))
    text = json.dumps(spec)
    assert not NO_VALUE.search(text), NO_VALUE.search(text)
    rows = next(iter(spec["datasets"].values()))
    assert "lo" not in rows[0] and "mean" not in rows[2] and rows[1]["lo"] == 10.5
    assert [r["_text_lo"] for r in rows] == ["-", "10.500", "10.000"]
    tips = [t for layer in spec["layer"] for t in layer["encoding"].get("tooltip", [])]
    assert {"field": "_text_lo", "type": "nominal", "title": "lo"} in tips
    assert {"field": "mean", "type": "quantitative", "format": ".3f"} not in tips  # mean: NaN too
    band = spec["layer"][0]
    assert band["mark"]["aria"] is False  # no 'lo: NaN' in the band's aria-label
    svg = vlc.vegalite_to_svg(spec)
    assert "<path" in svg and not re.search(r"\bNaN\b|undefined", svg)


def test_none_settings_render_alike() -> None:
    frame = pl.DataFrame({"x": [1, 2], "y": [3, 4], "c": ["a", "b"], "r": ["p", "q"]})
    chart = (
        alt.Chart(frame)
        .mark_point()
        .encode(x="x:Q", y=alt.Y("y:Q", title=None), color=alt.Color("c:N", legend=None))
        .facet(row=alt.Row("r:N", title=None))
    )
    before = chart.to_dict()
    after = known_spec(chart.to_dict())
    assert "null" in json.dumps(before) and "null" not in json.dumps(after)
    assert vlc.vegalite_to_svg(before) == vlc.vegalite_to_svg(after)


def test_a_spec_without_inline_data_is_left_alone() -> None:
    spec = {"mark": "point", "data": {"url": "x.csv"}, "title": None}
    assert known_spec(spec) is spec
