"""`tracereplay regressions` and `explain` over a warehouse of synthetic nightly runs."""

from __future__ import annotations

import json
from datetime import date, timedelta

import numpy as np
import pytest

from pipelines.cli import main
from pipelines.store import open_store
from tests.analysis.synthetic_runs import write_run


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    path = tmp_path_factory.mktemp("history") / "warehouse.duckdb"
    con = open_store(path).open()
    rng = np.random.default_rng(2026)
    for night in range(60):
        write_run(con, f"a-n{night:02d}", night, model="a", rng=rng)
        # one kernel type gets 10 % slower per chunk from night 40: an intercept cost
        a_ns = 80e6 * (1.10 if night >= 40 else 1.0)
        write_run(con, f"b-n{night:02d}", night, model="b", a_ns=a_ns, rng=rng)
    con.close()
    return path


def test_regressions_reports_the_one_step_with_attribution(history, capsys):
    rc = main(["regressions", "--warehouse", str(history), "--metric", "ttft_ns", "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert len(rows) == 1
    (row,) = rows
    assert row["config"]["model"] == "b" and row["direction"] == "regression"
    assert abs(int(row["run_after"][-2:]) - 40) <= 2
    # the 95 % interval of the date holds the night the step came in, around the point found
    earliest, latest = int(row["earliest_after_run"][-2:]), int(row["latest_after_run"][-2:])
    assert earliest <= int(row["run_after"][-2:]) <= latest
    assert earliest <= 40 <= latest
    assert row["earliest_after_at"] <= row["collected_after"] <= row["latest_after_at"]
    assert row["attribution"]["ops"][0]["op"] == "MatMulV3"
    main(["regressions", "--warehouse", str(history), "--metric", "ttft_ns"])
    said = "dated to that run" if earliest == latest else "first run after it, 95 % set"
    assert said in capsys.readouterr().out
    assert row["attribution"]["tau_moved"] == "intercept"


def test_regressions_on_the_clean_configuration_is_quiet(history, capsys):
    rc = main(["regressions", "model=a", "--warehouse", str(history)])
    assert rc == 0
    assert "no change points in 3 series" in capsys.readouterr().out


def test_explain_says_slope_when_the_cost_grows_with_the_prefix(tmp_path, capsys):
    con = open_store(tmp_path / "w.duckdb").open()
    rng = np.random.default_rng(5)
    for i in range(5):
        write_run(con, f"base{i}", i, schedule="cpp", rng=rng, noise=0.01)
        write_run(con, f"cand{i}", i, schedule="vpp", b_ns=24e6, rng=rng, noise=0.01)
    con.close()
    rc = main(
        ["explain", "schedule=cpp", "schedule=vpp", "--warehouse", str(tmp_path / "w.duckdb")]
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "tau_k moved: slope" in out
    # the hypotheses listed with their tests: only the slope's move is left standing
    assert "stands   slope only (intercept a unchanged; welch_t_log(a), p " in out
    assert "rejected intercept only (slope b unchanged; welch_t_log(b), p " in out
    assert "rejected proportional (a/b unchanged; welch_t_log(a/b), p " in out
    assert out.index("FlashAttentionScore") < out.index("MatMulV3")


def test_bad_selector_and_metric_are_exit_2(history, capsys):
    assert main(["regressions", "model=zzz", "--warehouse", str(history)]) == 2
    assert "model: a, b" in capsys.readouterr().err
    assert main(["regressions", "--metric", "nope", "--warehouse", str(history)]) == 2


@pytest.mark.parametrize("metric", ["ttft_ns", "ttft_p90_ns"])
def test_compare_flags_the_step_and_exits_1(history, capsys, metric):
    rc = main(
        [
            "compare",
            "--warehouse",
            str(history),
            "--metric",
            metric,
            "--baseline",
            "model=b,until=2026-02-05",
            "--candidate",
            "model=b,since=2026-02-15",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 1
    assert "regressed" in out and "Benjamini-Hochberg" in out and "MatMulV3" in out
    assert "one-sided" in out
    assert max(len(line) for line in out.splitlines()) <= 120


def test_a_single_night_spike_is_listed_but_is_no_change_point(tmp_path, capsys):
    """Otava raises a change point at a lone slow night; here it is set aside and named."""
    path = tmp_path / "warehouse.duckdb"
    con = open_store(path).open()
    rng = np.random.default_rng(7)
    for night in range(30):
        write_run(
            con, f"s-n{night:02d}", night, model="s", scale=1.10 if night == 17 else 1.0, rng=rng
        )
    con.close()
    rc = main(["regressions", "--warehouse", str(path), "--metric", "ttft_ns"])
    out = capsys.readouterr().out
    assert rc == 0 and "no change points in 1 series" in out
    assert "1 single-night spike(s) set aside" in out
    (line,) = [x for x in out.splitlines() if "s-n17" in x]
    assert "ttft_ns" in line and "+" in line.split()[-1]


def test_a_spike_of_a_run_named_by_its_profiler_fits_120_columns(tmp_path, capsys):
    """Run ids of the profiler-named form (docs/run_identity.md) hold the collection date: the
    spike line shows the id alone, within 120 columns."""
    path = tmp_path / "warehouse.duckdb"
    con = open_store(path).open()
    rng = np.random.default_rng(7)
    model = "qwen3-coder-30b-a3b"  # the longest preset name
    for night in range(30):
        day = (date(2026, 1, 1) + timedelta(days=night)).strftime("%Y%m%d")
        run_id = f"ascend-pt-deepseek-v3-1-cpp-64k-{day}-0200-{night:012x}"
        write_run(con, run_id, night, model=model, scale=1.10 if night == 17 else 1.0, rng=rng)
    con.close()
    assert main(["regressions", "--warehouse", str(path), "--metric", "ttft_ns"]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if "-20260118-0200-" in x]
    assert "2026-01-18" not in line
    assert max(len(x) for x in out.splitlines()) <= 120


def test_explain_says_what_to_do_for_the_state_the_runs_are_in() -> None:
    from pipelines.cli.explain import tau_hint

    assert "run `tracereplay chunks`" in tau_hint({"a": 0, "b": 0}, ["a", "b"])
    no_markers = tau_hint({"a": 0}, [])
    assert "add chunk markers" in no_markers and "tracereplay chunks --profiler-steps" in no_markers
    few = tau_hint({"a": 2, "b": 2}, ["a", "b"])
    assert "3 or more full chunks" in few and "tracereplay chunks`" not in few


def test_compare_states_the_variance_prior_from_the_nightly_history(history, capsys):
    """Model a's 60 clean nights: 5 a side compared, the other 50 are the history the moderated t
    borrows its variance from; without it (or under 20 nights) the runs alone, said so."""
    args = ["compare", "--warehouse", str(history), "--metric", "ttft_ns", "--json"]
    sides = ["--baseline", "model=a,until=2026-01-05", "--candidate", "model=a,since=2026-02-25"]
    assert main([*args, *sides]) == 0
    out = json.loads(capsys.readouterr().out)
    (row,) = out["metrics"]
    assert row["test"] == "moderated_t_log" and row["estimand"] == "geometric_mean_ratio"
    prior = out["variance_priors"]["ttft_ns"]
    n_compared = row["n_baseline"] + row["n_candidate"]
    assert prior["nights"] == 60 - n_compared and prior["df"] == prior["nights"] - 1
    assert row["effect_lo"] <= row["effect"] <= row["effect_hi"]
    assert main([*args, *sides, "--no-history-prior"]) == 0
    (alone,) = json.loads(capsys.readouterr().out)["metrics"]
    assert alone["test"] == "welch_t_log" and alone["prior_nights"] == 0
    assert main(args[:-1] + sides) == 0
    text = capsys.readouterr().out
    assert "variance prior (moderated t, Smyth 2004) for ttft_ns" in text
    # model b: a step at night 40 and most nights compared leave < 20 nights of history
    wide = ["--baseline", "model=b,until=2026-02-05", "--candidate", "model=b,since=2026-02-15"]
    main(args[:-1] + wide)
    assert "no variance prior for ttft_ns: fewer than 20 nights" in capsys.readouterr().out


def test_regressions_states_q_values_and_the_false_alarms_to_expect(history, capsys):
    """Two configurations x one metric: the step's q is Benjamini-Hochberg's over both series'
    p; the text says how many false alarms one scan and a quarter of nightly scans may raise."""
    args = ["regressions", "--warehouse", str(history), "--metric", "ttft_ns"]
    assert main([*args, "--json"]) == 1
    (row,) = json.loads(capsys.readouterr().out)
    assert row["p_value"] <= row["q_value"] <= 2 * row["p_value"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "expected false alarms: at most 0.007 of these 2 series" in out
    assert " q " in out.splitlines()[0] + " "
    assert max(len(line) for line in out.splitlines()) <= 120
