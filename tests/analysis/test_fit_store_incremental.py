"""`fit_and_store` refits only the configurations whose runs changed, and stores the same rows
as a full refit of the same warehouse."""

from __future__ import annotations

import numpy as np
import polars as pl
from polars.testing import assert_frame_equal

from pipelines.analysis.tau.fit_store import INPUTS_TABLE, FitOptions, fit_and_store
from pipelines.store import open_store
from tests.analysis import fixtures
from tests.analysis.test_fit_cli import _run

OPTIONS = FitOptions(n_boot=50)


def _linear_run(con, run_id: str, model: str, seed: int) -> None:
    _, tau = fixtures.linear(n=10, seed=seed)
    con.write_run(run_id, _run(run_id, model, tau))


def _full_refit(con) -> pl.DataFrame:
    con.execute(f"drop table {INPUTS_TABLE}")
    return fit_and_store(con, OPTIONS).fits


def test_one_new_configuration_is_fitted_alone_and_rows_equal_a_full_refit(tmp_path) -> None:
    con = open_store(tmp_path / "w.duckdb").open()
    for s in range(3):
        _linear_run(con, f"a{s}", "model_a", s)
        _linear_run(con, f"b{s}", "model_b", 10 + s)
    first = fit_and_store(con, OPTIONS)
    assert (first.refitted, first.kept) == (2, 0)

    again = fit_and_store(con, OPTIONS)  # nothing changed: nothing refitted
    assert (again.refitted, again.points) == (0, 0)
    assert_frame_equal(again.fits, first.fits)

    _, tau = fixtures.offset(n=12)
    con.write_run("c0", _run("c0", "model_c", tau))
    one_new = fit_and_store(con, OPTIONS)
    assert (one_new.refitted, one_new.kept) == (1, 2)
    assert one_new.points == 12  # only the new run's chunks were read
    assert sorted(one_new.fits["model"].unique()) == ["model_a", "model_b", "model_c"]
    assert_frame_equal(one_new.fits, _full_refit(con))
    con.close()


def test_a_new_run_of_a_configuration_refits_that_configuration_only(tmp_path) -> None:
    con = open_store(tmp_path / "w.duckdb").open()
    for s in range(2):
        _linear_run(con, f"a{s}", "model_a", s)
        _linear_run(con, f"b{s}", "model_b", 10 + s)
    before = fit_and_store(con, OPTIONS).fits
    _linear_run(con, "a9", "model_a", 99)
    after = fit_and_store(con, OPTIONS)
    assert (after.refitted, after.kept) == (1, 1)

    def of(frame: pl.DataFrame, model: str) -> pl.DataFrame:
        return frame.filter(pl.col("model") == model)

    assert_frame_equal(of(after.fits, "model_b"), of(before, "model_b"))
    runs_of_a = of(after.fits, "model_a")["n_runs"].to_list()
    assert runs_of_a != of(before, "model_a")["n_runs"].to_list()
    assert_frame_equal(after.fits, _full_refit(con))
    con.close()


def test_other_options_refit_every_configuration(tmp_path) -> None:
    con = open_store(tmp_path / "w.duckdb").open()
    _linear_run(con, "a0", "model_a", 0)
    _linear_run(con, "b0", "model_b", 1)
    fit_and_store(con, OPTIONS)
    other = fit_and_store(con, FitOptions(n_boot=50, level=0.9))
    assert (other.refitted, other.kept) == (2, 0)
    assert np.all(other.fits["level"].to_numpy() == 0.9)
    con.close()


def test_in_a_lake_only_new_runs_rows_are_read_and_rows_equal_a_full_refit(
    tmp_path, monkeypatch
) -> None:
    from pipelines.analysis.tau import fit_inputs
    from pipelines.paths import LAKE_ENV

    monkeypatch.setenv(LAKE_ENV, str(tmp_path / "lake"))
    con = open_store().open()
    for s in range(2):
        _linear_run(con, f"a{s}", "model_a", s)
        _linear_run(con, f"b{s}", "model_b", 10 + s)
    fit_and_store(con, OPTIONS)
    assert sorted(fit_inputs._stored(con)["run_id"]) == ["a0", "a1", "b0", "b1"]
    con.close()

    con = open_store().open()  # a new connection, as the next `tracereplay fit`
    _, tau = fixtures.offset(n=12)
    con.write_run("c0", _run("c0", "model_c", tau))
    _linear_run(con, "a0", "model_b", 0)  # a0 rewritten into model_b: its runs file changed
    read: list[list[str]] = []
    original = fit_inputs._read
    monkeypatch.setattr(
        fit_inputs, "_read", lambda session, ids: read.append(ids) or original(session, ids)
    )
    after = fit_and_store(con, OPTIONS)
    assert read == [["a0", "c0"]]
    assert (after.refitted, after.kept) == (3, 0)
    assert after.fits.filter(pl.col("model") == "model_b")["n_runs"].to_list() == [3]
    con.execute(f"drop table {fit_inputs.RUNS_TABLE}")
    assert_frame_equal(after.fits, _full_refit(con))
    con.close()


def test_changed_fit_code_refits_every_configuration(tmp_path, monkeypatch) -> None:
    # an upgrade that changes a fit or verdict rule must not keep the old verdicts
    from pipelines.analysis.tau import fit_store

    con = open_store(tmp_path / "w.duckdb").open()
    _linear_run(con, "a0", "model_a", 0)
    _linear_run(con, "b0", "model_b", 1)
    fit_and_store(con, OPTIONS)
    assert fit_and_store(con, OPTIONS).refitted == 0
    monkeypatch.setattr(fit_store, "fit_code_signature", lambda: "another version")
    assert fit_and_store(con, OPTIONS).refitted == 2
    con.close()
