"""The pipeline schedules the product knows, once: name, properties and display order.

A light leaf (no numpy, no polars) so a command-line parser can offer the choices without loading
the simulator. The schedules are those of the VPP paper (Shi et al., 2026, arXiv 2608.26523):
chunked pipeline parallelism (CPP), dynamic chunking (DCPP, with the vLLM-Ascend or the SGLang
chunk-size rule) and virtual pipeline parallelism (VPP: `vp` virtual stages per rank; -Async with
overlapped transfers; -Pack also packs the next request's first chunks into a drain).
docs/schedules.md describes each as the simulator implements it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Schedule:
    name: str
    base: str
    """The schedule the simulator runs (a DCPP rule alias names its base, dcpp)."""
    virtual: bool
    """Virtual stages per rank (`vp` > 1 allowed; default 2)."""
    async_sends: bool
    """Stage-to-stage transfers overlap compute."""
    packs: bool
    """Stage-0 chunks of the next request are packed into a drain."""
    dcpp_rule: str | None = None
    """The DCPP chunk-size rule an alias selects."""


ALL: tuple[Schedule, ...] = (
    Schedule("cpp", "cpp", virtual=False, async_sends=False, packs=False),
    Schedule("dcpp", "dcpp", virtual=False, async_sends=False, packs=False),
    Schedule("dcpp_sglang", "dcpp", False, False, False, dcpp_rule="sglang"),
    Schedule("dcpp_vllm_ascend", "dcpp", False, False, False, dcpp_rule="vllm_ascend"),
    Schedule("vpp", "vpp", virtual=True, async_sends=False, packs=False),
    Schedule("vpp_async", "vpp_async", virtual=True, async_sends=True, packs=False),
    Schedule("vpp_pack", "vpp_pack", virtual=True, async_sends=True, packs=True),
)
"""Every pipeline schedule, in display order."""

BY_NAME = {s.name: s for s in ALL}
NAMES: tuple[str, ...] = tuple(s.name for s in ALL)
"""Every name a command accepts, in display order."""
BASES: tuple[str, ...] = tuple(s.name for s in ALL if s.dcpp_rule is None)
"""The schedules the simulator runs (DCPP rule aliases left out)."""
BASELINE = BASES[0]
DEFAULT_DCPP_RULE = "vllm_ascend"
"""The DCPP rule plain `dcpp` uses (so `dcpp_vllm_ascend` runs what `dcpp` runs)."""
DISTINCT: tuple[str, ...] = tuple(s.name for s in ALL if s.dcpp_rule != DEFAULT_DCPP_RULE)
"""Names that run different schedules (the alias of the default DCPP rule left out)."""
VARIABLE_CHUNKS: tuple[str, ...] = tuple(s.name for s in ALL if s.base == "dcpp")
"""Schedules whose chunk size follows the prefix (DCPP and its rules)."""
"""The schedule others are compared with (CPP)."""
DEFAULT_VP = 2


def get(name: str) -> Schedule:
    """The schedule called `name`; ValueError naming the known ones otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown schedule {name!r}; expected one of {', '.join(NAMES)}") from None


def is_virtual(name: str) -> bool:
    return name in BY_NAME and BY_NAME[name].virtual


def is_async(name: str) -> bool:
    return name in BY_NAME and BY_NAME[name].async_sends


def packs(name: str) -> bool:
    return name in BY_NAME and BY_NAME[name].packs


def default_vp(name: str) -> int:
    """Virtual stages per rank when none is given: DEFAULT_VP for a virtual schedule, else 1."""
    return DEFAULT_VP if is_virtual(name) else 1


def display_order(name: str) -> int:
    """Sort key: the schedule's place in ALL (unknown names last)."""
    return NAMES.index(name) if name in BY_NAME else len(NAMES)
