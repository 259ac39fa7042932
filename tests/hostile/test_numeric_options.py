"""Every numeric option is checked at the parser (issue 36 deliver 1): a value out of range is
one `argument --X: ...` line and exit 2, before any work. Each case below was accepted (exit 0,
a wrong run), crashed with a traceback, or was refused only later by a message that did not
name the option, in the round-four hostile campaign."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main

CASES: list[tuple[list[str], str]] = [
    (["simulate", "--schedule", "vpp_pack", "--pack-window=-1"], "--pack-window"),
    (
        ["simulate", "--schedule", "single", "--pack-requests", "--max-running", "0"],
        "--max-running",
    ),
    (["simulate", "--slowdown", "5", "--slowdown-from", "1.5"], "--slowdown-from"),
    (["simulate", "--noise", "0.03", "--ar-rho", "1.0"], "--ar-rho"),
    (["simulate", "--outlier-chunk", "1", "--outlier-factor", "0"], "--outlier-factor"),
    (["simulate", "--noise", "0.03", "--seed=-1"], "--seed"),
    (["simulate", "--decode-streams", "2", "--decode-context=-5"], "--decode-context"),
    (["simulate", "--decode-streams", "4", "--decode-groups", "0"], "--decode-groups"),
    (["workload", "--layers", "0", "--out", "{tmp}/w"], "--layers"),
    (["workload", "--hidden=-8", "--out", "{tmp}/w"], "--hidden"),
    (["workload", "--heads", "0", "--out", "{tmp}/w"], "--heads"),
    (["workload", "--threads", "0", "--out", "{tmp}/w"], "--threads"),
    (["workload", "--attention", "sparse", "--top-k", "0", "--out", "{tmp}/w"], "--top-k"),
    (
        ["workload", "--schedule", "dcpp", "--dcpp-smooth", "1.5", "--out", "{tmp}/w"],
        "--dcpp-smooth",
    ),
    (["advise", "--preset", "llama3-8b", "--seq-len", "0"], "--seq-len"),
    (["advise", "--preset", "llama3-8b", "--seq-len=-64K"], "--seq-len"),
    (["advise", "--preset", "llama3-8b", "--seq-len", "64K", "--chunks", "8K:4K:1K"], "--chunks"),
    (["advise", "--curve", "1,2@0", "--seq-len", "64K"], "--curve"),
    (["regressions", "--since", "2026-13-45"], "--since"),
    (["replay", "some-run", "--vp", "0"], "--vp"),
    (["bench", "ingest", "--size-mb", "0"], "--size-mb"),
    (["bench", "ingest", "--hta-mb=-1"], "--hta-mb"),
    (["bench", "scale", "--ranks", "0"], "--ranks"),
    # round three (issue 36): options that were plain `int`. A negative seed reached numpy (a
    # traceback); --rescan-series / --rescan-nights -1 or 0 started the benchmark; the rest were
    # refused only inside the command, by a line that did not name the option
    (["bench", "tau-accuracy", "--seed=-1"], "--seed"),
    (["bench", "changepoints", "--seed=-1"], "--seed"),
    (["bench", "compare-power", "--seed=-1"], "--seed"),
    (["bench", "changepoints", "--rescan-nights", "0"], "--rescan-nights"),
    (["bench", "changepoints", "--rescan-series=-1"], "--rescan-series"),
    (["bench", "changepoints", "--window=-1"], "--window"),
    (["bench", "compare-power", "--draws", "0"], "--draws"),
    (["bench", "tau-accuracy", "--one-run", "0"], "--one-run"),
    (["bench", "sim", "--sweep=-1"], "--sweep"),
    (["bench", "startup", "--repeat", "0"], "--repeat"),
    (["bench", "engine", "--rounds", "0"], "--rounds"),
    (["demo", "--repeats", "0"], "--repeats"),
    (["simulate", "--decode-streams=-1"], "--decode-streams"),
]


@pytest.mark.parametrize(("argv", "option"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_refused_at_the_parser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], option: str
) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    with pytest.raises(SystemExit) as exit_:
        main(
            [*argv, "--warehouse", str(tmp_path / "w.duckdb")]
            if argv[0] in ("regressions", "replay")
            else argv
        )
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2
    assert f"argument {option}" in err[-1], err[-1]
    assert "Traceback" not in "\n".join(err)
    assert not (tmp_path / "w").exists() and not (tmp_path / "w.duckdb").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--slowdown-from", "1", "--slowdown", "5", "--json"],
        ["simulate", "--noise", "0.03", "--ar-rho=-0.9", "--json"],
        ["simulate", "--seed", "0", "--pack-window", "0", "--schedule", "vpp_pack", "--json"],
    ],
)
def test_the_edges_of_each_range_are_accepted(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """The checks refuse only what is out of range: 1 for --slowdown-from, -0.9 for --ar-rho
    and a zero --pack-window (packing off) still run."""
    assert main(argv) == 0
    assert capsys.readouterr().out.lstrip().startswith("{")


def test_an_empty_text_option_is_refused_not_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    """`bench tau-accuracy --repeats=` (an empty list) started the default benchmark: a value
    given empty is refused like any other misplaced one (round three)."""
    assert main(["bench", "tau-accuracy", "--repeats="]) == 2
    assert "--repeats" in capsys.readouterr().err.strip().splitlines()[-1]
