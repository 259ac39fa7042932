"""Text formatting shared by compare, regressions and explain: values with units, fixed-width
tables, JSON-safe values."""

from __future__ import annotations

import math


def fmt_value(value: float | None, unit: str) -> str:
    """A metric value with its unit: ns as µs / ms / s (4 significant digits, as _format.duration
    spells the units), tok/s, ratios, counts."""
    if value is None or not math.isfinite(value):
        return "-"
    if unit == "ns":
        magnitude = abs(value)
        if magnitude >= 10e9:
            return f"{value / 1e9:.2f} s"
        if magnitude >= 1e6:
            return f"{value / 1e6:.4g} ms"
        return f"{value / 1e3:.4g} µs"
    if unit == "tok/s":
        return f"{value:,.0f} tok/s"
    if unit == "count":
        return f"{value:.4g}"
    return f"{value:.3g}"


def fmt_pct(value: float | None, signed: bool = True) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def fmt_p(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.2g}"


def table(columns: list[tuple[str, str]], rows: list[dict[str, str]]) -> str:
    """Fixed-width table: columns are (key, title); cells are strings."""
    widths = {k: max([len(t)] + [len(r.get(k, "")) for r in rows]) for k, t in columns}
    lines = ["  ".join(t.ljust(widths[k]) for k, t in columns)]
    lines += ["  ".join(r.get(k, "").ljust(widths[k]) for k, _ in columns) for r in rows]
    return "\n".join(line.rstrip() for line in lines)
