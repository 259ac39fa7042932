"""Start-up cost of the `tracereplay` command against a bare interpreter measured in the same run.

Each probe is a fresh process of this interpreter, run `repeat` times after one warm-up run; the
wall time covers process start to exit. The ratio to `python -c pass` removes most of what the
machine's load adds, so runs on different machines compare by ratio (docs/stack.md §8)."""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BASELINE = "python -c pass"
PROBES: dict[str, list[str]] = {
    BASELINE: ["-c", "pass"],
    "tracereplay --help": ["-m", "pipelines.cli", "--help"],
    "tracereplay fit --help": ["-m", "pipelines.cli", "fit", "--help"],
    "import the fit stack": ["-c", "import pipelines.analysis.tau.curves, pipelines.store"],
}
HELP_TARGET_S = 0.3  # `tracereplay --help` median, issue 8


@dataclass(frozen=True)
class StartupTiming:
    name: str
    runs: int
    median_s: float
    min_s: float
    ratio: float  # median over the baseline's median


def _wall_s(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, capture_output=True)
    return time.perf_counter() - start


def measure_startup(
    repeat: int = 10, probes: dict[str, list[str]] | None = None
) -> list[StartupTiming]:
    """Median and minimum wall time of every probe (default PROBES; it must hold BASELINE),
    interleaved so load drifts hit all alike."""
    probes = PROBES if probes is None else probes
    samples: dict[str, list[float]] = {name: [] for name in probes}
    for args in probes.values():
        _wall_s(args)  # warm the page cache
    for _ in range(repeat):
        for name, args in probes.items():
            samples[name].append(_wall_s(args))
    base = statistics.median(samples[BASELINE])
    return [
        StartupTiming(name, len(s), statistics.median(s), min(s), statistics.median(s) / base)
        for name, s in samples.items()
    ]


def dependency_bytecode() -> dict[str, bool]:
    """Whether the heavy dependencies have compiled bytecode next to their sources (the
    packages' `__init__`, found without importing them)."""
    present = {}
    for name in ("polars", "numpy", "duckdb", "scipy"):
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec else None
        present[name] = bool(origin) and Path(importlib.util.cache_from_source(origin)).is_file()
    return present


def help_target_met(timings: list[StartupTiming]) -> bool:
    """`tracereplay --help` median under HELP_TARGET_S."""
    return next(t for t in timings if t.name == "tracereplay --help").median_s < HELP_TARGET_S


def format_startup(timings: list[StartupTiming], bytecode: dict[str, bool]) -> str:
    lines = [f"{'command':<26}{'runs':>5}{'median ms':>11}{'min ms':>9}{'x baseline':>12}"]
    for t in timings:
        lines.append(
            f"{t.name:<26}{t.runs:>5}{1e3 * t.median_s:>11.0f}{1e3 * t.min_s:>9.0f}"
            f"{t.ratio:>11.1f}x"
        )
    missing = [name for name, ok in bytecode.items() if not ok]
    lines.append(
        "bytecode of polars, numpy, duckdb, scipy: "
        + ("present" if not missing else f"missing for {', '.join(missing)} (run `uv sync`)")
    )
    verdict = "met" if help_target_met(timings) else "missed"
    lines.append(f"target: tracereplay --help median < {1e3 * HELP_TARGET_S:.0f} ms: {verdict}")
    return "\n".join(lines)
