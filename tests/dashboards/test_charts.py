"""Each chart function on a small hand-made table: its Vega-Lite encoding, and a PNG render."""

from __future__ import annotations

from datetime import datetime

import polars as pl
import pytest
import vl_convert as vlc

from dashboards import data
from dashboards.breakdown import breakdown_chart
from dashboards.replay import replay_chart
from dashboards.schedules import schedule_chart
from dashboards.tau import tau_chart
from dashboards.timeline import timeline_chart
from dashboards.trends import trend_chart

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png(chart) -> bytes:
    image = vlc.vegalite_to_png(chart.to_json(), scale=1)
    assert image.startswith(PNG_MAGIC)
    assert len(image) > 2000  # an empty canvas is a few hundred bytes
    return image


def _layers(spec: dict) -> list[dict]:
    """Every unit spec (one with a mark) inside a layered / concatenated / faceted spec."""
    found = [spec] if "mark" in spec else []
    for key in ("layer", "vconcat", "hconcat", "concat"):
        for child in spec.get(key, []):
            found += _layers(child)
    if "spec" in spec:
        found += _layers(spec["spec"])
    return found


def _mark(unit: dict) -> str:
    mark = unit["mark"]
    return mark if isinstance(mark, str) else mark["type"]


def test_tau_chart_points_line_band_residuals_and_verdict_title() -> None:
    points = pl.DataFrame(
        {
            "run_id": ["r0"] * 4 + ["r1"] * 4,
            "chunk_idx": [0, 1, 2, 3] * 2,
            "tau_ms": [10.0, 12.1, 13.9, 16.0, 10.2, 11.9, 14.1, 15.8],
        }
    ).with_columns((pl.col("tau_ms") - (10.0 + 2.0 * pl.col("chunk_idx"))).alias("resid_ms"))
    band = pl.DataFrame(
        {"chunk_idx": [0, 1, 2, 3], "fit_ms": [10.0, 12.0, 14.0, 16.0]}
    ).with_columns((pl.col("fit_ms") - 0.3).alias("lo_ms"), (pl.col("fit_ms") + 0.3).alias("hi_ms"))
    points = points.with_columns(pl.lit(1024).alias("chunk_size"), pl.format("c").alias("curve"))
    means = data.run_mean_by_chunk(points)
    assert means.sort("chunk_idx")["mean_ms"].to_list() == pytest.approx([10.1, 12.0, 14.0, 15.9])
    assert (means["n_runs"] == 2).all() and (means["mean_lo_ms"] < means["mean_ms"]).all()
    band = band.join(means.drop("curve"), on="chunk_idx")
    fit = {
        "curve": "m · cpp · chunk 16384 · seq 65536 · vs 0",
        "verdict": "linear",
        "evidence": "slope 2 ms/chunk [1.9, 2.1]",
        "slope": 2e6,
        "slope_lo": 1.9e6,
        "slope_hi": 2.1e6,
        "intercept": 10e6,
        "r2": 0.99,
        "n_runs": 2,
        "n_points": 8,
        "level": 0.95,
        "ci_method": "cluster(run)",
    }
    chart = tau_chart(points, band, fit)
    spec = chart.to_dict()
    top, bottom = spec["vconcat"]
    title = top["title"]["text"]
    assert (
        "linear" in title[0]
        and "evidence" in title[2]
        and "mean over runs" in top["title"]["subtitle"]
    )
    marks = [_mark(u) for u in _layers(top)]
    assert marks == ["area", "line", "circle", "rule", "line"]
    area, _, dots, spread, mean = (u["encoding"] for u in _layers(top))
    assert area["y"]["field"] == "lo_ms" and area["y2"]["field"] == "hi_ms"
    assert (spread["y"]["field"], spread["y2"]["field"]) == ("mean_lo_ms", "mean_hi_ms")
    assert mean["y"]["field"] == "mean_ms" and "1,024 tokens" in dots["x"]["title"]
    resid_fields = [u["encoding"]["y"]["field"] for u in _layers(bottom)]
    assert resid_fields == ["y", "resid_ms", "mean_resid_ms"]
    _png(chart)


