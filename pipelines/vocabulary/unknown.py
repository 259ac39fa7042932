"""What an unknown value is, once for every output that leaves unknowns out: the `--json` of every
command (pipelines/cli/_json.py) and the chart data of every page (dashboards/known_data.py).
README "Exit status": an absent key means unknown; nothing is written as JSON `null`, Python
`None` or `NaN`."""

from __future__ import annotations

import math
from typing import Any


def is_unknown(value: Any) -> bool:
    """None or a float NaN (numpy's float64 NaN included: it is a float)."""
    return value is None or (isinstance(value, float) and math.isnan(value))
