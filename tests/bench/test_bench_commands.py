"""`tracereplay bench sim | startup` run end to end at tiny scale (fields and exit codes, never
timing assertions)."""

from __future__ import annotations

import json

import pytest

from pipelines.bench.startup import (
    BASELINE,
    PROBES,
    StartupTiming,
    format_startup,
    help_target_met,
    measure_startup,
)
from pipelines.cli import ExitCode, main


def test_bench_sim_prints_both_parts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "sim", "--repeat", "1", "--sweep", "20"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "one 1,048,576-token request" in out and "vpp_pack" in out
    assert "sweep: 20 configurations" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "sim", "--repeat", "0"],
        ["bench", "startup", "--repeat", "0"],
        ["bench", "tau-accuracy", "--runs", "0"],
    ],
)
def test_bench_rejects_non_positive_sizes(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused at the parser: exit 2 and one line naming the option and the rule."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert f"argument {argv[2]}: '0': a whole number must be >= 1" in err


def test_startup_is_measured_against_the_baseline_of_the_same_run() -> None:
    probes = {name: PROBES[name] for name in (BASELINE, "tracereplay --help")}
    timings = measure_startup(repeat=2, probes=probes)
    assert [t.name for t in timings] == list(probes)
    assert all(t.runs == 2 and 0 < t.min_s <= t.median_s for t in timings)
    assert timings[0].ratio == pytest.approx(1.0)
    assert timings[1].ratio == pytest.approx(timings[1].median_s / timings[0].median_s)
    text = format_startup(timings, {"polars": True, "numpy": False})
    assert max(len(line) for line in text.splitlines()) <= 120
    assert "missing for numpy" in text and "target: tracereplay --help median < 300 ms" in text


def test_help_target_reads_the_help_median() -> None:
    def timing(median_s: float) -> StartupTiming:
        return StartupTiming("tracereplay --help", 1, median_s, median_s, 1.0)

    assert help_target_met([timing(0.29)]) and not help_target_met([timing(0.31)])


def test_startup_json(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    import pipelines.bench.startup as startup

    monkeypatch.setattr(startup, "PROBES", {k: PROBES[k] for k in (BASELINE, "tracereplay --help")})
    code = main(["bench", "startup", "--repeat", "1", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == (ExitCode.OK if record["met"] else ExitCode.CHECK_FAILED)
    assert [t["name"] for t in record["timings"]] == [BASELINE, "tracereplay --help"]
    assert set(record["bytecode"]) == {"polars", "numpy", "duckdb", "scipy"}
