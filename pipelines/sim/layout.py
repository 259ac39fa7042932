"""Where each virtual stage runs: the fold-back (V-shaped) layout of VPP and the plain CPP layout.

A model of `num_layers` layers is cut into `pp * vp` consecutive layer groups, the virtual stages
g = 0 .. pp*vp-1, in the order a chunk traverses them. vLLM-Ascend's `get_vpp_indices` (PR #11976,
docs/schedules.md §3) places group g on a rank by sweeps of `pp` groups: even sweeps run
forward (rank = g mod pp), odd sweeps run backward (rank = pp-1 - g mod pp). With pp=2, vp=2:
rank 0 holds s0 and s3, rank 1 holds s1 and s2. Where two consecutive groups sit on the same rank
(the fold point) the chunk continues without communication. vp=1 is the ordinary CPP layout.

Layers are split as evenly as possible, the first `num_layers mod (pp*vp)` groups taking one extra
layer (8 layers, pp=2, vp=2: rank 0 -> [(0, 2), (6, 8)], rank 1 -> [(2, 4), (4, 6)]); an explicit
`layer_split` (layers per virtual stage) overrides it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def stage_rank(group: int, pp: int) -> int:
    """Rank of layer group `group` in the fold-back layout (get_vpp_indices semantics)."""
    sweep, pos = divmod(group, pp)
    return pos if sweep % 2 == 0 else pp - 1 - pos


def even_split(num_layers: int, groups: int) -> list[int]:
    """Layers per group, as even as possible, the first `num_layers % groups` groups one larger."""
    if groups < 1 or num_layers < groups:
        raise ValueError(f"cannot split {num_layers} layers into {groups} stages")
    base, rem = divmod(num_layers, groups)
    return [base + (1 if g < rem else 0) for g in range(groups)]


@dataclass(frozen=True)
class StageLayout:
    """Virtual stages in traversal order: the rank and the half-open layer range of each."""

    pp: int
    vp: int
    num_layers: int
    ranks: tuple[int, ...]
    layer_ranges: tuple[tuple[int, int], ...]

    @property
    def num_stages(self) -> int:
        return len(self.ranks)

    def stages_of(self, rank: int) -> list[int]:
        """Virtual stages held by `rank`, in traversal order."""
        return [g for g, r in enumerate(self.ranks) if r == rank]

    def rank_layer_ranges(self, rank: int) -> list[tuple[int, int]]:
        """Layer ranges of `rank`, one per vp index (what get_vpp_indices returns)."""
        return [self.layer_ranges[g] for g in self.stages_of(rank)]

    def is_fold_continuation(self, stage: int) -> bool:
        """True when `stage` runs on the same rank as the stage before it (no transfer)."""
        return stage > 0 and self.ranks[stage] == self.ranks[stage - 1]

    def fraction(self, stage: int) -> float:
        lo, hi = self.layer_ranges[stage]
        return (hi - lo) / self.num_layers


def fold_back_layout(
    num_layers: int, pp: int, vp: int = 1, layer_split: Sequence[int] | None = None
) -> StageLayout:
    """The VPP fold-back layout of `pp` ranks x `vp` virtual stages each (vp=1: CPP)."""
    if pp < 1 or vp < 1:
        raise ValueError("pp and vp must be >= 1")
    groups = pp * vp
    split = list(layer_split) if layer_split is not None else even_split(num_layers, groups)
    if len(split) != groups or sum(split) != num_layers or min(split) < 1:
        raise ValueError(f"layer_split {split} must give {groups} stages covering {num_layers}")
    ranges, lo = [], 0
    for n in split:
        ranges.append((lo, lo + n))
        lo += n
    ranks = tuple(stage_rank(g, pp) for g in range(groups))
    return StageLayout(pp, vp, num_layers, ranks, tuple(ranges))