def test_timeline_chart_lanes_per_rank_and_vstage_with_bubbles() -> None:
    rows = []
    for order, schedule in enumerate(["cpp", "vpp"]):
        for k in range(3):
            rows.append(
                (
                    "chunk",
                    schedule,
                    order,
                    "rank 0 · vs 0",
                    0,
                    0,
                    "req-0",
                    k,
                    10.0 * k,
                    10.0 * k + 8,
                )
            )
            rows.append(
                (
                    "chunk",
                    schedule,
                    order,
                    "rank 1 · vs 1",
                    1,
                    1,
                    "req-0",
                    k,
                    10.0 * k + 8,
                    10.0 * k + 16,
                )
            )
        rows.append(("bubble", schedule, order, "rank 1 · idle", 1, None, None, None, 16.0, 18.0))
    spans = pl.DataFrame(
        rows,
        schema=[
            "kind",
            "schedule",
            "schedule_order",
            "lane",
            "rank",
            "vstage",
            "request_id",
            "chunk_idx",
            "start_ms",
            "end_ms",
        ],
        orient="row",
    ).with_columns((pl.col("end_ms") - pl.col("start_ms")).alias("dur_ms"))
    chart = timeline_chart(spans, "t")
    spec = chart.to_dict()
    assert spec["facet"]["row"]["field"] == "schedule"
    bars = _layers(spec)[0]["encoding"]
    assert bars["x"]["field"] == "start_ms" and bars["x2"]["field"] == "end_ms"
    assert bars["y"]["field"] == "lane"
    assert bars["color"]["scale"]["domain"] == ["vs 0", "vs 1", "bubble"]
    assert bars["color"]["scale"]["range"][-1] == "#e45756"
    _png(chart)


def test_breakdown_chart_stacks_the_four_parts_per_rank() -> None:
    parts = ["computing", "exposed_comm", "recv_wait", "free"]
    frame = pl.DataFrame(
        [
            ("run", r, p, i, float(10 + i + r), "cluster", 1)
            for r in range(16)
            for i, p in enumerate(parts)
        ],
        schema=["run_id", "rank", "part", "part_order", "ms", "origin", "n_steps"],
        orient="row",
    )
    chart = breakdown_chart(frame)
    spec = chart.to_dict()
    unit = _layers(spec)[0]
    assert _mark(unit) == "bar"
    assert unit["encoding"]["y"]["field"] == "rank"
    assert unit["encoding"]["x"]["aggregate"] == "sum" and unit["encoding"]["x"]["stack"] == "zero"
    assert unit["encoding"]["color"]["scale"]["domain"] == parts
    assert [len(v) for v in spec["datasets"].values()] == [64]
    _png(chart)


def test_schedule_chart_bars_with_error_bars_over_repeats() -> None:
    summary = pl.DataFrame(
        {
            "workload": ["m · seq 1 · chunk 1"] * 4,
            "schedule": ["cpp", "cpp", "vpp", "vpp"],
            "part": ["computing", "bubble"] * 2,
            "n": [3, 3, 3, 3],
            "mean": [100.0, 20.0, 101.0, 2.0],
            "sd": [1.0, 0.5, 1.0, 0.2],
        }
    ).with_columns((pl.col("mean") - 2).alias("lo"), (pl.col("mean") + 2).alias("hi"))
    chart = schedule_chart(summary)
    spec = chart.to_dict()
    bars, errors = _layers(spec)
    assert _mark(bars) == "bar" and spec["facet"]["column"]["field"] == "part_name"
    assert spec["facet"]["row"]["field"] == "workload"
    assert spec["resolve"]["scale"]["y"] == "independent"  # each panel on its own scale
    assert _mark(errors) == "errorbar"
    assert errors["encoding"]["y"]["field"] == "lo" and errors["encoding"]["y2"]["field"] == "hi"
    _png(chart)


NIGHTS = [datetime(2026, 11, d, 2) for d in range(1, 6)]


def _trend_history() -> pl.DataFrame:
    """Five nights of one configuration's TTFT, a step at the fourth."""
    return pl.DataFrame(
        {
            "config": ["m · cpp"] * 5,
            "collected_at": NIGHTS,
            "n": [3] * 5,
            "mean": [100.0, 101.0, 99.0, 120.0, 121.0],
            "metric": ["ttft"] * 5,
        }
    ).with_columns((pl.col("mean") - 3).alias("lo"), (pl.col("mean") + 3).alias("hi"))


def _step_change(**extra: list) -> pl.DataFrame:
    """The change point at the fourth night, with any extra columns."""
    base = {"config": ["m · cpp"], "metric": ["ttft"], "collected_at": [NIGHTS[3]]}
    return pl.DataFrame({**base, "direction": ["up"], **extra})


