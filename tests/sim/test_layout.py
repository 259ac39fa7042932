"""Fold-back layout: get_vpp_indices semantics (vLLM-Ascend PR #11976)."""

from __future__ import annotations

import pytest

from pipelines.sim.layout import even_split, fold_back_layout


def test_docstring_example_8_layers_pp2_vp2() -> None:
    layout = fold_back_layout(8, pp=2, vp=2)
    assert layout.ranks == (0, 1, 1, 0)
    assert layout.rank_layer_ranges(0) == [(0, 2), (6, 8)]
    assert layout.rank_layer_ranges(1) == [(2, 4), (4, 6)]


def test_61_layers_pp4_vp2_first_groups_take_the_extra_layer() -> None:
    layout = fold_back_layout(61, pp=4, vp=2)
    assert layout.ranks == (0, 1, 2, 3, 3, 2, 1, 0)
    assert layout.rank_layer_ranges(0) == [(0, 8), (54, 61)]
    assert layout.rank_layer_ranges(3) == [(24, 32), (32, 40)]
    assert sum(hi - lo for lo, hi in layout.layer_ranges) == 61


def test_fold_points_continue_on_the_same_rank() -> None:
    layout = fold_back_layout(12, pp=2, vp=3)
    assert layout.ranks == (0, 1, 1, 0, 0, 1)
    folds = [g for g in range(layout.num_stages) if layout.is_fold_continuation(g)]
    assert folds == [2, 4]


def test_vp1_is_the_plain_pipeline_and_split_is_even() -> None:
    layout = fold_back_layout(61, pp=2)
    assert layout.ranks == (0, 1)
    assert layout.layer_ranges == ((0, 31), (31, 61))
    assert even_split(10, 4) == [3, 3, 2, 2]


def test_explicit_layer_split_is_validated() -> None:
    layout = fold_back_layout(8, pp=2, vp=2, layer_split=[1, 3, 3, 1])
    assert layout.layer_ranges == ((0, 1), (1, 4), (4, 7), (7, 8))
    assert layout.fraction(1) == pytest.approx(3 / 8)
    with pytest.raises(ValueError):
        fold_back_layout(8, pp=2, vp=2, layer_split=[2, 2, 2])
