"""`tracereplay advise`: text that fits, --json, --help, one-line argument errors, stored runs."""

from __future__ import annotations

import json

import polars as pl
import pytest

from pipelines.cli import main
from pipelines.replay.tables import chunks_frame
from pipelines.sim.run import simulate
from pipelines.store import open_store

K = 1024
QUICK = ["--draws", "200"]


def test_advise_preset_json_picks_24k_vpp_at_512k(capsys) -> None:
    args = ["advise", "--preset", "deepseek-v3.1", "--seq-len", "512K", "--json", *QUICK]
    assert main(args) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["best"]["chunk_size"] == 24 * K and out["best"]["schedule"].startswith("vpp")
    assert len(out["rows"]) == 6 * 4
    assert out["source"]["kind"] == "preset"
    assert out["inside_noise"] in (True, False)
    assert "simulate" in captured.err and "done" in captured.err  # progress on stderr


def test_advise_text_fits_120_columns_and_names_the_margin(capsys) -> None:
    args = ["advise", "--preset", "glm-5.2", "--seq-len", "64K", "--chunks", "fine", *QUICK]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 120
    assert "recommended:" in out and "runner-up:" in out
    assert "inside the noise" in out or "outside the noise" in out
    assert "12K" in out and "28K" in out  # the fine grid's rows


def test_advise_help_explains_sources_and_noise(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["advise", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for words in ("--preset", "--run", "--curve", "--table", "inside the noise", "2608.26523"):
        assert words in text


@pytest.mark.parametrize(
    "args",
    [
        ["--seq-len", "512K"],  # no source
        ["--preset", "deepseek-v3.1", "--seq-len", "512K", "--chunks", "abc"],
        ["--preset", "gpt-9", "--seq-len", "512K"],
        ["--preset", "deepseek-v3.1"],  # no length
        ["--preset", "deepseek-v3.1", "--seq-len", "64K", "--schedules", "cpp,zpp"],
        ["--preset", "deepseek-v3.1", "--seq-len", "64K", "--pp", "0"],
        ["--preset", "deepseek-v3.1", "--seq-len", "64K", "--run-noise", "nan"],
        ["--curve", "1,2", "--seq-len", "64K"],
        ["--table", "missing.csv", "--seq-len", "64K"],
    ],
)
def test_advise_bad_arguments_exit_2_with_one_line(args, capsys) -> None:
    try:
        code = main(["advise", *args])
    except SystemExit as exc:  # argparse errors
        code = exc.code
    assert code == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "advise" in err[0]


def test_advise_from_a_stored_run_matches_its_preset(tmp_path, capsys) -> None:
    """A stored DeepSeek-V3.1 CPP run (simulated, 128K in 16K chunks): its fitted cost with the
    preset's overheads gives the same recommendation as the preset itself."""
    result = simulate(128 * K, "cpp", model="deepseek-v3.1", chunk_size=16 * K)
    chunks = chunks_frame(result, "ds-cpp")
    runs = pl.DataFrame(
        [
            {
                "run_id": "ds-cpp",
                "source": "sim",
                "content_hash": "ds-cpp",
                "model": "deepseek-v3.1",
                "schedule": "cpp",
                "chunk_size": 16 * K,
                "seq_len": 128 * K,
                "pp": 2,
                "tp": 8,
            }
        ]
    )
    path = tmp_path / "w.duckdb"
    con = open_store(path).open()
    con.write_run("ds-cpp", {"runs": runs, "chunks": chunks})
    con.close()
    common = ["--schedules", "cpp,vpp,vpp_async", "--json", *QUICK]
    assert main(["advise", "--run", "ds-cpp", "--warehouse", str(path), *common]) == 0
    from_run = json.loads(capsys.readouterr().out)
    assert from_run["scenario"]["seq_len"] == 128 * K  # the run's own length by default
    assert from_run["source"]["kind"] == "run"
    assert main(["advise", "--preset", "deepseek-v3.1", "--seq-len", "128K", *common]) == 0
    from_preset = json.loads(capsys.readouterr().out)
    pick = ("schedule", "chunk_size")
    assert [from_run["best"][k] for k in pick] == [from_preset["best"][k] for k in pick]
    # an unknown run is one line, exit 2
    assert main(["advise", "--run", "nope", "--warehouse", str(path)]) == 2
    assert "nope" in capsys.readouterr().err


def test_advise_on_the_self_made_latency_table(capsys) -> None:
    """tests/data/latency_tables/self_made/generic_attention.csv (committed, generic layout of
    docs/latency_tables.md, with two unusable rows): advise fits it, says what it left out and
    recommends one of the swept configurations."""
    from pathlib import Path

    table = Path(__file__).parents[1] / "data/latency_tables/self_made/generic_attention.csv"
    args = ["advise", "--table", str(table), "--seq-len", "8K", "--chunks", "256,512,1K,2K"]
    assert main([*args, "--schedules", "cpp,vpp,vpp_async", *QUICK]) == 0
    out = capsys.readouterr().out
    assert "2 row(s) set aside" in out and "recommended:" in out
    assert max(len(line) for line in out.splitlines()) <= 120


def test_advise_on_a_real_vidur_attention_table(capsys) -> None:
    """Vidur's A100 attention profile (fetched, git-ignored: tests/data/latency_tables/vidur/
    SOURCES.md; skipped when absent): the prefill points of attn_prefill at batch size 1."""
    from pathlib import Path

    table = (
        Path(__file__).parents[1]
        / "data/latency_tables/vidur/e2d00e9/data/profiling/a100/attention.csv"
    )
    if not table.is_file():
        pytest.skip("fetched Vidur table absent (tests/data/latency_tables/vidur/SOURCES.md)")
    args = ["advise", "--table", str(table), "--seq-len", "16K", "--chunks", "512,1K,2K,4K"]
    assert main([*args, "--schedules", "cpp,vpp", "--json", *QUICK]) == 2  # several operators
    assert "several operators" in capsys.readouterr().err
    assert main([*args, "--operator", "attn_prefill", "--schedules", "cpp,vpp", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["source"]["label"].endswith("(attn_prefill)")
    assert {r["chunk_size"] for r in out["rows"]} == {512, 1024, 2048, 4096}