def test_trend_chart_band_line_and_change_point_rules() -> None:
    history, changes = _trend_history(), _step_change()
    chart = trend_chart(history, changes)
    spec = chart.to_dict()
    marks = [_mark(u) for u in _layers(spec)]
    assert marks == ["area", "line", "rule"]
    rule = _layers(spec)[2]
    assert rule["encoding"]["x"]["field"] == "collected_at"
    assert rule["encoding"]["stroke"]["field"] == "direction"
    _png(chart)
    # without change points (the detector's output not there yet) the chart still renders
    assert [_mark(u) for u in _layers(trend_chart(history).to_dict())] == ["area", "line"]


def test_trend_chart_shades_the_interval_of_the_date() -> None:
    history = _trend_history()
    changes = _step_change(earliest_at=[NIGHTS[2]], latest_at=[NIGHTS[4]])
    layers = _layers(trend_chart(history, changes).to_dict())
    assert [_mark(u) for u in layers] == ["area", "line", "rect", "rule"]
    span = layers[2]["encoding"]
    assert (span["x"]["field"], span["x2"]["field"]) == ("earliest_at", "latest_at")
    assert {t["field"] for t in span["tooltip"]} >= {"earliest_at", "latest_at"}


def test_trend_history_keeps_only_configurations_with_a_history() -> None:
    nightly_runs = [("m", "cpp", datetime(2026, 11, d, 2), 100.0 + d) for d in range(1, 5)]
    nightly_runs += [("m", "cpp", datetime(2026, 11, 4, 3), 106.0)]  # a second run on night 4
    grid_runs = [("g", "vpp", datetime(2026, 11, 1, 0, m), 50.0) for m in range(3)]  # one night
    runs = pl.DataFrame(
        [
            {"model": m, "schedule": s, "seq_len": 65536, "chunk_size": 16384}
            | {"collected_at": at, "ttft_ms": v}
            for m, s, at, v in nightly_runs + grid_runs
        ]
    )
    history = data.nightly(runs, "ttft", min_nights=3)
    assert history["config"].unique().to_list() == ["m · cpp · seq 65536 · chunk 16384"]
    assert history["n"].to_list() == [1, 1, 1, 2] and history["mean"][-1] == 105.0
    assert data.nightly(runs, "ttft", min_nights=5).is_empty()


def test_replay_chart_identity_line_spans_both_axes() -> None:
    pairs = pl.DataFrame(
        {
            "metric": ["ttft", "ttft", "bubble"],
            "schedule": ["cpp", "vpp", "cpp"],
            "predicted_ms": [100.0, 90.0, 5.0],
            "measured_ms": [102.0, 91.0, 5.5],
            "measured_min_ms": [101.0, 89.0, 5.0],
            "measured_max_ms": [103.0, 93.0, 6.0],
            "n_measured": [3, 3, 3],
        }
    )
    chart = replay_chart(pairs, "ttft")
    spec = chart.to_dict()
    line, errors, dots = _layers(spec)
    assert errors["encoding"]["x2"]["field"] == "measured_max_ms"
    assert _mark(line) == "line" and _mark(dots) == "point"
    assert line["encoding"]["x"]["scale"]["domain"] == line["encoding"]["y"]["scale"]["domain"]
    low, high = line["encoding"]["x"]["scale"]["domain"]
    assert low < 89.0 and high > 103.0
    assert dots["encoding"]["x"]["field"] == "measured_ms"
    assert dots["encoding"]["y"]["field"] == "predicted_ms"
    _png(chart)


def test_time_axes_reaching_ten_seconds_are_labelled_in_seconds() -> None:
    """A 20 s TTFT trend read '20,000 ms' before; now its axis says s (labels / 1000) while the
    data and tooltips stay in ms; a 100 ms trend keeps ms."""
    seconds = _trend_history().with_columns(pl.col("mean", "lo", "hi") * 200)
    line = _layers(trend_chart(seconds).to_dict())[1]["encoding"]["y"]
    assert "(s," in line["title"] and "/ 1000" in line["axis"]["labelExpr"]
    line = _layers(trend_chart(_trend_history()).to_dict())[1]["encoding"]["y"]
    assert "(ms," in line["title"] and "labelExpr" not in line.get("axis", {})
    summary = pl.DataFrame(
        {"workload": ["w"] * 2, "schedule": ["cpp", "vpp"], "part": ["computing"] * 2,
         "n": [3, 3], "mean": [21_000.0, 18_000.0], "sd": [10.0, 10.0],
         "lo": [20_900.0, 17_900.0], "hi": [21_100.0, 18_100.0]}
    )  # fmt: skip
    spec = schedule_chart(summary).to_dict()
    bars = _layers(spec["spec"])[0]["encoding"]["y"]
    assert bars["title"].startswith("s ") and "/ 1000" in bars["axis"]["labelExpr"]
