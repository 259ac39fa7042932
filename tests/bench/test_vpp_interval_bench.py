"""The VPP-bubble interval study (python -m pipelines.bench.vpp_pred): small, seeded, fast."""

from __future__ import annotations

import json

import pytest

from pipelines.bench import vpp_pred


def test_interval_cell_counts_both_methods_on_the_same_draws() -> None:
    cell = vpp_pred.interval_cell("knee at 2 (DSA-like)", 8, 2, 0.05, draws=40, seed=1)
    for key in ("bound", "bound_gain", "ttft", "percentile", "inside"):
        assert cell[key]["n"] == 40
    assert cell["bound"]["rate"] >= 0.9 and cell["inside"]["rate"] == 1.0
    assert cell["median_width_pp"] > cell["median_old_width_pp"] > 0


def test_shapes_are_what_they_say() -> None:
    kink = vpp_pred.shaped_curve("kink x0.3 at N/2", 8)
    assert list(kink[:5]) == [1, 2, 3, 4, 5] and kink[5] - kink[4] == pytest.approx(0.3)
    knee = vpp_pred.shaped_curve("knee at 2 (DSA-like)", 6)
    assert knee[2] - knee[1] == pytest.approx(2.1) and knee[4] - knee[3] == pytest.approx(0.1)
    with pytest.raises(ValueError):
        vpp_pred.shaped_curve("wavy", 8)


def test_module_entry_prints_json(monkeypatch, capsys) -> None:
    monkeypatch.setattr(vpp_pred, "SHAPES", ("proportional",))
    monkeypatch.setattr(vpp_pred, "INTERVAL_NS", (8,))
    monkeypatch.setattr(vpp_pred, "INTERVAL_GS", (2,))
    assert vpp_pred.main(["20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["draws_per_cell"] == 20 and len(out["cells"]) == 1
